//! The server kit: the workspace `chartreg-build build` compiles the server from
//! (`scripts/make-kit.sh` writes it; the release archive carries it as `share/chartreg/kit`).
//!
//! A kit is a Cargo workspace whose root package `chartreg-bin` embeds the content folder
//! `CHARTREG_ASSETS` names, with every dependency's source in `vendor/` and a
//! `.cargo/config.toml` that points cargo there, offline. `KIT_ID` (`VERSION-<12 hex>`) names
//! it, and with it the build cache it may share. [`Kit::find`] takes the folder given, else the
//! one installed beside the running tool, and checks that it is whole before cargo sees it.

use std::fs;
use std::path::{Path, PathBuf};

use super::Error;

/// A server kit, checked to hold what a compile needs.
#[derive(Debug, Clone)]
pub struct Kit {
    /// The kit's folder (absolute).
    pub dir: PathBuf,
    /// `KIT_ID`: the version and a digest of the kit's sources.
    pub id: String,
}

/// Where a release archive installs the kit, relative to the folder holding `chartreg-build`.
pub const INSTALLED: &str = "../share/chartreg/kit";

impl Kit {
    /// The kit at `given` (`--kit` or `CHARTREG_KIT`), else the one installed beside the running
    /// executable (`bin/chartreg-build` -> `share/chartreg/kit`).
    pub fn find(given: Option<&Path>) -> Result<Kit, Error> {
        let dir = match given {
            Some(dir) => dir.to_owned(),
            None => {
                let exe = std::env::current_exe().map_err(|source| Error::Io {
                    path: PathBuf::from("/proc/self/exe"),
                    source,
                })?;
                let bin = exe.parent().unwrap_or(Path::new("/"));
                let installed = bin.join(INSTALLED);
                if !installed.is_dir() {
                    return Err(Error::NoKit { looked: installed });
                }
                installed
            }
        };
        Kit::open(&dir)
    }

    /// The kit at `dir`, checked: a workspace with a vendored source and an id.
    pub fn open(dir: &Path) -> Result<Kit, Error> {
        let dir = dir.canonicalize().map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
        for needed in [
            "Cargo.toml",
            "Cargo.lock",
            "KIT_ID",
            ".cargo/config.toml",
            "vendor",
        ] {
            if !dir.join(needed).exists() {
                return Err(Error::BrokenKit {
                    kit: dir,
                    missing: needed,
                });
            }
        }
        let id_file = dir.join("KIT_ID");
        let id = fs::read_to_string(&id_file)
            .map_err(|source| Error::Io {
                path: id_file.clone(),
                source,
            })?
            .trim()
            .to_owned();
        let valid = !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b));
        if !valid {
            return Err(Error::BadKitId { file: id_file, id });
        }
        Ok(Kit { dir, id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kit_in(dir: &Path, id: &str) {
        fs::create_dir_all(dir.join(".cargo")).unwrap();
        fs::create_dir_all(dir.join("vendor")).unwrap();
        for file in ["Cargo.toml", "Cargo.lock", ".cargo/config.toml"] {
            fs::write(dir.join(file), "").unwrap();
        }
        fs::write(dir.join("KIT_ID"), id).unwrap();
    }

    #[test]
    fn a_whole_kit_opens_with_its_id() {
        let dir = tempfile::tempdir().unwrap();
        kit_in(dir.path(), "0.1.0-0123456789ab\n");
        let kit = Kit::open(dir.path()).unwrap();
        assert_eq!(kit.id, "0.1.0-0123456789ab");
        assert!(kit.dir.is_absolute());
    }

    #[test]
    fn a_kit_without_its_sources_or_with_a_bad_id_is_named() {
        let dir = tempfile::tempdir().unwrap();
        kit_in(dir.path(), "0.1.0-0123456789ab");
        fs::remove_dir(dir.path().join("vendor")).unwrap();
        let e = Kit::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("vendor") && e.contains("make-kit"), "{e}");

        kit_in(dir.path(), "../escape");
        let e = Kit::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("KIT_ID") && e.contains("../escape"), "{e}");
    }
}
