//! Bad input: a values file that is not there (from the content file or `--values`), a chart
//! that cannot be read, a folder without a chart, each exit 1 naming it; and a chart Helm
//! cannot render, which fails the run naming it, or with `--static-fallback` is warned about
//! and read statically.

use super::*;

#[test]
fn a_missing_values_file_is_named() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    let config = work.write(
        "content.yaml",
        "charts:\n  from: [charts/platform, charts/web]\nimages:\n  values:\n    platform: [values/platform-nope.yaml]\n",
    );
    let stderr = work.images_fails(&helm, &["--config", arg(&config), "--json"]);
    assert!(stderr.contains("platform-nope.yaml"), "{stderr}");

    let stderr = work.images_fails(
        &helm,
        &["charts/web", "--values", "web=values/web-absent.yaml"],
    );
    assert!(stderr.contains("web-absent.yaml"), "{stderr}");
}

#[test]
fn a_chart_that_cannot_be_read_is_named() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    work.write("broken/web-2.0.0.tgz", "not a gzipped tar\n");
    let stderr = work.images_fails(&helm, &["charts/platform", "broken", "--json"]);
    assert!(stderr.contains("web-2.0.0.tgz"), "{stderr}");

    // A chart folder whose Chart.yaml is not YAML.
    work.write("charts/web/Chart.yaml", "name: [web\n");
    let stderr = work.images_fails(&helm, &["charts/web", "--json"]);
    assert!(stderr.contains("Chart.yaml"), "{stderr}");
}

#[test]
fn a_folder_without_a_chart() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    work.write("empty/README.md", "No chart here.\n");
    let stderr = work.images_fails(&helm, &["empty", "--json"]);
    assert!(
        stderr.contains("empty") || stderr.contains("no chart"),
        "the folder, or that it holds no chart: {stderr}"
    );
}

/// web requires a value nobody gave (`helm template` fails): the run fails naming web, its
/// folder and Helm's message, and says how to accept the static finding; with
/// `--static-fallback`, a warning naming web and Helm's message, web's images are then found
/// statically, and needed; platform is rendered.
#[test]
fn a_chart_helm_cannot_render() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    work.write(
        "charts/web/templates/license.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ include \"web.fullname\" . }}-license\n  labels:\n    {{- include \"web.labels\" . | nindent 4 }}\nstringData:\n  key: {{ required \"licenseKey is required: the site's licence key\" .Values.licenseKey | quote }}\n",
    );
    let config = work.content(true);
    let stderr = work.images_fails(&helm, &["--config", arg(&config), "--json"]);
    assert!(
        stderr.contains("web:1.0.0")
            && stderr.contains("charts/web")
            && stderr.contains("Helm could not render it")
            && stderr.contains("licenseKey is required")
            && stderr.contains("--static-fallback"),
        "an error naming web, its folder, Helm's message and the flag: {stderr}"
    );

    let (listed, stderr) = work.listed(&helm, &["--config", arg(&config), "--static-fallback"]);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("web") && l.to_lowercase().contains("warning"))
            && stderr.contains("licenseKey is required"),
        "a warning naming web and Helm's message: {stderr}"
    );
    let wants = only(everything(true), &[RENDER, ANNOTATION, VALUES], |_| true)
        .into_iter()
        .filter_map(|mut w| {
            w.found
                .retain(|(chart, from)| !(*chart == WEB && *from == RENDER));
            (!w.found.is_empty()).then_some(w)
        })
        .collect::<Vec<_>>();
    assert_listing(&listed, &wants, "web not rendered");
}
