//! What went wrong with one entry: a [`Problem`], carrying the values it is about (a path, a
//! URL, a reference, a digest) and the error under it, retried while it is a transient
//! [`Failure`]. Causes that repeat a source's words are shown quoted (`transport::quoting`).
//! The entry it happened to, and the error a fetch ends with, are `failed`'s.

use std::path::PathBuf;
use std::sync::Arc;

use super::transport::bounds::Bounded;
use super::transport::quoting::{error_chain, quoted};
use super::versions;

/// The cause of a TLS or network failure: a `reqwest` error, an oci-client one, or the I/O
/// error of a blob's stream.
pub type Cause = dyn std::error::Error + Send + Sync;

/// Why a URL does not parse (`url`'s error, which `reqwest` names only this way).
pub type UrlError = <reqwest::Url as std::str::FromStr>::Err;

/// How deep image indexes may nest in what fetch takes.
pub const MAX_NESTING: usize = 8;

/// Where a URL was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlOf {
    /// A classic repository's `repoURL`.
    Repository,
    /// A chart's URL (or its `.prov`'s) as the repository's index lists it.
    Chart,
    /// A package URL in the charts file's `chartURLs` (or its `.prov`'s).
    Package,
    /// A registry's API URL, made from its host and a repository.
    Registry,
}

impl std::fmt::Display for UrlOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UrlOf::Repository => "repoURL",
            UrlOf::Chart => "chart URL",
            UrlOf::Package => "chartURLs entry",
            UrlOf::Registry => "registry URL",
        })
    }
}

/// A JSON document a source sent, as a message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Document {
    /// An image index, by digest.
    Index(String),
    /// An image manifest, by digest.
    Manifest(String),
    /// A page of a repository's tags, by URL.
    TagList(String),
    /// The referrers index of a manifest, by the manifest's digest.
    Referrers(String),
}

impl std::fmt::Display for Document {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Document::Index(digest) => write!(f, "index {digest}"),
            Document::Manifest(digest) => write!(f, "manifest {digest}"),
            Document::TagList(url) => write!(f, "{url}: not a tag list"),
            Document::Referrers(digest) => write!(f, "the referrers of {digest}: not an index"),
        }
    }
}

/// What went wrong with one entry.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Problem {
    #[error("not found")]
    NotFound,
    #[error("the repository has no such chart")]
    NoSuchChart,
    #[error("the source has no version {asked}{}", versions::listed(nearest))]
    NoSuchVersion { asked: String, nearest: Vec<String> },
    #[error("the source has no tag {asked}{}", versions::listed(nearest))]
    NoSuchTag { asked: String, nearest: Vec<String> },
    #[error("no platform {0} in the index")]
    NoSuchPlatform(String),
    /// An image a chart needs whose reference fetch cannot take (in an `Arc`: a `Problem` is
    /// `Clone`, and the reference's error is not).
    #[error("it needs the image {image}, which fetch cannot take: {source}")]
    ImageReference {
        image: String,
        source: Arc<crate::pin::PinError>,
    },
    #[error("authentication refused (HTTP {0})")]
    AuthRefused(u16),
    #[error("authentication refused: {0}")]
    AuthRefusedBecause(String),
    #[error("digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch { expected: String, actual: String },
    /// A TLS handshake refused (a certificate no root vouches for, a name it does not hold):
    /// final. The source is a `reqwest` or oci-client error (in an `Arc`: a `Problem` is
    /// `Clone`, and they are not); shown with its causes, quoted (a server's certificate names
    /// what it likes).
    #[error(
        "TLS failure: {} (a private CA is trusted with --ca-file FILE; `tlsVerify: false` on the list's entry skips the check)",
        quoted(&error_chain(&**source))
    )]
    Tls { source: Arc<Cause> },
    /// A request that got no answer (refused, reset, timed out) or a body cut short: retried.
    /// The source is a `reqwest` error or the I/O error of a blob's stream; shown with its
    /// causes, quoted.
    #[error("network failure: {}", quoted(&error_chain(&**source)))]
    Network { source: Arc<Cause> },
    #[error("HTTP {0}: {1}")]
    Http(u16, String),
    /// `--ca-file`'s certificates, refused by the HTTP client.
    #[error("--ca-file: {source}")]
    CaCertificates { source: Arc<reqwest::Error> },
    /// The HTTP client could not be set up.
    #[error("cannot set up HTTPS: {source}")]
    HttpsClient { source: Arc<reqwest::Error> },
    /// A URL that does not parse; `of` says where it was given.
    #[error("{of} `{url}`: {source}")]
    BadUrl {
        of: UrlOf,
        url: String,
        source: UrlError,
    },
    /// An image reference fetch makes from a registry, repository and tag or digest that does
    /// not parse.
    #[error("`{reference}` is not a reference: {source}")]
    BadReference {
        reference: String,
        source: Arc<oci_client::ParseError>,
    },
    /// A digest (of a manifest, a referrer, a chart) that does not parse.
    #[error("{digest}: {source}")]
    BadDigest {
        digest: String,
        source: chartreg_core::oci::DigestError,
    },
    /// A blob's digest that is no sha256, the one algorithm fetch checks.
    #[error("`{digest}` is not a sha256 digest")]
    NotSha256 { digest: String },
    /// A document a source sent that is not the JSON it must be (what serde_json says quoted:
    /// it repeats the source's words).
    #[error("{document}: {}", quoted(&source.to_string()))]
    NotJson {
        document: Document,
        source: Arc<serde_json::Error>,
    },
    /// A classic repository's index that is not one (what the parser says quoted).
    #[error("{url} is not a Helm repository index: {}", quoted(&source.to_string()))]
    NotAnIndex {
        url: String,
        source: Arc<serde_yaml_ng::Error>,
    },
    /// An image index whose indexes nest deeper than fetch follows.
    #[error("indexes nest deeper than {MAX_NESTING} levels at {digest}")]
    TooDeep { digest: String },
    /// The registry answered a request with error codes fetch does not read as not found or
    /// refused (`codes`: what it said, quoted).
    #[error("the registry answered {codes}")]
    Registry {
        codes: String,
        source: Arc<oci_client::errors::OciDistributionError>,
    },
    /// A blob whose bytes oci-client found not to have the digest asked for (what it says
    /// quoted: it repeats the registry's header).
    #[error(
        "digest mismatch: expected the digest asked for, got {}",
        quoted(&source.to_string())
    )]
    OciDigest {
        source: Arc<oci_client::errors::DigestError>,
    },
    /// oci-client failed otherwise; shown with its causes, quoted.
    #[error("{}", quoted(&error_chain(&**source)))]
    Oci {
        source: Arc<oci_client::errors::OciDistributionError>,
    },
    /// The layout's signatures (for the policy) could not be read.
    #[error("its signatures: {source}")]
    Signatures {
        source: Arc<crate::verify::LayoutError>,
    },
    /// The index lists the chart without a URL to fetch it from.
    #[error("the index lists no URL for it")]
    NoUrlListed,
    /// An OCI repository's entry whose `repoURL` is not `oci://`.
    #[error("repoURL `{repo_url}` is not oci://")]
    NotOci { repo_url: String },
    /// An OCI artifact fetched as a chart whose config is not a Helm chart's.
    #[error("{digest} is not a Helm chart (its config is {})", quoted(config))]
    NotHelmChart { digest: String, config: String },
    /// A Helm chart's manifest with no chart layer.
    #[error("{digest} has no chart layer")]
    NoChartLayer { digest: String },
    /// In an `Arc`: a `Problem` is `Clone`, and serde_json's error is not.
    #[error(transparent)]
    Unwritable(std::sync::Arc<chartreg_core::oci::gojson::Unwritable>),
    #[error("the lock pins {locked}, the source now serves {now} (re-pushed upstream?)")]
    Repushed { locked: String, now: String },
    /// The chart's classic repository has no index: its failure is reported once, for the
    /// repository.
    #[error("the repository's index could not be read")]
    IndexFailed,
    #[error("its referrers are now {}, the lock pins {}", now.join(", "), locked.join(", "))]
    ReferrersChanged {
        now: Vec<String>,
        locked: Vec<String>,
    },
    /// The policy (`fetch --config`) refuses it: `line` names the artifact, its digest, the
    /// rule and why, as pack says it.
    #[error(
        "refused by {} verify: {line}{}",
        config.display(),
        locked.as_ref().map(|l| format!(" (the lock records it verified by {l})")).unwrap_or_default()
    )]
    Refused {
        config: PathBuf,
        line: String,
        /// With `--locked`: who the lock records signed it.
        locked: Option<String>,
    },
    /// With `--locked`: the lock records other signers than the ones found now.
    #[error("the lock records it verified by {locked}; now {now}")]
    NotAsLocked { locked: String, now: String },
    /// A download past its bound (`from`: the URL or digest).
    #[error("{from}: {}", bound.exceeded())]
    TooLarge { from: String, bound: Bounded },
    /// A classic repository's index with more nodes than the YAML parser may hold.
    #[error(
        "{url}: {nodes} lines and items, more than the {most} fetch reads of an index (the YAML \
         parser holds each in memory)"
    )]
    IndexTooLarge {
        url: String,
        nodes: usize,
        most: usize,
    },
    /// A classic repository's index whose YAML is refused before it is parsed (in an `Arc`: the
    /// error is not `Clone`).
    #[error("{url}: {source}")]
    IndexYaml {
        url: String,
        source: Arc<crate::yaml::YamlError>,
    },
    /// A classic repository's index the YAML parser did not read in time.
    #[error(
        "{url}: not read within {}, the most fetch gives the YAML parser for an index",
        humantime::format_duration(*within)
    )]
    IndexTooSlow {
        url: String,
        within: std::time::Duration,
    },
    /// The thread that reads an index could not be started (in an `Arc`: `std::io::Error` is
    /// not `Clone`).
    #[error("cannot start a thread to read the index: {0}")]
    Thread(Arc<std::io::Error>),
    /// A chart name the charts file asks for that is no chart's (in an `Arc`: a `Problem` is
    /// `Clone`, and the name's error is not).
    #[error("invalid chart name {name:?}: it {reason}")]
    ChartName {
        name: String,
        reason: Arc<crate::pack::chart_name::ChartNameError>,
    },
    /// A classic repository's index lists the chart at a version Helm does not accept: it is
    /// never part of a file name.
    #[error(
        "the index lists it as version {version:?}, not a version Helm accepts (a semantic \
         version as Helm reads one, which can be an OCI tag)"
    )]
    ListedVersion { version: String },
    /// A URL the index lists that is neither http nor https.
    #[error("the index lists it at {url:?}: only http and https URLs are fetched")]
    UrlScheme { url: String },
    /// The package is no chart Helm loads (in an `Arc`: `crate::pack::Problem` is not `Clone`).
    #[error("not a chart package Helm loads: {0}")]
    NotAChart(Arc<crate::pack::Problem>),
    /// The package holds another chart, or another version, than the one asked for.
    #[error(
        "the package is chart {:?} version {:?}, but {listed_by} lists it as {:?} version {:?}",
        package.0, package.1, asked.0, asked.1
    )]
    NotAsListed {
        /// The name and version asked for.
        asked: (String, String),
        /// The name and version in the package's Chart.yaml.
        package: (String, String),
        /// What lists it: `the index`, `the registry`.
        listed_by: &'static str,
    },
    /// A file fetch writes or reads back (in an `Arc`: `std::io::Error` is not `Clone`).
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    /// `--with-chart-images`: the chart's images cannot be found (its render refused, or
    /// stopped at a bound); in an `Arc`: the error is not `Clone`.
    #[error("--with-chart-images: {0}")]
    ChartImages(Arc<crate::chart_images::Error>),
}

impl Problem {
    /// The file `path` could not be written or read.
    pub fn file(path: &std::path::Path, source: std::io::Error) -> Problem {
        Problem::File {
            path: path.to_owned(),
            source: Arc::new(source),
        }
    }

    /// A request that got no answer, or a body cut short.
    pub fn network(source: impl std::error::Error + Send + Sync + 'static) -> Problem {
        Problem::Network {
            source: Arc::new(source),
        }
    }

    /// A TLS handshake refused.
    pub fn tls(source: impl std::error::Error + Send + Sync + 'static) -> Problem {
        Problem::Tls {
            source: Arc::new(source),
        }
    }

    /// `document`, which is not the JSON it must be.
    pub fn not_json(document: Document, source: serde_json::Error) -> Problem {
        Problem::NotJson {
            document,
            source: Arc::new(source),
        }
    }

    /// `digest` parsed as a digest.
    pub fn digest(digest: &str) -> Result<chartreg_core::oci::Digest, Problem> {
        digest.parse().map_err(|source| Problem::BadDigest {
            digest: digest.to_owned(),
            source,
        })
    }
}

impl From<chartreg_core::oci::gojson::Unwritable> for Problem {
    fn from(e: chartreg_core::oci::gojson::Unwritable) -> Self {
        Problem::Unwritable(std::sync::Arc::new(e))
    }
}

/// A failure that may be worth trying again, or not.
#[derive(Debug)]
pub enum Failure {
    Transient(Problem),
    Final(Problem),
}
