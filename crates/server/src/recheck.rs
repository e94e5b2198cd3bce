//! `chartreg verify`'s signature part: the signatures the build verified, checked again from
//! the embedded bytes against the policy the content embeds (`verification.json`: its keyring,
//! cosign keys and trusted roots), with the same checks the build tool ran (`chartreg_trust`).
//!
//! For each record: the chart version's package and `.prov` layers (the tag `helm push` gives
//! the version), or the image tag's manifest with its `.sig` tag and bundle referrers, read from
//! the registry the binary serves. A record whose digest is not what the tag serves, a signer
//! that differs from the record's, or an artifact the record says verified that no longer does,
//! is a problem naming it.

use chartreg_core::content::{
    Evidence, HeldFile, Record, Registry, VERIFICATION_FILE, VerificationFile,
};
use chartreg_core::oci::media_type::{HELM_CHART, HELM_PROVENANCE};
use chartreg_core::oci::{Digest, Reference};
use chartreg_trust::{Checked, LayoutError, Policy, Store};

/// What re-checking found: how many records were checked, and the problems.
#[derive(Debug, Default)]
pub struct Rechecked {
    pub records: usize,
    pub problems: Vec<String>,
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
            out.problems.push(format!("{VERIFICATION_FILE}: {e}"));
            return Some(out);
        }
    };
    let policy = match Policy::from_record(std::path::Path::new(VERIFICATION_FILE), &record.policy)
    {
        Ok(policy) => policy,
        Err(e) => {
            out.problems
                .push(format!("{VERIFICATION_FILE}: the embedded policy: {e}"));
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
fn compare(now: Checked<Vec<Evidence>>, recorded: &Record) -> Result<(), String> {
    match now {
        Checked::Verified(by) if by == recorded.verified => Ok(()),
        Checked::Verified(by) => Err(format!(
            "verified by {} now, the build recorded {}",
            said(&by),
            said(&recorded.verified)
        )),
        _ if recorded.verified.is_empty() => Ok(()),
        Checked::NotSigned => Err(format!(
            "no signature now, the build recorded {}",
            said(&recorded.verified)
        )),
        Checked::Failed { line, .. } => Err(format!(
            "does not verify now ({line}), the build recorded {}",
            said(&recorded.verified)
        )),
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
) -> Result<(), String> {
    let charts = policy
        .charts
        .as_ref()
        .ok_or("recorded, but the embedded policy has no charts part")?;
    let repo = registry
        .repositories()
        .find(|r| r.name() == repository)
        .ok_or("no such repository")?;
    // `helm push` tags a version with `+` as `_`.
    let tag = version.replace('+', "_");
    let manifest = repo.tagged(&tag).ok_or_else(|| format!("no tag {tag}"))?;
    let layers = manifest.document().map_err(|e| e.to_string())?.references();
    let layer = |media: &str| layers.iter().find(|d| d.media_type == media);
    let package = layer(HELM_CHART).ok_or("its manifest has no chart layer")?;
    if package.digest != recorded.digest {
        return Err(format!(
            "the build recorded the package {}, the tag serves {}",
            recorded.digest, package.digest
        ));
    }
    let prov = match layer(HELM_PROVENANCE) {
        Some(d) => Some(
            repo.blob(&d.digest)
                .map_err(|e| e.to_string())?
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
/// manifest that refers to a tagged one (signatures among them).
struct Served<'a>(&'a chartreg_core::content::Repository);

impl Store for Served<'_> {
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError> {
        let mut entries = Vec::new();
        for tag in self.0.tags() {
            if let Some(digest) = self.0.tag_digest(tag) {
                entries.push((Some(tag.to_owned()), digest.clone()));
                for referrer in self.0.referrers(digest, None) {
                    entries.push((None, referrer.digest.clone()));
                }
            }
        }
        Ok(entries)
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
        if let Ok(m) = self.0.manifest(&Reference::Digest(digest.clone())) {
            return Ok(m.data.to_vec());
        }
        self.0
            .blob(digest)
            .map(|b| b.data.to_vec())
            .map_err(|e| LayoutError::Unreadable {
                what: format!("{} {digest}", self.0.name()),
                detail: e.to_string(),
            })
    }
}

fn image(
    policy: &Policy,
    registry: &Registry,
    repository: &str,
    tag: &str,
    recorded: &Record,
) -> Result<(), String> {
    let images = policy
        .images
        .as_ref()
        .ok_or("recorded, but the embedded policy has no images part")?;
    let repo = registry
        .repositories()
        .find(|r| r.name() == repository)
        .ok_or("no such repository")?;
    let checked = chartreg_trust::check_store(images, repository, &Served(repo), Some(tag))
        .map_err(|e| e.to_string())?;
    let one = checked
        .into_iter()
        .next()
        .ok_or_else(|| format!("no tag {tag}"))?;
    if one.digest != recorded.digest {
        return Err(format!(
            "the build recorded {}, the tag serves {}",
            recorded.digest, one.digest
        ));
    }
    compare(one.checked, recorded)
}
