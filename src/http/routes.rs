//! Which endpoint a path names. Repository names contain `/`, so the endpoint is found from the
//! end of the path: `/v2/<name>/manifests/<reference>`, `/v2/<name>/blobs/<digest>`,
//! `/v2/<name>/referrers/<digest>`, `/v2/<name>/tags/list`, plus `/v2/` and `/v2/_catalog`.
//! A name may itself hold a component called `manifests` (the last marker wins, as with a
//! greedy `{name:.+}` pattern).
//!
//! Hand-written because actix's router matches `{name:.+}` patterns with a regex engine, which
//! took over half of the instructions of a manifest request; this takes a few string scans.

/// An endpoint of the registry API, borrowing the pieces of the path it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    Base,
    Catalog,
    Tags { name: &'a str },
    Manifest { name: &'a str, reference: &'a str },
    Blob { name: &'a str, digest: &'a str },
    Referrers { name: &'a str, digest: &'a str },
}

impl Route<'_> {
    /// The route's name in metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Route::Base => "base",
            Route::Catalog => "catalog",
            Route::Tags { .. } => "tags",
            Route::Manifest { .. } => "manifests",
            Route::Blob { .. } => "blobs",
            Route::Referrers { .. } => "referrers",
        }
    }
}

/// Whether `path` is under `/v2`.
pub fn is_api(path: &str) -> bool {
    path == "/v2" || path.starts_with("/v2/")
}

/// `text` split at its last `/` (a reverse byte scan: the pieces after the last two slashes are
/// short, where `rsplit_once` sets up a search for long texts).
fn split_last(text: &str) -> Option<(&str, &str)> {
    let at = text.bytes().rposition(|b| b == b'/')?;
    Some((&text[..at], &text[at + 1..]))
}

/// The endpoint `path` names, if any.
pub fn classify(path: &str) -> Option<Route<'_>> {
    let rest = path.strip_prefix("/v2")?;
    match rest {
        "" | "/" => return Some(Route::Base),
        "/_catalog" => return Some(Route::Catalog),
        _ => {}
    }
    let rest = rest.strip_prefix('/')?;
    if let Some(name) = rest.strip_suffix("/tags/list") {
        return (!name.is_empty()).then_some(Route::Tags { name });
    }
    let (head, last) = split_last(rest)?;
    let (name, kind) = split_last(head)?;
    if name.is_empty() || last.is_empty() {
        return None;
    }
    match kind {
        "manifests" => Some(Route::Manifest {
            name,
            reference: last,
        }),
        "blobs" => Some(Route::Blob { name, digest: last }),
        "referrers" => Some(Route::Referrers { name, digest: last }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("/v2", Some(Route::Base))]
    #[case("/v2/", Some(Route::Base))]
    #[case("/v2/_catalog", Some(Route::Catalog))]
    #[case("/v2/charts/hello/tags/list", Some(Route::Tags { name: "charts/hello" }))]
    #[case("/v2/a/manifests/1.0.0", Some(Route::Manifest { name: "a", reference: "1.0.0" }))]
    #[case("/v2/a/b/c/manifests/sha256:x", Some(Route::Manifest { name: "a/b/c", reference: "sha256:x" }))]
    #[case("/v2/a/manifests/b/manifests/c", Some(Route::Manifest { name: "a/manifests/b", reference: "c" }))]
    #[case("/v2/a/blobs/sha256:x", Some(Route::Blob { name: "a", digest: "sha256:x" }))]
    #[case("/v2/a/referrers/sha256:x", Some(Route::Referrers { name: "a", digest: "sha256:x" }))]
    #[case("/v2/tags/list/tags/list", Some(Route::Tags { name: "tags/list" }))]
    #[case("/v2/a/blobs/uploads/", None)]
    #[case("/v2/a/manifests/", None)]
    #[case("/v2//manifests/x", None)]
    #[case("/v2/manifests/x", None)]
    #[case("/v2/tags/list", None)]
    #[case("/v2/a/other/x", None)]
    #[case("/v2/a", None)]
    #[case("/v2x/a/manifests/b", None)]
    #[case("/v1/a/manifests/b", None)]
    #[case("/", None)]
    #[case("/v2/_catalog/x", None)]
    fn classifies(#[case] path: &str, #[case] expected: Option<Route<'_>>) {
        assert_eq!(classify(path), expected);
    }

    #[test]
    fn api_paths() {
        assert!(is_api("/v2"));
        assert!(is_api("/v2/x"));
        assert!(!is_api("/v2x"));
        assert!(!is_api("/healthz"));
    }
}
