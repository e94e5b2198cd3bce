//! `--layout DIR=REPOSITORY[:TAG]`: which layout folder is served as which repository, and
//! with which tag when only one is taken.

use std::path::PathBuf;
use std::str::FromStr;

use chartreg_core::oci::{NameError, RepositoryName, Tag, TagError};

/// `DIR=REPOSITORY[:TAG]`, as given to `--layout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutSpec {
    pub dir: PathBuf,
    pub repository: RepositoryName,
    pub tag: Option<Tag>,
}

/// Why a `DIR=REPOSITORY[:TAG]` is not one.
#[derive(Debug, thiserror::Error)]
pub enum LayoutSpecError {
    #[error("`{0}` is not DIR=REPOSITORY or DIR=REPOSITORY:TAG")]
    NoEquals(String),
    #[error("`{0}` names no layout folder before `=`")]
    NoFolder(String),
    #[error("`{repository}` is not a repository name: {source}")]
    Repository {
        repository: String,
        source: NameError,
    },
    #[error("`{tag}` is not a tag: {source}")]
    Tag { tag: String, source: TagError },
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
        let (repository, tag) = match target.split_once(':') {
            Some((repository, tag)) => (repository, Some(tag)),
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
            tag: tag
                .map(|t| {
                    t.parse().map_err(|source| LayoutSpecError::Tag {
                        tag: t.to_owned(),
                        source,
                    })
                })
                .transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("dir=images/app", Ok(("dir", "images/app", None)))]
    #[case("a=b=images/app:v1", Ok(("a=b", "images/app", Some("v1"))))]
    #[case("dir", Err("is not DIR=REPOSITORY"))]
    #[case("=images/app", Err("names no layout folder"))]
    #[case("dir=Images/app", Err("is not a repository name"))]
    #[case("dir=images/app:bad tag", Err("is not a tag"))]
    fn layout_specs(
        #[case] text: &str,
        #[case] expected: Result<(&str, &str, Option<&str>), &str>,
    ) {
        match (text.parse::<LayoutSpec>(), expected) {
            (Ok(spec), Ok((dir, repository, tag))) => {
                assert_eq!(spec.dir, PathBuf::from(dir));
                assert_eq!(spec.repository.as_str(), repository);
                assert_eq!(spec.tag.as_ref().map(Tag::as_str), tag);
            }
            (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}
