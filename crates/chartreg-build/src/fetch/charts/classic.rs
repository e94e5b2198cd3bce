//! A chart version from a classic repository (`index.yaml`): found in the index read once for
//! the repository, its package downloaded and checked against the digest the index lists (or
//! the lock pins), read as the chart the index lists, and its `.prov` taken where the
//! repository has one.

use crate::fetch::helm_repo::{self, Index, Repository};
use crate::fetch::lists::ChartRepository;
use crate::fetch::options::Options;
use crate::fetch::problem::Problem;
use crate::fetch::problem::UrlOf;
use crate::fetch::transport::{Bounded, Transport, existing_sha256, sha256_of_hex};
use crate::fetch::versions;
use crate::lock::LockedChart;

use super::arrival::{Arrival, Pending, check_name, hex, staged_beside};

/// A classic repository, set up from its entry in the charts file.
pub fn repository(config: &ChartRepository, transport: &Transport) -> Result<Repository, Problem> {
    let url = config.repo_url.parse().map_err(|source| Problem::BadUrl {
        of: UrlOf::Repository,
        url: config.repo_url.clone(),
        source,
    })?;
    Ok(Repository {
        url,
        client: transport.http_client(config.tls_verify)?,
        username: config.username.clone(),
        password: config.password.clone(),
    })
}

/// A version of a classic repository's chart, and its `.prov` where the repository has one.
pub(super) async fn fetch_from_repository(
    repo: &Repository,
    index: &Index,
    chart: &str,
    version: &str,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    check_name(chart)?;
    let entry = helm_repo::find(index, chart, version)?;
    // Part of the file's name: one Helm accepts, before it is used.
    if !versions::helm_accepts(&entry.version) {
        return Err(Problem::ListedVersion {
            version: entry.version.clone(),
        });
    }
    let url = entry.urls.first().ok_or(Problem::NoUrlListed)?;
    let url = repo.resolve(url)?;
    let listed = entry.digest.as_deref().and_then(sha256_of_hex);
    // Locked: the bytes must be the lock's; an index listing others was re-pushed.
    let locked = pinned.and_then(|p| sha256_of_hex(&p.sha256));
    if let (Some(locked), Some(listed)) = (locked, listed)
        && locked != listed
    {
        return Err(Problem::Repushed {
            locked: format!("sha256:{}", hex(locked)),
            now: format!("sha256:{}", hex(listed)),
        });
    }
    let want = locked.or(listed);
    let name = format!("{chart}-{}.tgz", entry.version);
    let out = options.charts_dir(pinned);
    let target = out.join(&name);
    let (package, sha256) = match existing_sha256(&target) {
        Some(have) if Some(have) == want => (target.clone(), have),
        _ => {
            let staged = staged_beside(&target);
            match repo.download(&url, &staged, Bounded::Package, want).await {
                Ok((_, hash)) => (staged, hash),
                // The index lists no digest, and the bytes are not the lock's.
                Err(Problem::DigestMismatch { expected, actual })
                    if locked.is_some() && listed.is_none() =>
                {
                    return Err(Problem::Repushed {
                        locked: format!("sha256:{expected}"),
                        now: format!("sha256:{actual}"),
                    });
                }
                Err(other) => return Err(other),
            }
        }
    };
    let mut arrival = Arrival {
        target,
        package,
        prov: None,
    };
    // The chart the index lists, before anything else is taken of it.
    arrival.expect(
        chart,
        &entry.version,
        |found| found == entry.version,
        "the index",
    )?;
    // The signature, where the repository has one (pinned too, once locked).
    let prov_url = arrival.or_discard(repo.resolve(&format!("{url}.prov")))?;
    let prov_target = arrival.prov_target();
    let prov_want = pinned
        .and_then(|p| p.provenance_sha256.as_deref())
        .and_then(sha256_of_hex);
    let provenance_sha256 = match existing_sha256(&prov_target) {
        Some(have) if Some(have) == prov_want => {
            arrival.prov = Some(prov_target);
            Some(hex(have))
        }
        _ => {
            let staged = staged_beside(&prov_target);
            match repo
                .download(&prov_url, &staged, Bounded::Provenance, prov_want)
                .await
            {
                Ok((_, hash)) => {
                    arrival.prov = Some(staged);
                    Some(hex(hash))
                }
                Err(Problem::NotFound) => None,
                Err(other) => return arrival.or_discard(Err(other)),
            }
        }
    };
    let sha256 = hex(sha256);
    let verified = arrival.verify(options, chart, &entry.version, &sha256, pinned)?;
    Ok(Pending {
        locked: LockedChart {
            name: chart.to_owned(),
            version: entry.version.clone(),
            url: url.to_string(),
            sha256,
            provenance_sha256,
            manifest: None,
            file: options.recorded(&arrival.target),
            verified,
        },
        arrival,
    })
}
