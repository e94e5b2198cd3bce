//! What an entry asks of an image repository, parsed once: a tag (`v1.2.3`), a digest alone
//! (`sha256:<hex>`), or a tag pinned to a digest (`v1.2.3@sha256:<hex>`). Where there is a
//! digest, it is what is taken, and the bytes are checked against it; the tag is only the name
//! they are served under. A digest alone is served under the tag `digest-sha256-<hex>` (the
//! digest's own name, which names nothing else, and is none of cosign's `sha256-<hex>.sig`
//! family), so that it is listed, verified by the policy, pinned by the lock and checked by
//! pack as every tag is; nodes pull it by its digest.
//!
//! Images files, chart images, the lock's keys (`REGISTRY/PATH:TAG`, `REGISTRY/PATH@DIGEST`,
//! `REGISTRY/PATH:TAG@DIGEST`) and pack's `--layout DIR=REPOSITORY[:TAG][@DIGEST]` all read
//! pins here. Only sha256 digests are taken: the name `sha512-<hex>` would be longer than a
//! tag may be, and registries name manifests by sha256.

use std::fmt;
use std::str::FromStr;

use chartreg_core::oci::{Digest, DigestError, Tag, TagError};

/// A tag, a digest, or both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pin {
    Tag(Tag),
    /// A digest alone, and the tag it is served under (`digest-sha256-<hex>`).
    Digest {
        digest: Digest,
        served: Tag,
    },
    /// A tag pinned to a digest: the digest is taken, served under the tag.
    TagAt(Tag, Digest),
}

/// Why a string is no pin; each holds the string.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error("`{text}`: the tag `{tag}` is not valid: {source}")]
    Tag {
        text: String,
        tag: String,
        source: TagError,
    },
    #[error("`{text}`: the digest `{digest}` is not valid: {source}")]
    Digest {
        text: String,
        digest: String,
        source: DigestError,
    },
    #[error("`{0}`: only sha256 digests are taken (registries name manifests by sha256)")]
    Algorithm(String),
    #[error("`{0}` names neither a tag nor a digest")]
    Nothing(String),
}

impl FromStr for Pin {
    type Err = PinError;

    fn from_str(text: &str) -> Result<Pin, PinError> {
        let tag = |tag: &str| {
            tag.parse::<Tag>().map_err(|source| PinError::Tag {
                text: text.to_owned(),
                tag: tag.to_owned(),
                source,
            })
        };
        let digest = |digest: &str| {
            let parsed = digest
                .parse::<Digest>()
                .map_err(|source| PinError::Digest {
                    text: text.to_owned(),
                    digest: digest.to_owned(),
                    source,
                })?;
            if parsed.sha256().is_none() {
                return Err(PinError::Algorithm(text.to_owned()));
            }
            Ok(parsed)
        };
        if let Some((name, at)) = text.split_once('@') {
            return Ok(Pin::TagAt(tag(name)?, digest(at)?));
        }
        // A tag holds no `:`; a digest always does.
        if text.contains(':') {
            let digest = digest(text)?;
            let served = tag(&format!(
                "digest-{}-{}",
                digest.algorithm(),
                digest.encoded()
            ))?;
            return Ok(Pin::Digest { digest, served });
        }
        Ok(Pin::Tag(tag(text)?))
    }
}

impl Pin {
    /// The pin of an image reference's tag and digest (`None` when it has neither).
    pub fn of(tag: Option<&Tag>, digest: Option<&Digest>) -> Option<Result<Pin, PinError>> {
        match (tag, digest) {
            (Some(tag), None) => Some(Ok(Pin::Tag(tag.clone()))),
            (Some(tag), Some(digest)) => Some(format!("{tag}@{digest}").parse()),
            (None, Some(digest)) => Some(digest.as_str().parse()),
            (None, None) => None,
        }
    }

    /// The tag asked for, if any.
    pub fn tag(&self) -> Option<&Tag> {
        match self {
            Pin::Tag(tag) | Pin::TagAt(tag, _) => Some(tag),
            Pin::Digest { .. } => None,
        }
    }

    /// The digest asked for, if any.
    pub fn digest(&self) -> Option<&Digest> {
        match self {
            Pin::Tag(_) => None,
            Pin::Digest { digest, .. } | Pin::TagAt(_, digest) => Some(digest),
        }
    }

    /// What the registry is asked for: the digest where there is one, else the tag.
    pub fn reference(&self) -> &str {
        match self {
            Pin::Tag(tag) => tag.as_str(),
            Pin::Digest { digest, .. } | Pin::TagAt(_, digest) => digest.as_str(),
        }
    }

    /// As an images-file entry writes it (and [`FromStr`] reads it): `TAG`, `DIGEST`,
    /// `TAG@DIGEST`.
    pub fn entry(&self) -> String {
        match self {
            Pin::Tag(tag) => tag.to_string(),
            Pin::Digest { digest, .. } => digest.to_string(),
            Pin::TagAt(tag, digest) => format!("{tag}@{digest}"),
        }
    }

    /// The tag it is served under: its own, or the digest's name.
    pub fn served(&self) -> &Tag {
        match self {
            Pin::Tag(tag) | Pin::TagAt(tag, _) => tag,
            Pin::Digest { served, .. } => served,
        }
    }
}

/// As a reference ends: `:TAG`, `@DIGEST`, `:TAG@DIGEST`.
impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pin::Tag(tag) => write!(f, ":{tag}"),
            Pin::Digest { digest, .. } => write!(f, "@{digest}"),
            Pin::TagAt(tag, digest) => write!(f, ":{tag}@{digest}"),
        }
    }
}

/// A reference without its registry (`PATH:TAG`, `PATH@DIGEST`, `PATH:TAG@DIGEST`) split into
/// the path and the pin; `None` when it names no tag or digest (or an empty path). The tag is
/// after the last `:` that follows the last `/`, as in an image reference.
pub fn split(reference: &str) -> Option<(&str, Result<Pin, PinError>)> {
    let (name, at) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match name[slash..].rfind(':') {
        Some(i) => (&name[..slash + i], Some(&name[slash + i + 1..])),
        None => (name, None),
    };
    if path.is_empty() {
        return None;
    }
    let pin = match (tag, at) {
        (Some(tag), Some(digest)) => format!("{tag}@{digest}").parse(),
        (Some(tag), None) => tag.parse(),
        (None, Some(digest)) => digest.parse(),
        (None, None) => return None,
    };
    // `tag@digest` parses as one pin only if the tag held no `@` of its own.
    Some((path, pin))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const HEX: &str = "b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291";

    #[rstest]
    #[case("v1.2.3", ":v1.2.3", Some("v1.2.3"), None, "v1.2.3")]
    #[case(&format!("sha256:{HEX}"), &format!("@sha256:{HEX}"), None, Some(format!("sha256:{HEX}")), &format!("digest-sha256-{HEX}"))]
    #[case(&format!("1.36@sha256:{HEX}"), &format!(":1.36@sha256:{HEX}"), Some("1.36"), Some(format!("sha256:{HEX}")), "1.36")]
    fn pins_read_and_say_what_they_ask(
        #[case] text: &str,
        #[case] shown: &str,
        #[case] tag: Option<&str>,
        #[case] digest: Option<String>,
        #[case] served: &str,
    ) {
        let pin: Pin = text.parse().unwrap();
        assert_eq!(pin.to_string(), shown);
        assert_eq!(pin.entry(), text, "an entry reads back as it is written");
        assert_eq!(pin.tag().map(Tag::as_str), tag);
        assert_eq!(pin.digest().map(|d| d.as_str().to_owned()), digest);
        assert_eq!(pin.served().as_str(), served);
        assert_eq!(
            pin.reference(),
            digest.as_deref().or(tag).unwrap(),
            "the digest is asked for where there is one"
        );
    }

    #[rstest]
    #[case("", "not valid")]
    #[case("sha256:b722", "64")]
    #[case("-v1", "cannot start")]
    #[case("v1@latest", "no `:`")]
    #[case("v 1", "not allowed")]
    #[case(&format!("sha512:{HEX}{HEX}"), "only sha256")]
    #[case(&format!("v1@sha256:{HEX}@sha256:{HEX}"), "not valid")]
    fn what_is_no_pin_is_refused_naming_it(#[case] text: &str, #[case] says: &str) {
        let e = text.parse::<Pin>().unwrap_err().to_string();
        assert!(e.contains(says) && e.contains(&format!("`{text}`")), "{e}");
    }

    #[rstest]
    #[case("quay.io/a/b:v1", "quay.io/a/b", ":v1")]
    #[case("127.0.0.1:5000/a/b:v1", "127.0.0.1:5000/a/b", ":v1")]
    #[case(&format!("quay.io/a/b@sha256:{HEX}"), "quay.io/a/b", &format!("@sha256:{HEX}"))]
    #[case(&format!("127.0.0.1:5000/b:v1@sha256:{HEX}"), "127.0.0.1:5000/b", &format!(":v1@sha256:{HEX}"))]
    fn references_split_into_path_and_pin(
        #[case] reference: &str,
        #[case] path: &str,
        #[case] pin: &str,
    ) {
        let (p, parsed) = split(reference).unwrap();
        assert_eq!((p, parsed.unwrap().to_string().as_str()), (path, pin));
    }

    #[test]
    fn a_reference_without_tag_or_digest_splits_into_nothing() {
        assert!(split("quay.io/a/b").is_none());
        assert!(split(":v1").is_none());
        assert!(split("127.0.0.1:5000/a/b:").unwrap().1.is_err());
    }
}
