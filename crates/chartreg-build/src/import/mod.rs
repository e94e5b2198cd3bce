//! `chartreg-build import-bundle`: mindthegap bundles in, one OCI image layout per repository
//! out, digests unchanged.
//!
//! 1. Each bundle is streamed once ([`storage::read`]): blobs go straight into a staging
//!    folder inside the new output folder (their sha256 checked on the way), link files become
//!    each repository's tags and revisions. Nothing is extracted twice. An image the bundle's
//!    `images.yaml` lists under one registry is named in that registry's namespace
//!    (`quay.io/jetstack/...`, module `listed`), as `fetch` and `pack` name it.
//! 2. The bundles' repositories merge, in the order the bundles are given: a tag names the
//!    first bundle's manifest; a later bundle's other manifest for the same tag (Helm stamps
//!    `created` at push time, so every release's bundle has its own) is kept untagged, still
//!    pullable by digest, when it holds the same layers, and is an error naming both bundles
//!    when it does not. Untagged revisions that are referrers (they have a `subject`) come
//!    along; other untagged revisions (overwritten pushes) do not.
//! 3. Each repository is written as a layout ([`chartreg_core::tree::write_into`]), its blobs
//!    hard-linked from the staging folder (so a bundle needs its own size on disk once, not
//!    twice), and listed in the output folder's record as imported (`pack::imported`), which
//!    is how `pack` keeps it and merges charts packed into the same repository with it.
//!
//! The output folder is replaced whole (`crate::durable::Generation`): the staging folder lies
//! inside the new folder while it is filled, what the run does not write is linked from the
//! current folder, and the new folder is swapped in once every repository and the record are
//! written. A failed or interrupted import leaves the output folder as it was.

pub mod command;
mod listed;
pub mod storage;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::oci::layout::REF_NAME;
use chartreg_core::oci::{Digest, RepositoryName, Tag, TagError};
use chartreg_core::shown::escaped;
use chartreg_core::tree::{self, Outcome};

use crate::pack::imported::{self, Imported};
use crate::pack::{Owner, Record, RecordError};
use storage::{Bundle, Staging};

use crate::durable::{self, Generation};
use crate::pack::IMPORT_STAGING as STAGING;

/// Why an import failed; nothing of a failed import's repositories was changed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{}: give one or more bundles (mindthegap's bundle.tar) to import", out.display())]
    NoBundles { out: PathBuf },
    #[error("{}: {why}", bundle.display())]
    Bundle {
        bundle: PathBuf,
        why: storage::BundleProblem,
    },
    #[error("{}: entry `{}` {why}", bundle.display(), escaped(entry))]
    Entry {
        bundle: PathBuf,
        entry: String,
        why: Box<storage::EntryProblem>,
    },
    #[error("{repository}: {why}")]
    Repository {
        repository: String,
        why: Box<RepositoryProblem>,
    },
    #[error("{}: {source}", path.display())]
    Output { path: PathBuf, source: io::Error },
    #[error("{}: {source}", out.display())]
    Record { out: PathBuf, source: RecordError },
    /// The output folder could not be replaced (or the run was stopped): it is as it was.
    #[error("{0}")]
    Durable(#[from] durable::Error),
}

/// Why one repository could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryProblem {
    #[error("{} exists and was not written by pack or import-bundle; move it away first", .0.display())]
    NotOwned(PathBuf),
    #[error("{}: tag `{tag}`: {source}", bundle.display())]
    Tag {
        bundle: PathBuf,
        tag: String,
        source: TagError,
    },
    #[error("tag {tag}: {source}")]
    Tagged {
        tag: String,
        source: imported::Error,
    },
    #[error("{0}")]
    Untagged(imported::Error),
    #[error(
        "tag {tag} holds other layers in {} ({first}) than in {} ({second}); remove one of them",
        first_bundle.display(),
        second_bundle.display()
    )]
    OtherLayers {
        tag: String,
        first_bundle: PathBuf,
        first: Digest,
        second_bundle: PathBuf,
        second: Digest,
    },
    #[error("revision {digest}: {source}")]
    Revision { digest: Digest, source: io::Error },
    #[error("{0}")]
    Write(tree::WriteError),
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
    /// Tag -> (manifest, the bundle that tagged it).
    tags: BTreeMap<String, (Digest, PathBuf)>,
    untagged: BTreeSet<Digest>,
    /// The bundles holding the repository, by their place on the command line.
    bundles: BTreeMap<usize, PathBuf>,
}

/// `chartreg-build import-bundle`.
pub fn import(options: &Options) -> Result<Report, ImportError> {
    if options.bundles.is_empty() {
        return Err(ImportError::NoBundles {
            out: options.out.clone(),
        });
    }
    let out = &options.out;
    let output_error = |source: io::Error| ImportError::Output {
        path: out.clone(),
        source,
    };
    let record_error = |source: RecordError| ImportError::Record {
        out: out.clone(),
        source,
    };
    let generation = Generation::begin(out, "import")?;
    let mut staging = Staging::new(generation.path().join(STAGING)).map_err(output_error)?;
    let mut bundles = Vec::new();
    for path in &options.bundles {
        bundles.push(storage::read(path, &mut staging)?);
    }
    let mut report = Report::default();
    for bundle in &bundles {
        report.notes.extend(bundle.notes.iter().cloned());
    }
    let merged = merge(&bundles, &staging, &mut report.notes)?;

    let mut record = Record::load(out, &options.prefix).map_err(record_error)?;
    for name in merged.keys() {
        let name = name.as_str();
        let known = record.repositories.contains_key(name) || record.imported.contains_key(name);
        if !known && out.join(name).exists() {
            return Err(ImportError::Repository {
                repository: name.to_owned(),
                why: Box::new(RepositoryProblem::NotOwned(out.join(name))),
            });
        }
    }
    // What this run does not write is taken over as it is: pack's repositories, other imports.
    let written_here = |path: &str| {
        crate::pack::leftover(path)
            || [crate::pack::RECORD_FILE, crate::pack::GITIGNORE_FILE].contains(&path)
            || merged.keys().any(|name| {
                path.strip_prefix(name.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    };
    durable::link_tree(out, generation.path(), &written_here)?;
    for (name, merging) in &merged {
        durable::stop::check().map_err(durable::Error::from)?;
        let name = name.as_str();
        let repository_error = |why: RepositoryProblem| ImportError::Repository {
            repository: name.to_owned(),
            why: Box::new(why),
        };
        let mut files = BTreeMap::new();
        let mut manifests = Vec::new();
        for (tag, (digest, _)) in &merging.tags {
            let mut d = imported::walk(&staging.blobs, digest, &mut files).map_err(|source| {
                repository_error(RepositoryProblem::Tagged {
                    tag: tag.clone(),
                    source,
                })
            })?;
            d.annotations.insert(REF_NAME.to_owned(), tag.clone());
            manifests.push(d);
        }
        for digest in &merging.untagged {
            if merging.tags.values().any(|(d, _)| d == digest) {
                continue;
            }
            manifests.push(
                imported::walk(&staging.blobs, digest, &mut files)
                    .map_err(|e| repository_error(RepositoryProblem::Untagged(e)))?,
            );
        }
        let tree = imported::layout_tree(name, &manifests, files, true)
            .map_err(|e| repository_error(RepositoryProblem::Untagged(e)))?;
        match tree::write_into(&tree, out, name, &generation.path().join(name))
            .map_err(|e| repository_error(RepositoryProblem::Write(e)))?
        {
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
        let names = merging.bundles.values().map(|path| shown(path)).collect();
        record.imported.insert(
            name.to_owned(),
            Imported {
                bundles: names,
                manifests,
            },
        );
    }
    record.save(generation.path()).map_err(record_error)?;
    // The blobs are linked into the repositories: the staging folder is no part of the output.
    drop(staging);
    generation.commit()?;
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
            let repository_error = |why: RepositoryProblem| ImportError::Repository {
                repository: name.as_str().to_owned(),
                why: Box::new(why),
            };
            let merging = merged.entry(name.clone()).or_default();
            merging.bundles.insert(i, bundle.path.clone());
            for (tag, digest) in &stored.tags {
                if let Err(source) = tag.parse::<Tag>() {
                    return Err(repository_error(RepositoryProblem::Tag {
                        bundle: bundle.path.clone(),
                        tag: tag.clone(),
                        source,
                    }));
                }
                let Some((first, by)) = merging.tags.get(tag) else {
                    merging
                        .tags
                        .insert(tag.clone(), (digest.clone(), bundle.path.clone()));
                    continue;
                };
                if first == digest {
                    continue;
                }
                let content = |d: &Digest| {
                    imported::content_of(&staging.blobs, d).map_err(|source| {
                        repository_error(RepositoryProblem::Tagged {
                            tag: tag.clone(),
                            source,
                        })
                    })
                };
                let (a, b) = (by, &bundle.path);
                if content(first)? != content(digest)? {
                    return Err(repository_error(RepositoryProblem::OtherLayers {
                        tag: tag.clone(),
                        first_bundle: a.clone(),
                        first: first.clone(),
                        second_bundle: b.clone(),
                        second: digest.clone(),
                    }));
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
                let data = staging.read(digest).map_err(|source| {
                    repository_error(RepositoryProblem::Revision {
                        digest: digest.clone(),
                        source,
                    })
                })?;
                // A revision that is not JSON, or larger than a manifest may be, is no
                // manifest, so no referrer: it stays behind with the other untagged revisions.
                let subject = data
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
