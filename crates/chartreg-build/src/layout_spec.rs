//! `--layout DIR=REPOSITORY[:TAG][@DIGEST]`: which layout folder is served as which
//! repository, and, when only one image of it is taken, which: by tag, by digest (served as
//! `digest-sha256-<hex>`), or by digest served under the tag (`crate::pin`). The flag parses
//! into one, and so do the content file's `layouts:` and the lock's images; `pack` reads the
//! layout each names.

use std::path::PathBuf;
use std::str::FromStr;

use chartreg_core::oci::{NameError, RepositoryName};

use crate::pin::{Pin, PinError};

/// `DIR=REPOSITORY[:TAG][@DIGEST]`, as given to `--layout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutSpec {
    pub dir: PathBuf,
    pub repository: RepositoryName,
    /// The one image taken, if only one is.
    pub pin: Option<Pin>,
}

/// Why a `DIR=REPOSITORY[:TAG]` is not one.
#[derive(Debug, thiserror::Error)]
pub enum LayoutSpecError {
    #[error("`{0}` is not DIR=REPOSITORY or DIR=REPOSITORY:TAG (or @DIGEST, or :TAG@DIGEST)")]
    NoEquals(String),
    #[error("`{0}` names no layout folder before `=`")]
    NoFolder(String),
    #[error("`{repository}` is not a repository name: {source}")]
    Repository {
        repository: String,
        source: NameError,
    },
    #[error("`{target}` is not REPOSITORY[:TAG][@DIGEST]: {source}")]
    Pin {
        target: String,
        source: Box<PinError>,
    },
}

impl FromStr for LayoutSpec {
    type Err = LayoutSpecError;

    fn from_str(s: &str) -> Result<Self, LayoutSpecError> {
        let Some((dir, target)) = s.rsplit_once('=') else {
            return Err(LayoutSpecError::NoEquals(s.to_owned()));
        };
        if dir.is_empty() {
            return Err(LayoutSpecError::NoFolder(s.to_owned()));
        }
        // A repository name holds neither `:` nor `@`: what follows the first is the pin.
        let (repository, pin) = match target.find([':', '@']) {
            Some(i) => {
                let (repository, rest) = target.split_at(i);
                let text = rest.strip_prefix(':').unwrap_or(rest);
                let pin = text
                    .strip_prefix('@')
                    .unwrap_or(text)
                    .parse::<Pin>()
                    .map_err(|source| LayoutSpecError::Pin {
                        target: target.to_owned(),
                        source: Box::new(source),
                    })?;
                (repository, Some(pin))
            }
            None => (target, None),
        };
        Ok(LayoutSpec {
            dir: PathBuf::from(dir),
            repository: repository
                .parse()
                .map_err(|source| LayoutSpecError::Repository {
                    repository: repository.to_owned(),
                    source,
                })?,
            pin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("dir=images/app", Ok(("dir", "images/app", None)))]
    #[case("a=b=images/app:v1", Ok(("a=b", "images/app", Some(":v1"))))]
    #[case("dir", Err("is not DIR=REPOSITORY"))]
    #[case("=images/app", Err("names no layout folder"))]
    #[case("dir=Images/app", Err("is not a repository name"))]
    #[case("dir=images/app:bad tag", Err("not allowed in a tag"))]
    #[case(
        "dir=images/app@sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291",
        Ok(("dir", "images/app", Some("@sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291")))
    )]
    #[case(
        "dir=images/app:sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291",
        Ok(("dir", "images/app", Some("@sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291")))
    )]
    #[case(
        "dir=images/app:v1@sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291",
        Ok(("dir", "images/app", Some(":v1@sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291")))
    )]
    #[case("dir=images/app@sha256:b722", Err("64 lowercase hex"))]
    fn layout_specs(
        #[case] text: &str,
        #[case] expected: Result<(&str, &str, Option<&str>), &str>,
    ) {
        match (text.parse::<LayoutSpec>(), expected) {
            (Ok(spec), Ok((dir, repository, tag))) => {
                assert_eq!(spec.dir, PathBuf::from(dir));
                assert_eq!(spec.repository.as_str(), repository);
                let pin = spec.pin.as_ref().map(ToString::to_string);
                assert_eq!(pin.as_deref(), tag);
            }
            (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}
