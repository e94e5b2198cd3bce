//! What an image's signature names: the repository the image is pushed to. cosign writes it as
//! the payload's `critical.identity.docker-reference`; containers/image (CRI-O, Podman,
//! OpenShift, skopeo) compares it with the repository it pulls from (`sigstoreSigned`, whose
//! default `signedIdentity` is `matchRepoDigestOrExact`), so a signature naming any other
//! repository is refused there.
//!
//! [`signed_identity`] finds it:
//!
//! 1. `--repository HOST[:PORT]/PATH`, else
//! 2. `image.repository` of the deploy chart's values file: `--values FILE`, else
//!    `chartreg-values.yaml` (the one `init` writes) beside `--config`, else in the current
//!    folder;
//! 3. neither: signing is refused, naming `--repository`.
//!
//! A [`Repository`] is a repository, not an image (no tag, no digest), and its first component
//! names the registry the way image references read one (a `.` or a port, or `localhost`): a
//! bare `chartreg`, the placeholder `init` writes, would be Docker Hub's
//! `docker.io/library/chartreg`, where no team pushes its registry. Docker Hub's names are
//! written as nodes name them (`index.docker.io/x` is `docker.io/library/x`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;

use crate::chart_images::reference::{ImageRef, ReferenceError};

/// The values file `init` writes, read for `image.repository` when no `--values` is given.
pub const VALUES_FILE: &str = "chartreg-values.yaml";

/// A repository an image is pushed to: `HOST[:PORT]/PATH`, as cosign names it in a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository(String);

impl Repository {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Repository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a text is not a repository to sign for.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    #[error(
        "`{0}` names an image, not a repository: give it without a tag or digest (HOST/PATH, e.g. registry.example/platform/chartreg)"
    )]
    Image(String),
    #[error(
        "`{0}` names no registry: give the repository the image is pushed to as HOST[:PORT]/PATH (e.g. registry.example/platform/chartreg; on Docker Hub docker.io/ORG/NAME)"
    )]
    NoRegistry(String),
    #[error(transparent)]
    Reference(#[from] ReferenceError),
}

impl FromStr for Repository {
    type Err = RepositoryError;

    fn from_str(text: &str) -> Result<Repository, RepositoryError> {
        let last = text.rsplit('/').next().unwrap_or(text);
        if text.contains('@') || last.contains(':') {
            return Err(RepositoryError::Image(text.to_owned()));
        }
        let names_registry = text
            .split_once('/')
            .is_some_and(|(first, _)| first.contains(['.', ':']) || first == "localhost");
        if !names_registry {
            return Err(RepositoryError::NoRegistry(text.to_owned()));
        }
        let parsed = ImageRef::parse(text)?;
        Ok(Repository(format!(
            "{}/{}",
            parsed.registry().as_str(),
            parsed.path()
        )))
    }
}

/// Why there is no repository to sign for.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(
        "signing names the repository the image is pushed to (CRI-O and Podman check the signature against it): give --repository HOST/PATH (e.g. registry.example/platform/chartreg), or set image.repository in {}",
        values.display()
    )]
    Missing { values: PathBuf },
    #[error(
        "{}: image.repository: {source}; set it to the repository the image is pushed to, or give --repository",
        path.display()
    )]
    Values {
        path: PathBuf,
        source: RepositoryError,
    },
    #[error(transparent)]
    Read(#[from] crate::yaml_file::Error),
}

/// The part of a Helm values file read here; every other key is the chart's.
#[derive(Deserialize)]
struct Values {
    #[serde(default)]
    image: Option<ImageValues>,
}

#[derive(Deserialize)]
struct ImageValues {
    #[serde(default)]
    repository: Option<String>,
}

/// The repository a signature names (see the module doc): `given` (`--repository`), else
/// `image.repository` of `values` (`--values`; a missing file is an error), else of
/// [`VALUES_FILE`] beside `config` or in the current folder (a missing file is no answer).
pub fn signed_identity(
    given: Option<&Repository>,
    values: Option<&Path>,
    config: Option<&Path>,
) -> Result<Repository, IdentityError> {
    if let Some(repository) = given {
        return Ok(repository.clone());
    }
    let (path, found) = match values {
        Some(path) => (
            path.to_owned(),
            Some(crate::yaml_file::read::<Values>(path)?),
        ),
        None => {
            let folder = config
                .and_then(Path::parent)
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let path = folder.join(VALUES_FILE);
            let found = crate::yaml_file::read_if_present::<Values>(&path)?;
            (path, found)
        }
    };
    let text = found
        .and_then(|v| v.image)
        .and_then(|i| i.repository)
        .ok_or_else(|| IdentityError::Missing {
            values: path.clone(),
        })?;
    text.parse()
        .map_err(|source| IdentityError::Values { path, source })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case(
        "registry.example/platform/chartreg",
        Ok("registry.example/platform/chartreg")
    )]
    #[case("127.0.0.1:5000/team/chartreg", Ok("127.0.0.1:5000/team/chartreg"))]
    #[case("localhost/chartreg", Ok("localhost/chartreg"))]
    #[case("docker.io/chartreg", Ok("docker.io/library/chartreg"))]
    #[case("index.docker.io/org/chartreg", Ok("docker.io/org/chartreg"))]
    #[case("chartreg", Err("names no registry"))]
    #[case("platform/chartreg", Err("names no registry"))]
    #[case(
        "registry.example/chartreg:v1",
        Err("names an image, not a repository")
    )]
    #[case("127.0.0.1:5000/chartreg:v1", Err("names an image, not a repository"))]
    #[case(
        "registry.example/chartreg@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        Err("names an image, not a repository")
    )]
    #[case("registry.example/Chartreg", Err("is not valid"))]
    #[case("registry.example/", Err("is not an image reference"))]
    #[case("registry.example/a b", Err("is not an image reference"))]
    #[case("--flag.example/x", Err("is not a registry host"))]
    #[case("", Err("names no registry"))]
    fn repositories(#[case] text: &str, #[case] expected: Result<&str, &str>) {
        match (text.parse::<Repository>(), expected) {
            (Ok(r), Ok(want)) => assert_eq!(r.as_str(), want),
            (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn the_flag_then_the_values_file_then_a_refusal_naming_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("content.yaml");
        let given: Repository = "registry.example/given".parse().unwrap();
        assert_eq!(
            signed_identity(Some(&given), None, Some(&config)).unwrap(),
            given
        );
        let missing = signed_identity(None, None, Some(&config)).unwrap_err();
        assert!(
            matches!(&missing, IdentityError::Missing { values } if *values == dir.path().join(VALUES_FILE)),
            "{missing}"
        );
        assert!(missing.to_string().contains("--repository"), "{missing}");

        // As `init` writes it: the placeholder names no registry.
        std::fs::write(dir.path().join(VALUES_FILE), crate::init::VALUES_YAML).unwrap();
        let placeholder = signed_identity(None, None, Some(&config)).unwrap_err();
        let said = placeholder.to_string();
        assert!(
            said.contains(VALUES_FILE)
                && said.contains("`chartreg` names no registry")
                && said.contains("--repository"),
            "{said}"
        );
        let set = crate::init::VALUES_YAML.replace(
            "repository: chartreg ",
            "repository: registry.example/platform/chartreg ",
        );
        assert_ne!(set, crate::init::VALUES_YAML);
        std::fs::write(dir.path().join(VALUES_FILE), &set).unwrap();
        assert_eq!(
            signed_identity(None, None, Some(&config)).unwrap().as_str(),
            "registry.example/platform/chartreg"
        );

        // --values names another file, which must exist.
        let other = dir.path().join("prod-values.yaml");
        let gone = signed_identity(None, Some(&other), Some(&config)).unwrap_err();
        assert!(matches!(gone, IdentityError::Read(_)), "{gone}");
        std::fs::write(&other, "image:\n  tag: v1\nreplicas: 2\n").unwrap();
        let unset = signed_identity(None, Some(&other), None).unwrap_err();
        assert!(
            matches!(&unset, IdentityError::Missing { values } if *values == other),
            "{unset}"
        );
        std::fs::write(&other, "image: [not, a, mapping]\n").unwrap();
        assert!(matches!(
            signed_identity(None, Some(&other), None),
            Err(IdentityError::Read(_))
        ));
    }
}
