//! Reading a YAML file a person wrote (the content file, the upstream lists, the lock): its
//! text, checked against [`crate::yaml`]'s bounds on nesting and alias expansion, then
//! serde_yaml_ng into the type that says what the file may hold (unknown keys are refused where
//! the type says so). Every failure names the file; the YAML ones also the line and column.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// The most of a content file, list or lock read (mindthegap lists of thousands of entries are
/// a few MiB).
const LIMIT: u64 = 64 << 20;

/// Why a YAML file could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Invalid YAML or an unknown key (serde_yaml names it, with its line and column).
    #[error("{}: {source}", path.display())]
    Yaml {
        path: PathBuf,
        source: serde_yaml_ng::Error,
    },
    /// Nested or expanding past what any such file needs.
    #[error("{}: {source}", path.display())]
    Bounds {
        path: PathBuf,
        source: crate::yaml::YamlError,
    },
}

/// The file at `path`, decoded.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T, Error> {
    let text =
        chartreg_core::file::read_limited_to_string(path, LIMIT).map_err(|source| Error::Read {
            path: path.to_owned(),
            source,
        })?;
    decode(path, &text)
}

/// The file at `path`, decoded; `None` when there is no such file.
pub fn read_if_present<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, Error> {
    match chartreg_core::file::read_limited_to_string(path, LIMIT) {
        Ok(text) => decode(path, &text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

fn decode<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, Error> {
    crate::yaml::check(text.as_bytes()).map_err(|source| Error::Bounds {
        path: path.to_owned(),
        source,
    })?;
    serde_yaml_ng::from_str(text).map_err(|source| Error::Yaml {
        path: path.to_owned(),
        source,
    })
}
