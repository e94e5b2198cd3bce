//! `chart-images.json`: with an `images:` section in the content file, pack writes beside the
//! repositories the images each chart version needs (sorted, the same bytes every run), the
//! server reads it, `--check` names it when it is stale; a run without charts keeps it, and
//! without the section it is not written (one written before is removed).

use super::*;

const LIST: &str = "chart-images.json";

/// `pack ARGS` with no Helm to find: images found statically (the Helm side is tests/helm).
fn pack_statically(args: &[&str]) -> Output {
    let no_path = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .arg("pack")
        .args(args)
        .env("PATH", no_path.path())
        .env_remove("CHARTREG_HELM")
        .output()
        .expect("chartreg-build runs")
}

fn ok(r: &Output) -> String {
    assert!(r.status.success(), "{}", text(&r.stderr));
    text(&r.stdout)
}

/// The stale parts `--check` names, failing.
fn stale(r: &Output) -> String {
    assert!(!r.status.success(), "{}", text(&r.stdout));
    let stderr = text(&r.stderr);
    assert!(stderr.contains("out of date"), "{stderr}");
    stderr
}

#[test]
fn pack_lists_the_images_each_chart_version_needs_and_check_compares_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let content = common::images_content(&dir.path().join("src"), "{}");
    let config = content.config.to_str().unwrap();
    let out = dir.path().join("assets");
    let out_arg = out.to_str().unwrap();
    ok(&pack_statically(&["--config", config, "--out", out_arg]));

    let written = fs::read(out.join(LIST)).unwrap();
    let list: serde_json::Value = serde_json::from_slice(&written).unwrap();
    let image = |image: &str, repository: &str, tag: &str, digest: Option<&str>| {
        serde_json::json!({
            "image": image, "repository": repository, "tag": tag, "digest": digest,
            "from": ["values"],
        })
    };
    let digest = &content.agent_digest;
    assert_eq!(
        list,
        serde_json::json!({"charts": {"charts/app": {"1.0.0": {
            "rendered": false,
            "images": [
                image("docker.io/library/busybox:1.36", "docker.io/library/busybox", "1.36", None),
                image(
                    &format!("quay.io/example/agent:v0@{digest}"),
                    "quay.io/example/agent",
                    "v0",
                    Some(digest),
                ),
                image("quay.io/example/agent:v1", "quay.io/example/agent", "v1", None),
            ],
        }}}})
    );
    assert!(text(&written).ends_with("}\n"), "{}", text(&written));
    // It is content: the server builds its registry with it.
    chartreg_core::content::Registry::from_files(files_in(&out)).expect("the list loads");

    // The same inputs, the same bytes; `--check` finds nothing stale.
    let again = ok(&pack_statically(&["--config", config, "--out", out_arg]));
    assert!(again.starts_with("unchanged:"), "{again}");
    assert_eq!(fs::read(out.join(LIST)).unwrap(), written);
    ok(&pack_statically(&[
        "--config", config, "--out", out_arg, "--check",
    ]));

    // A values file that enables another image: only the list is stale.
    let src = dir.path().join("src");
    fs::write(
        src.join("more.yaml"),
        "extra:\n  image: registry.k8s.io/pause:3.9\n",
    )
    .unwrap();
    let with_values = fs::read_to_string(&content.config)
        .unwrap()
        .replace("images: {}", "images:\n  values:\n    app: [more.yaml]");
    fs::write(&content.config, &with_values).unwrap();
    let r = pack_statically(&["--config", config, "--out", out_arg, "--check"]);
    let said = stale(&r);
    assert!(
        said.contains(LIST) && !said.contains("charts/app"),
        "{said}"
    );
    assert_eq!(
        fs::read(out.join(LIST)).unwrap(),
        written,
        "--check writes nothing"
    );
    ok(&pack_statically(&["--config", config, "--out", out_arg]));
    let now = fs::read_to_string(out.join(LIST)).unwrap();
    assert!(now.contains("registry.k8s.io/pause:3.9"), "{now}");

    // Edited by hand: stale again.
    fs::write(
        out.join(LIST),
        now.replace("\"rendered\": false", "\"rendered\": true"),
    )
    .unwrap();
    let said = stale(&pack_statically(&[
        "--config", config, "--out", out_arg, "--check",
    ]));
    assert!(said.contains(LIST), "{said}");
    ok(&pack_statically(&["--config", config, "--out", out_arg]));

    // A run without charts (a layout alone) leaves the list as it is.
    let sample = root().join("images/sample");
    ok(&pack_statically(&[
        "--layout",
        &format!("{}=images/sample", sample.display()),
        "--out",
        out_arg,
    ]));
    assert_eq!(fs::read_to_string(out.join(LIST)).unwrap(), now);

    // Without the section: the list is stale, and the next run removes it.
    let without = with_values.split("images:\n").next().unwrap().to_owned();
    fs::write(&content.config, &without).unwrap();
    let said = stale(&pack_statically(&[
        "--config", config, "--out", out_arg, "--check",
    ]));
    assert!(said.contains(LIST), "{said}");
    ok(&pack_statically(&["--config", config, "--out", out_arg]));
    assert!(!out.join(LIST).exists());
    ok(&pack_statically(&[
        "--config", config, "--out", out_arg, "--check",
    ]));
}

#[test]
fn without_an_images_section_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let content = common::images_content(&dir.path().join("src"), "{}");
    let text = fs::read_to_string(&content.config).unwrap();
    fs::write(&content.config, text.replace("images: {}\n", "")).unwrap();
    let out = dir.path().join("assets");
    ok(&pack_statically(&[
        "--config",
        content.config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(out.join("charts/app/index.json").is_file());
    assert!(!out.join(LIST).exists());
}
