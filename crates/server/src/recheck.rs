//! `chartreg verify`'s signature part: the signatures the build verified, checked again from
//! the embedded bytes against the policy the content embeds (`verification.json`: its keyring,
//! cosign keys and trusted roots), with the same checks the build tool ran (`chartreg_trust`).
//!
//! For each record: the chart version's package and `.prov` layers (the tag `helm push` gives
//! the version), or the image tag's manifest with its `.sig` tag and bundle referrers, read from
//! the registry the binary serves. A record whose digest is not what the tag serves, a signer
//! that differs from the record's, or an artifact the record says verified that no longer does,
//! is a problem naming it. An index that keeps some platforms of upstream's is checked against
//! upstream's index as the record holds it (its signatures are over that one).

use chartreg_core::content::{
    self, Evidence, HeldFile, Record, Registry, Unreadable, UpstreamIndex, VERIFICATION_FILE,
    VerificationFile,
};
use chartreg_core::oci::media_type::{HELM_CHART, HELM_PROVENANCE};
use chartreg_core::oci::{Digest, Reference};
use chartreg_trust::{Checked, LayoutError, Policy, PolicyError, Store};

/// What re-checking found: how many records were checked, and the problems (each naming what
/// it is about).
#[derive(Debug, Default)]
pub struct Rechecked {
    pub records: usize,
    pub problems: Vec<String>,
}

/// Why a record does not hold, or could not be checked; each carries what it is about.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("{VERIFICATION_FILE}: {0}")]
    File(#[source] serde_json::Error),
    #[error("{VERIFICATION_FILE}: the embedded policy: {0}")]
    Policy(#[source] PolicyError),
    #[error("recorded, but the embedded policy has no {0} part")]
    NoPolicyPart(&'static str),
    #[error("no such repository")]
    NoRepository,
    #[error("no tag {0}")]
    NoTag(String),
    #[error(transparent)]
    Manifest(#[from] Unreadable),
    #[error("its manifest has no chart layer")]
    NoChartLayer,
    #[error("its provenance: {0}")]
    Provenance(#[source] content::Error),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("the build recorded the package {recorded}, the tag serves {served}")]
    PackageChanged {
        recorded: Box<Digest>,
        served: Box<Digest>,
    },
    #[error("the build recorded {recorded}, the tag serves {served}")]
    DigestChanged {
        recorded: Box<Digest>,
        served: Box<Digest>,
    },
    #[error("verified by {} now, the build recorded {}", said(now), said(recorded))]
    OtherSigners {
        now: Vec<Evidence>,
        recorded: Vec<Evidence>,
    },
    #[error("no signature now, the build recorded {}", said(.0))]
    Unsigned(Vec<Evidence>),
    #[error("does not verify now ({line}), the build recorded {}", said(recorded))]
    Fails {
        line: String,
        recorded: Vec<Evidence>,
    },
}

/// Re-checks the records of the content's `verification.json`, if it has one (`None` when not).
pub fn signatures(files: &[HeldFile], registry: &Registry) -> Option<Rechecked> {
    let file = files
        .iter()
        .find(|f| f.path.as_ref() == VERIFICATION_FILE)?;
    let mut out = Rechecked::default();
    let record: VerificationFile = match serde_json::from_slice(&file.data) {
        Ok(record) => record,
        Err(e) => {
            out.problems.push(Problem::File(e).to_string());
            return Some(out);
        }
    };
    let policy = match Policy::from_record(std::path::Path::new(VERIFICATION_FILE), &record.policy)
    {
        Ok(policy) => policy,
        Err(e) => {
            out.problems.push(Problem::Policy(e).to_string());
            return Some(out);
        }
    };
    for (repository, versions) in &record.charts {
        for (version, recorded) in versions {
            out.records += 1;
            let what = format!("chart {repository} {version}");
            if let Err(problem) = chart(&policy, registry, repository.as_str(), version, recorded) {
                out.problems.push(format!("{what}: {problem}"));
            }
        }
    }
    for (repository, tags) in &record.images {
        for (tag, recorded) in tags {
            out.records += 1;
            let what = format!("image {repository}:{tag}");
            if let Err(problem) = image(&policy, registry, repository.as_str(), tag, recorded) {
                out.problems.push(format!("{what}: {problem}"));
            }
        }
    }
    Some(out)
}

/// Whether checking again gives what the record says.
fn compare(now: Checked<Vec<Evidence>>, recorded: &Record) -> Result<(), Problem> {
    match now {
        Checked::Verified(by) if by == recorded.verified => Ok(()),
        Checked::Verified(by) => Err(Problem::OtherSigners {
            now: by,
            recorded: recorded.verified.clone(),
        }),
        _ if recorded.verified.is_empty() => Ok(()),
        Checked::NotSigned => Err(Problem::Unsigned(recorded.verified.clone())),
        Checked::Failed { line, .. } => Err(Problem::Fails {
            line,
            recorded: recorded.verified.clone(),
        }),
    }
}

fn said(by: &[Evidence]) -> String {
    if by.is_empty() {
        return "no signer".into();
    }
    by.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn chart(
    policy: &Policy,
    registry: &Registry,
    repository: &str,
    version: &str,
    recorded: &Record,
) -> Result<(), Problem> {
    let charts = policy
        .charts
        .as_ref()
        .ok_or(Problem::NoPolicyPart("charts"))?;
    let repo = registry
        .repositories()
        .find(|r| r.name() == repository)
        .ok_or(Problem::NoRepository)?;
    // `helm push` tags a version with `+` as `_`.
    let tag = version.replace('+', "_");
    let manifest = repo.tagged(&tag).ok_or(Problem::NoTag(tag))?;
    let layers = manifest.document()?.references();
    let layer = |media: &str| layers.iter().find(|d| d.media_type == media);
    let package = layer(HELM_CHART).ok_or(Problem::NoChartLayer)?;
    if package.digest != recorded.digest {
        return Err(Problem::PackageChanged {
            recorded: Box::new(recorded.digest.clone()),
            served: Box::new(package.digest.clone()),
        });
    }
    let prov = match layer(HELM_PROVENANCE) {
        Some(d) => Some(
            repo.blob(&d.digest)
                .map_err(Problem::Provenance)?
                .data
                .clone(),
        ),
        None => None,
    };
    let name = repository.rsplit('/').next().unwrap_or(repository);
    let now = chartreg_trust::check_chart(
        charts,
        name,
        version,
        prov.as_deref(),
        &format!("{name}-{version}.tgz"),
        &package.digest,
    );
    compare(now.map(|signer| vec![signer.evidence()]), recorded)
}

/// A repository the server serves, as the trust crate reads images: its tags, and every
/// manifest that refers to a tagged one (signatures among them); for a tag whose index keeps
/// some platforms of upstream's, that index as the record holds it, and the manifests that
/// refer to it.
struct Served<'a> {
    repository: &'a chartreg_core::content::Repository,
    upstream: Option<&'a UpstreamIndex>,
}

impl Store for Served<'_> {
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError> {
        let repo = self.repository;
        let mut entries = Vec::new();
        for tag in repo.tags() {
            if let Some(digest) = repo.tag_digest(tag) {
                entries.push((Some(tag.to_owned()), digest.clone()));
                for referrer in repo.referrers(digest, None) {
                    entries.push((None, referrer.digest.clone()));
                }
            }
        }
        if let Some(upstream) = self.upstream {
            for referrer in repo.referrers(&upstream.digest, None) {
                entries.push((None, referrer.digest.clone()));
            }
        }
        Ok(entries)
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
        let repo = self.repository;
        if let Some(upstream) = self.upstream.filter(|u| u.digest == *digest) {
            let data = upstream.index.as_bytes();
            if Digest::sha256_of(data) != *digest {
                return Err(LayoutError::UpstreamIndex {
                    repository: repo.name().to_owned(),
                    digest: digest.clone(),
                });
            }
            return Ok(data.to_vec());
        }
        if let Ok(m) = repo.manifest(&Reference::Digest(digest.clone())) {
            return Ok(m.data.to_vec());
        }
        repo.blob(digest)
            .map(|b| b.data.to_vec())
            .map_err(|source| LayoutError::NotHeld {
                repository: repo.name().to_owned(),
                digest: digest.clone(),
                source: Box::new(source),
            })
    }

    /// The record's: `chartreg verify` checks one tag at a time.
    fn upstream(&self, _tag: &str) -> Result<Option<Digest>, LayoutError> {
        Ok(self.upstream.map(|u| u.digest.clone()))
    }
}

fn image(
    policy: &Policy,
    registry: &Registry,
    repository: &str,
    tag: &str,
    recorded: &Record,
) -> Result<(), Problem> {
    let images = policy
        .images
        .as_ref()
        .ok_or(Problem::NoPolicyPart("images"))?;
    let repo = registry
        .repositories()
        .find(|r| r.name() == repository)
        .ok_or(Problem::NoRepository)?;
    let served = Served {
        repository: repo,
        upstream: recorded.upstream.as_ref(),
    };
    let checked = chartreg_trust::check_store(images, repository, &served, Some(tag))?;
    let one = checked
        .into_iter()
        .next()
        .ok_or_else(|| Problem::NoTag(tag.to_owned()))?;
    if one.digest != recorded.digest {
        return Err(Problem::DigestChanged {
            recorded: Box::new(recorded.digest.clone()),
            served: Box::new(one.digest),
        });
    }
    compare(one.checked, recorded)
}
