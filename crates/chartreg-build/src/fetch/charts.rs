//! One chart version fetched, whatever its source: a classic repository's entry, an OCI
//! repository's chart (`repoURL: oci://...`, with that entry's credentials and `tlsVerify`), an
//! OCI reference, or a package path or URL; written as `<charts>/<name>-<version>.tgz` (and
//! `.prov`, the one beside the package upstream, or its OCI provenance layer), and what the
//! lock records of it.
//!
//! The package and its `.prov` arrive beside their places ([`Arrival`]) and are put in place
//! once the policy (`fetch --config`) verified them: a chart it refuses leaves what was there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chartreg_core::content::Evidence;
use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::oci::media_type;

use super::helm_repo::{self, Index, Repository};
use super::lists::{ChartRepository, ChartSource, ChartsFile, ImagesFile};
use super::transport::{Partial, Transport, existing_sha256, sha256_of_hex};
use super::{LockedChart, Options, Problem, oci};

/// A classic repository, set up from its entry in the charts file.
pub fn repository(config: &ChartRepository, transport: &Transport) -> Result<Repository, Problem> {
    let url = config
        .repo_url
        .parse()
        .map_err(|e| Problem::Invalid(format!("repoURL `{}`: {e}", config.repo_url)))?;
    Ok(Repository {
        url,
        client: transport.http_client(config.tls_verify)?,
        username: config.username.clone(),
        password: config.password.clone(),
    })
}

/// The package's name and version from its Chart.yaml: what the file is called.
fn name_and_version(package: &Path) -> Result<(String, String), Problem> {
    let data =
        std::fs::read(package).map_err(|e| Problem::Io(format!("{}: {e}", package.display())))?;
    let chart = crate::pack::read_chart(&data)
        .map_err(|e| Problem::Invalid(format!("not a chart package Helm loads: {e}")))?;
    Ok((chart.name().to_owned(), chart.version().to_owned()))
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

/// A chart package and its `.prov` as fetched: each either already in its place with the
/// right bytes, or staged beside it; [`Arrival::place`] checks them against the policy and
/// puts them in place, or removes what was staged.
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

    /// Removes what was staged.
    fn discard(&self) {
        if self.package != self.target {
            let _ = std::fs::remove_file(&self.package);
        }
        if let Some(prov) = self.prov.as_ref().filter(|p| **p != self.prov_target()) {
            let _ = std::fs::remove_file(prov);
        }
    }

    /// Checks chart `name` `version` (sha256 `sha256`, hex) with the policy, if any, then puts
    /// the package and `.prov` in place (a `.prov` an earlier fetch took is removed when the
    /// source has none now); who signed it, when verified.
    fn place(
        self,
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
        let verified = match verified {
            Ok(verified) => verified,
            Err(problem) => {
                self.discard();
                return Err(problem);
            }
        };
        let io = |path: &Path, e: std::io::Error| Problem::Io(format!("{}: {e}", path.display()));
        let prov_target = self.prov_target();
        match &self.prov {
            Some(prov) if *prov != prov_target => {
                std::fs::rename(prov, &prov_target).map_err(|e| io(&prov_target, e))?;
            }
            Some(_) => {}
            None => {
                // None upstream: one an earlier fetch took would no longer match.
                let _ = std::fs::remove_file(&prov_target);
            }
        }
        if self.package != self.target {
            std::fs::rename(&self.package, &self.target).map_err(|e| io(&self.target, e))?;
        }
        Ok(verified)
    }
}

/// Fetches one chart version.
pub async fn fetch(
    source: &ChartSource,
    lists: (&ChartsFile, &ImagesFile),
    indexes: &BTreeMap<String, (Repository, Index)>,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<LockedChart, Problem> {
    let (charts, images) = lists;
    let locked = match source {
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
            let registry = oci::Registry::for_host(registry, &options.transport, images);
            fetch_oci(&registry, repository, tag, options, pinned).await?
        }
        ChartSource::Url(url) => fetch_url(url, charts, options, pinned).await?,
    };
    if let Some(pinned) = pinned
        && pinned.sha256 != locked.sha256
    {
        return Err(Problem::Repushed {
            locked: format!("sha256:{}", pinned.sha256),
            now: format!("sha256:{}", locked.sha256),
        });
    }
    Ok(locked)
}

/// A version of a classic repository's chart, and its `.prov` where the repository has one.
async fn fetch_from_repository(
    repo: &Repository,
    index: &Index,
    chart: &str,
    version: &str,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<LockedChart, Problem> {
    let entry = helm_repo::find(index, chart, version)?;
    let url = entry
        .urls
        .first()
        .ok_or_else(|| Problem::Invalid("the index lists no URL for it".into()))?;
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
            match repo.download(&url, &staged, want).await {
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
    // The signature, where the repository has one (pinned too, once locked).
    let prov_url = repo.resolve(&format!("{url}.prov"))?;
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
            match repo.download(&prov_url, &staged, prov_want).await {
                Ok((_, hash)) => {
                    arrival.prov = Some(staged);
                    Some(hex(hash))
                }
                Err(Problem::NotFound) => None,
                Err(other) => {
                    arrival.discard();
                    return Err(other);
                }
            }
        }
    };
    let sha256 = hex(sha256);
    let target = arrival.target.clone();
    let verified = arrival.place(options, chart, &entry.version, &sha256, pinned)?;
    Ok(LockedChart {
        name: chart.to_owned(),
        version: entry.version.clone(),
        url: url.to_string(),
        sha256,
        provenance_sha256,
        manifest: None,
        file: options.recorded(&target),
        verified,
    })
}

/// A version of a chart in an OCI repository (`repoURL: oci://HOST/PATH`): the tag
/// `PATH/CHART:VERSION`, or, for a range, the newest tag that meets it, reached with the
/// entry's credentials and `tlsVerify`.
async fn fetch_from_oci_repository(
    config: &ChartRepository,
    chart: &str,
    version: &str,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<LockedChart, Problem> {
    let Some((host, path)) = config.oci() else {
        return Err(Problem::Invalid(format!(
            "repoURL `{}` is not oci://",
            config.repo_url
        )));
    };
    let registry = oci::Registry::new(
        host,
        &options.transport,
        config.tls_verify,
        config.username.as_deref(),
        config.password.as_deref(),
    );
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
    fetch_oci(&registry, &repository, &tag, options, pinned).await
}

/// A chart pushed to an OCI registry: its chart layer (and provenance layer) as files.
///
/// Credentials and `tlsVerify` for the registry come from the images file's entry for its host.
async fn fetch_oci(
    registry: &oci::Registry,
    repository: &str,
    tag: &str,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<LockedChart, Problem> {
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
        .map_err(|e| Problem::Invalid(format!("manifest {digest}: {e}")))?;
    if manifest.config.media_type != media_type::HELM_CONFIG {
        return Err(Problem::Invalid(format!(
            "{digest} is not a Helm chart (its config is {})",
            manifest.config.media_type
        )));
    }
    let layer = |kind: &str| manifest.layers.iter().find(|l| l.media_type == kind);
    let chart = layer(media_type::HELM_CHART)
        .ok_or_else(|| Problem::Invalid(format!("{digest} has no chart layer")))?;
    if let Some(pinned) = pinned
        && pinned.sha256 != chart.digest.encoded()
    {
        return Err(Problem::Repushed {
            locked: format!(
                "sha256:{} (manifest {})",
                pinned.sha256,
                pinned.manifest.as_deref().unwrap_or("?")
            ),
            now: format!("{} (manifest {digest})", chart.digest),
        });
    }
    // The file is named after the chart in the package: downloaded beside, read, then put
    // in place once verified.
    let out = options.charts_dir(pinned);
    let staged = out.join(format!(".{}.oci-download", chart.digest.encoded()));
    registry
        .blob(repository, chart.digest.as_str(), &staged)
        .await?;
    let (mut arrival, name, version) = arriving(staged, &out)?;
    let provenance_sha256 = match layer(media_type::HELM_PROVENANCE) {
        Some(prov) => {
            let prov_target = arrival.prov_target();
            if existing_sha256(&prov_target).map(hex).as_deref() == Some(prov.digest.encoded()) {
                arrival.prov = Some(prov_target);
            } else {
                let staged = out.join(format!(".{}.oci-download", prov.digest.encoded()));
                let downloaded = registry
                    .blob(repository, prov.digest.as_str(), &staged)
                    .await;
                arrival.prov = Some(staged);
                if let Err(problem) = downloaded {
                    arrival.discard();
                    return Err(problem);
                }
            }
            Some(prov.digest.encoded().to_owned())
        }
        None => None,
    };
    let sha256 = chart.digest.encoded().to_owned();
    let target = arrival.target.clone();
    let verified = arrival.place(options, &name, &version, &sha256, pinned)?;
    Ok(LockedChart {
        name,
        version,
        url: format!("oci://{host}/{repository}:{tag}"),
        sha256,
        provenance_sha256,
        manifest: Some(digest),
        file: options.recorded(&target),
        verified,
    })
}

/// A package by path (relative to the charts file) or http(s) URL, and the `.prov` beside it
/// (`<path-or-url>.prov`) when there is one.
async fn fetch_url(
    url: &str,
    charts: &ChartsFile,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<LockedChart, Problem> {
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
        let parsed: reqwest::Url = url
            .parse()
            .map_err(|e| Problem::Invalid(format!("`{url}`: {e}")))?;
        let repo = Repository {
            url: parsed.clone(),
            client: options.transport.http_client(true)?,
            username: None,
            password: None,
        };
        repo.download(&parsed, &staged, want).await?;
        let prov_url: reqwest::Url = format!("{url}.prov")
            .parse()
            .map_err(|e| Problem::Invalid(format!("`{url}.prov`: {e}")))?;
        match repo.download(&prov_url, &staged_prov, prov_want).await {
            Ok((_, hash)) => Some(hash),
            Err(Problem::NotFound) => None,
            Err(other) => {
                let _ = std::fs::remove_file(&staged);
                return Err(other);
            }
        }
    } else {
        let path = charts.local(url);
        copy_local(&path, &staged, want)?;
        let prov_path = with_suffix(&path, "prov");
        if prov_path.is_file() {
            match copy_local(&prov_path, &staged_prov, prov_want) {
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
    let sha256 = existing_sha256(&arrival.package).ok_or_else(|| {
        arrival.discard();
        Problem::Io(format!(
            "{}: cannot be read back",
            arrival.package.display()
        ))
    })?;
    let sha256 = hex(sha256);
    let target = arrival.target.clone();
    let verified = arrival.place(options, &name, &version, &sha256, pinned)?;
    Ok(LockedChart {
        name,
        version,
        url: url.to_owned(),
        sha256,
        provenance_sha256: prov.map(hex),
        manifest: None,
        file: options.recorded(&target),
        verified,
    })
}

/// Copies the local file `path` to `staged`, checked against `want` when given.
fn copy_local(path: &Path, staged: &Path, want: Option<[u8; 32]>) -> Result<[u8; 32], Problem> {
    let data = std::fs::read(path).map_err(|e| Problem::Io(format!("{}: {e}", path.display())))?;
    let mut partial = Partial::create(staged)?;
    partial.write(&data)?;
    partial.finish(want).map(|(_, hash)| hash)
}

/// A downloaded package (at `staged`, a name of its own), checked to be a chart Helm loads:
/// its arrival (to be put in place as `<out>/<name>-<version>.tgz`), name and version; removed
/// if it is not a chart.
fn arriving(staged: PathBuf, out: &Path) -> Result<(Arrival, String, String), Problem> {
    let (name, version) = match name_and_version(&staged) {
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
