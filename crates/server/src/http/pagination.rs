//! `n` / `last` pagination of tags lists and the catalog, with the relative `Link` header to the
//! next page.
//!
//! Rules (OCI distribution spec and what crane, oras and Helm send): without `n` the whole rest
//! of the list comes back; `n=0` gives an empty list; `last` is exclusive and an empty `last=`
//! means absent; a `Link` is sent only when more entries follow, so it never points at an empty
//! page.

use std::ops::Range;

use serde::Deserialize;

use chartreg_core::oci::Namespace;

/// Validated pagination parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageQuery {
    pub n: Option<usize>,
    pub last: Option<String>,
}

/// A query string that does not say which page.
#[derive(Debug, thiserror::Error)]
pub enum PageQueryError {
    #[error("{0}")]
    Query(serde_urlencoded::de::Error),
    #[error("`n` must be a non-negative whole number, not `{0}`")]
    N(String),
}

#[derive(Deserialize)]
struct Raw {
    n: Option<String>,
    last: Option<String>,
}

impl PageQuery {
    /// Parses a query string such as `n=10&last=1.0.0`.
    pub fn parse(query: &str) -> Result<PageQuery, PageQueryError> {
        let raw: Raw = serde_urlencoded::from_str(query).map_err(PageQueryError::Query)?;
        let n = match raw.n {
            None => None,
            Some(n) => Some(n.parse::<usize>().map_err(|_| PageQueryError::N(n))?),
        };
        let last = raw.last.filter(|l| !l.is_empty());
        Ok(PageQuery { n, last })
    }

    /// Which entries of `items` (sorted) this page holds, and whether more follow.
    pub fn apply(&self, items: &[String]) -> (Range<usize>, bool) {
        let start = match &self.last {
            Some(last) => items.partition_point(|item| item.as_str() <= last.as_str()),
            None => 0,
        };
        // `start` is at most the length (a partition point).
        let rest = items.len().saturating_sub(start);
        match self.n {
            Some(n) if n < rest => (start..start.saturating_add(n), n > 0),
            _ => (start..items.len(), false),
        }
    }
}

/// The `Link` header value for the page after one ending with `last`, in `namespace` when the
/// request named one.
pub fn next_link(path: &str, n: usize, last: &str, namespace: Option<&Namespace>) -> String {
    match namespace {
        Some(ns) => format!("<{path}?n={n}&last={last}&ns={ns}>; rel=\"next\""),
        None => format!("<{path}?n={n}&last={last}>; rel=\"next\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn items() -> Vec<String> {
        ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect()
    }

    #[rstest]
    #[case::nothing("", &["a", "b", "c", "d"], false)]
    #[case::first_two("n=2", &["a", "b"], true)]
    #[case::exactly_all("n=4", &["a", "b", "c", "d"], false)]
    #[case::more_than_all("n=100", &["a", "b", "c", "d"], false)]
    #[case::zero("n=0", &[], false)]
    #[case::after_b("last=b", &["c", "d"], false)]
    #[case::after_b_one("n=1&last=b", &["c"], true)]
    #[case::after_last("n=1&last=c", &["d"], false)]
    #[case::past_end("last=zzz", &[], false)]
    #[case::between("last=bb", &["c", "d"], false)]
    #[case::empty_last("n=2&last=", &["a", "b"], true)]
    #[case::before_start("last=0", &["a", "b", "c", "d"], false)]
    fn pages(#[case] query: &str, #[case] expected: &[&str], #[case] more: bool) {
        let items = items();
        let page = PageQuery::parse(query).unwrap();
        let (range, has_more) = page.apply(&items);
        assert_eq!(&items[range], expected);
        assert_eq!(has_more, more);
    }

    #[rstest]
    #[case("n=-1", Some("-1"))]
    #[case("n=abc", Some("abc"))]
    #[case("n=", Some(""))]
    #[case("n=1.5", Some("1.5"))]
    #[case("n=99999999999999999999999999", Some("99999999999999999999999999"))]
    #[case("n=1&n=2", None)]
    fn bad_n(#[case] query: &str, #[case] bad: Option<&str>) {
        let error = PageQuery::parse(query).unwrap_err();
        match (&error, bad) {
            (PageQueryError::N(n), Some(bad)) => {
                assert_eq!(n, bad);
                assert_eq!(
                    error.to_string(),
                    format!("`n` must be a non-negative whole number, not `{bad}`")
                );
            }
            (PageQueryError::Query(_), None) => {}
            _ => panic!("{query}: {error:?}"),
        }
    }

    #[test]
    fn link_is_relative_and_keeps_the_namespace() {
        assert_eq!(
            next_link("/v2/charts/hello/tags/list", 2, "0.2.0", None),
            "</v2/charts/hello/tags/list?n=2&last=0.2.0>; rel=\"next\""
        );
        assert_eq!(
            next_link(
                "/v2/x/tags/list",
                2,
                "v1",
                Some(&"a.io:5000".parse().unwrap())
            ),
            "</v2/x/tags/list?n=2&last=v1&ns=a.io:5000>; rel=\"next\""
        );
    }
}
