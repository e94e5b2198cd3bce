//! `fetch --config FILE`: the content file's `verify:` policy applied to what fetch takes,
//! before it takes the place of what was there (the same checks pack makes: `crate::verify`).
//!
//! 1. A chart package and its `.prov`, fetched beside their places, are checked with
//!    `verify.charts`; an image repository's layout, filled beside its place, has each tagged
//!    image checked with `verify.images` under the name pack serves it as (`quay.io/org/app`,
//!    see `lock::served_repository`), so that the policy's patterns match the same names at
//!    fetch and at pack.
//! 2. A refusal (`mode: require`, an artifact a `require` pattern names that does not verify)
//!    is a failure of that entry, naming the artifact, its digest, the rule and why (the line
//!    pack prints): nothing of it takes its place, and the lock is not written. A warning
//!    (`mode: warn`, or a signature that fails on an artifact no pattern names) is printed and
//!    the fetch goes on.
//! 3. Who signed goes into the lock (`verified`). With `--locked`, an artifact the lock records
//!    as verified must be verified by the same signers now: otherwise the entry fails, naming
//!    what the lock records and what is found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chartreg_core::content::Evidence;
use chartreg_core::oci::Digest;

use crate::verify::{Checked, ImageChecked, Policy};

use super::problem::Problem;

/// Why the policy cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    ContentFile(#[from] crate::content_file::Error),
    #[error("{}: verify: {source}", path.display())]
    Policy {
        path: PathBuf,
        source: crate::verify::PolicyError,
    },
}

/// The policy fetch checks against, and what checking said so far.
#[derive(Debug)]
pub struct Verifier {
    /// The content file the policy is in.
    pub config: PathBuf,
    pub policy: Policy,
    notes: Mutex<Notes>,
}

/// What the checks had to say besides refusals: who signed what, and the warnings.
#[derive(Debug, Clone, Default)]
pub struct Notes {
    /// `chart NAME VERSION: key ...` and `image REPOSITORY:TAG: key ...` lines.
    pub verified: Vec<String>,
    /// `verify: ...` lines, as pack words them.
    pub warnings: Vec<String>,
}

/// Who signed each tag of a layout, or the problem of each tag that failed.
pub type Tags = Result<BTreeMap<String, Vec<Evidence>>, Vec<(String, Problem)>>;

/// What one artifact's check came to, whatever its kind.
enum Outcome {
    Verified(Vec<Evidence>),
    NotSigned,
    Failed { refuse: bool, line: String },
}

impl Verifier {
    /// The `verify:` section of the content file `config` (none: nothing is checked).
    pub fn read(config: &Path) -> Result<Verifier, Error> {
        let file = crate::content_file::ContentFile::read(config)?;
        let policy = match &file.verify {
            Some(section) => Policy::of(config, section).map_err(|source| Error::Policy {
                path: config.to_owned(),
                source,
            })?,
            None => Policy::default(),
        };
        Ok(Verifier {
            config: config.to_owned(),
            policy,
            notes: Mutex::new(Notes::default()),
        })
    }

    /// What the checks noted, sorted (entries are checked in parallel).
    pub fn notes(&self) -> Notes {
        let mut notes = self.notes.lock().map(|n| n.clone()).unwrap_or_default();
        notes.verified.sort();
        notes.warnings.sort();
        notes
    }

    fn note(&self, verified: Option<String>, warning: Option<String>) {
        if let Ok(mut notes) = self.notes.lock() {
            notes.verified.extend(verified);
            notes.warnings.extend(warning);
        }
    }

    /// Checks chart `name` `version`, its package at `package` (sha256 `sha256`, hex) and its
    /// `.prov` at `prov` when there is one; `locked` (with `--locked`) is who the lock records
    /// signed it. Who signed it, if the keyring verified it.
    pub fn chart(
        &self,
        name: &str,
        version: &str,
        sha256: &str,
        prov: Option<&Path>,
        locked: Option<Option<&Evidence>>,
    ) -> Result<Option<Evidence>, Problem> {
        let Some(policy) = &self.policy.charts else {
            return Ok(None);
        };
        let prov = match prov {
            Some(path) => Some(std::fs::read(path).map_err(|e| Problem::file(path, e))?),
            None => None,
        };
        let digest: Digest = Problem::digest(&format!("sha256:{sha256}"))?;
        let checked = crate::verify::check_chart(
            policy,
            name,
            version,
            prov.as_deref(),
            &format!("{name}-{version}.tgz"),
            &digest,
        );
        let outcome = match checked {
            Checked::Verified(signer) => Outcome::Verified(vec![signer.evidence()]),
            Checked::NotSigned => Outcome::NotSigned,
            Checked::Failed { refuse, line } => Outcome::Failed { refuse, line },
        };
        let locked: Option<Vec<Evidence>> = locked.map(|l| l.into_iter().cloned().collect());
        let signers = self.decide(&format!("chart {name} {version}"), outcome, locked)?;
        Ok(signers.into_iter().next())
    }

    /// Checks every tagged image of the layout `dir`, served as `repository`; `locked` (with
    /// `--locked`) is who the lock records signed each tag. Who signed each tag, or each
    /// failing tag's problem; the outer error when the layout's signatures cannot be read.
    pub fn layout(
        &self,
        repository: &str,
        dir: &Path,
        locked: Option<&BTreeMap<String, Vec<Evidence>>>,
    ) -> Result<Tags, Problem> {
        let Some(policy) = &self.policy.images else {
            return Ok(Ok(BTreeMap::new()));
        };
        let checked = crate::verify::check_layout(policy, repository, dir, None).map_err(|e| {
            Problem::Signatures {
                source: std::sync::Arc::new(e),
            }
        })?;
        let mut signed = BTreeMap::new();
        let mut failures = Vec::new();
        for ImageChecked {
            tag,
            checked,
            repository,
            ..
        } in checked
        {
            let outcome = match checked {
                Checked::Verified(signers) => Outcome::Verified(signers),
                Checked::NotSigned => Outcome::NotSigned,
                Checked::Failed { refuse, line } => Outcome::Failed { refuse, line },
            };
            let was = locked.map(|l| l.get(&tag).cloned().unwrap_or_default());
            match self.decide(&format!("image {repository}:{tag}"), outcome, was) {
                Ok(signers) => {
                    signed.insert(tag, signers);
                }
                Err(problem) => failures.push((tag, problem)),
            }
        }
        Ok(if failures.is_empty() {
            Ok(signed)
        } else {
            Err(failures)
        })
    }

    /// What `outcome` comes to for `what`, given who the lock records signed it (`locked`,
    /// with `--locked`): its signers (sorted), or why the entry fails.
    fn decide(
        &self,
        what: &str,
        outcome: Outcome,
        locked: Option<Vec<Evidence>>,
    ) -> Result<Vec<Evidence>, Problem> {
        let locked = locked.filter(|l| !l.is_empty()).map(|mut l| {
            l.sort();
            l.dedup();
            l
        });
        let (signers, now) = match outcome {
            Outcome::Verified(mut signers) => {
                signers.sort();
                signers.dedup();
                let now = format!("verified by {}", said(&signers));
                (signers, now)
            }
            Outcome::NotSigned => (Vec::new(), "it is not signed".to_owned()),
            Outcome::Failed { refuse: true, line } => {
                return Err(Problem::Refused {
                    config: self.config.clone(),
                    line,
                    locked: locked.as_deref().map(said),
                });
            }
            Outcome::Failed {
                refuse: false,
                line,
            } => {
                let now = format!("it does not verify ({line})");
                self.note(None, Some(format!("verify: {line}")));
                (Vec::new(), now)
            }
        };
        if let Some(locked) = locked
            && locked != signers
        {
            return Err(Problem::NotAsLocked {
                locked: said(&locked),
                now,
            });
        }
        if !signers.is_empty() {
            self.note(Some(format!("{what}: {}", said(&signers))), None);
        }
        Ok(signers)
    }
}

/// `key sha256:... (.sig), identity ... (issuer ..., bundle)`.
fn said(signers: &[Evidence]) -> String {
    signers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
