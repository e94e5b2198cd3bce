//! The content file's `verify:` policy applied to what pack read, before anything is written:
//! each chart's `.prov` (its `charts:` part) and each layout's tagged images (its `images:`
//! part). Refusals stop the run, naming every artifact that failed; warnings and what verified,
//! by whom, go into the report.

use std::fs;

use crate::verify::{Checked, Policy};

use super::{Input, PackError, Packed, Problem, at, io_at};

/// Checks `inputs` against `policy`, noting what verified and what is warned about in `packed`.
pub fn inputs(policy: &Policy, inputs: &[Input], packed: &mut Packed) -> Result<(), PackError> {
    let mut refused = Vec::new();
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
            note(checked, packed, &mut refused, |signer| {
                format!("chart {name} {version}: {}", signer.evidence())
            });
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
                note(image.checked, packed, &mut refused, |signers| {
                    let by: Vec<String> = signers.iter().map(ToString::to_string).collect();
                    format!("{what}: {}", by.join(", "))
                });
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
        _ => Ok(()),
    }
}

/// Notes one artifact's outcome: what verified (as `verified` words it), warnings, refusals.
fn note<S>(
    checked: Checked<S>,
    packed: &mut Packed,
    refused: &mut Vec<String>,
    verified: impl FnOnce(&S) -> String,
) {
    match checked {
        Checked::Verified(signer) => packed.verified.push(verified(&signer)),
        Checked::NotSigned => {}
        Checked::Failed { refuse: true, line } => refused.push(line),
        Checked::Failed {
            refuse: false,
            line,
        } => packed.warnings.push(format!("verify: {line}")),
    }
}
