//! The SBOM of the binary: what it serves and what it is made of, from what the pages show
//! ([`Overview`]) and what the build recorded ([`ThisBuild`]), as SPDX 2.3 JSON (`spdx`) or
//! CycloneDX 1.5 JSON (`cyclonedx`).
//!
//! [`Inventory::of`] says once, whatever the format, what the document holds:
//! - chartreg itself, the document's subject (its version, licence, git revision, and the key
//!   its image is signed with when `image --sign-key` built it);
//! - each version the registry serves, contained by chartreg: its repository and tag, the
//!   manifest's sha256, the upstream it came from (an image's registry and path; where a
//!   chart's package was fetched from, when the content records it, and its `home` and
//!   `sources` from Chart.yaml), and what verified its signature at build; an image index's
//!   platform manifests, each contained by the index; what is attached to a version
//!   (signatures, attestations, SBOMs), each a metafile of it;
//! - each crate linked in (module `crates`), with the real edges between them: chartreg
//!   depends on what its root crate depends on.
//!
//! Charts, images and platform manifests carry a `pkg:oci` purl, crates theirs (module `purl`).
//!
//! Each writer turns the items and their relations into its format. The same content and
//! build give the same bytes: the time is the build's `SOURCE_DATE_EPOCH`, items come in the
//! registry's order, and the document's unique name (SPDX's namespace, CycloneDX's serial
//! number) comes from the sha256 of the document written without it, with no random part.
//! Text from upstream (names, tags, Chart.yaml) reaches only JSON strings, which serde_json
//! escapes; identifiers are made from counters only; URLs reach the fields that must be URLs
//! only when checked (`homepage`, and the content's `OriginUrl`).

mod crates;
mod cyclonedx;
mod purl;
mod spdx;

use chartreg_core::content::{Document as Stored, Kind, Registry, Unreadable};
use chartreg_core::oci::Digest;

use super::model::{Overview, RepositoryView, VersionView};
use crate::this_build::ThisBuild;

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// chartreg's own licence (the workspace's `license`).
const LICENSE: &str = "Apache-2.0";

/// The formats the SBOM is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SPDX 2.3 JSON.
    Spdx,
    /// CycloneDX 1.5 JSON.
    CycloneDx,
}

impl Format {
    /// The media type the document is served with (and the artifactType of its referrer).
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Spdx => chartreg_core::oci::media_type::SPDX_JSON,
            Format::CycloneDx => chartreg_core::oci::media_type::CYCLONEDX_JSON,
        }
    }
}

/// Why the SBOM cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum SbomError {
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    #[error("the binary's list of crates (its build's crates.json) is not readable: {0}")]
    Crates(#[source] serde_json::Error),
    #[error(
        "the binary's list of crates names {0} as depending on crate {1}, which it does not list"
    )]
    Edge(String, usize),
    #[error("SOURCE_DATE_EPOCH {0} of the build is past year 9999")]
    Created(u64),
}

/// The SBOM of `registry` (whose pages are `overview`) served by the binary built as `build`,
/// in `format`.
pub fn document(
    registry: &Registry,
    overview: &Overview,
    build: &ThisBuild,
    format: Format,
) -> Result<Vec<u8>, SbomError> {
    let inventory = Inventory::of(registry, overview, build)?;
    Ok(match format {
        Format::Spdx => spdx::written(&inventory),
        Format::CycloneDx => cyclonedx::written(&inventory),
    })
}

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Chartreg,
    Chart,
    Image,
    /// One platform's manifest of an index.
    Platform,
    /// A signature, attestation or SBOM attached to a version.
    Attached,
    Crate,
}

/// One thing the document lists.
#[derive(Debug, Clone)]
struct Item {
    role: Role,
    name: String,
    version: Option<String>,
    /// The manifest's sha256 (hex).
    sha256: Option<String>,
    /// Where it can be downloaded from: a crate's on crates.io, a chart's origin.
    download: Option<String>,
    homepage: Option<String>,
    /// Where it came from, in words.
    source: Option<String>,
    /// Its licence as an SPDX expression; `None`: no assertion.
    license: Option<String>,
    /// A licence declared that is no SPDX expression, kept as its text.
    declared: Option<String>,
    comment: Option<String>,
    purl: Option<String>,
    /// The item it is part of (an index, for a platform; the version, for what is attached);
    /// `None`: chartreg's own.
    within: Option<usize>,
}

impl Item {
    fn new(role: Role, name: String, version: Option<String>) -> Item {
        Item {
            role,
            name,
            version,
            sha256: None,
            download: None,
            homepage: None,
            source: None,
            license: None,
            declared: None,
            comment: None,
            purl: None,
            within: None,
        }
    }
}

/// How two items are related (by their positions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Contains(usize, usize),
    /// The first describes the second (a signature of an image).
    MetafileOf(usize, usize),
    DependsOn(usize, usize),
}

/// Everything the document says (see the module's documentation); chartreg is item 0.
#[derive(Debug)]
struct Inventory {
    created: String,
    items: Vec<Item>,
    relations: Vec<Relation>,
}

const CHARTREG: usize = 0;

impl Inventory {
    fn of(
        registry: &Registry,
        overview: &Overview,
        build: &ThisBuild,
    ) -> Result<Inventory, SbomError> {
        let listed = crates::listed(build)?;
        let created = build
            .created_rfc3339()
            .ok_or(SbomError::Created(build.created))?;
        let mut chartreg = Item::new(
            Role::Chartreg,
            "chartreg".to_owned(),
            Some(VERSION.to_owned()),
        );
        chartreg.source = build
            .revision
            .map(|r| format!("built from git revision {r}"));
        chartreg.license = Some(LICENSE.to_owned());
        chartreg.comment = Some(format!(
            "a read-only OCI registry serving the packages it contains from its own binary{}",
            build
                .signer
                .map(|key| format!("; its image signed by key {key}"))
                .unwrap_or_default()
        ));
        let mut inventory = Inventory {
            created,
            items: vec![chartreg],
            relations: Vec::new(),
        };
        for view in &overview.repositories {
            let repository = registry.repositories().find(|r| r.name() == view.name);
            for version in &view.versions {
                let at = inventory.version(view, version);
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
                        inventory.platform(view, version, at, &platform.to_string(), &entry.digest);
                    }
                }
            }
        }
        // Each crate's position; the root's is chartreg's own.
        let at: Vec<usize> = listed
            .items
            .into_iter()
            .map(|c| c.map_or(CHARTREG, |c| inventory.push(c)))
            .collect();
        for (from, to) in listed.edges {
            if let (Some(&from), Some(&to)) = (at.get(from), at.get(to))
                && from != to
            {
                inventory.relations.push(Relation::DependsOn(from, to));
            }
        }
        Ok(inventory)
    }

    fn push(&mut self, item: Item) -> usize {
        self.items.push(item);
        self.items.len().saturating_sub(1)
    }

    /// A tagged version, and what is attached to it; its position.
    fn version(&mut self, view: &RepositoryView, version: &VersionView) -> usize {
        let chart = version.kind == Kind::Chart;
        let chart_view = version.chart.as_ref();
        let mut item = Item::new(
            if chart { Role::Chart } else { Role::Image },
            view.name.clone(),
            Some(version.tag.clone()),
        );
        item.source = match (&view.upstream, chart_view) {
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
        item.download = chart_view.and_then(|c| c.origin.clone());
        item.sha256 = sha256(&version.digest);
        item.purl = item.sha256.as_deref().map(|hex| {
            purl::oci(
                &view.name,
                hex,
                &upstream_url(view),
                Some(&version.tag),
                None,
            )
        });
        item.homepage = chart_view
            .and_then(|c| c.home.as_deref())
            .and_then(homepage);
        item.comment = Some(signature_comment(version));
        let at = self.push(item);
        self.relations.push(Relation::Contains(CHARTREG, at));
        for attached in &version.attached {
            let mut item = Item::new(Role::Attached, view.name.clone(), attached.tag.clone());
            item.sha256 = sha256(&attached.digest);
            item.comment = Some(format!(
                "{} of {}:{}{}",
                attached.kind.as_str(),
                view.name,
                version.tag,
                attached
                    .artifact_type
                    .as_ref()
                    .map(|t| format!(" (artifactType {t})"))
                    .unwrap_or_default()
            ));
            item.within = Some(at);
            let attached_at = self.push(item);
            self.relations
                .push(Relation::Contains(CHARTREG, attached_at));
            self.relations.push(Relation::MetafileOf(attached_at, at));
        }
        at
    }

    /// One platform's manifest of the index at `index`.
    fn platform(
        &mut self,
        view: &RepositoryView,
        version: &VersionView,
        index: usize,
        platform: &str,
        digest: &Digest,
    ) {
        let mut item = Item::new(
            Role::Platform,
            view.name.clone(),
            Some(format!("{} {platform}", version.tag)),
        );
        item.sha256 = sha256(digest.as_str());
        item.purl = item.sha256.as_deref().map(|hex| {
            let arch = platform.split('/').nth(1).filter(|a| !a.is_empty());
            purl::oci(&view.name, hex, &upstream_url(view), None, arch)
        });
        item.comment = Some(format!(
            "the {platform} image of {}:{}",
            view.name, version.tag
        ));
        item.within = Some(index);
        let at = self.push(item);
        self.relations.push(Relation::Contains(index, at));
    }
}

/// Where a repository's images came from, `REGISTRY/PATH`; empty when the content does not say.
fn upstream_url(view: &RepositoryView) -> String {
    view.upstream
        .as_ref()
        .map(|u| format!("{}/{}", u.registry, u.path))
        .unwrap_or_default()
}

/// A manifest digest's hex, when it is a sha256 (other digests are served, not listed).
fn sha256(digest: &str) -> Option<String> {
    digest.strip_prefix("sha256:").map(str::to_owned)
}

/// Chart.yaml's `home`, when it is an http(s) URL with nothing a URL field would refuse.
fn homepage(home: &str) -> Option<String> {
    let plain = home
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'<' | b'>' | b'\\' | b'`'));
    let web = home.starts_with("https://") || home.starts_with("http://");
    (plain && web && home.len() > "https://".len()).then(|| home.to_owned())
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

/// `document` as indented JSON ending in a newline.
fn indented(document: &impl serde::Serialize) -> Vec<u8> {
    let mut data = serde_json::to_vec_pretty(document)
        .unwrap_or_else(|_| unreachable!("strings, numbers and lists serialise"));
    data.push(b'\n');
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

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
}
