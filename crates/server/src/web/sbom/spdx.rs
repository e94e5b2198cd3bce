//! The SBOM as an SPDX 2.3 JSON document: each item a package (identifiers from its position:
//! `SPDXRef-Chart-3`), chartreg the one the document `DESCRIBES`, the relations as
//! `CONTAINS`, `METAFILE_OF` and `DEPENDS_ON` (the crates' real graph), the crates also
//! contained by one package named `cargo` (`SPDXRef-Application-crates`), as trivy reads them;
//! the namespace ends in the sha256 of the document written without it (unique per document,
//! as SPDX asks).

use serde::Serialize;

use chartreg_core::oci::Digest;

use super::{CHARTREG, Inventory, Item, Relation, Role, VERSION, indented};

const NOASSERTION: &str = "NOASSERTION";

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
    license_comments: Option<String>,
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

/// The identifier of the item at `at`.
fn id(inventory: &Inventory, at: usize) -> String {
    if at == CHARTREG {
        return "SPDXRef-Package-chartreg".to_owned();
    }
    let word = match inventory.items.get(at).map(|i| i.role) {
        Some(Role::Chart) => "Chart",
        Some(Role::Image | Role::Platform) => "Image",
        Some(Role::Attached) => "Attached",
        Some(Role::Crate) => "Crate",
        Some(Role::Chartreg) | None => "Package",
    };
    format!("SPDXRef-{word}-{at}")
}

fn package(inventory: &Inventory, at: usize, item: &Item) -> Package {
    Package {
        id: id(inventory, at),
        name: item.name.clone(),
        version_info: item.version.clone(),
        download_location: item
            .download
            .as_deref()
            .and_then(download_location)
            .unwrap_or_else(|| NOASSERTION.to_owned()),
        files_analyzed: false,
        checksums: item
            .sha256
            .iter()
            .map(|hex| Checksum {
                algorithm: "SHA256",
                checksum_value: hex.clone(),
            })
            .collect(),
        homepage: item.homepage.clone(),
        source_info: item.source.clone(),
        license_declared: item
            .license
            .clone()
            .unwrap_or_else(|| NOASSERTION.to_owned()),
        license_comments: item
            .declared
            .as_ref()
            .map(|text| format!("declared as `{text}`, which is no SPDX expression")),
        comment: item.comment.clone(),
        external_refs: item
            .purl
            .iter()
            .map(|purl| ExternalRef {
                reference_category: "PACKAGE-MANAGER",
                reference_type: "purl",
                reference_locator: purl.clone(),
            })
            .collect(),
        primary_package_purpose: match item.role {
            Role::Chartreg => "APPLICATION",
            Role::Chart => "INSTALL",
            Role::Image | Role::Platform => "CONTAINER",
            Role::Attached => "OTHER",
            Role::Crate => "LIBRARY",
        },
    }
}

/// The package grouping the crates linked in.
const CRATES: &str = "SPDXRef-Application-crates";

/// The crates linked into chartreg as one package that contains them, named by their package
/// type (`cargo`) under an `SPDXRef-Application-` identifier: the form in which trivy (the
/// version the tests run) reads language packages from SPDX; it reads none outside one.
fn crates_package() -> Package {
    Package {
        id: CRATES.to_owned(),
        name: "cargo".to_owned(),
        version_info: None,
        download_location: NOASSERTION.to_owned(),
        files_analyzed: false,
        checksums: Vec::new(),
        homepage: None,
        source_info: Some("chartreg".to_owned()),
        license_declared: NOASSERTION.to_owned(),
        license_comments: None,
        comment: Some(
            "the crates linked into chartreg, as Cargo resolved them, grouped by their package type"
                .to_owned(),
        ),
        external_refs: Vec::new(),
        primary_package_purpose: "OTHER",
    }
}

/// `inventory` as an SPDX 2.3 JSON document.
pub(super) fn written(inventory: &Inventory) -> Vec<u8> {
    let mut packages: Vec<Package> = inventory
        .items
        .iter()
        .enumerate()
        .map(|(at, item)| package(inventory, at, item))
        .collect();
    let relate = |from: usize, kind: &'static str, to: usize| Relationship {
        spdx_element_id: id(inventory, from),
        relationship_type: kind,
        related_spdx_element: id(inventory, to),
    };
    let mut relationships = vec![Relationship {
        spdx_element_id: "SPDXRef-DOCUMENT".to_owned(),
        relationship_type: "DESCRIBES",
        related_spdx_element: id(inventory, CHARTREG),
    }];
    relationships.extend(inventory.relations.iter().map(|r| match *r {
        Relation::Contains(from, to) => relate(from, "CONTAINS", to),
        Relation::MetafileOf(from, to) => relate(from, "METAFILE_OF", to),
        Relation::DependsOn(from, to) => relate(from, "DEPENDS_ON", to),
    }));
    let crates: Vec<usize> = (0..inventory.items.len())
        .filter(|&at| {
            inventory
                .items
                .get(at)
                .is_some_and(|i| i.role == Role::Crate)
        })
        .collect();
    if !crates.is_empty() {
        packages.push(crates_package());
        relationships.push(Relationship {
            spdx_element_id: id(inventory, CHARTREG),
            relationship_type: "CONTAINS",
            related_spdx_element: CRATES.to_owned(),
        });
        relationships.extend(crates.into_iter().map(|at| Relationship {
            spdx_element_id: CRATES.to_owned(),
            relationship_type: "CONTAINS",
            related_spdx_element: id(inventory, at),
        }));
    }
    let mut document = Document {
        spdx_version: "SPDX-2.3",
        data_license: "CC0-1.0",
        id: "SPDXRef-DOCUMENT",
        name: format!("chartreg-{VERSION}"),
        document_namespace: String::new(),
        creation_info: CreationInfo {
            created: inventory.created.clone(),
            creators: vec![format!("Tool: chartreg-{VERSION}")],
        },
        document_describes: vec![id(inventory, CHARTREG)],
        packages,
        relationships,
    };
    let unnamed = indented(&document);
    let hex = Digest::sha256_of(&unnamed);
    document.document_namespace = format!(
        "https://spdx.org/spdxdocs/chartreg-{VERSION}-{}",
        hex.as_str().trim_start_matches("sha256:")
    );
    indented(&document)
}

/// A download URL as SPDX's `downloadLocation`: an http(s) URL whose host is a DNS name
/// (SPDX's validator, spdx-tools, takes no address or single-label host: such an origin, an
/// `oci://` one too, is said in `sourceInfo` only). Chart origins are `OriginUrl`s already
/// (plain ASCII, no credentials), crates' URLs the build's own.
fn download_location(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
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
    named.then(|| url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("https://charts.jetstack.io/charts/cert-manager-v1.14.0.tgz", true)]
    #[case("http://charts.example.io:8080/a.tgz", true)]
    #[case("HTTPS://Charts.Example.IO/a.tgz", true)]
    #[case("https://crates.io/api/v1/crates/serde/1.0.0/download", true)]
    #[case("http://127.0.0.1:5000/hello-1.0.0.tgz", false)]
    #[case("http://localhost:5000/hello-1.0.0.tgz", false)]
    #[case("https://[::1]/a.tgz", false)]
    #[case("https://-bad.io/a.tgz", false)]
    #[case("oci://ghcr.io/org/charts/app:1.0.0", false)]
    fn download_locations(#[case] url: &str, #[case] taken: bool) {
        assert_eq!(download_location(url).is_some(), taken);
    }
}
