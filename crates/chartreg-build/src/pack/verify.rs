//! The content file's `verify:` policy applied to what pack read, before anything is written:
//! each chart's `.prov` (its `charts:` part) and each layout's tagged images (its `images:`
//! part). Refusals stop the run, naming every artifact that failed; warnings and what verified,
//! by whom, go into the report, and into the record pack writes beside the repositories
//! (`verification.json`: the policy with its material, and per chart version and image tag who
//! signed it or the warning; see `chartreg_core::content::VerificationFile`).

use std::fs;

use chartreg_core::content::{Evidence, Record, VerificationFile};
use chartreg_core::oci::{Digest, RepositoryName};

use crate::verify::{Checked, Policy};

use super::{Input, PackError, Packed, Problem, at, io_at};

/// Checks `inputs` against `policy`, noting what verified and what is warned about in `packed`.
pub fn inputs(
    policy: &Policy,
    prefix: &str,
    inputs: &[Input],
    packed: &mut Packed,
) -> Result<VerificationFile, PackError> {
    let mut refused = Vec::new();
    let mut written = VerificationFile {
        policy: policy.record(),
        ..VerificationFile::default()
    };
    if let Some(policy) = &policy.charts {
        for input in inputs {
            let Input::Chart(chart) = input else { continue };
            let (name, version) = (chart.chart.name(), chart.chart.version());
            let prov = match &chart.provenance {
                Some(blob) => Some(fs::read(&blob.path).map_err(io_at(&blob.path))?),
                None => None,
            };
            let file = format!("{name}-{version}.tgz");
            let checked = crate::verify::check_chart(
                policy,
                name,
                version,
                prov.as_deref(),
                &file,
                chart.layer.digest(),
            );
            let what = format!("chart {name} {version}");
            let by = checked.map(|signer| vec![signer.evidence()]);
            if let Some(record) = note(by, &what, chart.layer.digest(), packed, &mut refused)
                && let Ok(repository) = format!("{prefix}/{name}").parse::<RepositoryName>()
            {
                written
                    .charts
                    .entry(repository)
                    .or_default()
                    .insert(version.to_owned(), record);
            }
        }
    }
    if let Some(images) = &policy.images {
        for input in inputs {
            let Input::Layout(layout) = input else {
                continue;
            };
            let spec = &layout.spec;
            let checked = crate::verify::check_layout(
                images,
                spec.repository.as_str(),
                &spec.dir,
                spec.tag.as_ref().map(|t| t.as_str()),
            )
            .map_err(|e| at(&spec.dir)(Problem::Signatures(e)))?;
            for image in checked {
                let what = format!("image {}:{}", image.repository, image.tag);
                if let Some(record) =
                    note(image.checked, &what, &image.digest, packed, &mut refused)
                {
                    written
                        .images
                        .entry(spec.repository.clone())
                        .or_default()
                        .insert(image.tag.clone(), record);
                }
            }
        }
    }
    let config = policy
        .charts
        .as_ref()
        .map(|c| &c.config)
        .or(policy.images.as_ref().map(|i| &i.config));
    match (refused.is_empty(), config) {
        (false, Some(config)) => Err(at(config)(Problem::Unverified(refused))),
        _ => Ok(written),
    }
}

/// Notes one artifact's outcome (`what`, of `digest`): what verified, warnings, refusals; the
/// record it leaves (none when it was neither signed nor required, or refused).
fn note(
    checked: Checked<Vec<Evidence>>,
    what: &str,
    digest: &Digest,
    packed: &mut Packed,
    refused: &mut Vec<String>,
) -> Option<Record> {
    match checked {
        Checked::Verified(by) => {
            let who: Vec<String> = by.iter().map(ToString::to_string).collect();
            packed.verified.push(format!("{what}: {}", who.join(", ")));
            Some(Record {
                digest: digest.clone(),
                verified: by,
                warning: None,
            })
        }
        Checked::NotSigned => None,
        Checked::Failed { refuse: true, line } => {
            refused.push(line);
            None
        }
        Checked::Failed {
            refuse: false,
            line,
        } => {
            packed.warnings.push(format!("verify: {line}"));
            Some(Record {
                digest: digest.clone(),
                verified: Vec::new(),
                warning: Some(line),
            })
        }
    }
}
