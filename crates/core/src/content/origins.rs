//! Where each fetched chart version was downloaded from.
//!
//! 1. `chartreg-build pack`, packing what a lock pins (`chartreg-build fetch` wrote it), writes
//!    [`ORIGINS_FILE`] beside the repositories in the shape of [`OriginsFile`]: per chart
//!    repository (`charts/cilium`) and chart version, the URL the lock says the package came
//!    from ([`OriginUrl`]: `https://…` or `oci://…`) and the package's digest. Charts packed
//!    from files and folders of the team's own have no origin, and no entry.
//! 2. The loader (`Description::of`) reads the file with [`OriginsFile`] when the content holds
//!    it: a file it cannot read (or a URL that is not one [`OriginUrl`] takes) is content that
//!    cannot be served, naming the file.
//! 3. A [`Registry`] keeps the file's bytes and parses them on the first
//!    [`Registry::chart_origin`] call (module `beside`).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{Registry, beside};
use crate::oci::{Digest, RepositoryName};

/// The file's path in the content, beside the repositories (as `chart-images.json`).
pub const ORIGINS_FILE: &str = "origins.json";

/// What the file holds (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginsFile {
    /// By chart repository (`charts/cilium`), then chart version (as `Chart.yaml` has it).
    pub charts: BTreeMap<RepositoryName, BTreeMap<String, Origin>>,
}

impl OriginsFile {
    /// The file as it is written: sorted, indented JSON ending in a newline (the same origins
    /// give the same bytes, so `pack --check` compares them).
    pub fn to_bytes(&self) -> Vec<u8> {
        beside::written(self)
    }
}

/// One chart version's origin: where its package was downloaded from, and the package's
/// digest (a record of other bytes than those served says nothing of them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub url: OriginUrl,
    pub digest: Digest,
}

/// Why a text is not an [`OriginUrl`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginUrlError {
    #[error("`{0}` is not an https://, http:// or oci:// URL")]
    Scheme(String),
    #[error("`{0}` names no host")]
    NoHost(String),
    #[error("`{0}` holds a character a plain URL has not (space, quote, angle bracket, ...)")]
    Character(String),
    #[error("`{0}` carries credentials (`user@` before its host)")]
    Credentials(String),
    #[error("a URL of {0} bytes is longer than the {MAX_URL} an origin may be")]
    Length(usize),
}

/// The longest origin URL taken.
pub const MAX_URL: usize = 2048;

/// Where a chart's package was downloaded from: an `https://`, `http://` or `oci://` URL of
/// printable ASCII with no quote, angle bracket, backslash, backtick or brace (so that it
/// reaches a page, a JSON string or an SPDX field as it is), naming a host and no
/// credentials, at most [`MAX_URL`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OriginUrl(String);

impl OriginUrl {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `https`, `http` or `oci`.
    pub fn scheme(&self) -> &str {
        self.0.split_once("://").map_or("", |(scheme, _)| scheme)
    }

    /// The host, with its port if it names one (`charts.jetstack.io`, `127.0.0.1:5000`).
    pub fn host(&self) -> &str {
        let rest = self.0.split_once("://").map_or("", |(_, rest)| rest);
        rest.split(['/', '?', '#']).next().unwrap_or_default()
    }
}

impl std::fmt::Display for OriginUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for OriginUrl {
    type Err = OriginUrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() > MAX_URL {
            return Err(OriginUrlError::Length(s.len()));
        }
        let plain = s.bytes().all(|b| {
            b.is_ascii_graphic() && !matches!(b, b'"' | b'<' | b'>' | b'\\' | b'`' | b'{' | b'}')
        });
        if !plain {
            return Err(OriginUrlError::Character(s.to_owned()));
        }
        let lower = s.to_ascii_lowercase();
        let known = ["https://", "http://", "oci://"]
            .iter()
            .any(|scheme| lower.starts_with(scheme));
        if !known {
            return Err(OriginUrlError::Scheme(s.to_owned()));
        }
        let url = OriginUrl(s.to_owned());
        let host = url.host();
        if host.is_empty() || host.starts_with(':') {
            return Err(OriginUrlError::NoHost(s.to_owned()));
        }
        if host.contains('@') {
            return Err(OriginUrlError::Credentials(s.to_owned()));
        }
        Ok(url)
    }
}

impl TryFrom<String> for OriginUrl {
    type Error = OriginUrlError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<OriginUrl> for String {
    fn from(url: OriginUrl) -> Self {
        url.0
    }
}

/// By repository, then chart version.
pub(super) type Parsed = HashMap<String, HashMap<String, Origin>>;

fn parse(bytes: &[u8]) -> Parsed {
    let Some(file) = beside::read::<OriginsFile>(ORIGINS_FILE, bytes) else {
        return Parsed::default();
    };
    file.charts
        .into_iter()
        .map(|(repository, versions)| {
            (
                repository.as_str().to_owned(),
                versions.into_iter().collect(),
            )
        })
        .collect()
}

impl Registry {
    /// Where the chart `version` (as `Chart.yaml` has it) in `repository` was downloaded from,
    /// when its package is the one of `package`'s digest; `None` when the content records no
    /// origin for it, or one of other bytes.
    pub fn chart_origin(
        &self,
        repository: &str,
        version: &str,
        package: &Digest,
    ) -> Option<&OriginUrl> {
        let origin = self.origins.parsed(parse)?.get(repository)?.get(version)?;
        (origin.digest == *package).then_some(&origin.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::beside::one_image;
    use crate::content::{BuildFile, Description, HeldFile};
    use rstest::rstest;

    #[rstest]
    #[case(
        "https://charts.jetstack.io/charts/cert-manager-v1.14.0.tgz",
        "https",
        "charts.jetstack.io"
    )]
    #[case("http://127.0.0.1:5000/hello-1.0.0.tgz", "http", "127.0.0.1:5000")]
    #[case("oci://ghcr.io/org/charts/app:1.0.0", "oci", "ghcr.io")]
    #[case("HTTPS://Example.com?x=1", "HTTPS", "Example.com")]
    fn urls_taken(#[case] text: &str, #[case] scheme: &str, #[case] host: &str) {
        let url: OriginUrl = text.parse().unwrap();
        assert_eq!(
            (url.as_str(), url.scheme(), url.host()),
            (text, scheme, host)
        );
    }

    #[rstest]
    #[case("../local/hello-0.2.0.tgz", OriginUrlError::Scheme(String::new()))]
    #[case("javascript:alert(1)", OriginUrlError::Scheme(String::new()))]
    #[case("file:///etc/passwd", OriginUrlError::Scheme(String::new()))]
    #[case("https://", OriginUrlError::NoHost(String::new()))]
    #[case("https:///x.tgz", OriginUrlError::NoHost(String::new()))]
    #[case("https://:80/x.tgz", OriginUrlError::NoHost(String::new()))]
    #[case(
        "https://user:secret@host.io/x.tgz",
        OriginUrlError::Credentials(String::new())
    )]
    #[case("https://host.io/a b.tgz", OriginUrlError::Character(String::new()))]
    #[case(
        "https://host.io/\"><script>",
        OriginUrlError::Character(String::new())
    )]
    #[case("https://host.io/é", OriginUrlError::Character(String::new()))]
    #[case("https://host.io/\n", OriginUrlError::Character(String::new()))]
    fn urls_refused(#[case] text: &str, #[case] want: OriginUrlError) {
        let got = text.parse::<OriginUrl>().unwrap_err();
        assert_eq!(
            std::mem::discriminant(&got),
            std::mem::discriminant(&want),
            "{text}: {got}"
        );
        assert!(got.to_string().contains(text), "{got}");
    }

    #[test]
    fn a_url_past_the_bound_is_refused_by_its_length() {
        let long = format!("https://host.io/{}", "a".repeat(MAX_URL));
        assert_eq!(
            long.parse::<OriginUrl>(),
            Err(OriginUrlError::Length(long.len()))
        );
    }

    fn file_of(url: &str, digest: &Digest) -> OriginsFile {
        OriginsFile {
            charts: BTreeMap::from([(
                "charts/app".parse().unwrap(),
                BTreeMap::from([(
                    "1.0.0+build.1".to_owned(),
                    Origin {
                        url: url.parse().unwrap(),
                        digest: digest.clone(),
                    },
                )]),
            )]),
        }
    }

    #[test]
    fn an_origin_is_found_for_the_package_it_records_and_no_other() {
        let package = Digest::sha256_of(b"package");
        let file = file_of("https://charts.example.io/app-1.0.0.tgz", &package);
        let bytes = file.to_bytes();
        assert_eq!(serde_json::from_slice::<OriginsFile>(&bytes).unwrap(), file);
        let mut files = one_image("charts/app", "1.0.0_build.1").0;
        files.push(HeldFile::new(ORIGINS_FILE, bytes));
        let registry = Registry::from_files(files).unwrap();
        let found = registry.chart_origin("charts/app", "1.0.0+build.1", &package);
        assert_eq!(
            found.map(OriginUrl::as_str),
            Some("https://charts.example.io/app-1.0.0.tgz")
        );
        let other = Digest::sha256_of(b"other bytes");
        assert!(
            registry
                .chart_origin("charts/app", "1.0.0+build.1", &other)
                .is_none()
        );
        assert!(
            registry
                .chart_origin("charts/app", "1.0.0", &package)
                .is_none()
        );
        assert!(
            registry
                .chart_origin("charts/x", "1.0.0+build.1", &package)
                .is_none()
        );
    }

    #[test]
    fn content_without_the_file_has_no_origins() {
        let registry = Registry::from_files(one_image("charts/app", "1.0.0").0).unwrap();
        let package = Digest::sha256_of(b"package");
        assert!(
            registry
                .chart_origin("charts/app", "1.0.0", &package)
                .is_none()
        );
    }

    /// A file the build cannot read is content that cannot be served, naming the file: so is
    /// one with a URL an origin may not be.
    #[test]
    fn a_file_the_loader_cannot_read_refuses_the_content_naming_it() {
        let digest = Digest::sha256_of(b"package");
        let entry = |url: &str| {
            format!(
                r#"{{"charts":{{"charts/app":{{"1.0.0":{{"url":"{url}","digest":"{digest}"}}}}}}}}"#
            )
        };
        for bad in [
            "not json".to_owned(),
            entry("javascript:alert(1)"),
            entry("https://user:pw@host.io/x.tgz"),
            entry("../local/app.tgz"),
            r#"{"charts":{"Charts/x":{}}}"#.to_owned(),
            r#"{"charts":{},"images":{}}"#.to_owned(),
        ] {
            let mut files = one_image("charts/app", "1.0.0").0;
            files.push(HeldFile::new(ORIGINS_FILE, bad.as_bytes().to_vec()));
            let built: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
            let refused = Description::of(&built).refusal().map(ToString::to_string);
            let refused = refused.unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(refused.starts_with(ORIGINS_FILE), "{bad}: {refused}");
        }
        let mut files = one_image("charts/app", "1.0.0").0;
        files.push(HeldFile::new(
            ORIGINS_FILE,
            entry("https://host.io/x.tgz").into_bytes(),
        ));
        let built: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
        assert!(Description::of(&built).refusal().is_none());
    }
}
