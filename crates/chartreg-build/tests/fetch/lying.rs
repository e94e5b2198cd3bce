//! Upstreams that lie, and what fetch makes of them: a classic index that lists a package as
//! another chart or version, or at a URL that is no http one; downloads past their bounds (a
//! package, a `.prov`, an index of too many nodes); a registry (the test repository, serving
//! `/v2/...` paths) whose descriptor understates a blob, whose manifest is too large, or whose
//! error is a flood of control characters. Each is refused naming the chart and what was wrong,
//! and leaves nothing in `charts/` and no lock.

use super::sources::HelmRepo;
use super::*;

/// The charts file asking repository `url` for `chart` at `version`.
fn asking(url: &str, chart: &str, version: &str) -> String {
    format!(
        "repositories:\n  test:\n    repoURL: {url}\n    charts:\n      {chart}: [\"{version}\"]\n"
    )
}

/// An index listing `chart` at `version`, at `url`, with the digest of `data`.
fn index(chart: &str, version: &str, url: &str, data: &[u8]) -> String {
    format!(
        "apiVersion: v1\nentries:\n  {chart}:\n  - name: {chart}\n    version: {version}\n    digest: {}\n    urls: [\"{url}\"]\n",
        hex_sha256(data)
    )
}

/// `fetch` in a fresh folder with the charts file `charts`, which must fail: its stderr, once
/// checked to have left nothing (no file in `charts/`, no lock) and to hold no ESC or BEL.
fn refused(charts: &str) -> String {
    let work = Work::new();
    work.write("charts.yaml", charts);
    let out = work.fetch(&["--helm-charts-file", "charts.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(
        work.files("fetched/charts"),
        Vec::<String>::new(),
        "left in charts/"
    );
    assert!(
        !work.path("fetched/chartreg.lock").exists(),
        "a refused fetch wrote a lock"
    );
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !stream.iter().any(|b| *b == 0x1b || *b == 0x07),
            "a control character reached the terminal: {}",
            describe(&out)
        );
    }
    String::from_utf8(out.stderr).expect("UTF-8")
}

#[test]
fn a_classic_package_must_be_the_chart_and_version_its_index_lists() {
    let repo = HelmRepo::start();
    let hello = package("hello-1.0.0.tgz");
    repo.put("hello-1.0.0.tgz", &hello);

    repo.put(
        "index.yaml",
        index("hello", "9.9.9", "hello-1.0.0.tgz", &hello).as_bytes(),
    );
    let e = refused(&asking(&repo.url(""), "hello", "9.9.9"));
    assert!(
        e.contains(&format!(
            "chart hello 9.9.9 from {}: the package is chart \"hello\" version \"1.0.0\", but the index lists it as \"hello\" version \"9.9.9\"",
            repo.url("")
        )),
        "{e}"
    );

    repo.put(
        "index.yaml",
        index("other", "1.0.0", "hello-1.0.0.tgz", &hello).as_bytes(),
    );
    let e = refused(&asking(&repo.url(""), "other", "1.0.0"));
    assert!(
        e.contains("the package is chart \"hello\" version \"1.0.0\", but the index lists it as \"other\" version \"1.0.0\""),
        "{e}"
    );

    // A version that would be a path, and a URL that is no http one: refused before anything
    // is downloaded.
    repo.put(
        "index.yaml",
        index("hello", "\"../../x\"", "hello-1.0.0.tgz", &hello).as_bytes(),
    );
    let e = refused(&asking(&repo.url(""), "hello", "../../x"));
    assert!(
        e.contains("the index lists it as version \"../../x\", not a version Helm accepts"),
        "{e}"
    );
    repo.put(
        "index.yaml",
        index("hello", "1.0.0", "file:///etc/passwd", &hello).as_bytes(),
    );
    let e = refused(&asking(&repo.url(""), "hello", "1.0.0"));
    assert!(
        e.contains(
            "the index lists it at \"file:///etc/passwd\": only http and https URLs are fetched"
        ),
        "{e}"
    );
}

#[test]
fn downloads_past_their_bounds_are_refused_and_leave_nothing() {
    let repo = HelmRepo::start();
    let hello = package("hello-1.0.0.tgz");

    // A `.prov` past 1 MiB: the package staged for it is removed too.
    repo.put("hello-1.0.0.tgz", &hello);
    repo.put("hello-1.0.0.tgz.prov", &vec![b'x'; (1 << 20) + 1]);
    repo.put(
        "index.yaml",
        index("hello", "1.0.0", "hello-1.0.0.tgz", &hello).as_bytes(),
    );
    let e = refused(&asking(&repo.url(""), "hello", "1.0.0"));
    assert!(
        e.contains(&format!(
            "{}: larger than 1 MiB, the most fetch downloads of a provenance file",
            repo.url("hello-1.0.0.tgz.prov")
        )),
        "{e}"
    );

    // A package past 101 MiB: refused on its Content-Length, unread.
    let big = vec![0u8; (101 << 20) + 1];
    repo.put("big-1.0.0.tgz", &big);
    repo.put(
        "index.yaml",
        index("big", "1.0.0", "big-1.0.0.tgz", &big).as_bytes(),
    );
    let e = refused(&asking(&repo.url(""), "big", "1.0.0"));
    assert!(
        e.contains(&format!(
            "{}: larger than 101 MiB, the most fetch downloads of a chart package (Helm loads no chart larger than 100 MiB decompressed)",
            repo.url("big-1.0.0.tgz")
        )),
        "{e}"
    );

    // An index of more nodes than the YAML parser may hold (16 MiB of `a,`).
    let flood = format!("apiVersion: v1\nflood: [{}a]\n", "a,".repeat(8 << 20));
    repo.put("index.yaml", flood.as_bytes());
    let e = refused(&asking(&repo.url(""), "hello", "1.0.0"));
    assert!(
        e.contains(&format!(
            "repository test ({}): {}: 8388611 lines and items, more than the 8388608 fetch reads of an index",
            repo.url(""),
            repo.url("index.yaml")
        )),
        "{e}"
    );
}

/// A registry's manifest for one chart layer (`layer`: media type, digest, size).
fn chart_manifest(layer: (&str, &str, u64), padding: usize) -> Vec<u8> {
    let config = b"{}";
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": chartreg_core::oci::media_type::HELM_CONFIG,
            "digest": common::sha256(config),
            "size": config.len(),
        },
        "layers": [{"mediaType": layer.0, "digest": layer.1, "size": layer.2}],
        "annotations": {"padding": "x".repeat(padding)},
    }))
    .expect("a manifest")
}

#[test]
fn registries_that_lie_are_refused_within_bounds() {
    // The test repository as a registry: `/v2/` answers, and any path is served.
    let registry = HelmRepo::start();
    registry.put("v2/", b"{}");
    let host = registry.addr.to_string();
    let chart = chartreg_core::oci::media_type::HELM_CHART;
    let hello = package("hello-1.0.0.tgz");
    let digest = common::sha256(&hello);
    registry.put(&format!("v2/charts/hello/blobs/{digest}"), &hello);
    let reference = |repository: &str| format!("oci://{host}/charts/{repository}:1.0.0");
    let ask = |repository: &str| format!("chartURLs:\n  - {}\n", reference(repository));

    // Its descriptor understates the blob: cut off at the size it gives.
    registry.put(
        "v2/charts/hello/manifests/1.0.0",
        &chart_manifest((chart, &digest, 100), 0),
    );
    let e = refused(&ask("hello"));
    assert!(
        e.contains(&format!(
            "chart {}: {digest}: more than the 100 bytes its descriptor gives",
            reference("hello")
        )),
        "{e}"
    );

    // A layer larger than any chart: refused before it is asked for.
    registry.put(
        "v2/charts/huge/manifests/1.0.0",
        &chart_manifest((chart, &digest, 200 << 20), 0),
    );
    let e = refused(&ask("huge"));
    assert!(
        e.contains(&format!(
            "layer {digest} (209715200 bytes): larger than 101 MiB, the most fetch downloads of a chart package"
        )),
        "{e}"
    );

    // A manifest past 4 MiB.
    registry.put(
        "v2/charts/big/manifests/1.0.0",
        &chart_manifest((chart, &digest, hello.len() as u64), 5 << 20),
    );
    let e = refused(&ask("big"));
    assert!(
        e.contains(&format!(
            "http://{host}/v2/charts/big/manifests/1.0.0: larger than 4 MiB, the most fetch reads of a manifest, index or tag list (registries take none larger)"
        )),
        "{e}"
    );

    // An error whose body is a flood of escapes and lines: quoted, bounded, on one line.
    let flood =
        "\u{1b}[2J\u{1b}]0;owned\u{7}\nchartreg-build: wrote assets (0 charts)\n".repeat(2000);
    registry.answer("v2/charts/loud/manifests/1.0.0", 400, flood.as_bytes());
    let e = refused(&ask("loud"));
    let line = e
        .lines()
        .find(|l| l.starts_with(&format!("chart {}", reference("loud"))))
        .unwrap_or_else(|| panic!("no line names the chart: {e}"));
    assert!(line.contains("HTTP 400: GET http://"), "{line}");
    assert!(line.ends_with(" [...]"), "{line}");
    assert!(line.len() < 1500, "{} characters: {line}", line.len());
    assert!(
        !e.lines().any(|l| l.starts_with("chartreg-build: wrote")),
        "a line passed for the tool's own: {e}"
    );
}
