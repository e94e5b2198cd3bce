//! `fetch --with-chart-images`: a chart whose images come from the registry a values file's
//! `global.imageRegistry` names (a docker-registry started here, holding the sample image
//! under the two repositories the chart needs) is fetched with those images; the lock records
//! the chart that asked for each, and `--locked` (from the lock alone) checks the charts still
//! need exactly those. Packing the lock with `images.closure: require` then passes: the
//! content holds every image the chart needs, as nodes will ask for them.

use std::process::Command;

use super::*;
use common::Distribution;

/// A chart as real charts write their images: `image.registry` overridden by
/// `global.imageRegistry`, the tag defaulting to `appVersion`, a sidecar an option enables.
fn write_chart(work: &Work) {
    work.write(
        "app/Chart.yaml",
        "apiVersion: v2\nname: app\nversion: 0.1.0\nappVersion: v1\n",
    );
    work.write(
        "app/values.yaml",
        "global:\n  imageRegistry: \"\"\nimage:\n  registry: docker.io\n  repository: example/app\n  tag: \"\"\nsidecar:\n  enabled: true\n  image:\n    registry: docker.io\n    repository: example/sidecar\n    tag: v1\nextra:\n  enabled: false\n  image:\n    registry: docker.io\n    repository: example/extra\n    tag: v1\n",
    );
    work.write(
        "app/templates/_helpers.tpl",
        "{{- define \"app.image\" -}}\n{{- $registry := .root.Values.global.imageRegistry | default .image.registry -}}\n{{ $registry }}/{{ .image.repository }}:{{ .image.tag | default .root.Chart.AppVersion }}\n{{- end -}}\n",
    );
    work.write(
        "app/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers:\n        - name: app\n          image: {{ include \"app.image\" (dict \"root\" . \"image\" .Values.image) | quote }}\n        {{- if .Values.sidecar.enabled }}\n        - name: sidecar\n          image: {{ include \"app.image\" (dict \"root\" . \"image\" .Values.sidecar.image) | quote }}\n        {{- end }}\n        {{- if .Values.extra.enabled }}\n        - name: extra\n          image: {{ include \"app.image\" (dict \"root\" . \"image\" .Values.extra.image) | quote }}\n        {{- end }}\n",
    );
}

#[test]
fn the_images_the_fetched_charts_need_are_fetched_with_them_and_locked() {
    let Some(registry) = Distribution::start() else {
        return;
    };
    let (Some(helm), Some(skopeo)) = (common::tool("helm4"), common::tool("skopeo")) else {
        return;
    };
    let host = registry.host();
    for repository in ["example/app", "example/sidecar"] {
        let out = common::output_of(
            Command::new(&skopeo).args([
                "copy",
                "--all",
                "--preserve-digests",
                "--dest-tls-verify=false",
                &format!("oci:{}:v1", root().join("images/sample").display()),
                &format!("docker://{host}/{repository}:v1"),
            ]),
            "skopeo copy",
        );
        assert!(out.status.success(), "skopeo copy: {}", describe(&out));
    }

    let work = Work::new();
    write_chart(&work);
    let out = common::output_of(
        Command::new(&helm)
            .args(["package", "app", "--destination", "vendor"])
            .current_dir(work.path("")),
        "helm package",
    );
    assert!(out.status.success(), "helm package: {}", describe(&out));
    work.write("charts.yaml", "chartURLs:\n  - ./vendor/app-0.1.0.tgz\n");
    work.write(
        "values/app.yaml",
        &format!("global:\n  imageRegistry: \"{host}\"\n"),
    );
    let helm_arg = str_path(&helm).to_owned();
    let out = work.fetch_ok(&[
        "--helm-charts-file",
        "charts.yaml",
        "--with-chart-images",
        "--values",
        "app=values/app.yaml",
        "--helm",
        &helm_arg,
        "--no-referrers",
    ]);
    assert!(out.contains("fetched 1 charts, 2 images"), "{out}");
    let lock = work.lock();
    let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&lock).expect("YAML lock");
    let component = host.replace(':', "_");
    for repository in ["example/app", "example/sidecar"] {
        let key = format!("{host}/{repository}:v1");
        let entry = &parsed["images"][key.as_str()];
        assert_eq!(
            entry["charts"],
            serde_yaml_ng::from_str::<serde_yaml_ng::Value>("[app:0.1.0]").unwrap(),
            "{key} in the lock:\n{lock}"
        );
        assert!(
            work.path(&format!(
                "fetched/images/{component}/{repository}/index.json"
            ))
            .is_file(),
            "no layout for {repository}"
        );
    }
    // The disabled part's image is not needed, so not fetched.
    assert!(!lock.contains("example/extra"), "{lock}");
    assert_eq!(
        parsed["lists"]["chart_images"]["app"][0].as_str(),
        Some("../values/app.yaml"),
        "{lock}"
    );

    // From the lock alone: the charts still need exactly what it pins.
    let out = work.fetch_ok(&[
        "--locked",
        "--lock",
        "fetched/chartreg.lock",
        "--helm",
        &helm_arg,
    ]);
    assert!(out.contains("lock matches"), "{out}");
    // With the lists given, --locked follows the lock: its charts' images are asked for too.
    let out = work.fetch_ok(&[
        "--locked",
        "--helm-charts-file",
        "charts.yaml",
        "--helm",
        &helm_arg,
    ]);
    assert!(
        out.contains("fetched 1 charts, 2 images; lock matches"),
        "{out}"
    );

    // Packed with the closure required: every image the chart needs is held.
    work.write(
        "content.yaml",
        "lock: fetched/chartreg.lock\nimages:\n  closure: require\n  values:\n    app: [values/app.yaml]\n",
    );
    let pack = |extra_env: &[(&str, &str)]| {
        common::output_of(
            Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
                .args(["pack", "--config"])
                .arg(work.path("content.yaml"))
                .arg("--out")
                .arg(work.path("assets"))
                .envs(extra_env.iter().copied()),
            "chartreg-build pack",
        )
    };
    let out = pack(&[("CHARTREG_HELM", helm_arg.as_str())]);
    assert!(out.status.success(), "pack: {}", describe(&out));

    // The part a values file enables now: the chart needs an image the lock does not pin.
    work.write(
        "values/app.yaml",
        &format!("global:\n  imageRegistry: \"{host}\"\nextra:\n  enabled: true\n"),
    );
    let err = work.fetch_fails(&[
        "--locked",
        "--lock",
        "fetched/chartreg.lock",
        "--helm",
        &helm_arg,
    ]);
    assert!(
        err.contains(&format!(
            "{host}/example/extra:v1: the charts need it, but the lock does not pin it"
        )),
        "{err}"
    );
    let out = pack(&[("CHARTREG_HELM", helm_arg.as_str())]);
    assert!(
        !out.status.success(),
        "pack should fail: {}",
        describe(&out)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "chart app 0.1.0 needs {host}/example/extra:v1: no repository {component}/example/extra"
        )),
        "{err}"
    );
}
