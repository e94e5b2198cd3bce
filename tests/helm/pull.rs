//! `helm pull` by exact version, range, latest and `--devel`; `show` and `template`.

use super::*;

/// `helm pull` resolves the version the way Helm does (exact tag, semver range, latest stable,
/// `--devel`) and writes exactly the packaged bytes, from the manifest the layout tags.
#[rstest]
#[case::exact(&["--version", "1.0.0"], "hello-1.0.0.tgz", "1.0.0")]
#[case::exact_oldest(&["--version", "0.1.0"], "hello-0.1.0.tgz", "0.1.0")]
#[case::exact_with_build_metadata(&["--version", "1.0.1+build.7"], "hello-1.0.1+build.7.tgz", "1.0.1_build.7")]
#[case::exact_prerelease(&["--version", "1.1.0-rc.1"], "hello-1.1.0-rc.1.tgz", "1.1.0-rc.1")]
#[case::caret_range(&["--version", "^1.0"], "hello-1.0.1+build.7.tgz", "1.0.1_build.7")]
#[case::upper_bound_range(&["--version", "<1.0.0"], "hello-0.2.0.tgz", "0.2.0")]
#[case::latest_stable(&[], "hello-1.0.1+build.7.tgz", "1.0.1_build.7")]
#[case::devel(&["--devel"], "hello-1.1.0-rc.1.tgz", "1.1.0-rc.1")]
fn helm_pull_writes_the_packaged_chart(
    #[values("helm3", "helm4")] helm: &'static str,
    #[case] version_args: &[&str],
    #[case] package: &str,
    #[case] tag: &str,
) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}/charts/hello", server.host());
    let mut args = vec![
        "pull",
        &reference,
        "--plain-http",
        "-d",
        str_path(out_dir.path()),
    ];
    args.extend_from_slice(version_args);
    let out = helm.ok(&args);

    let context = format!("{} {}", helm.name, args.join(" "));
    assert_eq!(
        common::file_names(out_dir.path()),
        [package],
        "{context}: wrong file(s) written"
    );
    let got = common::read(&out_dir.path().join(package));
    assert_same_bytes(&got, &charts_dir().join(package), &context);
    let digest = assets_tag_digest("charts/hello", tag);
    assert!(
        text(&out).contains(&format!("Digest: {digest}")),
        "{context}: expected Helm to pull manifest {digest} (tag {tag}): {}",
        describe(&out)
    );
}

/// `helm show chart|values` and `helm template` read the chart straight from the registry.
#[rstest]
fn helm_show_and_template_read_the_chart(#[values("helm3", "helm4")] helm: &'static str) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let reference = format!("oci://{}/charts/hello", server.host());
    let common_args = ["--version", "1.0.0", "--plain-http"];
    let package = charts_dir().join("hello-1.0.0.tgz");

    let mut args = vec!["show", "chart", reference.as_str()];
    args.extend_from_slice(&common_args);
    let chart = String::from_utf8(helm.ok(&args).stdout).expect("UTF-8");
    for line in [
        "name: hello",
        "version: 1.0.0",
        "appVersion: 1.27.4",
        "apiVersion: v2",
    ] {
        assert!(
            chart.lines().any(|l| l == line),
            "{}: `helm show chart` lacks `{line}`:\n{chart}",
            helm.name
        );
    }

    let mut args = vec!["show", "values", reference.as_str()];
    args.extend_from_slice(&common_args);
    let values = String::from_utf8(helm.ok(&args).stdout).expect("UTF-8");
    assert!(
        values.contains("message: Hello from Helm & chartreg!") && values.contains("greeting:"),
        "{}: `helm show values` lacks the greeting:\n{values}",
        helm.name
    );
    assert_eq!(
        values.trim_end(),
        file_in_package(&package, "hello/values.yaml").trim_end(),
        "{}: `helm show values` is not the packaged values.yaml",
        helm.name
    );

    let mut args = vec!["template", "myrel", reference.as_str()];
    args.extend_from_slice(&common_args);
    let rendered = String::from_utf8(helm.ok(&args).stdout).expect("UTF-8");
    let deployment = rendered
        .split("\n---")
        .find(|doc| doc.lines().any(|l| l == "kind: Deployment"))
        .unwrap_or_else(|| panic!("{}: no Deployment rendered:\n{rendered}", helm.name));
    assert!(
        deployment.contains("name: myrel-hello"),
        "{}: the Deployment is not named after the release:\n{deployment}",
        helm.name
    );
    assert!(
        deployment.contains("nginxinc/nginx-unprivileged:1.27.4"),
        "{}: the Deployment does not use the chart's appVersion 1.27.4:\n{deployment}",
        helm.name
    );
}
