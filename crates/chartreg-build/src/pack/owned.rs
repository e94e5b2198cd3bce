//! Who owns what in the output folder: the record `pack` keeps there
//! (`.chartreg-pack.json`), and the `.gitignore` it writes beside it ([`keep`] writes each of
//! the files pack keeps beside the repositories).
//!
//! The record lists every repository `pack` wrote and from what: chart repositories (by
//! prefix) and image layout repositories (by the layout folder). A run rewrites the chart
//! repositories of its prefix and deletes those of them it no longer has chart inputs for; it
//! rewrites the repository of each `--layout` it is given and keeps those of earlier
//! `--layout`s; it never touches a repository the record does not list (hand-placed
//! layouts). Repositories `import-bundle` wrote are listed apart, with the manifests imported
//! (`imported`): pack keeps them, and merges a chart repository of the same name with them.
//! The `.gitignore` lists the layout repositories, which are rebuilt from their inputs and not
//! committed (imported repositories are committed: their bundles are not inputs of `pack`).
//!
//! Output folders written before the record existed: the repositories under `<out>/<prefix>`
//! are taken to be chart repositories of that prefix (what `pack` then replaced as a whole).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::imported::Imported;

/// The record's file name in the output folder.
pub const RECORD_FILE: &str = ".chartreg-pack.json";
pub const GITIGNORE_FILE: &str = ".gitignore";

/// Why the record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{}: not a record pack wrote: {source}", path.display())]
    NotRecord {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("the record cannot be written as JSON: {0}")]
    Unwritable(#[source] serde_json::Error),
}

/// What wrote a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Owner {
    /// Chart packages and folders, packed under `prefix`.
    Chart { prefix: String },
    /// An OCI image layout, from the folder `from` (as it was given).
    Layout { from: String },
}

/// Every repository `pack` wrote, by name, and what `import-bundle` imported.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub repositories: BTreeMap<String, Owner>,
    /// Repositories imported from bundles: kept by `pack`, and merged with its charts when a
    /// chart repository has the same name (see `imported`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub imported: BTreeMap<String, Imported>,
}

impl Record {
    /// The record in `out`: read from its file, or made up for a folder written before there
    /// was one (see the module doc); `None` when the file exists but cannot be read.
    pub fn load(out: &Path, prefix: &str) -> Result<Record, RecordError> {
        let path = out.join(RECORD_FILE);
        match fs::read(&path) {
            Ok(data) => serde_json::from_slice(&data)
                .map_err(|source| RecordError::NotRecord { path, source }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut record = Record::default();
                for name in layouts_under(out, prefix) {
                    record.repositories.insert(
                        name,
                        Owner::Chart {
                            prefix: prefix.to_owned(),
                        },
                    );
                }
                Ok(record)
            }
            Err(source) => Err(RecordError::Io { path, source }),
        }
    }

    /// The record as it is written: sorted, indented JSON, ending in a newline.
    pub fn to_bytes(&self) -> Result<Vec<u8>, RecordError> {
        let mut data = serde_json::to_vec_pretty(self).map_err(RecordError::Unwritable)?;
        data.push(b'\n');
        Ok(data)
    }

    /// Writes the record and the `.gitignore` into `out` (see [`keep`]; the `.gitignore`
    /// removed when there is nothing to ignore).
    pub fn save(&self, out: &Path) -> Result<(), RecordError> {
        keep(out, RECORD_FILE, Some(&self.to_bytes()?))?;
        keep(out, GITIGNORE_FILE, self.gitignore().as_deref())
    }

    /// The `.gitignore` for the output folder: the layout repositories, or nothing.
    pub fn gitignore(&self) -> Option<Vec<u8>> {
        let layouts: Vec<&String> = self
            .repositories
            .iter()
            .filter(|(_, owner)| matches!(owner, Owner::Layout { .. }))
            .map(|(name, _)| name)
            .collect();
        if layouts.is_empty() {
            return None;
        }
        let mut text = String::from(
            "# Written by chartreg-build pack: image layouts are rebuilt from their inputs\n\
             # (see the content file), not committed.\n",
        );
        for name in layouts {
            text.push_str(&format!("/{name}/\n"));
        }
        Some(text.into_bytes())
    }
}

/// Writes `data` as the file `file` pack keeps in `out`, replaced by a rename and only when it
/// changed; with `None`, removes the file.
pub fn keep(out: &Path, file: &str, data: Option<&[u8]>) -> Result<(), RecordError> {
    let path = out.join(file);
    let failed = |source: io::Error| RecordError::Io {
        path: path.clone(),
        source,
    };
    match data {
        Some(data) if fs::read(&path).ok().as_deref() != Some(data) => {
            // Hidden while it is staged: a run cut short leaves nothing the content holds.
            let staged = out.join(format!(".{}.new", file.trim_start_matches('.')));
            fs::write(&staged, data).map_err(failed)?;
            fs::rename(&staged, &path).map_err(failed)?;
        }
        None if path.exists() => fs::remove_file(&path).map_err(failed)?,
        _ => {}
    }
    Ok(())
}

/// Whether `path` (relative to the output folder, `/`-separated) is what an interrupted run of
/// an earlier chartreg-build left inside it: a repository's staging or old folder
/// (`.<name>.pack-new`, `.<name>.pack-old`), a bookkeeping file's staged copy (`.<file>.new`),
/// `import-bundle`'s blob staging (`.chartreg-import`). A run leaves them out of the new
/// folder; `pack --check` names them.
pub fn leftover(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == IMPORT_STAGING
        || (name.starts_with('.')
            && (name.ends_with(".pack-new")
                || name.ends_with(".pack-old")
                || name.ends_with(".new")))
}

/// `import-bundle`'s blob staging folder, inside the new output folder while it is filled.
pub const IMPORT_STAGING: &str = ".chartreg-import";

/// The repositories (folders holding an `oci-layout`) under `<out>/<prefix>`, by name.
pub fn layouts_under(out: &Path, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![out.join(prefix)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        if dir.join("oci-layout").is_file()
            && let Ok(relative) = dir.strip_prefix(out)
        {
            let name: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            found.push(name.join("/"));
        }
        for entry in entries.flatten() {
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if path.is_dir() && !hidden && path.file_name().is_some_and(|n| n != "blobs") {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_and_ignore_layouts() {
        let mut record = Record::default();
        record.repositories.insert(
            "charts/a".into(),
            Owner::Chart {
                prefix: "charts".into(),
            },
        );
        record.repositories.insert(
            "images/x".into(),
            Owner::Layout {
                from: "images/x".into(),
            },
        );
        let bytes = record.to_bytes().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains(r#""kind": "layout""#), "{text}");
        assert_eq!(serde_json::from_slice::<Record>(&bytes).unwrap(), record);
        assert_eq!(
            String::from_utf8(record.gitignore().unwrap())
                .unwrap()
                .lines()
                .last(),
            Some("/images/x/")
        );
        assert_eq!(Record::default().gitignore(), None);
    }

    #[test]
    fn folders_without_a_record_own_their_prefix() {
        let dir = tempfile::tempdir().unwrap();
        for repo in ["charts/a", "charts/b/c", "other/x"] {
            let path = dir.path().join(repo);
            fs::create_dir_all(path.join("blobs/sha256")).unwrap();
            fs::write(path.join("oci-layout"), "{}").unwrap();
        }
        let record = Record::load(dir.path(), "charts").unwrap();
        assert_eq!(
            record.repositories.keys().collect::<Vec<_>>(),
            ["charts/a", "charts/b/c"]
        );
        fs::write(dir.path().join(RECORD_FILE), "not json").unwrap();
        assert!(
            Record::load(dir.path(), "charts")
                .unwrap_err()
                .to_string()
                .contains(RECORD_FILE)
        );
    }
}
