//! `chartreg-build import-bundle`, the binary, on bundles made the way mindthegap makes them:
//! Debian's docker-registry (CNCF distribution) as the bundle's registry, charts pushed into
//! it with `helm push` and the sample image with `skopeo copy`, its storage root tarred with
//! `charts.yaml` beside it. Two "releases" share one chart version (pushed in each, so with
//! two manifests). What is imported is served and pulled by Helm 3 and 4 with the source
//! registry's manifest digests; `pack` merges charts into an imported repository and keeps it.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod bundles;
#[path = "../common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Output};

use bundles::{package, releases, rewrite_tar, str_path, tar_bundle};
use chartreg_core::content::Registry;
use common::{Distribution, Helm, InProcess, curl, describe, root};

/// `chartreg-build ARGS`, with its output.
fn build_tool(args: &[&str]) -> Output {
    common::output_of(
        Command::new(env!("CARGO_BIN_EXE_chartreg-build")).args(args),
        "chartreg-build",
    )
}

fn build_tool_ok(args: &[&str]) -> String {
    let out = build_tool(args);
    assert!(
        out.status.success(),
        "chartreg-build {} failed: {}",
        args.join(" "),
        describe(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn build_tool_fails(args: &[&str]) -> String {
    let out = build_tool(args);
    assert!(
        !out.status.success(),
        "chartreg-build {} should fail: {}",
        args.join(" "),
        describe(&out)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn serve(out: &Path) -> InProcess {
    let registry = Registry::from_files(common::files_in(out)).expect("imported content is valid");
    InProcess::start(registry)
}

/// The digest `server` answers a manifest request with, or its status when not 200.
fn served_digest(server: &InProcess, repository: &str, reference: &str) -> Result<String, u16> {
    let curl_bin = common::tool("curl").expect("curl");
    let accept =
        "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json";
    let r = curl(
        &curl_bin,
        "GET",
        &format!("{}/v2/{repository}/manifests/{reference}", server.url()),
        &[("Accept", accept)],
    );
    if r.status != 200 {
        return Err(r.status);
    }
    let digest = r
        .header("docker-content-digest")
        .expect("a digest header")
        .to_owned();
    assert_eq!(
        common::sha256(&r.body),
        digest,
        "the body has the digest it is served under"
    );
    Ok(digest)
}

fn tags(server: &InProcess, repository: &str) -> Vec<String> {
    let curl_bin = common::tool("curl").expect("curl");
    let r = curl(
        &curl_bin,
        "GET",
        &format!("{}/v2/{repository}/tags/list", server.url()),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    let body: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
    body["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .map(|t| t.as_str().expect("a tag").to_owned())
        .collect()
}

/// Helm 3 and 4 each pull `chart` at `version` and get `want`.
fn helm_pulls(server: &InProcess, chart: &str, version: &str, want: &[u8]) {
    for name in ["helm3", "helm4"] {
        let helm = Helm::new(name).expect("helm (run scripts/install-tools.sh)");
        let dir = tempfile::tempdir().expect("temp dir");
        helm.pull(&server.host(), chart, version, dir.path());
        let got = common::read(&dir.path().join(format!("{chart}-{version}.tgz")));
        assert!(
            got == want,
            "{name} pulled other bytes for {chart} {version}"
        );
    }
}

#[test]
fn two_releases_are_served_side_by_side_with_their_digests() {
    let releases = releases();
    let work = tempfile::tempdir().expect("temp dir");
    let out = work.path().join("assets");
    let said = build_tool_ok(&[
        "import-bundle",
        str_path(&releases.first),
        str_path(&releases.second),
        "--out",
        str_path(&out),
    ]);
    assert!(said.contains("imported 4 repositories"), "{said}");
    let first_shared = &releases.first_tags["charts/shared:2.0.0"];
    let second_shared = &releases.second_tags["charts/shared:2.0.0"];
    assert_ne!(
        first_shared, second_shared,
        "each release pushed its own manifest"
    );
    assert!(
        said.contains("charts/shared:2.0.0")
            && said.contains(&format!("{first_shared} keeps the tag")),
        "the kept duplicate is reported: {said}"
    );
    assert!(
        !out.join(".chartreg-import").exists(),
        "the staging folder is removed"
    );

    let server = serve(&out);
    let mut expected = releases.second_tags.clone();
    expected.extend(releases.first_tags.clone());
    for (reference, digest) in &expected {
        let (repository, tag) = reference.rsplit_once(':').expect("repository:tag");
        assert_eq!(
            served_digest(&server, repository, tag).as_ref(),
            Ok(digest),
            "{reference}"
        );
    }
    assert_eq!(
        served_digest(&server, "charts/shared", second_shared).as_ref(),
        Ok(second_shared),
        "the second release's manifest answers by digest"
    );
    // The image is kept for the registry the bundle's images.yaml names: by its full name, by
    // `?ns=` as containerd asks a mirror, and by its path (the only one holding it).
    let sample = &releases.second_tags["images/sample:v1"];
    assert!(said.contains("quay.io/images/sample"), "{said}");
    assert_eq!(
        served_digest(&server, "quay.io/images/sample", "v1").as_ref(),
        Ok(sample)
    );
    assert_eq!(
        served_digest(&server, "images/sample", "v1?ns=quay.io").as_ref(),
        Ok(sample)
    );
    assert_eq!(
        tags(&server, "charts/shared"),
        ["2.0.0"],
        "the kept duplicate is untagged"
    );
    for (file, data) in &releases.packages {
        let (chart, version) = file
            .trim_end_matches(".tgz")
            .split_once('-')
            .expect("name-version");
        helm_pulls(&server, chart, version, data);
    }
    drop(server);

    // Importing the same bundles again changes nothing.
    let again = build_tool_ok(&[
        "import-bundle",
        str_path(&releases.first),
        str_path(&releases.second),
        "--out",
        str_path(&out),
    ]);
    assert!(again.contains("0 written, 4 unchanged"), "{again}");

    // pack adds a version to an imported chart and a chart of its own, and keeps the rest.
    let helm = Helm::new("helm4").expect("helm4");
    let charts = work.path().join("charts");
    std::fs::create_dir_all(&charts).expect("charts folder");
    let newer = package(&helm, &releases.dir, "hello", "1.1.0", "hello");
    std::fs::write(charts.join("hello-1.1.0.tgz"), &newer).expect("write package");
    let own = package(&helm, &releases.dir, "own", "0.1.0", "hello");
    std::fs::write(charts.join("own-0.1.0.tgz"), &own).expect("write package");
    build_tool_ok(&["pack", str_path(&charts), "--out", str_path(&out)]);
    build_tool_ok(&[
        "pack",
        str_path(&charts),
        "--out",
        str_path(&out),
        "--check",
    ]);
    let server = serve(&out);
    assert_eq!(tags(&server, "charts/hello"), ["1.0.0", "1.1.0"]);
    assert_eq!(
        served_digest(&server, "charts/hello", "1.0.0").as_ref(),
        Ok(&releases.first_tags["charts/hello:1.0.0"]),
        "the imported version keeps its digest"
    );
    helm_pulls(&server, "hello", "1.1.0", &newer);
    helm_pulls(
        &server,
        "hello",
        "1.0.0",
        &releases.packages["hello-1.0.0.tgz"],
    );
    for reference in expected.keys() {
        let (repository, tag) = reference.rsplit_once(':').expect("repository:tag");
        assert!(
            served_digest(&server, repository, tag).is_ok(),
            "{reference} survives pack"
        );
    }
    drop(server);

    // Without its packed version, hello is what was imported again.
    std::fs::remove_file(charts.join("hello-1.1.0.tgz")).expect("remove package");
    build_tool_ok(&["pack", str_path(&charts), "--out", str_path(&out)]);
    let server = serve(&out);
    assert_eq!(tags(&server, "charts/hello"), ["1.0.0"]);
    assert_eq!(tags(&server, "charts/own"), ["0.1.0"]);
    assert_eq!(tags(&server, "charts/world"), ["3.0.0"]);
}

#[test]
fn a_chart_packed_again_into_an_imported_version_keeps_the_imported_tag() {
    let releases = releases();
    let work = tempfile::tempdir().expect("temp dir");
    let out = work.path().join("assets");
    build_tool_ok(&[
        "import-bundle",
        str_path(&releases.first),
        "--out",
        str_path(&out),
    ]);
    let charts = work.path().join("charts");
    std::fs::create_dir_all(&charts).expect("charts folder");

    // The same package: same layers, so the imported manifest keeps the tag.
    std::fs::write(
        charts.join("shared-2.0.0.tgz"),
        &releases.packages["shared-2.0.0.tgz"],
    )
    .expect("write");
    build_tool_ok(&["pack", str_path(&charts), "--out", str_path(&out)]);
    let server = serve(&out);
    assert_eq!(
        served_digest(&server, "charts/shared", "2.0.0").as_ref(),
        Ok(&releases.first_tags["charts/shared:2.0.0"])
    );
    drop(server);

    // Another chart under the same version: refused, naming the repository, tag and bundle.
    let helm = Helm::new("helm4").expect("helm4");
    let other = package(&helm, &releases.dir, "shared", "2.0.0", "changed");
    std::fs::write(charts.join("shared-2.0.0.tgz"), other).expect("write");
    let e = build_tool_fails(&["pack", str_path(&charts), "--out", str_path(&out)]);
    assert!(
        e.contains("charts/shared:2.0.0")
            && e.contains("release-1.tar")
            && e.contains("other chart layers"),
        "{e}"
    );
}

#[test]
fn bad_bundles_are_refused_naming_what_is_wrong_and_nothing_is_written() {
    let releases = releases();
    let helm = Helm::new("helm4").expect("helm4");
    let work = tempfile::tempdir().expect("temp dir");
    let out = work.path().join("assets");
    let import_fails = |bundles: &[&Path]| {
        let mut args = vec!["import-bundle"];
        args.extend(bundles.iter().map(|b| str_path(b)));
        args.extend(["--out", str_path(&out)]);
        let e = build_tool_fails(&args);
        assert!(
            !out.exists(),
            "a refused import writes nothing: {:?}",
            common::file_names(&out)
        );
        assert!(
            !common::file_names(work.path())
                .iter()
                .any(|n| n.starts_with(".assets")),
            "a refused import leaves nothing beside its output folder: {:?}",
            common::file_names(work.path())
        );
        e
    };

    // A third release pushes shared 2.0.0 with other content.
    let registry = Distribution::start().expect("docker-registry");
    let changed = package(&helm, &releases.dir, "shared", "2.0.0", "changed");
    let file = work.path().join("shared-2.0.0.tgz");
    std::fs::write(&file, changed).expect("write package");
    helm.ok(&[
        "push",
        str_path(&file),
        &format!("oci://{}/charts", registry.host()),
        "--plain-http",
    ]);
    let third = work.path().join("release-3.tar");
    tar_bundle(&registry, &["shared-2.0.0.tgz"], &third, false);
    let e = import_fails(&[&releases.first, &third]);
    assert!(
        e.contains("charts/shared")
            && e.contains("tag 2.0.0")
            && e.contains("release-1.tar")
            && e.contains("release-3.tar"),
        "{e}"
    );

    // A blob whose bytes are not its digest, named by its entry.
    let corrupt = work.path().join("corrupt.tar");
    rewrite_tar(&releases.second, &corrupt, |name, data| {
        if name.contains("/blobs/sha256/") && data.len() > 100 && !data.starts_with(b"{") {
            data[50] ^= 0xff;
        }
    });
    let e = import_fails(&[&corrupt]);
    assert!(
        e.contains("corrupt.tar: entry `docker/registry/v2/blobs/sha256/")
            && e.contains("has digest"),
        "{e}"
    );

    // A compressed bundle (mindthegap writes plain tar).
    let gzipped = work.path().join("bundle.tar.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &common::read(&releases.first)).expect("gzip");
    std::fs::write(&gzipped, encoder.finish().expect("gzip")).expect("write");
    let e = import_fails(&[&gzipped]);
    assert!(
        e.contains("bundle.tar.gz") && e.contains("uncompressed"),
        "{e}"
    );

    // A tar that is no bundle.
    let other = work.path().join("other.tar");
    let out_tar = common::output_of(
        Command::new("tar")
            .arg("-C")
            .arg(root())
            .arg("-cf")
            .arg(&other)
            .arg("README.md"),
        "tar",
    );
    assert!(out_tar.status.success(), "{}", describe(&out_tar));
    let e = import_fails(&[&other]);
    assert!(
        e.contains("entry `README.md`") && e.contains("not part of a mindthegap bundle"),
        "{e}"
    );

    let e = import_fails(&[&work.path().join("missing.tar")]);
    assert!(e.contains("missing.tar"), "{e}");
}
