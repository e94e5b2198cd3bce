//! The SBOM of the binary: an SPDX 2.3 JSON document of what it serves and what it is made of,
//! from what the pages show ([`Overview`]) and what the build recorded ([`ThisBuild`]).
//!
//! - chartreg itself, the document's subject (its version, licence, git revision, and the key
//!   its image is signed with when `image --sign-key` built it);
//! - each version the registry serves, as a package `CONTAINS`ed by chartreg: its repository
//!   and tag, the manifest's sha256, the upstream it came from (an image's registry and path;
//!   where a chart's package was fetched from, when the content records it, as its
//!   `downloadLocation` too, and its `home` and `sources` from Chart.yaml), and what verified
//!   its signature at build (the package's comment); an image index's platform manifests,
//!   each a package the index `CONTAINS`; what is attached to a version (signatures,
//!   attestations, SBOMs), each a package `METAFILE_OF` it;
//! - each crate compiled in, `DEPENDS_ON`ed by chartreg, with its licence as the crate
//!   declares it (`MIT/Apache-2.0` written as the expression `MIT OR Apache-2.0`; anything
//!   that is not an expression is `NOASSERTION`) and its purl (`pkg:cargo/NAME@VERSION`).
//!
//! The same content and build give the same bytes: `created` is the build's
//! `SOURCE_DATE_EPOCH`, packages come in the registry's order, and the namespace ends in the
//! sha256 of the document written without it (unique per document, as SPDX asks, with no
//! random part). Text from upstream (names, tags, Chart.yaml) reaches only JSON strings,
//! which serde_json escapes; SPDX identifiers are made from counters only.

use serde::{Deserialize, Serialize};

use chartreg_core::content::{Document as Stored, Kind, Registry, Unreadable};
use chartreg_core::oci::Digest;

use super::model::{Overview, RepositoryView, VersionView};
use crate::this_build::ThisBuild;

/// The media type the SBOM is served with (and the artifactType of its referrer).
pub use chartreg_core::oci::media_type::SPDX_JSON as MEDIA_TYPE;

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// chartreg's own licence (the workspace's `license`).
const LICENSE: &str = "Apache-2.0";
const NOASSERTION: &str = "NOASSERTION";

/// Why the SBOM cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum SbomError {
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    #[error("the binary's list of crates (its build's crates.json) is not readable: {0}")]
    Crates(#[source] serde_json::Error),
    #[error("SOURCE_DATE_EPOCH {0} of the build is past year 9999")]
    Created(u64),
}

/// A crate as the build script listed it.
#[derive(Debug, Deserialize)]
struct Crate {
    name: String,
    version: String,
    license: Option<String>,
    source: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    spdx_version: &'static str,
    data_license: &'static str,
    #[serde(rename = "SPDXID")]
    id: &'static str,
    name: String,
    document_namespace: String,
    creation_info: CreationInfo,
    document_describes: Vec<String>,
    packages: Vec<Package>,
    relationships: Vec<Relationship>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreationInfo {
    created: String,
    creators: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    #[serde(rename = "SPDXID")]
    id: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_info: Option<String>,
    download_location: String,
    files_analyzed: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    checksums: Vec<Checksum>,
    #[serde(skip_serializing_if = "Option::is_none")]
    homepage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_info: Option<String>,
    license_declared: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    external_refs: Vec<ExternalRef>,
    primary_package_purpose: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Checksum {
    algorithm: &'static str,
    checksum_value: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ExternalRef {
    reference_category: &'static str,
    reference_type: &'static str,
    reference_locator: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Relationship {
    spdx_element_id: String,
    relationship_type: &'static str,
    related_spdx_element: String,
}

const CHARTREG_ID: &str = "SPDXRef-Package-chartreg";

/// The SBOM of `registry` (whose pages are `overview`) served by the binary built as `build`.
pub fn document(
    registry: &Registry,
    overview: &Overview,
    build: &ThisBuild,
) -> Result<Vec<u8>, SbomError> {
    let crates: Vec<Crate> = serde_json::from_slice(build.crates).map_err(SbomError::Crates)?;
    let created = build
        .created_rfc3339()
        .ok_or(SbomError::Created(build.created))?;
    let mut packages = vec![Package {
        id: CHARTREG_ID.to_owned(),
        name: "chartreg".to_owned(),
        version_info: Some(VERSION.to_owned()),
        download_location: NOASSERTION.to_owned(),
        files_analyzed: false,
        checksums: Vec::new(),
        homepage: None,
        source_info: build
            .revision
            .map(|r| format!("built from git revision {r}")),
        license_declared: LICENSE.to_owned(),
        comment: Some(format!(
            "a read-only OCI registry serving the packages it CONTAINS from its own binary{}",
            build
                .signer
                .map(|key| format!("; its image signed by key {key}"))
                .unwrap_or_default()
        )),
        external_refs: Vec::new(),
        primary_package_purpose: "APPLICATION",
    }];
    let mut relationships = vec![Relationship {
        spdx_element_id: "SPDXRef-DOCUMENT".to_owned(),
        relationship_type: "DESCRIBES",
        related_spdx_element: CHARTREG_ID.to_owned(),
    }];
    let mut served = Served {
        packages: &mut packages,
        relationships: &mut relationships,
    };
    for view in &overview.repositories {
        let repository = registry.repositories().find(|r| r.name() == view.name);
        for version in &view.versions {
            let id = served.version(view, version);
            let Some(repository) = repository else {
                continue;
            };
            let manifest = repository.tagged(&version.tag);
            if let Some(Stored::Index(index)) = manifest.map(|m| m.document()).transpose()? {
                for entry in index.manifests.iter() {
                    let Some(platform) = entry.platform.as_ref().filter(|p| p.os != "unknown")
                    else {
                        continue;
                    };
                    served.platform(view, version, &id, &platform.to_string(), &entry.digest);
                }
            }
        }
    }
    for (i, c) in crates.iter().enumerate() {
        let id = format!("SPDXRef-Crate-{i}");
        let registry_crate = c
            .source
            .as_deref()
            .is_some_and(|s| s.starts_with("registry+"));
        packages.push(Package {
            id: id.clone(),
            name: c.name.clone(),
            version_info: Some(c.version.clone()),
            download_location: if c.source.as_deref()
                == Some("registry+https://github.com/rust-lang/crates.io-index")
            {
                format!(
                    "https://crates.io/api/v1/crates/{}/{}/download",
                    c.name, c.version
                )
            } else {
                NOASSERTION.to_owned()
            },
            files_analyzed: false,
            checksums: Vec::new(),
            homepage: None,
            source_info: c.source.as_ref().map(|s| format!("cargo source {s}")),
            license_declared: c
                .license
                .as_deref()
                .map_or_else(|| NOASSERTION.to_owned(), expression),
            comment: None,
            external_refs: if registry_crate {
                vec![purl(format!("pkg:cargo/{}@{}", c.name, c.version))]
            } else {
                Vec::new()
            },
            primary_package_purpose: "LIBRARY",
        });
        relationships.push(Relationship {
            spdx_element_id: CHARTREG_ID.to_owned(),
            relationship_type: "DEPENDS_ON",
            related_spdx_element: id,
        });
    }
    let mut document = Document {
        spdx_version: "SPDX-2.3",
        data_license: "CC0-1.0",
        id: "SPDXRef-DOCUMENT",
        name: format!("chartreg-{VERSION}"),
        document_namespace: String::new(),
        creation_info: CreationInfo {
            created,
            creators: vec![format!("Tool: chartreg-{VERSION}")],
        },
        document_describes: vec![CHARTREG_ID.to_owned()],
        packages,
        relationships,
    };
    let unnamed = written(&document);
    let hex = Digest::sha256_of(&unnamed);
    document.document_namespace = format!(
        "https://spdx.org/spdxdocs/chartreg-{VERSION}-{}",
        hex.as_str().trim_start_matches("sha256:")
    );
    Ok(written(&document))
}

/// The document as indented JSON ending in a newline.
fn written(document: &Document) -> Vec<u8> {
    let mut data = serde_json::to_vec_pretty(document)
        .unwrap_or_else(|_| unreachable!("strings, numbers and lists serialise"));
    data.push(b'\n');
    data
}

/// The packages and relationships of what the registry serves, numbered as they come.
struct Served<'a> {
    packages: &'a mut Vec<Package>,
    relationships: &'a mut Vec<Relationship>,
}

impl Served<'_> {
    fn next_id(&self, what: &str) -> String {
        format!("SPDXRef-{what}-{}", self.packages.len())
    }

    fn relate(&mut self, from: &str, kind: &'static str, to: &str) {
        self.relationships.push(Relationship {
            spdx_element_id: from.to_owned(),
            relationship_type: kind,
            related_spdx_element: to.to_owned(),
        });
    }

    /// A tagged version, and what is attached to it; its identifier.
    fn version(&mut self, view: &RepositoryView, version: &VersionView) -> String {
        let chart = version.kind == Kind::Chart;
        let id = self.next_id(if chart { "Chart" } else { "Image" });
        let chart_view = version.chart.as_ref();
        let source_info = match (&view.upstream, chart_view) {
            (Some(upstream), _) => Some(format!(
                "pulled from {}/{}",
                upstream.registry, upstream.path
            )),
            (None, Some(c)) => {
                let fetched = c.origin.as_ref().map(|o| format!("fetched from {o}"));
                let sources = (!c.sources.is_empty())
                    .then(|| format!("Chart.yaml sources: {}", c.sources.join(" ")));
                let said: Vec<String> = fetched.into_iter().chain(sources).collect();
                (!said.is_empty()).then(|| said.join("; "))
            }
            _ => None,
        };
        self.packages.push(Package {
            id: id.clone(),
            name: view.name.clone(),
            version_info: Some(version.tag.clone()),
            download_location: chart_view
                .and_then(|c| c.origin.as_deref())
                .and_then(download_location)
                .unwrap_or_else(|| NOASSERTION.to_owned()),
            files_analyzed: false,
            checksums: checksum(&version.digest),
            homepage: chart_view
                .and_then(|c| c.home.as_deref())
                .and_then(homepage),
            source_info,
            license_declared: NOASSERTION.to_owned(),
            comment: Some(signature_comment(version)),
            external_refs: Vec::new(),
            primary_package_purpose: if chart { "INSTALL" } else { "CONTAINER" },
        });
        self.relate(CHARTREG_ID, "CONTAINS", &id);
        for attached in &version.attached {
            let attached_id = self.next_id("Attached");
            self.packages.push(Package {
                id: attached_id.clone(),
                name: view.name.clone(),
                version_info: attached.tag.clone(),
                download_location: NOASSERTION.to_owned(),
                files_analyzed: false,
                checksums: checksum(&attached.digest),
                homepage: None,
                source_info: None,
                license_declared: NOASSERTION.to_owned(),
                comment: Some(format!(
                    "{} of {}:{}{}",
                    attached.kind.as_str(),
                    view.name,
                    version.tag,
                    attached
                        .artifact_type
                        .as_ref()
                        .map(|t| format!(" (artifactType {t})"))
                        .unwrap_or_default()
                )),
                external_refs: Vec::new(),
                primary_package_purpose: "OTHER",
            });
            self.relate(CHARTREG_ID, "CONTAINS", &attached_id);
            self.relate(&attached_id, "METAFILE_OF", &id);
        }
        id
    }

    /// One platform's manifest of the index `index`.
    fn platform(
        &mut self,
        view: &RepositoryView,
        version: &VersionView,
        index: &str,
        platform: &str,
        digest: &Digest,
    ) {
        let id = self.next_id("Image");
        self.packages.push(Package {
            id: id.clone(),
            name: view.name.clone(),
            version_info: Some(format!("{} {platform}", version.tag)),
            download_location: NOASSERTION.to_owned(),
            files_analyzed: false,
            checksums: checksum(digest.as_str()),
            homepage: None,
            source_info: None,
            license_declared: NOASSERTION.to_owned(),
            comment: Some(format!(
                "the {platform} image of {}:{}",
                view.name, version.tag
            )),
            external_refs: Vec::new(),
            primary_package_purpose: "CONTAINER",
        });
        self.relate(index, "CONTAINS", &id);
    }
}

/// A manifest digest as SPDX's checksum: sha256 only (other digests are served, not listed).
fn checksum(digest: &str) -> Vec<Checksum> {
    digest
        .strip_prefix("sha256:")
        .map(|hex| Checksum {
            algorithm: "SHA256",
            checksum_value: hex.to_owned(),
        })
        .into_iter()
        .collect()
}

fn purl(locator: String) -> ExternalRef {
    ExternalRef {
        reference_category: "PACKAGE-MANAGER",
        reference_type: "purl",
        reference_locator: locator,
    }
}

/// Chart.yaml's `home`, when it is an http(s) URL with nothing SPDX would refuse.
fn homepage(home: &str) -> Option<String> {
    let plain = home
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'<' | b'>' | b'\\' | b'`'));
    let web = home.starts_with("https://") || home.starts_with("http://");
    (plain && web && home.len() > "https://".len()).then(|| home.to_owned())
}

/// A chart's origin as SPDX's `downloadLocation`: an http(s) URL whose host is a DNS name
/// (SPDX's validator, spdx-tools, takes no address or single-label host: such an origin, an
/// `oci://` one too, is said in `sourceInfo` only). The origin is an `OriginUrl` already: plain
/// ASCII, no credentials.
fn download_location(origin: &str) -> Option<String> {
    let lower = origin.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.split(':').next()?;
    let labels: Vec<&str> = host.split('.').collect();
    let named = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.bytes().all(|b| b.is_ascii_alphabetic()));
    named.then(|| origin.to_owned())
}

/// What a version's record of verification says.
fn signature_comment(version: &VersionView) -> String {
    match &version.verified {
        None => "signature not verified at build".to_owned(),
        Some(v) if v.by.is_empty() => format!(
            "signature failed at build, let through by `mode: warn`: {}",
            v.warning.as_deref().unwrap_or("no reason recorded")
        ),
        Some(v) => {
            let by: Vec<String> = v.by.iter().map(ToString::to_string).collect();
            format!("signature verified at build: {}", by.join("; "))
        }
    }
}

/// A crate's declared licence as an SPDX expression: `A/B` (cargo's old form) is `A OR B`;
/// anything with characters no expression has is `NOASSERTION`.
fn expression(declared: &str) -> String {
    let joined = declared
        .split('/')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" OR ");
    let valid = !joined.is_empty()
        && joined.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b' ' | b'.' | b'-' | b'+' | b'(' | b')' | b':')
        });
    if valid {
        joined
    } else {
        NOASSERTION.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("MIT OR Apache-2.0", "MIT OR Apache-2.0")]
    #[case("MIT/Apache-2.0", "MIT OR Apache-2.0")]
    #[case("Apache-2.0 / MIT", "Apache-2.0 OR MIT")]
    #[case(
        "(MIT OR Apache-2.0) AND Unicode-3.0",
        "(MIT OR Apache-2.0) AND Unicode-3.0"
    )]
    #[case("MIT, Apache", NOASSERTION)]
    #[case("", NOASSERTION)]
    fn licence_expressions(#[case] declared: &str, #[case] want: &str) {
        assert_eq!(expression(declared), want);
    }

    #[rstest]
    #[case("https://cilium.io/", true)]
    #[case("http://example.com/a?b=c", true)]
    #[case("ftp://example.com/", false)]
    #[case("https://", false)]
    #[case("https://exa mple.com/", false)]
    #[case("https://example.com/\"x", false)]
    fn homepages(#[case] home: &str, #[case] taken: bool) {
        assert_eq!(homepage(home).is_some(), taken);
    }

    #[rstest]
    #[case("https://charts.jetstack.io/charts/cert-manager-v1.14.0.tgz", true)]
    #[case("http://charts.example.io:8080/a.tgz", true)]
    #[case("HTTPS://Charts.Example.IO/a.tgz", true)]
    #[case("http://127.0.0.1:5000/hello-1.0.0.tgz", false)]
    #[case("http://localhost:5000/hello-1.0.0.tgz", false)]
    #[case("https://[::1]/a.tgz", false)]
    #[case("https://-bad.io/a.tgz", false)]
    #[case("oci://ghcr.io/org/charts/app:1.0.0", false)]
    fn download_locations(#[case] origin: &str, #[case] taken: bool) {
        assert_eq!(download_location(origin).is_some(), taken);
    }
}
