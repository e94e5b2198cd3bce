//! Repository names:
//! `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`, at most 255
//! characters. Errors say which rule a name breaks, because chart names come from users.

use std::fmt;
use std::str::FromStr;

/// A syntactically valid repository name such as `charts/hello`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepositoryName(String);

/// The longest repository name the OCI distribution spec asks registries to accept.
pub const MAX_NAME_LEN: usize = 255;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error("a repository name cannot be empty")]
    Empty,
    #[error("a repository name is at most {MAX_NAME_LEN} characters; `{0}` has {len}", len = .0.len())]
    TooLong(String),
    #[error("`{0}` has an empty path component (leading, trailing or doubled `/`)")]
    EmptyComponent(String),
    #[error("`{0}` has uppercase letters; OCI repository names are lowercase")]
    Uppercase(String),
    #[error("`{0}` contains `{1}`; repository names allow a-z, 0-9, `.`, `_`, `-` and `/`")]
    BadChar(String, char),
    #[error("`{0}`: each path component must start and end with a letter or digit")]
    BadEdge(String),
    #[error(
        "`{0}` has the separator `{1}`; between letters and digits only `.`, `_`, `__` or a run of `-` may stand"
    )]
    BadSeparator(String, String),
}

impl RepositoryName {
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks one path component, `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn check_component(name: &str, component: &str) -> Result<(), NameError> {
    if component.is_empty() {
        return Err(NameError::EmptyComponent(name.to_owned()));
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    let edges = (bytes.first(), bytes.last());
    if !matches!(edges, (Some(&a), Some(&b)) if alnum(a) && alnum(b)) {
        return Err(NameError::BadEdge(name.to_owned()));
    }
    for separator in component.split(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        let ok = matches!(separator, "" | "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !ok {
            return Err(NameError::BadSeparator(
                name.to_owned(),
                separator.to_owned(),
            ));
        }
    }
    Ok(())
}

/// Whether `name` follows the grammar, in one pass over its bytes: the check every request
/// makes. Which rule a refused name breaks is worked out by [`explain`].
fn follows_grammar(name: &[u8]) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return false;
    }
    // As if after a `/`: a component must start with a letter or digit.
    let mut previous = b'/';
    let mut underscores: u32 = 0;
    for &b in name {
        let allowed = match b {
            b'a'..=b'z' | b'0'..=b'9' => true,
            b'/' | b'.' => alnum(previous),
            b'_' => alnum(previous) || (previous == b'_' && underscores == 1),
            b'-' => alnum(previous) || previous == b'-',
            _ => false,
        };
        if !allowed {
            return false;
        }
        underscores = if b == b'_' {
            underscores.saturating_add(1)
        } else {
            0
        };
        previous = b;
    }
    alnum(previous)
}

/// The rule `s` breaks (none when it is valid).
fn explain(s: &str) -> Result<(), NameError> {
    if s.is_empty() {
        return Err(NameError::Empty);
    }
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(NameError::Uppercase(s.to_owned()));
    }
    if let Some(c) = s.chars().find(|&c| {
        !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-' | '/'))
    }) {
        return Err(NameError::BadChar(s.to_owned(), c));
    }
    if s.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong(s.to_owned()));
    }
    for component in s.split('/') {
        check_component(s, component)?;
    }
    Ok(())
}

impl FromStr for RepositoryName {
    type Err = NameError;

    #[inline]
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if !follows_grammar(s.as_bytes()) {
            explain(s)?;
        }
        Ok(RepositoryName(s.to_owned()))
    }
}

impl fmt::Display for RepositoryName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("hello")]
    #[case("charts/hello")]
    #[case("a/b/c/d")]
    #[case("my-chart")]
    #[case("my--chart")]
    #[case("my.chart")]
    #[case("my_chart")]
    #[case("my__chart")]
    #[case("0")]
    #[case("charts/cluster-api.addon_x")]
    fn valid(#[case] s: &str) {
        assert_eq!(s.parse::<RepositoryName>().unwrap().as_str(), s);
    }

    #[test]
    fn length_limit() {
        let at_limit = format!("a/{}", "b".repeat(253));
        assert!(at_limit.parse::<RepositoryName>().is_ok());
        let over = format!("a/{}", "b".repeat(254));
        assert_eq!(
            over.parse::<RepositoryName>(),
            Err(NameError::TooLong(over.clone()))
        );
    }

    #[rstest]
    #[case::empty("", NameError::Empty)]
    #[case::upper("charts/Hello", NameError::Uppercase("charts/Hello".into()))]
    #[case::space("a b", NameError::BadChar("a b".into(), ' '))]
    #[case::colon("a:b", NameError::BadChar("a:b".into(), ':'))]
    #[case::leading_slash("/a", NameError::EmptyComponent("/a".into()))]
    #[case::trailing_slash("a/", NameError::EmptyComponent("a/".into()))]
    #[case::double_slash("a//b", NameError::EmptyComponent("a//b".into()))]
    #[case::leading_dash("-a", NameError::BadEdge("-a".into()))]
    #[case::trailing_dot("a.", NameError::BadEdge("a.".into()))]
    #[case::dot_component("charts/.", NameError::BadEdge("charts/.".into()))]
    #[case::double_dot("a..b", NameError::BadSeparator("a..b".into(), "..".into()))]
    #[case::triple_underscore("a___b", NameError::BadSeparator("a___b".into(), "___".into()))]
    #[case::mixed("a._b", NameError::BadSeparator("a._b".into(), "._".into()))]
    #[case::dash_dot("a-.b", NameError::BadSeparator("a-.b".into(), "-.".into()))]
    fn invalid(#[case] s: &str, #[case] err: NameError) {
        assert_eq!(s.parse::<RepositoryName>(), Err(err));
    }

    /// The one-pass check and the rule-by-rule one agree on every name of up to six characters
    /// over an alphabet with every kind of character the rules treat differently.
    #[test]
    fn one_pass_check_agrees_with_the_rules() {
        let alphabet = [b'a', b'0', b'.', b'_', b'-', b'/', b'A', b' '];
        let mut names = vec![Vec::new()];
        for _ in 0..6 {
            let longer: Vec<Vec<u8>> = names
                .iter()
                .filter(|n| n.len() == names.last().map_or(0, Vec::len))
                .flat_map(|n| {
                    alphabet.iter().map(move |&c| {
                        let mut n = n.clone();
                        n.push(c);
                        n
                    })
                })
                .collect();
            names.extend(longer);
        }
        assert_eq!(names.len(), (0..=6).map(|k| 8usize.pow(k)).sum::<usize>());
        for name in names {
            let text = std::str::from_utf8(&name).unwrap();
            assert_eq!(follows_grammar(&name), explain(text).is_ok(), "{text:?}");
        }
        let at_limit = format!("a/{}", "b".repeat(253));
        assert!(follows_grammar(at_limit.as_bytes()));
        assert!(!follows_grammar(format!("{at_limit}b").as_bytes()));
    }
}
