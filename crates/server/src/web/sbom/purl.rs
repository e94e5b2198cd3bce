//! Package URLs (purls) for what the SBOM lists, percent-encoded as the purl spec asks (each
//! part of a name or version encoded whole: `+` is `%2B`, a digest's `:` is `%3A`; a
//! qualifier's value keeps its `/`), qualifiers sorted by key:
//! - a crate from crates.io: `pkg:cargo/NAME@VERSION` (the `cargo` type means crates.io);
//! - a crate from another registry: the same with `repository_url`; from git: `pkg:generic`
//!   with `vcs_url` (a local crate has none: nothing outside the build names it);
//! - a chart, image or platform manifest: `pkg:oci/NAME@sha256%3AHEX` (NAME the repository's
//!   last segment) with `repository_url` (the repository's upstream, when the content keeps
//!   it: where chartreg is reached is not known to the SBOM), `tag`, and a platform's `arch`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but the purl spec's unreserved characters.
const PART: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// A qualifier's value: also keeps `/` (`repository_url=ghcr.io/org/app`).
const VALUE: &AsciiSet = &PART.remove(b'/');

/// `pkg:TYPE/NAME@VERSION?QUALIFIERS`.
fn purl(kind: &str, name: &str, version: &str, qualifiers: &mut [(&str, String)]) -> String {
    qualifiers.sort();
    let qualifiers: Vec<String> = qualifiers
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(key, value)| format!("{key}={}", utf8_percent_encode(value, VALUE)))
        .collect();
    let mut purl = format!(
        "pkg:{kind}/{}@{}",
        utf8_percent_encode(name, PART),
        utf8_percent_encode(version, PART)
    );
    if !qualifiers.is_empty() {
        purl.push('?');
        purl.push_str(&qualifiers.join("&"));
    }
    purl
}

/// A crate from crates.io.
pub(super) fn crates_io(name: &str, version: &str) -> String {
    purl("cargo", name, version, &mut [])
}

/// A crate from the registry at `registry` (as cargo names it).
pub(super) fn registry(name: &str, version: &str, registry: &str) -> String {
    purl(
        "cargo",
        name,
        version,
        &mut [("repository_url", registry.to_owned())],
    )
}

/// A crate from the git repository `vcs` (`URL#COMMIT`, as cargo says it).
pub(super) fn git(name: &str, version: &str, vcs: &str) -> String {
    let vcs = match vcs.split_once('#') {
        Some((url, commit)) => format!("git+{}@{commit}", url.split('?').next().unwrap_or(url)),
        None => format!("git+{vcs}"),
    };
    purl("generic", name, version, &mut [("vcs_url", vcs)])
}

/// An OCI artifact of `repository` (`org/app`) whose manifest's sha256 is `hex`, found at
/// `repository_url`, tagged `tag`, for the CPU `arch` when it is one platform's manifest.
pub(super) fn oci(
    repository: &str,
    hex: &str,
    repository_url: &str,
    tag: Option<&str>,
    arch: Option<&str>,
) -> String {
    let name = repository.rsplit('/').next().unwrap_or(repository);
    purl(
        "oci",
        &name.to_ascii_lowercase(),
        &format!("sha256:{hex}"),
        &mut [
            ("arch", arch.unwrap_or_default().to_owned()),
            ("repository_url", repository_url.to_owned()),
            ("tag", tag.unwrap_or_default().to_owned()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_digests_are_encoded_whole() {
        assert_eq!(
            crates_io("toml", "0.9.12+spec-1.1.0"),
            "pkg:cargo/toml@0.9.12%2Bspec-1.1.0"
        );
        assert_eq!(
            oci(
                "org/App",
                "ab12",
                "ghcr.io/org/app",
                Some("v1.0+x"),
                Some("arm64")
            ),
            "pkg:oci/app@sha256%3Aab12?arch=arm64&repository_url=ghcr.io/org/app&tag=v1.0%2Bx"
        );
        assert_eq!(
            oci("cert-manager", "ff", "", None, None),
            "pkg:oci/cert-manager@sha256%3Aff"
        );
    }

    #[test]
    fn crates_not_from_crates_io_say_where_they_come_from() {
        assert_eq!(
            git("a", "0.1.0", "https://github.com/o/a?branch=main#0123abcd"),
            "pkg:generic/a@0.1.0?vcs_url=git%2Bhttps%3A//github.com/o/a%400123abcd"
        );
        assert_eq!(
            registry("b", "1.0.0", "my-registry"),
            "pkg:cargo/b@1.0.0?repository_url=my-registry"
        );
    }
}
