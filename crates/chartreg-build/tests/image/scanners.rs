//! What scanners and SBOM readers make of the real server's image (`CHARTREG_STATIC_BIN`), with
//! the real tools `scripts/install-tools.sh` installs: trivy finds in the image layout (by the
//! binary's `.dep-v0`) exactly the crates the SBOM lists, each at its version; rust-audit-info
//! reads the same crates and the same edges from the binary; SPDX's and CycloneDX's validators
//! take the SBOMs, and trivy reads each (`trivy sbom`) as those crates. trivy runs
//! offline, from a cache in the test's folder: listing packages needs no vulnerability data,
//! and `trivy sbom` (which always opens its database) gets an empty one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::common;
use super::support::*;

type Crates = BTreeSet<(String, String)>;

/// The crates CycloneDX `bom` lists (name, version), and its graph by `name@version`.
fn sbom_crates(bom: &Value) -> (Crates, BTreeMap<String, BTreeSet<String>>) {
    let mut by_ref = BTreeMap::new();
    let mut crates = Crates::new();
    for c in bom["components"].as_array().unwrap() {
        if c["type"] == "library" {
            let (name, version) = (c["name"].as_str().unwrap(), c["version"].as_str().unwrap());
            crates.insert((name.to_owned(), version.to_owned()));
            by_ref.insert(c["bom-ref"].as_str().unwrap(), format!("{name}@{version}"));
        }
    }
    by_ref.insert("chartreg", "chartreg".to_owned());
    let mut graph = BTreeMap::new();
    for d in bom["dependencies"].as_array().unwrap() {
        let of = by_ref[d["ref"].as_str().unwrap()].clone();
        let to = d["dependsOn"].as_array().unwrap();
        let to = to.iter().map(|t| by_ref[t.as_str().unwrap()].clone());
        graph.insert(of, to.collect());
    }
    (crates, graph)
}

/// An empty vulnerability database (bbolt, schema 2) for `trivy sbom`, in `cache`: two meta
/// pages, an empty freelist and an empty root bucket, as bbolt writes a new file.
fn empty_trivy_db(cache: &Path) {
    const PAGE: usize = 4096;
    fn fnv64a(data: &[u8]) -> u64 {
        data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }
    let page = |id: u64, flags: u16, body: &[u8]| {
        let mut page = Vec::with_capacity(PAGE);
        page.extend(id.to_le_bytes());
        page.extend(flags.to_le_bytes());
        page.extend([0; 6]);
        page.extend(body);
        page.resize(PAGE, 0);
        page
    };
    let meta = |txid: u64| {
        let mut meta = Vec::new();
        for word in [0xED0C_DAED_u32, 2, PAGE as u32, 0] {
            meta.extend(word.to_le_bytes());
        }
        // The root bucket at page 3, the freelist at 2, 4 pages, the transaction.
        for word in [3u64, 0, 2, 4, txid] {
            meta.extend(word.to_le_bytes());
        }
        let sum = fnv64a(&meta);
        meta.extend(sum.to_le_bytes());
        meta
    };
    let mut db = page(0, 0x04, &meta(0));
    db.extend(page(1, 0x04, &meta(1)));
    db.extend(page(2, 0x10, &[]));
    db.extend(page(3, 0x02, &[]));
    fs::create_dir_all(cache.join("db")).unwrap();
    fs::write(cache.join("db/trivy.db"), db).unwrap();
    fs::write(
        cache.join("db/metadata.json"),
        r#"{"Version":2,"NextUpdate":"2999-01-01T00:00:00Z","UpdatedAt":"2026-01-01T00:00:00Z","DownloadedAt":"2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
}

fn tools() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let server = std::env::var_os("CHARTREG_STATIC_BIN").map(PathBuf::from);
    let Some(server) = server else {
        assert!(
            !ci(),
            "CHARTREG_STATIC_BIN is not set (CI=true): the Makefile sets it to the static server binary"
        );
        eprintln!("SKIPPED: CHARTREG_STATIC_BIN is not set (the static server binary)");
        return None;
    };
    Some((
        server,
        common::tool("trivy")?,
        common::tool("rust-audit-info")?,
    ))
}

#[test]
fn trivy_finds_in_the_image_every_crate_the_sbom_lists_and_reads_the_sboms() {
    let Some((server, trivy_bin, audit_info)) = tools() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("trivy");
    let spdx = dir.path().join("chartreg.spdx.json");
    let cdx = dir.path().join("chartreg.cdx.json");
    fs::write(&spdx, ok(Command::new(&server).args(["ls", "--sbom"]))).unwrap();
    let printed = ok(Command::new(&server).args(["ls", "--sbom", "cyclonedx"]));
    fs::write(&cdx, &printed).unwrap();
    if let Some(result) = common::spdx_validated(&spdx) {
        result.unwrap_or_else(|said| panic!("pyspdxtools refuses the SBOM: {said}"));
    }
    if let Some(result) = common::cyclonedx_validated(&cdx) {
        result.unwrap_or_else(|said| panic!("cyclonedx-python-lib refuses the BOM: {said}"));
    }
    let bom = json(printed.as_bytes());
    assert!(
        !bom["metadata"]["timestamp"]
            .as_str()
            .unwrap()
            .starts_with("1970"),
        "created from the last commit or the content: {}",
        bom["metadata"]["timestamp"]
    );
    let (crates, graph) = sbom_crates(&bom);
    assert!(crates.len() > 100, "{crates:?}");
    for (name, _) in &crates {
        assert!(
            !name.ends_with("-macros")
                && !["syn", "quote", "proc-macro2", "chartreg-bin"].contains(&name.as_str()),
            "{name} is no crate linked in"
        );
    }
    for c in bom["components"].as_array().unwrap() {
        if matches!(c["type"].as_str(), Some("application" | "container")) {
            let purl = c["purl"].as_str().unwrap_or_default();
            assert!(
                purl.starts_with("pkg:oci/") && purl.contains("@sha256%3A"),
                "{c}"
            );
        }
    }

    // The image layout, with both SBOMs attached: trivy finds the crates in its binary.
    let layout = dir.path().join("oci");
    ok(image_asking_sbom(&[
        "--binary",
        s(&server),
        "--out",
        s(&layout),
    ]));
    let scanned = ok(common::trivy_offline(&trivy_bin, &cache, "image")
        .args(["--format", "cyclonedx", "--input"])
        .arg(&layout));
    let scanned = json(scanned.as_bytes());
    let found: Crates = common::cyclonedx_libraries(&scanned);
    let mut expected = crates.clone();
    expected.insert(("chartreg-bin".to_owned(), VERSION.to_owned()));
    assert_eq!(
        found, expected,
        "trivy's crates (the root's too) and the SBOM's"
    );

    // rust-audit-info reads the same crates, and the same edges, from the binary.
    let info = json(ok(Command::new(&audit_info).arg(&server)).as_bytes());
    let packages = info["packages"].as_array().unwrap();
    let key = |p: &Value| -> String {
        if p["root"] == true {
            "chartreg".to_owned()
        } else {
            format!(
                "{}@{}",
                p["name"].as_str().unwrap(),
                p["version"].as_str().unwrap()
            )
        }
    };
    let mut audited = BTreeMap::new();
    for p in packages {
        let to = p["dependencies"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let to = to
            .iter()
            .map(|i| key(&packages[i.as_u64().unwrap() as usize]));
        audited.insert(key(p), to.collect::<BTreeSet<_>>());
    }
    assert_eq!(audited, graph, "the binary's .dep-v0 and the SBOM's graph");

    // trivy reads each SBOM as the crates from crates.io it lists (a crate of this
    // workspace has no purl: nothing outside the build names it).
    empty_trivy_db(&cache);
    let read_by_trivy = |sbom: &Path| -> Crates {
        let read = ok(common::trivy_offline(&trivy_bin, &cache, "sbom")
            .args(["--format", "json", "--list-all-pkgs"])
            .arg(sbom));
        let read = json(read.as_bytes());
        read["Results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["Type"] == "cargo")
            .flat_map(|r| r["Packages"].as_array().unwrap().iter())
            .map(|p| {
                (
                    p["Name"].as_str().unwrap().into(),
                    p["Version"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let from_crates_io: Crates = bom["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["purl"]
                .as_str()
                .is_some_and(|p| p.starts_with("pkg:cargo/"))
        })
        .map(|c| {
            (
                c["name"].as_str().unwrap().into(),
                c["version"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        from_crates_io.len() + 10 > crates.len(),
        "{from_crates_io:?}"
    );
    assert_eq!(
        read_by_trivy(&cdx),
        from_crates_io,
        "what trivy reads of the BOM"
    );
    assert_eq!(
        read_by_trivy(&spdx),
        from_crates_io,
        "what trivy reads of the SPDX"
    );
}
