//! One chart version fetched, whatever its source: a classic repository's entry, an OCI
//! repository's chart (`repoURL: oci://...`, with that entry's credentials and `tlsVerify`), an
//! OCI reference, or a package path or URL; written as `<charts>/<name>-<version>.tgz` (and
//! `.prov`, the one beside the package upstream, or its OCI provenance layer), and what the
//! lock records of it.
//!
//! Upstream is not trusted with a path or a chart:
//! 1. A name the charts file asks for is checked as a chart's name (Helm's rule and OCI's
//!    grammar), and the version a classic repository's index lists as one Helm accepts, before
//!    either is part of a file name.
//! 2. The package and its `.prov` arrive beside their places ([`Arrival`]), within their bounds
//!    (`transport::Bounded`), and the package is read as the chart it must be
//!    (`crate::pack::read_chart`): one Helm loads, whose name and version are the ones the index
//!    lists (or the charts file asks, for an OCI repository).
//! 3. The policy (`fetch --config`) verifies them; the chart is then [`Pending`]: its files
//!    wait beside their places until the run puts them there ([`Pending::place`]), once
//!    `--with-chart-images` rendered it from where it waits.
//!
//! Whatever refuses a chart, what was staged for it is removed, and what was in its place
//! stays.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chartreg_core::content::Evidence;
use chartreg_core::oci::layout::{Descriptor, ImageManifest};
use chartreg_core::oci::media_type;

use super::helm_repo::{self, Index, Repository};
use super::lists::{ChartRepository, ChartSource, ChartsFile, ImagesFile};
use super::problem::{Document, UrlOf};
use super::transport::{Bounded, Partial, Transport, existing_sha256, sha256_of_hex};
use super::{LockedChart, Options, Problem, oci, versions};

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

/// A chart name the charts file asks for, checked before it is part of a path or a request.
fn check_name(chart: &str) -> Result<(), Problem> {
    crate::pack::chart_name::check(chart).map_err(|reason| Problem::ChartName {
        name: chart.to_owned(),
        reason: Arc::new(reason),
    })
}

/// The package at `package` (at most a package's bound of it) read as the chart Helm loads:
/// its name and version, checked (`crate::pack::read_chart`).
fn read_package(package: &Path) -> Result<(String, String), Problem> {
    let data = chartreg_core::file::read_limited(package, Bounded::Package.bytes())
        .map_err(|source| Problem::file(package, source))?;
    let chart =
        crate::pack::read_chart(&data).map_err(|problem| Problem::NotAChart(Arc::new(problem)))?;
    Ok((chart.name().to_owned(), chart.version().to_owned()))
}

/// Whether the version `tag` names (an OCI tag: `+` written `_`) is `version`.
fn tag_is_version(tag: &str, version: &str) -> bool {
    tag == version.replace('+', "_")
        || chartreg_core::oci::version::order(&tag.replace('_', "+"))
            .is_some_and(|t| chartreg_core::oci::version::order(version) == Some(t))
}

fn hex(hash: [u8; 32]) -> String {
    hex::encode(hash)
}

/// `path` with `.suffix` after its name (`hello-1.0.0.tgz` -> `hello-1.0.0.tgz.prov`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Where a file of the chart is staged beside its place.
fn staged_beside(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.fetch-new"))
}

/// A layer's descriptor, refused when it says the layer is larger than `bound` allows.
fn within(layer: &Descriptor, bound: Bounded) -> Result<(), Problem> {
    if layer.size > bound.bytes() {
        return Err(Problem::TooLarge {
            from: format!("layer {} ({} bytes)", layer.digest, layer.size),
            bound,
        });
    }
    Ok(())
}

/// A chart package and its `.prov` as fetched: each either already in its place with the
/// right bytes, or staged beside it. [`Arrival::expect`] reads the package as the chart asked
/// for, [`Arrival::verify`] checks both against the policy; each removes what was staged when
/// it refuses, and so does [`Arrival::discard`]; [`Arrival::place`] puts them in place.
#[derive(Debug)]
struct Arrival {
    /// `<charts>/<name>-<version>.tgz`.
    target: PathBuf,
    /// Where the package's bytes are: `target`, or staged.
    package: PathBuf,
    /// Where the `.prov`'s bytes are (`<target>.prov`, or staged), if the source has one.
    prov: Option<PathBuf>,
}

impl Arrival {
    fn prov_target(&self) -> PathBuf {
        with_suffix(&self.target, "prov")
    }

    /// Removes what was staged (what is in its place stays).
    fn discard(&self) {
        if self.package != self.target {
            let _ = std::fs::remove_file(&self.package);
        }
        if let Some(prov) = self.prov.as_ref().filter(|p| **p != self.prov_target()) {
            let _ = std::fs::remove_file(prov);
        }
    }

    /// `result`, having removed what was staged if it is an error.
    fn or_discard<T>(&self, result: Result<T, Problem>) -> Result<T, Problem> {
        if result.is_err() {
            self.discard();
        }
        result
    }

    /// Reads the package as a chart, which must be `name` at a version `is_version` takes
    /// (`listed_by` says what lists it so); refused, what was staged is removed.
    fn expect(
        &self,
        name: &str,
        version: &str,
        is_version: impl Fn(&str) -> bool,
        listed_by: &'static str,
    ) -> Result<(), Problem> {
        let read = read_package(&self.package).and_then(|(found, found_version)| {
            if found == name && is_version(&found_version) {
                Ok(())
            } else {
                Err(Problem::NotAsListed {
                    asked: (name.to_owned(), version.to_owned()),
                    package: (found, found_version),
                    listed_by,
                })
            }
        });
        self.or_discard(read)
    }

    /// Checks chart `name` `version` (sha256 `sha256`, hex) with the policy, if any: who
    /// signed it, when verified. Refused, what was staged is removed.
    fn verify(
        &self,
        options: &Options,
        name: &str,
        version: &str,
        sha256: &str,
        pinned: Option<&LockedChart>,
    ) -> Result<Option<Evidence>, Problem> {
        let verified = match &options.verify {
            Some(verifier) => verifier.chart(
                name,
                version,
                sha256,
                self.prov.as_deref(),
                pinned.map(|p| p.verified.as_ref()),
            ),
            None => Ok(None),
        };
        self.or_discard(verified)
    }

    /// Puts the package and `.prov` in place (a `.prov` an earlier fetch took is removed when
    /// the source has none now); what could not be put in place is removed.
    fn place(self) -> Result<(), Problem> {
        let prov_target = self.prov_target();
        match &self.prov {
            Some(prov) if *prov != prov_target => {
                let renamed = std::fs::rename(prov, &prov_target)
                    .map_err(|source| Problem::file(&prov_target, source));
                self.or_discard(renamed)?;
            }
            Some(_) => {}
            None => {
                // None upstream: one an earlier fetch took would no longer match.
                let _ = std::fs::remove_file(&prov_target);
            }
        }
        if self.package != self.target {
            let renamed = std::fs::rename(&self.package, &self.target)
                .map_err(|source| Problem::file(&self.target, source));
            self.or_discard(renamed)?;
        }
        Ok(())
    }
}

/// A chart fetched and checked, its files still beside their places: what the lock will record
/// of it, and where its package is now.
#[derive(Debug)]
pub struct Pending {
    pub locked: LockedChart,
    arrival: Arrival,
}

impl Pending {
    /// Where the package's bytes are now (staged, or already in its place).
    pub fn package(&self) -> &Path {
        &self.arrival.package
    }

    /// Puts the chart's files in place: what the lock records of it. (Two entries of the lists
    /// may resolve to one package, staged once: the second finds it in place.)
    pub fn place(self) -> Result<LockedChart, Problem> {
        let placed_by_a_twin = !self.arrival.package.exists()
            && existing_sha256(&self.arrival.target).map(hex).as_deref()
                == Some(self.locked.sha256.as_str());
        if !placed_by_a_twin {
            self.arrival.place()?;
        }
        Ok(self.locked)
    }

    /// Removes what was staged for the chart; what was in its place stays.
    pub fn discard(self) {
        self.arrival.discard();
    }
}

/// Fetches one chart version, up to [`Pending`]: checked, not yet in place.
pub async fn fetch(
    source: &ChartSource,
    lists: (&ChartsFile, &ImagesFile),
    indexes: &BTreeMap<String, (Repository, Index)>,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    let (charts, images) = lists;
    let pending = match source {
        ChartSource::Repository {
            repository,
            chart,
            version,
        } => match charts.repositories.get(repository) {
            Some(config) if config.oci().is_some() => {
                fetch_from_oci_repository(config, chart, version, options, pinned).await?
            }
            _ => {
                let Some((repo, index)) = indexes.get(repository) else {
                    return Err(Problem::IndexFailed);
                };
                fetch_from_repository(repo, index, chart, version, options, pinned).await?
            }
        },
        ChartSource::Oci {
            registry,
            repository,
            tag,
        } => {
            let registry = oci::Registry::for_host(registry, &options.transport, images)?;
            fetch_oci(&registry, repository, tag, None, options, pinned).await?
        }
        ChartSource::Url(url) => fetch_url(url, charts, options, pinned).await?,
    };
    if let Some(pinned) = pinned
        && pinned.sha256 != pending.locked.sha256
    {
        let now = format!("sha256:{}", pending.locked.sha256);
        pending.discard();
        return Err(Problem::Repushed {
            locked: format!("sha256:{}", pinned.sha256),
            now,
        });
    }
    Ok(pending)
}

/// A version of a classic repository's chart, and its `.prov` where the repository has one.
async fn fetch_from_repository(
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

/// A version of a chart in an OCI repository (`repoURL: oci://HOST/PATH`): the tag
/// `PATH/CHART:VERSION`, or, for a range, the newest tag that meets it, reached with the
/// entry's credentials and `tlsVerify`. The package must be that chart, at that version.
async fn fetch_from_oci_repository(
    config: &ChartRepository,
    chart: &str,
    version: &str,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    let Some((host, path)) = config.oci() else {
        return Err(Problem::NotOci {
            repo_url: config.repo_url.clone(),
        });
    };
    check_name(chart)?;
    let registry = oci::Registry::new(
        host,
        &options.transport,
        config.tls_verify,
        config.username.as_deref(),
        config.password.as_deref(),
    )?;
    let repository = if path.is_empty() {
        chart.to_owned()
    } else {
        format!("{path}/{chart}")
    };
    // Locked, the lock names the tag; else the version is found among the tags as in a
    // classic repository's index (exactly, `v` prefix or not, or the newest in a range); a
    // registry that does not list tags is asked for the tag as `helm push` writes it.
    let tag = match pinned.and_then(|p| p.url.rsplit_once(':')) {
        Some((_, tag)) => tag.to_owned(),
        None => match registry.tags(&repository).await {
            Ok(tags) if !tags.is_empty() => {
                super::versions::find(version, tags.iter().map(String::as_str))
                    .map_err(|nearest| Problem::NoSuchVersion {
                        asked: version.to_owned(),
                        nearest,
                    })?
                    .to_owned()
            }
            _ => version.replace('+', "_"),
        },
    };
    fetch_oci(&registry, &repository, &tag, Some(chart), options, pinned).await
}

/// A chart pushed to an OCI registry: its chart layer (and provenance layer) as files; when
/// `chart` is given (an OCI repository's entry), the package must be that chart at the version
/// the tag names.
///
/// Credentials and `tlsVerify` for the registry come from the images file's entry for its host.
async fn fetch_oci(
    registry: &oci::Registry,
    repository: &str,
    tag: &str,
    chart: Option<&str>,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    let host = &registry.host;
    let (data, digest) = match registry.manifest(repository, tag).await {
        Err(Problem::NotFound) => {
            // Which tags there are, to say which were meant (the repository may not exist).
            let tags = registry.tags(repository).await.unwrap_or_default();
            if tags.is_empty() {
                return Err(Problem::NotFound);
            }
            let asked = tag.replace('_', "+");
            return Err(Problem::NoSuchVersion {
                nearest: super::versions::nearest(&asked, tags.iter().map(String::as_str)),
                asked,
            });
        }
        other => other?,
    };
    let manifest: ImageManifest = serde_json::from_slice(&data)
        .map_err(|e| Problem::not_json(Document::Manifest(digest.clone()), e))?;
    if manifest.config.media_type != media_type::HELM_CONFIG {
        return Err(Problem::NotHelmChart {
            digest,
            config: manifest.config.media_type,
        });
    }
    let layer = |kind: &str| manifest.layers.iter().find(|l| l.media_type == kind);
    let chart_layer = layer(media_type::HELM_CHART).ok_or_else(|| Problem::NoChartLayer {
        digest: digest.clone(),
    })?;
    if let Some(pinned) = pinned
        && pinned.sha256 != chart_layer.digest.encoded()
    {
        return Err(Problem::Repushed {
            locked: format!(
                "sha256:{} (manifest {})",
                pinned.sha256,
                pinned.manifest.as_deref().unwrap_or("?")
            ),
            now: format!("{} (manifest {digest})", chart_layer.digest),
        });
    }
    within(chart_layer, Bounded::Package)?;
    let prov_layer = layer(media_type::HELM_PROVENANCE);
    if let Some(prov) = prov_layer {
        within(prov, Bounded::Provenance)?;
    }
    // The file is named after the chart in the package: downloaded beside, read, then put
    // in place once verified.
    let out = options.charts_dir(pinned);
    let staged = out.join(format!(".{}.oci-download", chart_layer.digest.encoded()));
    registry.blob(repository, chart_layer, &staged).await?;
    let (mut arrival, name, version) = arriving(staged, &out)?;
    if let Some(chart) = chart {
        let asked = tag.replace('_', "+");
        arrival.expect(
            chart,
            &asked,
            |found| tag_is_version(tag, found),
            "the registry",
        )?;
    }
    let provenance_sha256 = match prov_layer {
        Some(prov) => {
            let prov_target = arrival.prov_target();
            if existing_sha256(&prov_target).map(hex).as_deref() == Some(prov.digest.encoded()) {
                arrival.prov = Some(prov_target);
            } else {
                let staged = out.join(format!(".{}.oci-download", prov.digest.encoded()));
                let downloaded = registry.blob(repository, prov, &staged).await;
                arrival.prov = Some(staged);
                arrival.or_discard(downloaded)?;
            }
            Some(prov.digest.encoded().to_owned())
        }
        None => None,
    };
    let sha256 = chart_layer.digest.encoded().to_owned();
    let verified = arrival.verify(options, &name, &version, &sha256, pinned)?;
    Ok(Pending {
        locked: LockedChart {
            name,
            version,
            url: format!("oci://{host}/{repository}:{tag}"),
            sha256,
            provenance_sha256,
            manifest: Some(digest),
            file: options.recorded(&arrival.target),
            verified,
        },
        arrival,
    })
}

/// A package by path (relative to the charts file) or http(s) URL, and the `.prov` beside it
/// (`<path-or-url>.prov`) when there is one.
async fn fetch_url(
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

/// A downloaded package (at `staged`, a name of its own), checked to be a chart Helm loads:
/// its arrival (to be put in place as `<out>/<name>-<version>.tgz`: both checked, so the name
/// is a file's), name and version; removed if it is not a chart.
fn arriving(staged: PathBuf, out: &Path) -> Result<(Arrival, String, String), Problem> {
    let (name, version) = match read_package(&staged) {
        Ok(found) => found,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    Ok((
        Arrival {
            target: out.join(format!("{name}-{version}.tgz")),
            package: staged,
            prov: None,
        },
        name,
        version,
    ))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// A package holding `top/Chart.yaml` with `name` and `version`.
    fn package(top: &str, name: &str, version: &str) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        let chart = format!("apiVersion: v2\nname: {name:?}\nversion: {version:?}\n");
        let mut header = tar::Header::new_gnu();
        header.set_size(chart.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("{top}/Chart.yaml"), chart.as_bytes())
            .unwrap();
        let tar = tar.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    /// An arrival staged in `dir`: the package `data` as `.hello-1.0.0.tgz.fetch-new`, and a
    /// `.prov` beside it.
    fn staged(dir: &Path, data: &[u8]) -> Arrival {
        let target = dir.join("hello-1.0.0.tgz");
        let package = staged_beside(&target);
        std::fs::write(&package, data).unwrap();
        let prov = staged_beside(&with_suffix(&target, "prov"));
        std::fs::write(&prov, b"signed").unwrap();
        Arrival {
            target,
            package,
            prov: Some(prov),
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn exact(version: &str) -> impl Fn(&str) -> bool + '_ {
        move |found| found == version
    }

    #[test]
    fn the_chart_the_index_lists_is_taken_and_placed() {
        let dir = tempfile::tempdir().unwrap();
        let arrival = staged(dir.path(), &package("hello", "hello", "1.0.0"));
        arrival
            .expect("hello", "1.0.0", exact("1.0.0"), "the index")
            .unwrap();
        arrival.place().unwrap();
        assert_eq!(
            files(dir.path()),
            ["hello-1.0.0.tgz", "hello-1.0.0.tgz.prov"]
        );
    }

    #[test]
    fn another_chart_or_version_than_listed_is_refused_and_removed() {
        for (name, version, listed) in [("other", "1.0.0", "1.0.0"), ("hello", "9.9.9", "1.0.0")] {
            let dir = tempfile::tempdir().unwrap();
            let arrival = staged(dir.path(), &package("hello", name, version));
            let e = arrival
                .expect("hello", listed, exact(listed), "the index")
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "the package is chart {name:?} version {version:?}, but the index lists it as \"hello\" version \"1.0.0\""
                )
            );
            assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
        }
    }

    #[test]
    fn a_package_helm_does_not_load_is_refused_and_removed_but_what_was_in_place_stays() {
        let dir = tempfile::tempdir().unwrap();
        let arrival = staged(dir.path(), b"PK\x03\x04 not a chart");
        std::fs::write(&arrival.target, b"an earlier fetch's").unwrap();
        let e = arrival
            .expect("hello", "1.0.0", exact("1.0.0"), "the index")
            .unwrap_err();
        assert!(matches!(e, Problem::NotAChart(_)), "{e}");
        assert!(
            e.to_string()
                .starts_with("not a chart package Helm loads: "),
            "{e}"
        );
        assert_eq!(files(dir.path()), ["hello-1.0.0.tgz"]);
        assert_eq!(
            std::fs::read(dir.path().join("hello-1.0.0.tgz")).unwrap(),
            b"an earlier fetch's"
        );
    }

    #[test]
    fn a_package_past_its_bound_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.tgz");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(Bounded::Package.bytes() + 1).unwrap();
        let e = read_package(&path).unwrap_err();
        assert!(matches!(e, Problem::File { .. }), "{e}");
        assert!(e.to_string().contains("larger than"), "{e}");
    }

    #[test]
    fn a_staged_package_whose_chart_is_refused_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let staged = dir.path().join(".abc.oci-download");
        std::fs::write(&staged, package("evil", "--post-renderer=sh", "1.0.0")).unwrap();
        let e = arriving(staged, dir.path()).unwrap_err();
        assert!(e.to_string().contains("invalid chart name"), "{e}");
        assert!(files(dir.path()).is_empty());
    }

    #[test]
    fn names_the_charts_file_asks_for_are_chart_names() {
        for name in [
            "../../../tmp/evil",
            "--post-renderer=sh",
            "..",
            "Evil",
            "a\u{1b}[2J",
        ] {
            let e = check_name(name).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("invalid chart name {name:?}: it ")),
                "{e}"
            );
        }
        check_name("hello").unwrap();
    }

    #[test]
    fn tags_name_versions_as_helm_push_writes_them() {
        assert!(tag_is_version("1.0.0", "1.0.0"));
        assert!(tag_is_version("1.0.0_build.1", "1.0.0+build.1"));
        assert!(tag_is_version("v1.0.0", "1.0.0"));
        assert!(!tag_is_version("1.0.1", "1.0.0"));
        assert!(!tag_is_version("latest", "1.0.0"));
    }

    #[test]
    fn a_layer_larger_than_its_kind_is_refused_before_it_is_downloaded() {
        let digest: chartreg_core::oci::Digest = chartreg_core::oci::Digest::sha256_of(b"x");
        let big = Descriptor::new(media_type::HELM_CHART, digest.clone(), 1 << 40);
        let e = within(&big, Bounded::Package).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "layer {digest} (1099511627776 bytes): larger than 101 MiB, the most fetch downloads of a chart package (Helm loads no chart larger than 100 MiB decompressed)"
            )
        );
        within(
            &Descriptor::new(media_type::HELM_CHART, digest, 1000),
            Bounded::Package,
        )
        .unwrap();
    }
}
