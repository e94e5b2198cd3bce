//! A chart package by path (relative to the charts file) or http(s) URL, as `chartURLs` lists
//! it, and the `.prov` beside it when there is one: copied or downloaded beside the charts
//! folder under a name of its own, then read as the chart it is.

use std::path::Path;

use crate::fetch::helm_repo::Repository;
use crate::fetch::lists::ChartsFile;
use crate::fetch::options::Options;
use crate::fetch::problem::Problem;
use crate::fetch::problem::UrlOf;
use crate::fetch::transport::{Bounded, Partial, sha256_of_hex};
use crate::lock::LockedChart;

use super::arrival::{Pending, arriving, hex, with_suffix};

/// A package by path (relative to the charts file) or http(s) URL, and the `.prov` beside it
/// (`<path-or-url>.prov`) when there is one.
pub(super) async fn fetch_url(
    url: &str,
    charts: &ChartsFile,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    // Parallel downloads each stage under their own name.
    let out = options.charts_dir(pinned);
    let staged = out.join(format!(
        ".{}.url-download",
        hex(chartreg_core::oci::sha256(url.as_bytes()))
    ));
    let staged_prov = with_suffix(&staged, "prov");
    let want = pinned.and_then(|p| sha256_of_hex(&p.sha256));
    let prov_want = pinned
        .and_then(|p| p.provenance_sha256.as_deref())
        .and_then(sha256_of_hex);
    let prov = if url.starts_with("http://") || url.starts_with("https://") {
        let parsed: reqwest::Url = url.parse().map_err(|source| Problem::BadUrl {
            of: UrlOf::Package,
            url: url.to_owned(),
            source,
        })?;
        let repo = Repository {
            url: parsed.clone(),
            client: options.transport.http_client(true)?,
            username: None,
            password: None,
        };
        repo.download(&parsed, &staged, Bounded::Package, want)
            .await?;
        let prov_text = format!("{url}.prov");
        let prov_url: reqwest::Url = match prov_text.parse() {
            Ok(prov_url) => prov_url,
            Err(source) => {
                let _ = std::fs::remove_file(&staged);
                return Err(Problem::BadUrl {
                    of: UrlOf::Package,
                    url: prov_text,
                    source,
                });
            }
        };
        match repo
            .download(&prov_url, &staged_prov, Bounded::Provenance, prov_want)
            .await
        {
            Ok((_, hash)) => Some(hash),
            Err(Problem::NotFound) => None,
            Err(other) => {
                let _ = std::fs::remove_file(&staged);
                return Err(other);
            }
        }
    } else {
        let path = charts.local(url);
        copy_local(&path, &staged, Bounded::Package, want)?;
        let prov_path = with_suffix(&path, "prov");
        if prov_path.is_file() {
            match copy_local(&prov_path, &staged_prov, Bounded::Provenance, prov_want) {
                Ok(hash) => Some(hash),
                Err(problem) => {
                    let _ = std::fs::remove_file(&staged);
                    return Err(problem);
                }
            }
        } else {
            None
        }
    };
    let (mut arrival, name, version) = match arriving(staged, &out) {
        Ok(found) => found,
        Err(problem) => {
            let _ = std::fs::remove_file(&staged_prov);
            return Err(problem);
        }
    };
    arrival.prov = prov.map(|_| staged_prov);
    let sha256 = chartreg_core::tree::BlobFile::hash(&arrival.package)
        .map(|read| read.digest.encoded().to_owned())
        .map_err(|source| Problem::file(&arrival.package, source));
    let sha256 = arrival.or_discard(sha256)?;
    let verified = arrival.verify(options, &name, &version, &sha256, pinned)?;
    Ok(Pending {
        locked: LockedChart {
            name,
            version,
            url: url.to_owned(),
            sha256,
            provenance_sha256: prov.map(hex),
            manifest: None,
            file: options.recorded(&arrival.target),
            verified,
        },
        arrival,
    })
}

/// Copies the local file `path` (what `bound` says it is) to `staged`, checked against `want`
/// when given.
fn copy_local(
    path: &Path,
    staged: &Path,
    bound: Bounded,
    want: Option<[u8; 32]>,
) -> Result<[u8; 32], Problem> {
    let data = chartreg_core::file::read_limited(path, bound.bytes())
        .map_err(|source| Problem::file(path, source))?;
    let mut partial = Partial::create(staged, bound, &path.display().to_string())?;
    partial.write(&data)?;
    partial.finish(want).map(|(_, hash)| hash)
}
