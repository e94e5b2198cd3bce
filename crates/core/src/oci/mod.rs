//! OCI vocabulary shared by every other module: the grammar of repository names, tags and
//! digests (parsed once at the edge into validated types), the media types chartreg knows, and
//! the serde types of the OCI image layout, manifest and index documents.
//!
//! Nothing here knows about HTTP or about where bytes come from; `content`, `tree`, the build
//! tool and the server's `http` all build on it.

// Names, tags and digests from requests are parsed here: no arithmetic that can overflow,
// outside tests.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod digest;
pub mod gojson;
pub mod layout;
pub mod media_type;
mod name;
mod namespace;
mod tag;
pub mod version;

pub use digest::{Digest, DigestError, decode_sha256, sha256};
pub use name::{NameError, RepositoryName};
pub use namespace::{Namespace, NamespaceError};
pub use tag::{Tag, TagError};

use std::fmt;
use std::str::FromStr;

/// What follows `/manifests/` in a request path: a tag or a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    Tag(Tag),
    Digest(Digest),
}

/// Why a manifest reference did not parse; the two cases get different HTTP answers.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReferenceError {
    #[error(transparent)]
    Tag(#[from] TagError),
    #[error(transparent)]
    Digest(#[from] DigestError),
}

impl FromStr for Reference {
    type Err = ReferenceError;

    /// A reference holding `:` can only be a digest (`:` is not a tag character).
    #[inline]
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.contains(':') {
            Ok(Reference::Digest(s.parse()?))
        } else {
            Ok(Reference::Tag(s.parse()?))
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::Tag(t) => t.fmt(f),
            Reference::Digest(d) => d.fmt(f),
        }
    }
}

/// Serde for a validated text type: written as its text, read by parsing it (so a document
/// holding an invalid one does not deserialise, and the error says why).
macro_rules! serde_as_text {
    ($type:ty, $expecting:literal) => {
        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $type;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<$type, E> {
                        s.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(Visitor)
            }
        }
    };
}

serde_as_text!(Tag, "a tag");
serde_as_text!(RepositoryName, "a repository name");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tags_read_back_as_written_and_invalid_ones_are_refused() {
        let name: RepositoryName = serde_json::from_str(r#""charts/hello""#).unwrap();
        assert_eq!(serde_json::to_string(&name).unwrap(), r#""charts/hello""#);
        let tag: Tag = serde_json::from_str(r#""1.0.0_build.7""#).unwrap();
        assert_eq!(tag.as_str(), "1.0.0_build.7");
        let e = serde_json::from_str::<RepositoryName>(r#""Charts/x""#).unwrap_err();
        assert!(e.to_string().contains("uppercase"), "{e}");
        assert!(serde_json::from_str::<Tag>(r#"".bad""#).is_err());
        let keyed: std::collections::BTreeMap<RepositoryName, u8> =
            serde_json::from_str(r#"{"charts/a":1}"#).unwrap();
        assert_eq!(serde_json::to_string(&keyed).unwrap(), r#"{"charts/a":1}"#);
    }

    #[test]
    fn reference_tells_tags_from_digests() {
        assert!(matches!("1.0.0".parse(), Ok(Reference::Tag(_))));
        let d = format!("sha256:{}", "a".repeat(64));
        assert!(matches!(d.parse(), Ok(Reference::Digest(_))));
        assert!(matches!(
            "sha256:xyz".parse::<Reference>(),
            Err(ReferenceError::Digest(_))
        ));
        assert!(matches!(
            ".bad".parse::<Reference>(),
            Err(ReferenceError::Tag(_))
        ));
    }
}
