//! `chartreg-build fetch`, the binary, against sources on 127.0.0.1 that the tests start: a
//! classic Helm repository (packages, `.prov`, relative and absolute URLs, basic auth, HTTPS
//! with a private CA, a 404, other bytes than the index lists, a reset mid-download); Debian's
//! docker-registry with htpasswd (charts pushed with `helm push`, an image copied in with
//! `skopeo copy`, its referrers pushed with oci-client); and a bearer-token front before the
//! chartreg library; signed charts and images checked against a content file's `verify:`
//! policy (`verify`). Each test has its own sources and folders.
//!
//! The hostile corpus's chart packages (`tests/corpus`) are fetched from a classic repository
//! and from distribution (`hostile`): each refused, leaving nothing, or taken as it is; and
//! upstreams that lie (`lying`: other charts than listed, downloads past their bounds, a
//! registry's understated blob, oversized manifest, or flood of an error) are refused by name.
//!
//! What fetched content is for is checked end to end: packed by `chartreg-build pack` from a
//! content file naming the lock, served, and pulled by Helm 3 and 4 (and skopeo) with the
//! upstream bytes.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod chart_images;
mod classic;
#[path = "../common/mod.rs"]
mod common;
// The corpus re-exports for the tests that build cases of their own; this one takes its cases.
#[allow(unused_imports)]
#[path = "../corpus/mod.rs"]
mod corpus;
mod hostile;
mod lying;
mod paths;
mod registry;
mod sources;
mod verify;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use chartreg_core::content::Registry;
use common::{Helm, InProcess, describe, root};

/// A folder a test fetches into: `charts/`, `images/`, the lists and the lock.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        Work {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
        std::fs::write(&path, text).expect("write file");
        path
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }

    fn lock(&self) -> String {
        String::from_utf8(self.read("fetched/chartreg.lock")).expect("UTF-8 lock")
    }

    /// `chartreg-build fetch ARGS` run in this folder.
    fn fetch(&self, args: &[&str]) -> Output {
        common::output_of(
            Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
                .arg("fetch")
                .args(args)
                .current_dir(self.dir.path())
                .env_remove("SSL_CERT_FILE")
                .env_remove("SSL_CERT_DIR"),
            "chartreg-build fetch",
        )
    }

    /// `fetch ARGS`, which must succeed; its stdout.
    fn fetch_ok(&self, args: &[&str]) -> String {
        let out = self.fetch(args);
        assert!(
            out.status.success(),
            "fetch {} failed: {}",
            args.join(" "),
            describe(&out)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    }

    /// `fetch ARGS`, which must fail; its stderr.
    fn fetch_fails(&self, args: &[&str]) -> String {
        let out = self.fetch(args);
        assert!(
            !out.status.success(),
            "fetch {} should have failed: {}",
            args.join(" "),
            describe(&out)
        );
        String::from_utf8(out.stderr).expect("UTF-8")
    }

    /// Files in `dir` (relative), recursively, temporary ones included.
    fn files(&self, dir: &str) -> Vec<String> {
        let mut found = Vec::new();
        let base = self.path(dir);
        let mut pending = vec![base.clone()];
        while let Some(d) = pending.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    found.push(
                        path.strip_prefix(&base)
                            .expect("under base")
                            .to_string_lossy()
                            .into_owned(),
                    );
                }
            }
        }
        found.sort();
        found
    }

    /// Packs what the lock pins (a content file naming only it) and serves it: the chartreg
    /// library over the packed layouts, as the binary would embed them.
    fn serve_locked(&self) -> InProcess {
        self.serve("lock: fetched/chartreg.lock\n")
    }

    /// Packs what the content file `content` (written as `content.yaml` at the top) names,
    /// and serves it, as [`Work::serve_locked`].
    fn serve(&self, content: &str) -> InProcess {
        let content = self.write("content.yaml", content);
        let out = common::output_of(
            Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
                .args(["pack", "--config"])
                .arg(&content)
                .arg("--out")
                .arg(self.path("assets")),
            "chartreg-build pack",
        );
        assert!(out.status.success(), "pack failed: {}", describe(&out));
        let registry = Registry::from_files(common::files_in(&self.path("assets")))
            .expect("packed content is valid");
        InProcess::start(registry)
    }
}

/// A committed sample package.
fn package(name: &str) -> Vec<u8> {
    common::read(&root().join("charts").join(name))
}

/// Helm 3 and Helm 4 each pull `chart` at `version` from `server` and get `want`'s bytes.
fn helm_pulls(server: &InProcess, chart: &str, version: &str, want: &[u8]) {
    for name in ["helm3", "helm4"] {
        let Some(helm) = Helm::new(name) else {
            continue;
        };
        let out_dir = tempfile::tempdir().expect("temp dir");
        helm.pull(&server.host(), chart, version, out_dir.path());
        let file = out_dir.path().join(format!("{chart}-{version}.tgz"));
        let got = common::read(&file);
        assert!(
            got == want,
            "{name}: {chart} {version} pulled from chartreg is not the fetched package"
        );
    }
}

/// Each chart version of `fetched_from` (name, version, the URL it was downloaded from, if
/// any) has that origin in the packed `origins.json`, on its page, in the SPDX SBOM
/// (`sourceInfo`) and in the CycloneDX one (a `distribution` reference), and each format's
/// validator takes its document.
fn origins_are_recorded_shown_and_described(
    work: &Work,
    server: &InProcess,
    fetched_from: &[(&str, &str, Option<String>)],
) {
    let recorded: serde_json::Value =
        serde_json::from_slice(&work.read("assets/origins.json")).expect("origins.json is JSON");
    let curl_bin = common::tool("curl").expect("curl");
    let get = |path: &str| {
        let r = common::curl(&curl_bin, "GET", &format!("{}{path}", server.url()), &[]);
        assert_eq!(r.status, 200, "{path}: {}", r.body_text());
        r.body
    };
    let sbom = get("/sbom.spdx.json");
    let document: serde_json::Value = serde_json::from_slice(&sbom).expect("SBOM is JSON");
    let cyclonedx = get("/sbom.cdx.json");
    let bom: serde_json::Value = serde_json::from_slice(&cyclonedx).expect("BOM is JSON");
    for (chart, version, url) in fetched_from {
        let repository = format!("charts/{chart}");
        let entry = &recorded["charts"][&repository][version];
        let page = String::from_utf8(get(&format!("/ui/{repository}"))).expect("UTF-8 page");
        let described = document["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .find(|p| p["name"] == repository.as_str() && p["versionInfo"] == *version)
            .unwrap_or_else(|| panic!("no package {repository} {version} in the SBOM"));
        let source_info = described["sourceInfo"].as_str().unwrap_or_default();
        let distribution = bom["components"]
            .as_array()
            .expect("components")
            .iter()
            .find(|c| c["name"] == repository.as_str() && c["version"] == *version)
            .unwrap_or_else(|| panic!("no component {repository} {version} in the BOM"))
            ["externalReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["type"] == "distribution")
            .and_then(|r| r["url"].as_str());
        assert_eq!(distribution, url.as_deref(), "{bom:#}");
        match url {
            Some(url) => {
                assert_eq!(entry["url"], url.as_str(), "{recorded:#}");
                assert!(page.contains(&format!("<code>{url}</code>")), "{page}");
                assert!(
                    source_info.starts_with(&format!("fetched from {url}")),
                    "{described:#}"
                );
                // An address is no host SPDX's validator takes as a download location.
                assert_eq!(described["downloadLocation"], "NOASSERTION");
            }
            None => {
                assert!(entry.is_null(), "{chart} {version}: {recorded:#}");
                assert!(!source_info.contains("fetched from"), "{described:#}");
            }
        }
    }
    let checked = work.write("sbom.spdx.json", &String::from_utf8(sbom).expect("UTF-8"));
    if let Some(result) = common::spdx_validated(&checked) {
        result.unwrap_or_else(|said| panic!("pyspdxtools refuses the SBOM: {said}"));
    }
    let checked = work.write(
        "sbom.cdx.json",
        &String::from_utf8(cyclonedx).expect("UTF-8"),
    );
    if let Some(result) = common::cyclonedx_validated(&checked) {
        result.unwrap_or_else(|said| panic!("cyclonedx-python-lib refuses the BOM: {said}"));
    }
}

/// The sha256 (hex) of `data`.
fn hex_sha256(data: &[u8]) -> String {
    common::sha256(data)
        .trim_start_matches("sha256:")
        .to_owned()
}

fn str_path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}
