//! The referrers API, with and without the `artifactType` filter.

use super::*;

/// `test/refs`: an image `v1`, an SBOM and a signature whose subject is `v1`, and a chart-like
/// artifact with no artifactType (its config media type stands in).
pub(super) fn referrers_registry() -> (Registry, Descriptor, Vec<Descriptor>) {
    let mut layout = LayoutBuilder::new("test/refs");
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/vnd.oci.image.layer.v1.tar", b"layer".to_vec());
    let image = ImageManifest::new(config.clone(), vec![layer]);
    let subject = layout.manifest(media_type::OCI_MANIFEST, &image);
    layout.list(subject.clone(), Some("v1"));
    let mut referrers = Vec::new();
    for (artifact_type, config_type) in [
        (
            Some("application/vnd.example.sbom"),
            "application/vnd.oci.empty.v1+json",
        ),
        (
            Some("application/vnd.example.signature"),
            "application/vnd.oci.empty.v1+json",
        ),
        (None, "application/vnd.example.config.v1+json"),
    ] {
        let config = layout.blob(config_type, b"{}".to_vec());
        let payload = layout.blob("text/plain", format!("{artifact_type:?}").into_bytes());
        let mut annotations = Annotations::new();
        annotations.insert("org.example.kind".into(), config_type.into());
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(media_type::OCI_MANIFEST.into()),
            artifact_type: artifact_type.map(str::to_owned),
            config,
            layers: vec![payload],
            subject: Some(subject.clone()),
            annotations: annotations.clone(),
        };
        let mut d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
        layout.list(d.clone(), None);
        d.annotations = annotations;
        d.artifact_type = Some(artifact_type.unwrap_or(config_type).to_owned());
        referrers.push(d);
    }
    referrers.sort_by(|a, b| a.digest.cmp(&b.digest));
    let files = layout
        .into_files()
        .unwrap()
        .into_iter()
        .map(|(p, b)| HeldFile::new(p, b));
    (Registry::from_files(files).unwrap(), subject, referrers)
}

#[actix_web::test]
async fn referrers_list_manifests_with_a_subject() {
    let (registry, subject, referrers) = referrers_registry();
    let r = call(
        registry,
        Method::GET,
        &format!("/v2/test/refs/referrers/{}", subject.digest),
        &[],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some(media_type::OCI_INDEX));
    assert!(r.header("oci-filters-applied").is_none());
    let index = r.json();
    assert_eq!(index["schemaVersion"], 2);
    assert_eq!(index["mediaType"], media_type::OCI_INDEX);
    let got: Vec<Descriptor> = serde_json::from_value(index["manifests"].clone()).unwrap();
    assert_eq!(got, referrers);
}

#[actix_web::test]
async fn referrers_filter_by_artifact_type() {
    let (registry, subject, referrers) = referrers_registry();
    let uri = format!(
        "/v2/test/refs/referrers/{}?artifactType=application/vnd.example.sbom",
        subject.digest
    );
    let r = call(registry, Method::GET, &uri, &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("oci-filters-applied"), Some("artifactType"));
    let got: Vec<Descriptor> = serde_json::from_value(r.json()["manifests"].clone()).unwrap();
    let expected: Vec<Descriptor> = referrers
        .into_iter()
        .filter(|d| d.artifact_type.as_deref() == Some("application/vnd.example.sbom"))
        .collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got, expected);
}

#[rstest]
#[case::charts_have_no_referrers(HELLO)]
#[actix_web::test]
async fn referrers_of_unknown_subject_are_empty(#[case] repository: &str) {
    let subject = tagged(repository, "1.0.0").digest;
    for digest in [subject.to_string(), format!("sha256:{}", "1".repeat(64))] {
        let r = get(&format!("/v2/{repository}/referrers/{digest}")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), Some(media_type::OCI_INDEX));
        assert_eq!(
            r.json(),
            json!({"schemaVersion": 2, "mediaType": media_type::OCI_INDEX, "manifests": []})
        );
    }
}
