//! Chart names, checked where a chart is first read (a package, a folder, a subchart), before
//! the name is used for anything: a file name, a path in a package, a repository, a message.
//!
//! Every chart's name follows Helm's rule for chart names (`helm create`'s
//! `^[a-zA-Z0-9._-]+$`, at most 250 characters) and is neither `.` nor `..` (Helm's loader); so
//! no name holds a `/`, a space, a control character, or anything a shell or a terminal reads.
//! A chart pack serves (not a subchart) is also a path component of an OCI repository name
//! (`[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`), so it starts with a letter or digit: never `-`,
//! never a flag.

use chartreg_core::oci::{NameError, RepositoryName};

/// The longest chart name Helm creates.
pub const MAX_LEN: usize = 250;

/// Why a chart's name is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChartNameError {
    #[error("is empty")]
    Empty,
    #[error("is longer than {MAX_LEN} characters, the most Helm allows")]
    TooLong,
    #[error("is not a name (`.` and `..` name folders)")]
    Dots,
    #[error("holds {0:?}: Helm's chart names hold only letters, digits, `.`, `_` and `-`")]
    Character(char),
    #[error("cannot be served as an OCI repository: {0}")]
    Repository(NameError),
}

/// Helm's rule (every chart, subcharts included).
pub fn check_helm(name: &str) -> Result<(), ChartNameError> {
    if name.is_empty() {
        return Err(ChartNameError::Empty);
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ChartNameError::Character(c));
    }
    if name.len() > MAX_LEN {
        return Err(ChartNameError::TooLong);
    }
    if name == "." || name == ".." {
        return Err(ChartNameError::Dots);
    }
    Ok(())
}

/// Helm's rule, and a repository path component (a chart pack serves).
pub fn check(name: &str) -> Result<(), ChartNameError> {
    check_helm(name)?;
    name.parse::<RepositoryName>()
        .map(drop)
        .map_err(ChartNameError::Repository)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("hello")]
    #[case("cluster-api-provider-aws")]
    #[case("kube-prometheus-stack")]
    #[case("a.b_c")]
    #[case("0day")]
    fn names_helm_and_oci_both_take(#[case] name: &str) {
        assert_eq!(check(name), Ok(()));
    }

    #[rstest]
    #[case::flag("--post-renderer=pwn")]
    #[case::output_dir("--output-dir=written-by-helm")]
    #[case::space("a b")]
    #[case::slash("a/b")]
    #[case::backslash("a\\b")]
    #[case::escape("ctl\u{1b}[2J")]
    #[case::newline("a\nb")]
    #[case::dollar("$(id)")]
    #[case::backtick("`id`")]
    #[case::semicolon("a;b")]
    #[case::dot(".")]
    #[case::dots("..")]
    #[case::empty("")]
    #[case::unicode("caf\u{e9}")]
    #[case::bidi("a\u{202e}b")]
    fn names_helm_refuses(#[case] name: &str) {
        assert!(check_helm(name).is_err(), "{name:?}");
        assert!(check(name).is_err(), "{name:?}");
    }

    #[rstest]
    #[case::short_flag("-f")]
    #[case::long_flag("--debug")]
    #[case::uppercase("Hello")]
    #[case::leading_dash("-hello")]
    #[case::trailing_dot("hello.")]
    #[case::leading_underscore("_hello")]
    #[case::double_dot("a..b")]
    fn names_helm_takes_and_a_repository_cannot_be(#[case] name: &str) {
        assert_eq!(check_helm(name), Ok(()));
        assert!(
            matches!(check(name), Err(ChartNameError::Repository(_))),
            "{name:?}"
        );
    }

    #[test]
    fn a_name_past_250_characters_is_refused() {
        assert_eq!(check_helm(&"a".repeat(MAX_LEN)), Ok(()));
        assert_eq!(
            check_helm(&"a".repeat(MAX_LEN + 1)),
            Err(ChartNameError::TooLong)
        );
    }

    #[test]
    fn the_refused_character_is_shown_escaped() {
        let e = check_helm("ctl\u{1b}[2J").unwrap_err();
        assert_eq!(
            e.to_string(),
            "holds '\\u{1b}': Helm's chart names hold only letters, digits, `.`, `_` and `-`"
        );
    }
}
