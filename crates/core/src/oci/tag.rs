//! Tags: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.

use std::fmt;
use std::str::FromStr;

/// A syntactically valid tag.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(String);

/// The longest tag the OCI distribution grammar allows.
pub const MAX_TAG_LEN: usize = 128;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TagError {
    #[error("a tag cannot be empty")]
    Empty,
    #[error("a tag is at most {MAX_TAG_LEN} characters; `{0}` has {len}", len = .0.len())]
    TooLong(String),
    #[error("a tag cannot start with `{1}`: `{0}`")]
    BadStart(String, char),
    #[error("`{1}` is not allowed in a tag (letters, digits, `_`, `.` and `-` are): `{0}`")]
    BadChar(String, char),
}

impl Tag {
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Tag {
    type Err = TagError;

    #[inline]
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        let first = chars.next().ok_or(TagError::Empty)?;
        if !(first.is_ascii_alphanumeric() || first == '_') {
            return Err(TagError::BadStart(s.to_owned(), first));
        }
        if let Some(c) =
            chars.find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        {
            return Err(TagError::BadChar(s.to_owned(), c));
        }
        if s.len() > MAX_TAG_LEN {
            return Err(TagError::TooLong(s.to_owned()));
        }
        Ok(Tag(s.to_owned()))
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("latest")]
    #[case("1.0.0")]
    #[case("1.0.1_build.7")]
    #[case("_x")]
    #[case("1.1.0-rc.1")]
    #[case("A-Z_a.z")]
    fn valid(#[case] s: &str) {
        assert_eq!(s.parse::<Tag>().unwrap().as_str(), s);
    }

    #[test]
    fn longest_tag_is_allowed_and_one_more_is_not() {
        assert!("a".repeat(128).parse::<Tag>().is_ok());
        assert_eq!(
            "a".repeat(129).parse::<Tag>(),
            Err(TagError::TooLong("a".repeat(129)))
        );
    }

    #[rstest]
    #[case::empty("", TagError::Empty)]
    #[case::dot_start(".INVALID_MANIFEST_NAME", TagError::BadStart(".INVALID_MANIFEST_NAME".into(), '.'))]
    #[case::dash_start("-x", TagError::BadStart("-x".into(), '-'))]
    #[case::plus("1.0.0+b", TagError::BadChar("1.0.0+b".into(), '+'))]
    #[case::slash("a/b", TagError::BadChar("a/b".into(), '/'))]
    #[case::colon("a:b", TagError::BadChar("a:b".into(), ':'))]
    #[case::non_ascii("é", TagError::BadStart("é".into(), 'é'))]
    fn invalid(#[case] s: &str, #[case] err: TagError) {
        assert_eq!(s.parse::<Tag>(), Err(err));
    }
}
