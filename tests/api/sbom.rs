//! The SBOM at `/sbom.spdx.json` and `/sbom.cdx.json`, in-process: served as
//! `application/spdx+json` and `application/vnd.cyclonedx+json`, linked from every page, the
//! same bytes on every request; every version served is a package (a component) with its
//! manifest's sha256, contained by chartreg, an index's platforms contained by it (within it),
//! what is attached to a version a metafile of it (within it); what verified a version at
//! build in its comment; where a fetched chart came from; hostile chart metadata kept out of
//! the fields SPDX and CycloneDX check; and each format's own validator (`pyspdxtools`,
//! cyclonedx-python-lib) takes every document.

use super::*;
use common::{PROV_KEY, WARNING};

async fn sbom(registry: Registry) -> (Reply, Value) {
    let r = call(registry, Method::GET, "/sbom.spdx.json", &[]).await;
    let document = serde_json::from_slice(&r.body).expect("JSON");
    (r, document)
}

async fn bom(registry: Registry) -> (Reply, Value) {
    let r = call(registry, Method::GET, "/sbom.cdx.json", &[]).await;
    let bom = serde_json::from_slice(&r.body).expect("JSON");
    (r, bom)
}

/// Every component of `bom`, those within others too, each with the `bom-ref` of the one it
/// lies within (`None`: at the top).
fn components(bom: &Value) -> Vec<(&Value, Option<&str>)> {
    fn walk<'a>(
        list: &'a Value,
        within: Option<&'a str>,
        out: &mut Vec<(&'a Value, Option<&'a str>)>,
    ) {
        for c in list.as_array().into_iter().flatten() {
            out.push((c, within));
            walk(&c["components"], c["bom-ref"].as_str(), out);
        }
    }
    let mut out = Vec::new();
    walk(&bom["components"], None, &mut out);
    out
}

/// The component of `repository` at `version`, and the `bom-ref` it lies within.
fn component<'a>(bom: &'a Value, repository: &str, version: &str) -> (&'a Value, Option<&'a str>) {
    components(bom)
        .into_iter()
        .find(|(c, _)| c["name"] == repository && c["version"] == version)
        .unwrap_or_else(|| panic!("no component {repository} {version}: {bom:#}"))
}

/// CycloneDX's own library takes `body` (skipped, or failed under `CI=true`, when it is
/// missing).
fn bom_validated(body: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbom.cdx.json");
    std::fs::write(&path, body).unwrap();
    if let Some(result) = common::cyclonedx_validated(&path) {
        result.unwrap_or_else(|said| panic!("cyclonedx-python-lib refuses the BOM: {said}"));
    }
}

/// The package of `repository` at `version`, `versionInfo` as written.
fn package<'a>(document: &'a Value, repository: &str, version: &str) -> &'a Value {
    document["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == repository && p["versionInfo"] == version)
        .unwrap_or_else(|| panic!("no package {repository} {version}: {document:#}"))
}

/// Whether `document` relates `from` to `to` by `kind`.
fn related(document: &Value, from: &Value, kind: &str, to: &Value) -> bool {
    document["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| {
            r["spdxElementId"] == *from
                && r["relationshipType"] == kind
                && r["relatedSpdxElement"] == *to
        })
}

/// SPDX's validator takes `body` (skipped, or failed under `CI=true`, when it is missing).
fn validated(body: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbom.spdx.json");
    std::fs::write(&path, body).unwrap();
    if let Some(result) = common::spdx_validated(&path) {
        result.unwrap_or_else(|said| panic!("pyspdxtools refuses the SBOM: {said}"));
    }
}

#[actix_web::test]
async fn the_sbom_lists_every_version_served_and_is_valid_spdx() {
    let registry = common::assets_registry();
    let (r, document) = sbom(common::assets_registry()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/spdx+json"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(document["spdxVersion"], "SPDX-2.3");
    assert_eq!(document["creationInfo"]["created"], "1970-01-01T00:00:00Z");
    let chartreg = &document["documentDescribes"][0];
    assert_eq!(
        package(&document, "chartreg", env!("CARGO_PKG_VERSION"))["SPDXID"],
        *chartreg
    );
    let mut versions = 0;
    for repository in registry.repositories() {
        for tag in repository.tags() {
            if tag.starts_with("sha256-") {
                continue;
            }
            let digest = repository.tag_digest(tag).unwrap();
            let p = package(&document, repository.name(), tag);
            assert_eq!(p["checksums"][0]["algorithm"], "SHA256");
            assert_eq!(
                p["checksums"][0]["checksumValue"],
                digest.as_str().trim_start_matches("sha256:")
            );
            assert_eq!(p["comment"], "signature not verified at build");
            assert!(related(&document, chartreg, "CONTAINS", &p["SPDXID"]));
            versions += 1;
        }
    }
    assert!(versions > 0);
    // The sample index's platforms, each contained by the index.
    let sample = registry
        .repositories()
        .find(|r| r.name() == "images/sample")
        .unwrap();
    for tag in sample.tags() {
        let manifest = sample.tagged(tag).unwrap();
        let chartreg_core::content::Document::Index(index) = manifest.document().unwrap() else {
            continue;
        };
        let top = package(&document, "images/sample", tag)["SPDXID"].clone();
        for entry in index.manifests.iter().filter(|m| m.platform.is_some()) {
            let platform = entry.platform.as_ref().unwrap().to_string();
            let p = package(&document, "images/sample", &format!("{tag} {platform}"));
            assert_eq!(
                p["checksums"][0]["checksumValue"],
                entry.digest.as_str().trim_start_matches("sha256:")
            );
            assert!(related(&document, &top, "CONTAINS", &p["SPDXID"]));
        }
    }
    // Made once: the same bytes again.
    let (again, _) = sbom(common::assets_registry()).await;
    assert_eq!(again.body, r.body);
    validated(&r.body);

    // The same as a CycloneDX BOM: every version a component at the top with its sha256, an
    // index's platforms within it.
    let (r, bom) = bom(common::assets_registry()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.cyclonedx+json")
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(bom["metadata"]["timestamp"], "1970-01-01T00:00:00Z");
    let mut components_seen = 0;
    for repository in registry.repositories() {
        for tag in repository.tags() {
            if tag.starts_with("sha256-") {
                continue;
            }
            let digest = repository.tag_digest(tag).unwrap();
            let (c, within) = component(&bom, repository.name(), tag);
            assert_eq!(within, None, "{c}");
            assert_eq!(
                c["hashes"][0],
                json!({"alg": "SHA-256", "content": digest.as_str().trim_start_matches("sha256:")})
            );
            components_seen += 1;
        }
    }
    assert_eq!(components_seen, versions);
    for tag in sample.tags() {
        let manifest = sample.tagged(tag).unwrap();
        let chartreg_core::content::Document::Index(index) = manifest.document().unwrap() else {
            continue;
        };
        let (top, _) = component(&bom, "images/sample", tag);
        for entry in index.manifests.iter().filter(|m| m.platform.is_some()) {
            let platform = entry.platform.as_ref().unwrap().to_string();
            let (c, within) = component(&bom, "images/sample", &format!("{tag} {platform}"));
            assert_eq!(within, top["bom-ref"].as_str(), "{c}");
            assert_eq!(c["type"], "container");
        }
    }
    let (again, _) = self::bom(common::assets_registry()).await;
    assert_eq!(again.body, r.body);
    bom_validated(&r.body);
}

#[actix_web::test]
async fn every_page_links_the_sbom() {
    for path in ["/", "/ui/charts/hello"] {
        let html = String::from_utf8(get(path).await.body.to_vec()).unwrap();
        assert!(
            html.contains(r#"<a href="/sbom.spdx.json""#)
                && html.contains(r#"<a href="/sbom.cdx.json""#),
            "{path}: {html}"
        );
    }
}

#[actix_web::test]
async fn what_verified_a_version_is_in_its_comment() {
    let content = common::verified_content();
    let (_, document) = sbom(content.registry()).await;
    assert_eq!(
        package(&document, "charts/one", "1.0.0")["comment"],
        format!("signature verified at build: key {PROV_KEY} (.prov)")
    );
    assert_eq!(
        package(&document, "charts/one", "3.0.0_build.1")["comment"],
        format!("signature failed at build, let through by `mode: warn`: {WARNING}")
    );
    assert_eq!(
        package(&document, "images/plain", "v1")["comment"],
        "signature not verified at build"
    );
    let signed = package(&document, "images/signed", "v1");
    assert!(
        signed["comment"]
            .as_str()
            .unwrap()
            .starts_with("signature verified at build: identity "),
        "{signed}"
    );
}

/// Referrers (an SBOM, a signature) attached to a version are its metafiles.
#[actix_web::test]
async fn what_is_attached_to_a_version_is_a_metafile_of_it() {
    let (registry, subject, referrers) = super::referrers::referrers_registry();
    let (r, document) = sbom(registry).await;
    assert_eq!(
        package(&document, "test/refs", "v1")["checksums"][0]["checksumValue"],
        subject.digest.as_str().trim_start_matches("sha256:")
    );
    let mut attached = 0;
    for p in document["packages"].as_array().unwrap() {
        if !p["SPDXID"]
            .as_str()
            .unwrap()
            .starts_with("SPDXRef-Attached-")
        {
            continue;
        }
        attached += 1;
        let of = document["relationships"]
            .as_array()
            .unwrap()
            .iter()
            .find(|rel| {
                rel["spdxElementId"] == p["SPDXID"] && rel["relationshipType"] == "METAFILE_OF"
            })
            .unwrap_or_else(|| panic!("{p} is a metafile of nothing"));
        let subject = document["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["SPDXID"] == of["relatedSpdxElement"])
            .unwrap();
        assert_eq!(subject["name"], p["name"]);
        assert!(
            p["comment"]
                .as_str()
                .unwrap()
                .contains(&format!(":{}", subject["versionInfo"].as_str().unwrap())),
            "{p}"
        );
    }
    assert_eq!(attached, referrers.len(), "{document:#}");
    validated(&r.body);
    // In the BOM, each lies within the version it is attached to.
    let (r, bom) = bom(super::referrers::referrers_registry().0).await;
    let (subject, _) = component(&bom, "test/refs", "v1");
    let within: Vec<_> = components(&bom)
        .into_iter()
        .filter(|(c, within)| c["type"] == "file" && *within == subject["bom-ref"].as_str())
        .collect();
    assert_eq!(within.len(), referrers.len(), "{bom:#}");
    bom_validated(&r.body);
}

#[actix_web::test]
async fn hostile_chart_metadata_stays_in_strings() {
    let (r, document) = sbom(super::pages::hostile_registry()).await;
    let evil = package(&document, "charts/evil", "1.0.0");
    assert!(
        evil.get("homepage").is_none(),
        "javascript: is no homepage: {evil}"
    );
    validated(&r.body);
    let (r, bom) = bom(super::pages::hostile_registry()).await;
    let (evil, _) = component(&bom, "charts/evil", "1.0.0");
    assert!(
        evil.get("externalReferences").is_none(),
        "javascript: is no website: {evil}"
    );
    bom_validated(&r.body);
}

/// A chart packed from a lock has where it was downloaded from: its page says it, and the
/// SBOM names it in `sourceInfo`, and as the `downloadLocation` when its host is a DNS name;
/// an origin recorded for other bytes than those served says nothing.
#[actix_web::test]
async fn a_fetched_chart_has_its_origin_in_the_sbom_and_on_its_page() {
    let url = "https://charts.example.io/hello-1.0.0.tgz";
    let hello = common::sha256(&common::read(
        &common::root().join("charts/hello-1.0.0.tgz"),
    ));
    let origins = json!({"charts": {"charts/hello": {
        "1.0.0": {"url": url, "digest": hello},
        "0.1.0": {"url": "https://charts.example.io/hello-0.1.0.tgz", "digest": hello},
        "0.2.0": {"url": "oci://ghcr.io/org/charts/hello:0.2.0", "digest": common::sha256(&common::read(
            &common::root().join("charts/hello-0.2.0.tgz"),
        ))},
    }}});
    let registry = || {
        let mut files = common::files_in(&common::root().join("assets"));
        files.push(HeldFile::new(
            chartreg_core::content::ORIGINS_FILE,
            serde_json::to_vec(&origins).unwrap(),
        ));
        Registry::from_files(files).unwrap()
    };
    let (r, document) = sbom(registry()).await;
    let fetched = package(&document, HELLO, "1.0.0");
    assert_eq!(fetched["downloadLocation"], url);
    assert!(
        fetched["sourceInfo"]
            .as_str()
            .unwrap()
            .starts_with(&format!("fetched from {url}")),
        "{fetched}"
    );
    let over_oci = package(&document, HELLO, "0.2.0");
    assert_eq!(over_oci["downloadLocation"], "NOASSERTION");
    assert!(
        over_oci["sourceInfo"]
            .as_str()
            .unwrap()
            .starts_with("fetched from oci://ghcr.io/org/charts/hello:0.2.0"),
        "{over_oci}"
    );
    let other_bytes = package(&document, HELLO, "0.1.0");
    assert_eq!(other_bytes["downloadLocation"], "NOASSERTION");
    assert!(
        !other_bytes["sourceInfo"]
            .as_str()
            .unwrap_or_default()
            .contains("fetched from"),
        "{other_bytes}"
    );
    validated(&r.body);
    let (r, bom) = bom(registry()).await;
    let distribution = |version: &str| {
        let (c, _) = component(&bom, HELLO, version);
        c["externalReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["type"] == "distribution")
            .map(|e| e["url"].as_str().unwrap().to_owned())
    };
    assert_eq!(distribution("1.0.0").as_deref(), Some(url));
    assert_eq!(
        distribution("0.2.0").as_deref(),
        Some("oci://ghcr.io/org/charts/hello:0.2.0")
    );
    assert_eq!(distribution("0.1.0"), None);
    bom_validated(&r.body);
    let page = call(registry(), Method::GET, "/ui/charts/hello", &[]).await;
    let html = String::from_utf8(page.body.to_vec()).unwrap();
    assert_eq!(html.matches("<dt>fetched from</dt>").count(), 2, "{html}");
    assert!(html.contains(&format!("<code>{url}</code>")), "{html}");
}
