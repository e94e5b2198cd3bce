//! What a template can reach through Helm, and which Helm is let render:
//! - a Helm older than 3.11.1 is refused, naming the version it says it is (before 3.11.1,
//!   `helm template` resolved host names for templates: CVE-2023-25165);
//! - `getHostByName` gets no answer from Helm 3 and Helm 4 as the build tool renders, where the
//!   same Helm resolves the same name when told `--enable-dns` (what Helm before 3.11.1 always
//!   did): Helm itself answers nothing, whatever the network;
//! - so the network namespace a render runs in is shown with a stand-in Helm, a script that
//!   connects to a listener of this test on loopback: it reaches it when run directly, and not
//!   when the build tool runs it to render (as root, which CI is, the namespace must be made).

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use chartreg_build::chart_images::{Helm, HelmError, RenderLimits};

use super::corpus::{Tar, chart_yaml};
use super::{Work, common};

fn helms() -> Vec<(&'static str, PathBuf)> {
    ["helm3", "helm4"]
        .into_iter()
        .filter_map(|name| common::tool(name).map(|bin| (name, bin)))
        .collect()
}

/// An executable script at `path`.
fn script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("script");
    let mut perms = std::fs::metadata(path).expect("script").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(path, perms).expect("executable");
}

#[test]
fn a_helm_older_than_3_11_1_is_refused_naming_its_version() {
    let work = Work::new();
    let old = work.path("bin/helm");
    script(
        &old,
        "#!/bin/sh\n[ \"$1\" = version ] && { printf v3.10.3; exit 0; }\ntouch \"$(dirname \"$0\")/../rendered\"\n",
    );
    let err = Helm::find(Some(&old), None).expect_err("refused");
    assert!(matches!(err, HelmError::TooOld { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("Helm v3.10.3 is older than 3.11.1"), "{text}");
    let chart = work.path("case/app-1.0.0.tgz");
    std::fs::write(&chart, Tar::chart("app", &chart_yaml("app", "1.0.0")).tgz()).expect("chart");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .arg("images")
        .arg(&chart)
        .arg("--helm")
        .arg(&old)
        .current_dir(work.dir.path())
        .env("TMPDIR", work.path("tmp"))
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", common::describe(&out));
    assert!(
        stderr.contains("Helm v3.10.3 is older than 3.11.1") && stderr.contains("CVE-2023-25165"),
        "{stderr}"
    );
    assert!(!work.path("rendered").exists(), "the old Helm rendered");
    // Helm 3.17 and 4.3 pass.
    for (name, bin) in helms() {
        Helm::find(Some(&bin), None).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// A chart whose template looks up `localhost` (which /etc/hosts answers, with or without a
/// network).
fn lookup_chart(work: &Work) -> PathBuf {
    let chart = work.path("case/lookup");
    std::fs::create_dir_all(chart.join("templates")).expect("folder");
    std::fs::write(chart.join("Chart.yaml"), chart_yaml("lookup", "1.0.0")).expect("Chart.yaml");
    std::fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  answer: {{ getHostByName \"localhost\" | quote }}\n",
    )
    .expect("template");
    chart
}

#[test]
fn a_template_s_host_lookup_gets_no_answer_from_helm_3_or_4() {
    for (name, bin) in helms() {
        let work = Work::new();
        let chart = lookup_chart(&work);
        // The control: told --enable-dns, the same Helm answers.
        let home = work.path("home");
        let enabled = std::process::Command::new(&bin)
            .args(["template", "--enable-dns", "--"])
            .arg("release-name")
            .arg(&chart)
            .env_clear()
            .env("HOME", &home)
            .env("HELM_CACHE_HOME", &home)
            .env("HELM_CONFIG_HOME", &home)
            .env("HELM_DATA_HOME", &home)
            .output()
            .expect("helm");
        let enabled = String::from_utf8_lossy(&enabled.stdout);
        assert!(
            enabled.contains("answer: \"127.0.0.1\""),
            "{name}: with --enable-dns the lookup is answered: {enabled}"
        );
        let helm = Helm {
            bin,
            limits: RenderLimits::default(),
        };
        let rendered = helm
            .template(&chart, &[])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            rendered.contains("answer: \"\""),
            "{name}: the render got an answer: {rendered}"
        );
    }
}

#[test]
fn a_render_reaches_no_network_where_the_machine_allows_a_namespace() {
    if !Path::new("/bin/bash").is_file() {
        assert!(!common::ci(), "bash is needed for the stand-in Helm");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("address").port();
    let work = Work::new();
    let stand_in = work.path("bin/helm");
    script(
        &stand_in,
        &format!(
            "#!/bin/bash\n[ \"$1\" = version ] && {{ printf v3.17.1; exit 0; }}\n\
             if exec 3<>/dev/tcp/127.0.0.1/{port}; then net=reached; else net=unreachable; fi 2>/dev/null\n\
             printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: x\\ndata:\\n  net: %s\\n' \"$net\"\n"
        ),
    );
    let direct = std::process::Command::new(&stand_in)
        .arg("template")
        .output()
        .expect("stand-in");
    assert!(
        String::from_utf8_lossy(&direct.stdout).contains("net: reached"),
        "the control: run directly, it reaches the listener: {}",
        common::describe(&direct)
    );
    let helm = Helm::find(Some(&stand_in), None)
        .expect("stand-in")
        .expect("found");
    let rendered = helm.template(&lookup_chart(&work), &[]).expect("rendered");
    let isolation = chartreg_build::bounded::isolation();
    let root = rustix::process::geteuid().is_root();
    if common::ci() && root {
        assert!(
            !isolation.starts_with("no namespaces"),
            "as root, a render's namespaces must be made: {isolation}"
        );
    }
    if isolation.starts_with("no namespaces") {
        eprintln!("SKIPPED: renders have the network here: {isolation}");
        assert!(rendered.contains("net: reached"), "{rendered}");
    } else {
        assert!(
            rendered.contains("net: unreachable"),
            "{isolation}: {rendered}"
        );
    }
}
