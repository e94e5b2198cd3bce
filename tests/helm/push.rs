//! Unknown charts fail; what `helm push` stores in CNCF distribution is what chartreg serves.

use super::*;

/// Unknown repositories and unknown versions fail the pull, and write nothing.
#[rstest]
#[case::unknown_chart("charts/nope", &["--version", "1.0.0"])]
#[case::unknown_chart_latest("charts/nope", &[])]
#[case::unknown_version("charts/hello", &["--version", "9.9.9"])]
#[case::no_version_in_range("charts/hello", &["--version", "^2.0"])]
fn helm_pull_of_what_is_not_there_fails(
    #[values("helm3", "helm4")] helm: &'static str,
    #[case] repo: &str,
    #[case] version_args: &[&str],
) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}/{repo}", server.host());
    let mut args = vec![
        "pull",
        &reference,
        "--plain-http",
        "-d",
        str_path(out_dir.path()),
    ];
    args.extend_from_slice(version_args);
    helm.fails(&args);
    assert_eq!(
        common::file_names(out_dir.path()),
        Vec::<String>::new(),
        "{} {}: a failed pull wrote files",
        helm.name,
        args.join(" ")
    );
}

/// `(mediaType, digest, size)` of a descriptor in a manifest.
fn descriptor(d: &Value) -> (String, String, u64) {
    (
        d["mediaType"].as_str().unwrap_or_default().to_owned(),
        d["digest"].as_str().unwrap_or_default().to_owned(),
        d["size"].as_u64().unwrap_or_default(),
    )
}

/// The annotations of a manifest, without the creation time.
fn annotations_but_created(manifest: &Value) -> serde_json::Map<String, Value> {
    let mut a = manifest["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    a.remove("org.opencontainers.image.created");
    a
}

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The chart's name and version from a package file name (`hello-1.0.1+build.7.tgz`).
fn name_and_version(package: &str) -> (&str, &str) {
    let stem = package.strip_suffix(".tgz").expect("a .tgz");
    let split = stem
        .char_indices()
        .find(|&(i, c)| c == '-' && stem[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
        .map(|(i, _)| i)
        .expect("NAME-VERSION.tgz");
    (&stem[..split], &stem[split + 1..])
}

/// `helm push` of every sample (motd with its provenance beside it) into CNCF distribution
/// stores manifests whose config and layer descriptors, layer order and annotations (all but
/// the creation time) equal those chartreg serves for the same tags; the tag lists agree too.
#[rstest]
fn helm_push_to_distribution_matches_what_chartreg_serves(
    #[values("helm3", "helm4")] helm: &'static str,
) {
    let Some(helm) = Helm::new(helm) else { return };
    let Some(curl) = common::tool("curl") else {
        return;
    };
    let Some(distribution) = Distribution::start() else {
        return;
    };
    let server = Process::start();

    let mut packages: Vec<String> = common::file_names(&charts_dir())
        .into_iter()
        .filter(|f| f.ends_with(".tgz"))
        .collect();
    packages.sort();
    assert_eq!(packages.len(), 6, "the samples in charts/: {packages:?}");

    let target = format!("oci://{}/charts", distribution.host());
    for package in &packages {
        let path = charts_dir().join(package);
        let out = helm.ok(&["push", str_path(&path), &target, "--plain-http"]);
        let (name, version) = name_and_version(package);
        let tag = version.replace('+', "_");
        let pushed = format!("Pushed: {}/charts/{name}:{tag}", distribution.host());
        assert!(
            text(&out).contains(&pushed),
            "{}: helm push {package}: expected `{pushed}`: {}",
            helm.name,
            describe(&out)
        );
    }

    let accept = [("Accept", OCI_MANIFEST)];
    for package in &packages {
        let (name, version) = name_and_version(package);
        let tag = version.replace('+', "_");
        let context = format!("{}: {package} (charts/{name}:{tag})", helm.name);
        let path = format!("/v2/charts/{name}/manifests/{tag}");

        let pushed = common::curl(&curl, "GET", &(distribution.url() + &path), &accept);
        assert_eq!(pushed.status, 200, "{context}: distribution: {pushed:?}");
        let served = common::curl(&curl, "GET", &(server.url() + &path), &accept);
        assert_eq!(
            served.status,
            200,
            "{context}: chartreg: {}",
            String::from_utf8_lossy(&served.body)
        );
        assert_eq!(
            served.header("content-type"),
            Some(OCI_MANIFEST),
            "{context}: chartreg's manifest Content-Type"
        );
        let served_digest = common::sha256(&served.body);
        assert_eq!(
            served.header("docker-content-digest"),
            Some(served_digest.as_str()),
            "{context}: chartreg's Docker-Content-Digest is not the digest of its body"
        );
        assert_eq!(
            served_digest,
            assets_tag_digest(&format!("charts/{name}"), &tag),
            "{context}: chartreg serves another manifest than assets/ tags"
        );

        let pushed: Value = serde_json::from_slice(&pushed.body).expect("distribution JSON");
        let served: Value = serde_json::from_slice(&served.body).expect("chartreg JSON");
        assert_eq!(
            descriptor(&served["config"]),
            descriptor(&pushed["config"]),
            "{context}: config descriptors differ (chartreg left, helm push right)"
        );
        let layers = |m: &Value| -> Vec<_> {
            m["layers"]
                .as_array()
                .map(|l| l.iter().map(descriptor).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            layers(&served),
            layers(&pushed),
            "{context}: layer descriptors differ (chartreg left, helm push right)"
        );
        let chart_layer = layers(&served)
            .into_iter()
            .find(|(t, _, _)| t == "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
            .unwrap_or_else(|| panic!("{context}: no chart layer"));
        let package_bytes = common::read(&charts_dir().join(package));
        assert_eq!(
            (chart_layer.1, chart_layer.2),
            (common::sha256(&package_bytes), package_bytes.len() as u64),
            "{context}: the chart layer is not the package"
        );
        assert_eq!(
            annotations_but_created(&served),
            annotations_but_created(&pushed),
            "{context}: manifest annotations differ (chartreg left, helm push right)"
        );
        assert_eq!(served["schemaVersion"], 2, "{context}");
    }

    for name in ["hello", "motd"] {
        let path = format!("/v2/charts/{name}/tags/list");
        let tags = |url: String| -> Vec<String> {
            let r = common::curl(&curl, "GET", &url, &[]);
            assert_eq!(r.status, 200, "{}: GET {url}: {r:?}", helm.name);
            let list: Value = serde_json::from_slice(&r.body).expect("tags JSON");
            serde_json::from_value(list["tags"].clone()).expect("tags are strings")
        };
        // Distribution lists tags in storage order; chartreg sorts them by bytes.
        let mut pushed = tags(distribution.url() + &path);
        pushed.sort();
        assert_eq!(
            tags(server.url() + &path),
            pushed,
            "{}: tags of charts/{name} differ (chartreg left, distribution sorted right)",
            helm.name
        );
    }
}
