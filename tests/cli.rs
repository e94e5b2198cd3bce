//! The binary's commands and flags: `ls`, `serve` options and start-up failures, help; and the
//! two binaries together: what `chartreg-build pack` writes is what `chartreg ls` lists.

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
    let out = tempfile::tempdir().unwrap();
    let charts = common::root().join("charts");
    let packed = Command::new(common::chartreg_build_bin())
        .arg("pack")
        .arg(&charts)
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("chartreg-build runs");
    assert!(packed.status.success(), "{}", text(&packed.stderr));
    let registry = chartreg_core::content::Registry::from_files(common::files_in(out.path()))
        .expect("packed content loads");
    let mut expected = Vec::new();
    for repo in registry.repositories() {
        for tag in repo.tags() {
            let digest = repo.tag_digest(tag).unwrap();
            expected.push(format!("{} {tag} {digest}", repo.name()));
        }
    }
    let listed = chartreg(&["ls", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let got: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {} {}", r["repository"], r["tag"], r["digest"]).replace('"', ""))
        .collect();
    assert_eq!(
        got, expected,
        "the embedded content is what packing charts/ gives"
    );
}

#[test]
fn ls_lists_every_tag_with_digest_and_size() {
    let out = chartreg(&["ls", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let registry = common::assets_registry();
    let mut expected = Vec::new();
    for repo in registry.repositories() {
        for tag in repo.tags() {
            let digest = repo.tag_digest(tag).unwrap();
            expected.push((
                repo.name().to_owned(),
                tag.clone(),
                digest.to_string(),
                repo.pull_size(digest),
            ));
        }
    }
    let got: Vec<(String, String, String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["repository"].as_str().unwrap().to_owned(),
                r["tag"].as_str().unwrap().to_owned(),
                r["digest"].as_str().unwrap().to_owned(),
                r["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(got.len(), 6);
    // The signed chart's pull is its manifest, config, package and provenance.
    let motd = got.iter().find(|r| r.0 == "charts/motd").unwrap();
    let charts = common::root().join("charts");
    let package = std::fs::metadata(charts.join("motd-1.0.0.tgz"))
        .unwrap()
        .len();
    let prov = std::fs::metadata(charts.join("motd-1.0.0.tgz.prov"))
        .unwrap()
        .len();
    assert!(motd.3 > package + prov, "{motd:?}");

    let table = chartreg(&["ls"]);
    assert!(table.status.success());
    let table = text(&table.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("REPOSITORY")
            && lines[0].contains("DIGEST")
            && lines[0].ends_with("SIZE")
    );
    assert_eq!(lines.len(), 7);
    for (line, row) in lines[1..].iter().zip(&got) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            cols,
            [
                row.0.as_str(),
                row.1.as_str(),
                row.2.as_str(),
                &row.3.to_string()
            ]
        );
    }
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
        summary[0].contains("2 repositories, 6 tags, 6 manifests, 13 blobs"),
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
    for word in ["serve", "ls", "--listen", "CHARTREG_LISTEN"] {
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
