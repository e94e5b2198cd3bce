//! The content file's `verify:` policy applied to what pack read, before anything is written:
//! each chart's `.prov` (its `charts:` part) and each layout's tagged images (its `images:`
//! part). Refusals stop the run, naming every artifact that failed; warnings and what verified,
//! by whom, go into the report, and into the record pack writes beside the repositories
//! (`verification.json`: the policy with its material, and per chart version and image tag who
//! signed it or the warning; see `chartreg_core::content::VerificationFile`).
//!
//! The file is one per output folder, and runs of other content files (another prefix, other
//! layouts) may write into that folder: [`merged`] keeps the records of the repositories this
//! run does not pack, which an earlier run verified, as long as both runs had the same policy
//! (else it refuses, naming them: one file holds one policy). A run without a policy drops the
//! records of what it packs (not verified now), and the file goes with its last record.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::Path;

use chartreg_core::content::{Evidence, Record, VERIFICATION_FILE, VerificationFile};
use chartreg_core::oci::{Digest, RepositoryName};

use crate::pin::Pin;
use crate::verify::{Checked, LayoutError, LayoutStore, Policy, Store};

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
            let store = Pinned {
                layout: LayoutStore { dir: &spec.dir },
                pin: spec.pin.as_ref(),
            };
            let served = spec.pin.as_ref().map(|p| p.served().as_str());
            let checked =
                crate::verify::check_store(images, spec.repository.as_str(), &store, served)
                    .map_err(|e| at(&spec.dir)(Problem::Signatures(e)))?;
            for image in checked {
                let what = format!("image {}:{}", image.repository, image.tag);
                if let Some(mut record) =
                    note(image.checked, &what, &image.digest, packed, &mut refused)
                {
                    record.upstream = image.upstream;
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
                upstream: None,
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
                upstream: None,
            })
        }
    }
}

/// The record in `out`, if there is one.
pub fn load(out: &Path) -> Result<Option<VerificationFile>, PackError> {
    let path = out.join(VERIFICATION_FILE);
    match fs::read(&path) {
        Ok(data) => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|e| at(&path)(Problem::NotVerification(e))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_at(&path)(e)),
    }
}

/// The record after a run: `previous`'s records of the repositories `kept` says an earlier
/// run packed and this one leaves in place, and this run's (`made`, with its policy, when the
/// run has one). Refused when both have records and their policies differ: the kept records
/// were not verified against this run's policy. Without `made`, the file is removed when this
/// run took its last records away (a file holding a policy and no record is left as it is).
pub fn merged(
    out: &Path,
    previous: Option<VerificationFile>,
    made: Option<VerificationFile>,
    kept: impl Fn(&str) -> bool,
) -> Result<Option<VerificationFile>, PackError> {
    let Some(mut previous) = previous else {
        return Ok(made);
    };
    let had_records = has_records(&previous);
    previous
        .charts
        .retain(|repository, _| kept(repository.as_str()));
    previous
        .images
        .retain(|repository, _| kept(repository.as_str()));
    let Some(mut made) = made else {
        return Ok((has_records(&previous) || !had_records).then_some(previous));
    };
    if !has_records(&previous) {
        return Ok(Some(made));
    }
    if previous.policy != made.policy {
        let names: BTreeSet<String> = previous
            .charts
            .keys()
            .chain(previous.images.keys())
            .map(|r| r.as_str().to_owned())
            .collect();
        return Err(at(&out.join(VERIFICATION_FILE))(Problem::OtherPolicy(
            names.into_iter().collect(),
        )));
    }
    for (repository, versions) in previous.charts {
        made.charts.entry(repository).or_insert(versions);
    }
    for (repository, tags) in previous.images {
        made.images.entry(repository).or_insert(tags);
    }
    Ok(Some(made))
}

fn has_records(file: &VerificationFile) -> bool {
    !file.charts.is_empty() || !file.images.is_empty()
}

/// An input layout as pack serves it: with a pin by digest, the entry with that digest is
/// listed under the tag it is served as (`Pin::served`), whatever the layout tags it; with a
/// tag, the one entry of a layout that names none is listed under it; so that the policy
/// checks what is served.
struct Pinned<'a> {
    layout: LayoutStore<'a>,
    pin: Option<&'a Pin>,
}

impl Store for Pinned<'_> {
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError> {
        let mut entries = self.layout.entries()?;
        let Some(pin) = self.pin else {
            return Ok(entries);
        };
        let served = Some(pin.served().as_str().to_owned());
        match pin.digest() {
            Some(digest) => {
                if let Some(entry) = entries.iter_mut().find(|(_, d)| d == digest) {
                    entry.0 = served;
                }
            }
            // A tag given to the one entry of a layout that names none (as pack takes it).
            None => {
                if let [(tag @ None, _)] = entries.as_mut_slice() {
                    *tag = served;
                }
            }
        }
        Ok(entries)
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
        self.layout.read(digest)
    }

    fn upstream(&self, tag: &str) -> Result<Option<Digest>, LayoutError> {
        match self.pin {
            // The layout's own tag of the pinned entry, if it has one.
            Some(pin) if pin.digest().is_some() && pin.served().as_str() == tag => {
                let digest = pin.digest();
                let original = self
                    .layout
                    .entries()?
                    .into_iter()
                    .find_map(|(t, d)| (Some(&d) == digest).then_some(t).flatten());
                match original {
                    Some(original) => self.layout.upstream(&original),
                    None => Ok(None),
                }
            }
            _ => self.layout.upstream(tag),
        }
    }
}
