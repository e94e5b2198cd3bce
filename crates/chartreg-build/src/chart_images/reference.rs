//! Image references as a chart writes them, read the way containerd (and Docker's
//! distribution/reference) reads them, into one normal form: `nginx` is
//! `docker.io/library/nginx:latest`, `index.docker.io/x` is `docker.io/library/x`, a reference
//! with a digest and no tag keeps only the digest, and one with both keeps both
//! (`busybox:1.36@sha256:...`: the node pulls by the digest).
//!
//! The registry is the first `/`-separated part when it has a `.` or a `:`, is `localhost`, or has
//! an uppercase letter; else Docker Hub. The [`ImageRef::repository`] is the name chartreg serves
//! the image as ([`Namespace::served_name`]), so it compares with the content's repositories.

use std::fmt;

use chartreg_core::oci::{Digest, Namespace, RepositoryName, Tag};

/// Why a string is not an image reference; each holds the string.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("`{0}` is not an image reference: it is empty or holds spaces or template text")]
    Shape(String),
    #[error("`{reference}`: registry `{registry}`: {source}")]
    Registry {
        reference: String,
        registry: String,
        source: chartreg_core::oci::NamespaceError,
    },
    #[error("`{reference}`: the repository path `{path}` is not valid: {source}")]
    Path {
        reference: String,
        path: String,
        source: chartreg_core::oci::NameError,
    },
    #[error("`{reference}`: the tag `{tag}` is not valid")]
    Tag { reference: String, tag: String },
    #[error("`{reference}`: the digest `{digest}` is not valid")]
    Digest { reference: String, digest: String },
}

/// A normalised image reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageRef {
    /// `docker.io`, `quay.io`, `127.0.0.1:5000`.
    registry: Namespace,
    /// The path within the registry (`library/nginx`).
    path: String,
    tag: Option<Tag>,
    digest: Option<Digest>,
}

impl ImageRef {
    /// Reads `reference` as containerd reads it (see the module's documentation).
    pub fn parse(reference: &str) -> Result<ImageRef, ReferenceError> {
        let shape = || ReferenceError::Shape(reference.to_owned());
        if reference.is_empty()
            || reference
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
            || reference.contains("{{")
        {
            return Err(shape());
        }
        let (rest, digest) = match reference.split_once('@') {
            Some((rest, digest)) => {
                let parsed: Digest = digest.parse().map_err(|_| ReferenceError::Digest {
                    reference: reference.to_owned(),
                    digest: digest.to_owned(),
                })?;
                (rest, Some(parsed))
            }
            None => (reference, None),
        };
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => {
                let (name, tag) = (&rest[..last_slash + i], &rest[last_slash + i + 1..]);
                let parsed: Tag = tag.parse().map_err(|_| ReferenceError::Tag {
                    reference: reference.to_owned(),
                    tag: tag.to_owned(),
                })?;
                (name, Some(parsed))
            }
            None => (rest, None),
        };
        let (registry, path) = match name.split_once('/') {
            Some((first, path))
                if first.contains(['.', ':'])
                    || first == "localhost"
                    || first.chars().any(|c| c.is_ascii_uppercase()) =>
            {
                let registry =
                    Namespace::registry(first).map_err(|source| ReferenceError::Registry {
                        reference: reference.to_owned(),
                        registry: first.to_owned(),
                        source,
                    })?;
                (registry, path.to_owned())
            }
            _ => (docker_hub(), name.to_owned()),
        };
        if name.is_empty() || path.is_empty() {
            return Err(shape());
        }
        let path = if registry.as_str() == "docker.io" && !path.contains('/') {
            format!("library/{path}")
        } else {
            path
        };
        path.parse::<RepositoryName>()
            .map_err(|source| ReferenceError::Path {
                reference: reference.to_owned(),
                path: path.clone(),
                source,
            })?;
        let tag = match (tag, &digest) {
            (None, None) => Some(latest()),
            (tag, _) => tag,
        };
        Ok(ImageRef {
            registry,
            path,
            tag,
            digest,
        })
    }

    pub fn registry(&self) -> &Namespace {
        &self.registry
    }

    /// The path within the registry (`library/nginx`).
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn tag(&self) -> Option<&Tag> {
        self.tag.as_ref()
    }

    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// The repository chartreg serves this image as (`quay.io/cilium/cilium`,
    /// `127.0.0.1_5000/x`), the name the node mirror resolves the node's request to.
    pub fn repository(&self) -> String {
        self.registry.served_name(&self.path)
    }
}

fn docker_hub() -> Namespace {
    Namespace::registry("docker.io").unwrap_or_else(|_| unreachable!("docker.io is a registry"))
}

fn latest() -> Tag {
    "latest"
        .parse()
        .unwrap_or_else(|_| unreachable!("latest is a tag"))
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry.as_str(), self.path)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{}", tag.as_str())?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{}", digest.as_str())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const HEX: &str = "9cfd6a0a5e1f2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4";

    #[rstest]
    #[case("nginx", "docker.io/library/nginx:latest", "docker.io/library/nginx")]
    #[case(
        "nginx:1.25",
        "docker.io/library/nginx:1.25",
        "docker.io/library/nginx"
    )]
    #[case(
        "bitnami/redis:7",
        "docker.io/bitnami/redis:7",
        "docker.io/bitnami/redis"
    )]
    #[case(
        "docker.io/nginx",
        "docker.io/library/nginx:latest",
        "docker.io/library/nginx"
    )]
    #[case(
        "index.docker.io/nginx:1",
        "docker.io/library/nginx:1",
        "docker.io/library/nginx"
    )]
    #[case(
        "quay.io/cilium/cilium:v1.15.0",
        "quay.io/cilium/cilium:v1.15.0",
        "quay.io/cilium/cilium"
    )]
    #[case(
        "127.0.0.1:5000/example/app:v1",
        "127.0.0.1:5000/example/app:v1",
        "127.0.0.1_5000/example/app"
    )]
    #[case("localhost/app", "localhost/app:latest", "localhost/app")]
    #[case(
        "registry.k8s.io/pause:3.9",
        "registry.k8s.io/pause:3.9",
        "registry.k8s.io/pause"
    )]
    fn references_normalise_as_containerd_reads_them(
        #[case] given: &str,
        #[case] normal: &str,
        #[case] repository: &str,
    ) {
        let r = ImageRef::parse(given).unwrap();
        assert_eq!(r.to_string(), normal);
        assert_eq!(r.repository(), repository);
    }

    #[test]
    fn a_digest_is_kept_with_its_tag_and_alone_takes_no_latest() {
        let both = ImageRef::parse(&format!("busybox:1.36@sha256:{HEX}")).unwrap();
        assert_eq!(
            both.to_string(),
            format!("docker.io/library/busybox:1.36@sha256:{HEX}")
        );
        let alone = ImageRef::parse(&format!("quay.io/x/y@sha256:{HEX}")).unwrap();
        assert_eq!(alone.to_string(), format!("quay.io/x/y@sha256:{HEX}"));
        assert!(alone.tag().is_none());
    }

    #[rstest]
    #[case::empty("")]
    #[case::space("nginx 1")]
    #[case::template("{{ .Values.image }}")]
    #[case::upper_path("docker.io/Nginx")]
    #[case::bad_tag("nginx:-x")]
    #[case::bad_digest("nginx@sha256:abc")]
    #[case::empty_path("quay.io/")]
    #[case::not_a_host("Foo_Bar/x")]
    fn what_is_no_reference_is_refused_naming_it(#[case] given: &str) {
        let e = ImageRef::parse(given).unwrap_err().to_string();
        assert!(e.contains(&format!("`{given}`")), "{e}");
    }
}
