//! `chartreg-build import-bundle`: mindthegap bundles in, one OCI image layout per repository
//! out, digests unchanged.
//!
//! 1. Each bundle is streamed once ([`storage::read`]): blobs go straight into a staging
//!    folder inside the output folder (their sha256 checked on the way), link files become
//!    each repository's tags and revisions. Nothing is extracted twice.
//! 2. The bundles' repositories merge, in the order the bundles are given: a tag names the
//!    first bundle's manifest; a later bundle's other manifest for the same tag (Helm stamps
//!    `created` at push time, so every release's bundle has its own) is kept untagged, still
//!    pullable by digest, when it holds the same layers, and is an error naming both bundles
//!    when it does not. Untagged revisions that are referrers (they have a `subject`) come
//!    along; other untagged revisions (overwritten pushes) do not.
//! 3. Each repository is written as a layout ([`chartreg_core::tree::replace`]), its blobs
//!    hard-linked from the staging folder (so a bundle needs its own size on disk once, not
//!    twice), and listed in the output folder's record as imported (`pack::imported`), which
//!    is how `pack` keeps it and merges charts packed into the same repository with it.

pub mod storage;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chartreg_core::oci::layout::REF_NAME;
use chartreg_core::oci::{Digest, RepositoryName, Tag};
use chartreg_core::tree::{self, Outcome};

use crate::pack::imported::{self, Imported};
use crate::pack::{Owner, Record};
use storage::{Bundle, Staging};

/// The staging folder's name inside the output folder (on its file system, for hard links).
const STAGING: &str = ".chartreg-import";

/// Why an import failed; nothing of a failed import's repositories was changed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{}: {why}", bundle.display())]
    Bundle { bundle: PathBuf, why: String },
    #[error("{}: entry `{entry}` {why}", bundle.display())]
    Entry {
        bundle: PathBuf,
        entry: String,
        why: String,
    },
    #[error("{repository}: {why}")]
    Repository { repository: String, why: String },
    #[error("{}: {why}", path.display())]
    Output { path: PathBuf, why: String },
}

/// What one run imports, and where.
#[derive(Debug, Clone)]
pub struct Options {
    pub bundles: Vec<PathBuf>,
    pub out: PathBuf,
    /// The chart prefix `pack` uses (for output folders written before pack kept a record).
    pub prefix: String,
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Repository -> tags imported.
    pub repositories: BTreeMap<String, usize>,
    pub written: Vec<String>,
    pub unchanged: usize,
    /// Things the user should know (kept duplicates, repositories to pack again).
    pub notes: Vec<String>,
}

/// One repository being merged from several bundles.
#[derive(Debug, Default)]
struct Merging {
    /// Tag -> (manifest, index of the bundle that tagged it).
    tags: BTreeMap<String, (Digest, usize)>,
    untagged: BTreeSet<Digest>,
    bundles: BTreeSet<usize>,
}

/// `chartreg-build import-bundle`.
pub fn import(options: &Options) -> Result<Report, ImportError> {
    if options.bundles.is_empty() {
        return Err(ImportError::Output {
            path: options.out.clone(),
            why: "give one or more bundles (mindthegap's bundle.tar) to import".into(),
        });
    }
    let out = &options.out;
    let output_error = |path: &Path| {
        let path = path.to_owned();
        move |why: String| ImportError::Output {
            path: path.clone(),
            why,
        }
    };
    std::fs::create_dir_all(out).map_err(|e| output_error(out)(e.to_string()))?;
    let mut staging =
        Staging::new(out.join(STAGING)).map_err(|e| output_error(out)(e.to_string()))?;
    let mut bundles = Vec::new();
    for path in &options.bundles {
        bundles.push(storage::read(path, &mut staging)?);
    }
    let mut report = Report::default();
    let merged = merge(&bundles, &staging, &mut report.notes)?;

    let mut record = Record::load(out, &options.prefix).map_err(output_error(out))?;
    for name in merged.keys() {
        let name = name.as_str();
        let known = record.repositories.contains_key(name) || record.imported.contains_key(name);
        if !known && out.join(name).exists() {
            return Err(ImportError::Repository {
                repository: name.to_owned(),
                why: format!(
                    "{} exists and was not written by pack or import-bundle; move it away first",
                    out.join(name).display()
                ),
            });
        }
    }
    for (name, merging) in &merged {
        let name = name.as_str();
        let repository_error = |why: String| ImportError::Repository {
            repository: name.to_owned(),
            why,
        };
        let mut files = BTreeMap::new();
        let mut manifests = Vec::new();
        for (tag, (digest, _)) in &merging.tags {
            let mut d = imported::walk(&staging.blobs, digest, &mut files)
                .map_err(|e| repository_error(format!("tag {tag}: {e}")))?;
            d.annotations.insert(REF_NAME.to_owned(), tag.clone());
            manifests.push(d);
        }
        for digest in &merging.untagged {
            if merging.tags.values().any(|(d, _)| d == digest) {
                continue;
            }
            manifests.push(
                imported::walk(&staging.blobs, digest, &mut files).map_err(repository_error)?,
            );
        }
        let tree = imported::layout_tree(name, &manifests, files, true);
        match tree::replace(&tree, out, name).map_err(|e| repository_error(e.to_string()))? {
            Outcome::Written => report.written.push(name.to_owned()),
            Outcome::Unchanged => report.unchanged += 1,
        }
        report
            .repositories
            .insert(name.to_owned(), merging.tags.len());
        if matches!(record.repositories.get(name), Some(Owner::Chart { .. })) {
            report.notes.push(format!(
                "{name} is also packed from charts: run `chartreg-build pack` (make assets) to merge them again"
            ));
        }
        let names = merging
            .bundles
            .iter()
            .map(|&i| shown(&bundles[i].path))
            .collect();
        record.imported.insert(
            name.to_owned(),
            Imported {
                bundles: names,
                manifests,
            },
        );
        // Written after each repository, so that a later failure leaves none unrecorded.
        record.save(out).map_err(output_error(out))?;
    }
    Ok(report)
}

/// A bundle as the record names it: its file name (the record is the same on every machine).
fn shown(path: &Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// Every bundle's repositories merged (see the module doc).
fn merge(
    bundles: &[Bundle],
    staging: &Staging,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<RepositoryName, Merging>, ImportError> {
    let mut merged: BTreeMap<RepositoryName, Merging> = BTreeMap::new();
    for (i, bundle) in bundles.iter().enumerate() {
        for (name, stored) in &bundle.repositories {
            let repository_error = |why: String| ImportError::Repository {
                repository: name.as_str().to_owned(),
                why,
            };
            let merging = merged.entry(name.clone()).or_default();
            merging.bundles.insert(i);
            for (tag, digest) in &stored.tags {
                if let Err(e) = tag.parse::<Tag>() {
                    return Err(repository_error(format!(
                        "{}: tag `{tag}`: {e}",
                        bundle.path.display()
                    )));
                }
                let Some((first, by)) = merging.tags.get(tag) else {
                    merging.tags.insert(tag.clone(), (digest.clone(), i));
                    continue;
                };
                if first == digest {
                    continue;
                }
                let content = |d: &Digest| {
                    imported::content_of(&staging.blobs, d)
                        .map_err(|e| repository_error(format!("tag {tag}: {e}")))
                };
                let (a, b) = (&bundles[*by].path, &bundle.path);
                if content(first)? != content(digest)? {
                    return Err(repository_error(format!(
                        "tag {tag} holds other layers in {} ({first}) than in {} ({digest}); remove one of them",
                        a.display(),
                        b.display()
                    )));
                }
                notes.push(format!(
                    "{}:{tag}: {} and {} hold the same layers in two manifests (pushed twice); \
                     {first} keeps the tag, {digest} answers by digest",
                    name.as_str(),
                    shown(a),
                    shown(b)
                ));
                merging.untagged.insert(digest.clone());
            }
            for digest in &stored.revisions {
                let subject = staging
                    .read(digest)
                    .and_then(|data| serde_json::from_slice::<serde_json::Value>(&data).ok())
                    .is_some_and(|v| v.get("subject").is_some());
                if subject {
                    merging.untagged.insert(digest.clone());
                }
            }
        }
    }
    Ok(merged)
}
