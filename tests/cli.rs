//! The binary's commands and flags: `ls`, `serve` options and start-up failures, help; and the
//! two binaries together: what `chartreg-build pack` writes is what `chartreg ls` lists.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::net::TcpListener;
use std::process::Command;

use serde_json::Value;

fn chartreg(args: &[&str]) -> std::process::Output {
    Command::new(common::chartreg_bin())
        .args(args)
        .output()
        .expect("chartreg runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_server_lists_what_the_build_tool_packs() {
    // What `make assets` packs (the content file) into a fresh folder, listed as the server
    // lists what it embeds.
    let config = common::root().join("content.yaml");
    let (_out, registry) = common::packed(&["--config", config.to_str().unwrap()]);
    let expected = chartreg::inspect::rows(&registry).unwrap();
    let expected = serde_json::to_value(&expected).unwrap();
    let listed = chartreg(&["ls", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let got: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        got, expected,
        "the embedded content is what packing content.yaml gives"
    );
}

#[test]
fn ls_lists_every_artifact_with_its_kind_digest_and_size() {
    let out = chartreg(&["ls", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let registry = common::assets_registry();
    let row = |repo: &str, tag: Option<&str>| -> &Value {
        rows.iter()
            .find(|r| r["repository"] == repo && r["tag"].as_str() == tag)
            .unwrap_or_else(|| panic!("no row {repo} {tag:?} in {rows:?}"))
    };
    // Every tag, with the digest and pull size the content model gives.
    for repo in registry.repositories() {
        for tag in repo.tags() {
            let manifest = repo.tagged(tag).unwrap();
            let r = row(repo.name(), Some(tag));
            assert_eq!(r["digest"], manifest.digest.as_str());
            assert_eq!(r["size"], repo.pull_size(manifest).unwrap());
        }
    }
    for tag in ["0.1.0", "1.0.0", "1.1.0-rc.1"] {
        assert_eq!(row("charts/hello", Some(tag))["kind"], "chart");
    }
    // The signed chart's pull is its manifest, config, package and provenance.
    let charts = common::root().join("charts");
    let package = std::fs::metadata(charts.join("motd-1.0.0.tgz"))
        .unwrap()
        .len();
    let prov = std::fs::metadata(charts.join("motd-1.0.0.tgz.prov"))
        .unwrap()
        .len();
    assert!(row("charts/motd", Some("1.0.0"))["size"].as_u64().unwrap() > package + prov);
    // The sample image: an index of two platforms, its signature and SBOM (referrers, no tag),
    // and an attestation by cosign's tag schema.
    let image = row("images/sample", Some("v1"));
    assert_eq!(image["kind"], "image-index");
    assert_eq!(
        image["platforms"],
        serde_json::json!(["linux/amd64", "linux/arm64/v8"])
    );
    let v1 = image["digest"].as_str().unwrap();
    let referrers: Vec<&Value> = rows.iter().filter(|r| r["subject"] == v1).collect();
    let mut kinds: Vec<&str> = referrers
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["sbom", "signature"]);
    assert!(referrers.iter().all(|r| r["tag"].is_null()));
    let attestation = row(
        "images/sample",
        Some(&format!("sha256-{}.att", v1.trim_start_matches("sha256:"))),
    );
    assert_eq!(attestation["kind"], "attestation");

    let table = chartreg(&["ls"]);
    assert!(table.status.success());
    let table = text(&table.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("REPOSITORY")
            && lines[0].contains("KIND")
            && lines[0].contains("DIGEST")
            && lines[0]
                .split_whitespace()
                .rev()
                .take(2)
                .eq(["VERIFIED", "SIZE"]),
        "{table}"
    );
    assert_eq!(
        lines.len(),
        rows.len() + 2,
        "a header, a line per row, the total: {table}"
    );
    for (line, row) in lines[1..].iter().zip(&rows) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[0], row["repository"]);
        assert_eq!(cols[1], row["tag"].as_str().unwrap_or("-"));
        assert_eq!(cols[2], row["kind"]);
        assert_eq!(cols[4], row["digest"]);
        assert_eq!(cols[5], row["size"].to_string());
        // The content records no verification: every tag is not verified, a referrer has none.
        let verified = if row["tag"].is_null() {
            "-"
        } else {
            assert!(row.get("verified").is_some_and(Value::is_null), "{row}");
            "not verified"
        };
        assert_eq!(cols[6..].join(" "), verified, "{line}");
    }
    let total = lines.last().unwrap();
    assert!(
        total.starts_with(&format!("TOTAL  {} bytes", registry.summary().bytes)),
        "shared blobs counted once: {total}"
    );
}

#[test]
fn the_content_digest_names_the_embedded_files() {
    // The binary was built from assets/ (`make test` packs it first): its digest is the one
    // computed here from the folder's files.
    let digest = common::content_digest_of(&common::chartreg_bin());
    assert_eq!(
        digest,
        common::folder_content_digest(&common::root().join("assets")),
        "rebuild the binary if assets/ changed since"
    );
    let out = chartreg(&["ls", "--content-digest", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--json"),
        "{}",
        text(&out.stderr)
    );
}

/// `ls --sbom`: the SBOM of the binary's content (what `/sbom.spdx.json` serves) and of the
/// crates linked into it, as Cargo.lock pins them (no dev-only, build-only, proc-macro or other
/// platforms' crates) with the real graph,
/// each with its licence and purl; valid for SPDX's own validator.
#[test]
fn ls_sbom_lists_the_content_and_the_crates_compiled_in() {
    let out = chartreg(&["ls", "--sbom"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let document: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(document["spdxVersion"], "SPDX-2.3");
    let packages = document["packages"].as_array().unwrap();
    let named = |name: &str| packages.iter().find(|p| p["name"] == name);
    let lock = std::fs::read_to_string(common::root().join("Cargo.lock")).unwrap();
    let actix = named("actix-web").expect("actix-web is compiled in");
    let version = actix["versionInfo"].as_str().unwrap();
    assert!(
        lock.contains(&format!("name = \"actix-web\"\nversion = \"{version}\"")),
        "Cargo.lock pins actix-web {version}"
    );
    assert_eq!(actix["licenseDeclared"], "MIT OR Apache-2.0");
    assert_eq!(
        actix["externalRefs"][0]["referenceLocator"],
        format!("pkg:cargo/actix-web@{version}")
    );
    assert_eq!(
        actix["downloadLocation"],
        format!("https://crates.io/api/v1/crates/actix-web/{version}/download")
    );
    let core = named("chartreg-core").expect("the workspace's own crates are listed");
    assert_eq!(core["licenseDeclared"], "Apache-2.0");
    assert!(core.get("externalRefs").is_none(), "{core}");
    for absent in [
        "rstest",
        "tempfile",
        "windows-sys",
        "clap_mangen",
        "chartreg-build",
        "chartreg-bin",
        "serde_derive",
        "syn",
    ] {
        assert!(
            named(absent).is_none(),
            "{absent} is not compiled into the server"
        );
    }
    let crates: Vec<&Value> = packages
        .iter()
        .filter(|p| p["primaryPackagePurpose"] == "LIBRARY")
        .collect();
    assert!(crates.len() > 100, "{} crates", crates.len());
    // The real graph: chartreg depends on its root crate's dependencies, and every crate is
    // reached by some crate's (or chartreg's) DEPENDS_ON.
    let described = &document["documentDescribes"][0];
    let depends_on = |from: &Value| -> Vec<&Value> {
        document["relationships"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["spdxElementId"] == *from && r["relationshipType"] == "DEPENDS_ON")
            .map(|r| &r["relatedSpdxElement"])
            .collect()
    };
    assert_eq!(
        depends_on(described).len(),
        3,
        "chartreg, chartreg-embed, rust-embed"
    );
    for c in &crates {
        assert!(
            document["relationships"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["relationshipType"] == "DEPENDS_ON"
                    && r["relatedSpdxElement"] == c["SPDXID"]),
            "{c}"
        );
    }
    assert!(depends_on(&actix["SPDXID"]).contains(&&named("actix-http").unwrap()["SPDXID"]));
    assert!(
        named("charts/hello").is_some(),
        "the content is listed too: {document:#}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbom.spdx.json");
    std::fs::write(&path, &out.stdout).unwrap();
    if let Some(result) = common::spdx_validated(&path) {
        result.unwrap_or_else(|said| panic!("pyspdxtools refuses the SBOM: {said}"));
    }
    let again = chartreg(&["ls", "--sbom"]);
    assert_eq!(again.stdout, out.stdout, "the same bytes every time");
    let both = chartreg(&["ls", "--sbom", "--json"]);
    assert_eq!(both.status.code(), Some(2), "{}", text(&both.stderr));
    let spdx = chartreg(&["ls", "--sbom=spdx"]);
    assert_eq!(spdx.stdout, out.stdout, "--sbom is --sbom=spdx");
    let unknown = chartreg(&["ls", "--sbom", "swid"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown.stderr));
    assert!(
        text(&unknown.stderr).contains("cyclonedx"),
        "{}",
        text(&unknown.stderr)
    );
}

/// `ls --sbom cyclonedx`: the same inventory as a CycloneDX 1.5 BOM (what `/sbom.cdx.json`
/// serves): chartreg the metadata's component, depending on its root crate's dependencies, each
/// crate linked in a library (with its licence expression, purl and crates.io distribution)
/// with its own; the content's versions its components, with `pkg:oci` purls; the same bytes
/// every time; valid for CycloneDX's own library.
#[test]
fn ls_sbom_cyclonedx_lists_the_same_inventory_as_a_valid_bom() {
    let out = chartreg(&["ls", "--sbom", "cyclonedx"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bom: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(bom["bomFormat"], "CycloneDX");
    assert_eq!(bom["specVersion"], "1.5");
    assert_eq!(bom["metadata"]["component"]["bom-ref"], "chartreg");
    let components = bom["components"].as_array().unwrap();
    let named = |name: &str| components.iter().find(|c| c["name"] == name);
    let actix = named("actix-web").expect("actix-web is compiled in");
    let version = actix["version"].as_str().unwrap();
    assert_eq!(actix["type"], "library");
    assert_eq!(actix["licenses"][0]["expression"], "MIT OR Apache-2.0");
    assert_eq!(actix["purl"], format!("pkg:cargo/actix-web@{version}"));
    assert_eq!(
        actix["externalReferences"][0],
        serde_json::json!({"type": "distribution", "url": format!("https://crates.io/api/v1/crates/actix-web/{version}/download")})
    );
    let spdx: Value = serde_json::from_slice(&chartreg(&["ls", "--sbom"]).stdout).unwrap();
    let libraries = |kind: &str| match kind {
        "spdx" => spdx["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["primaryPackagePurpose"] == "LIBRARY")
            .count(),
        _ => components.iter().filter(|c| c["type"] == "library").count(),
    };
    assert_eq!(libraries("cyclonedx"), libraries("spdx"), "the same crates");
    // The real graph: chartreg depends on what its root crate does, each crate on its own.
    let dependencies = bom["dependencies"].as_array().unwrap();
    let depends = |reference: &Value| -> Vec<&str> {
        let entry = dependencies.iter().find(|d| d["ref"] == *reference);
        let entry = entry.unwrap_or_else(|| panic!("no dependencies of {reference}"));
        let on = entry["dependsOn"].as_array().unwrap();
        on.iter()
            .map(|r| {
                let c = components.iter().find(|c| c["bom-ref"] == *r).unwrap();
                c["name"].as_str().unwrap()
            })
            .collect()
    };
    let mut direct = depends(&"chartreg".into());
    direct.sort();
    assert_eq!(direct, ["chartreg", "chartreg-embed", "rust-embed"]);
    assert!(depends(&actix["bom-ref"]).contains(&"actix-http"));
    assert_eq!(
        dependencies.len(),
        libraries("spdx") + 1,
        "every crate's own"
    );
    let hello = named("charts/hello").expect("the content is listed too");
    assert_eq!(hello["hashes"][0]["alg"], "SHA-256");
    let purl = hello["purl"].as_str().unwrap();
    assert!(purl.starts_with("pkg:oci/hello@sha256%3A"), "{purl}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbom.cdx.json");
    std::fs::write(&path, &out.stdout).unwrap();
    if let Some(result) = common::cyclonedx_validated(&path) {
        result.unwrap_or_else(|said| panic!("cyclonedx-python-lib refuses the BOM: {said}"));
    }
    let again = chartreg(&["ls", "--sbom", "cyclonedx"]);
    assert_eq!(again.stdout, out.stdout, "the same bytes every time");
}

#[test]
fn verify_checks_the_sample_content() {
    let out = chartreg(&["verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("verified "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn ls_into_a_reader_that_stops_early_is_not_an_error() {
    // `chartreg ls --json | head -1`: the reader goes away before the listing is written.
    for args in [&["ls", "--json"][..], &["ls"][..]] {
        let mut child = Command::new(common::chartreg_bin())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{args:?}");
    }
}

#[test]
fn serve_logs_one_summary_line_and_access_lines() {
    let server = common::Process::start();
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            &format!("{}/v2/charts/hello/tags/list", server.url()),
        ])
        .status()
        .expect("curl runs");
    assert!(out.success());
    // The access line is written when the response completes; wait for it briefly.
    let mut log = String::new();
    for _ in 0..100 {
        log = server.log();
        if log.contains("/tags/list") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let summary: Vec<&str> = log.lines().filter(|l| l.contains("serving ")).collect();
    assert_eq!(summary.len(), 1, "{log}");
    assert!(
        // The sample content: three charts (seven versions) and the sample image (an index,
        // two platforms, a signature, an SBOM, an attestation tagged by cosign's schema).
        summary[0].contains("4 repositories, 9 tags, 13 manifests, 24 blobs"),
        "{log}"
    );
    let access = log
        .lines()
        .find(|l| l.contains("GET /v2/charts/hello/tags/list"))
        .expect("an access line");
    assert!(
        access.contains(" 200 ") && access.contains("ms"),
        "{access}"
    );
}

#[test]
fn listen_address_comes_from_the_environment_without_a_flag() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(common::chartreg_bin())
        .env("CHARTREG_LISTEN", "127.0.0.1:0")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let addr = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split(" on http://")
                .nth(1)
                .map(|a| a.split_whitespace().next().unwrap().to_owned())
        })
        .expect("a serving line");
    let out = Command::new("curl")
        .args(["-sS", &format!("http://{addr}/v2/")])
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_eq!(text(&out.stdout), "{}");
}

#[test]
fn busy_port_or_bad_address_fails_before_serving() {
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = chartreg(&["serve", "--listen", &addr]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("cannot listen on {addr}")),
        "{}",
        text(&out.stderr)
    );

    let out = Command::new(common::chartreg_bin())
        .env("CHARTREG_LISTEN", "not an address")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot listen on not an address"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn help_names_every_command_and_flag() {
    let out = chartreg(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for word in ["serve", "ls", "verify", "--listen", "CHARTREG_LISTEN"] {
        assert!(help.contains(word), "{word} in {help}");
    }
    // Content is made by chartreg-build: the server has no `pack` (one place per command).
    assert!(!help.contains("pack"), "{help}");
    let out = chartreg(&["pack", "charts"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "`pack` is not a command of the server"
    );
    let out = chartreg(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}
