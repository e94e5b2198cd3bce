//! The commands on `/` work as copied: headless Chromium loads the page from the release
//! binary over HTTPS (its certificate from a private CA) and over plain HTTP, and every Helm
//! and skopeo command in the page is run as it stands, over HTTPS in a folder holding the CA's
//! `ca.crt` (Helm 3 and 4; `helm install` only with Helm 4, with `--dry-run=client` added, as
//! there is no cluster here).

use std::path::Path;
use std::process::Command;

use super::browser::dom;
use super::common::{self, Helm, LOOPBACK_NAME, Process, Skopeo, TlsProcess, describe, root};

/// The text of every command block (`<pre><code>`) in `page` that starts with `program `
/// (entities decoded).
fn commands(page: &str, program: &str) -> Vec<String> {
    page.split("<pre><code>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</code>"))
        .map(|(text, _)| {
            text.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&")
        })
        .filter(|text| text.starts_with(&format!("{program} ")))
        .collect()
}

/// The arguments of a command shown on the page, after its program's name.
fn args(command: &str) -> Vec<&str> {
    command.split_whitespace().skip(1).collect()
}

/// Whether the binary embeds the sample image (`make assets` packs it; not committed).
fn embedded_sample() -> bool {
    let present = root().join("assets/images/sample/index.json").is_file();
    assert!(
        present || std::env::var_os("CI").is_none(),
        "assets/images/sample is missing: `make assets` (make test does) packs it before the build"
    );
    if !present {
        eprintln!("SKIPPED: the skopeo commands (assets/images/sample is not packed)");
    }
    present
}

/// Runs each skopeo command of `page` in `dir`, which holds what the page says it needs
/// (`hosts`: run it with that `/etc/hosts`).
fn run_skopeo(page: &str, dir: &Path, hosts: Option<&Path>) {
    let Some(skopeo) = Skopeo::new() else { return };
    let shown = commands(page, "skopeo");
    assert!(!shown.is_empty(), "a skopeo command: {page}");
    for command in shown {
        let mut cmd = skopeo.command(&args(&command));
        cmd.current_dir(dir);
        let Some(mut cmd) = resolving(cmd, hosts) else {
            return;
        };
        let out = common::output_of(&mut cmd, "skopeo");
        assert!(out.status.success(), "{command}: {}", describe(&out));
        let inspected: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert!(inspected["Digest"].is_string(), "{command}: {inspected}");
    }
}

/// `cmd`, with `hosts` as its `/etc/hosts` when given; `None` when that cannot be done here.
fn resolving(cmd: Command, hosts: Option<&Path>) -> Option<Command> {
    match hosts {
        Some(hosts) => common::with_hosts(&cmd, hosts),
        None => Some(cmd),
    }
}

/// Served over TLS, by a name rather than 127.0.0.1: Helm 3 speaks plain HTTP to loopback
/// addresses whatever the flags, as it would to `localhost` through a port-forward (see the
/// docs/troubleshooting.md). The name resolves to 127.0.0.1 for Chromium and for each command.
#[test]
fn the_commands_on_the_page_served_over_tls_work_as_copied() {
    let helms: Vec<Helm> = ["helm3", "helm4"]
        .into_iter()
        .filter_map(Helm::new)
        .collect();
    let tls = TlsProcess::start(&[], &[]);
    let port = tls.process.addr.port();
    let hosts = tls.dir.path().join("hosts");
    std::fs::write(
        &hosts,
        format!("127.0.0.1 localhost\n::1 localhost\n127.0.0.1 {LOOPBACK_NAME}\n"),
    )
    .unwrap();
    let profile = tempfile::tempdir().unwrap();
    let page = dom(
        profile.path(),
        &[
            "--ignore-certificate-errors",
            &format!("--host-resolver-rules=MAP {LOOPBACK_NAME} 127.0.0.1"),
        ],
        &format!("https://{LOOPBACK_NAME}:{port}/"),
    );
    assert!(
        page.contains("kubectl -n NAMESPACE get secret helm-repository-tls"),
        "the page says where ca.crt comes from: {page}"
    );
    let helm_commands = commands(&page, "helm");
    let pulls: Vec<&String> = helm_commands
        .iter()
        .filter(|c| c.starts_with("helm pull "))
        .collect();
    assert_eq!(pulls.len(), 3, "a pull per chart: {helm_commands:?}");
    assert!(
        helm_commands
            .iter()
            .all(|c| c.ends_with(" --ca-file ca.crt")),
        "{helm_commands:?}"
    );
    for helm in &helms {
        std::fs::copy(tls.ca_file(), helm.home.path().join("ca.crt")).unwrap();
        let run = |args: &[&str]| {
            let mut cmd = helm.command(args);
            cmd.env_remove("KUBECONFIG");
            resolving(cmd, Some(&hosts)).map(|mut cmd| common::output_of(&mut cmd, helm.name))
        };
        for command in &helm_commands {
            let mut args = args(command);
            if command.starts_with("helm install ") {
                // Helm 3.17's client-side install still asks a cluster for its version.
                if helm.name == "helm3" {
                    continue;
                }
                args.push("--dry-run=client");
            }
            let Some(out) = run(&args) else { return };
            assert!(
                out.status.success(),
                "{} ran `{command}`: {}",
                helm.name,
                describe(&out)
            );
        }
        let packages = common::file_names(helm.home.path())
            .into_iter()
            .filter(|f| f.ends_with(".tgz"))
            .count();
        assert_eq!(packages, 3, "{}: the pulls wrote the packages", helm.name);

        // Without the flag the page adds, the same pull is refused on the certificate.
        let pull = pulls[0].replace(" --ca-file ca.crt", "");
        let Some(out) = run(&args(&pull)) else { return };
        assert!(
            !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("certificate"),
            "{} ran `{pull}`: {}",
            helm.name,
            describe(&out)
        );
    }

    if embedded_sample() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(tls.ca_file(), dir.path().join("ca.crt")).unwrap();
        run_skopeo(&page, dir.path(), Some(&hosts));
    }
}

#[test]
fn the_commands_on_the_page_served_over_plain_http_work_as_copied() {
    let server = Process::start();
    let profile = tempfile::tempdir().unwrap();
    let page = dom(profile.path(), &[], &format!("{}/", server.url()));
    assert!(!page.contains("ca.crt"), "{page}");
    for name in ["helm3", "helm4"] {
        let Some(helm) = Helm::new(name) else {
            continue;
        };
        for command in commands(&page, "helm") {
            if command.starts_with("helm install ") {
                continue;
            }
            let out = helm.run(&args(&command));
            assert!(
                out.status.success(),
                "{name} ran `{command}`: {}",
                describe(&out)
            );
        }
    }
    if embedded_sample() {
        let dir = tempfile::tempdir().unwrap();
        run_skopeo(&page, dir.path(), None);
    }
}
