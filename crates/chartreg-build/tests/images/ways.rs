//! The three ways, together with Helm 3 and with Helm 4, and each alone: what each finds and
//! what it misses; the values file named in the content file; the subchart; Helm found by
//! `--helm`, `CHARTREG_HELM` or PATH, and no Helm at all; `global.imageRegistry` and the
//! parent's section of the subchart's values in every way.

use rstest::rstest;

use super::*;

/// Every way, both charts, with the metrics values file and without it, rendered by `helm`.
#[rstest]
#[case::helm3("helm3")]
#[case::helm4("helm4")]
fn every_way_with_each_helm(#[case] helm: &str) {
    let Some(helm) = HelmFrom::flag(helm) else {
        return;
    };
    let work = Work::new();
    let config = work.content(true);
    let (listed, _) = work.listed(&helm, &["--config", arg(&config)]);
    assert_listing(&listed, &everything(true), "with the metrics values file");

    // Where: the template, the kind and the container of a render; the annotation; the values
    // key of the static reading.
    let init = entry(&listed, BUSYBOX).one(PLATFORM, RENDER);
    for part in [
        "platform/templates/controller.yaml",
        "Deployment",
        "initContainers",
        "wait-for-apiserver",
    ] {
        assert!(
            init.at.contains(part),
            "the initContainer's `at` names {part}: {init:#?}"
        );
    }
    let web_init = entry(&listed, BUSYBOX).one(WEB, RENDER);
    assert!(
        web_init.at.contains("web/templates/deployment.yaml") && web_init.at.contains("Deployment"),
        "{web_init:#?}"
    );
    let backup = entry(&listed, BACKUP).one(PLATFORM, RENDER);
    for part in ["platform/templates/cronjob.yaml", "CronJob", "backup"] {
        assert!(
            backup.at.contains(part),
            "the CronJob's `at` names {part}: {backup:#?}"
        );
    }
    let job = entry(&listed, ALPINE).one(WEB, RENDER);
    assert!(
        job.at.contains("web/templates/seed-job.yaml") && job.at.contains("Job"),
        "{job:#?}"
    );
    let operand = entry(&listed, OPERAND).one(PLATFORM, ANNOTATION);
    assert!(
        operand.at.contains("Chart.yaml") && operand.at.contains("artifacthub.io/images"),
        "{operand:#?}"
    );
    let controller = entry(&listed, CONTROLLER).one(PLATFORM, VALUES);
    assert!(
        controller.at.contains("values.yaml") && controller.at.contains("controller.image"),
        "{controller:#?}"
    );
    let web_init_value = entry(&listed, BUSYBOX).one(WEB, VALUES);
    assert!(
        web_init_value.at.contains("values.yaml") && web_init_value.at.contains("initImage"),
        "{web_init_value:#?}"
    );

    // The values files of each render: platform's names the metrics file, web's none.
    for l in &listed {
        for f in l.found_by(RENDER) {
            if f.chart == PLATFORM {
                assert!(
                    f.values.len() == 1 && f.values[0].ends_with(METRICS_VALUES),
                    "{}: platform was rendered with {METRICS_VALUES}: {f:#?}",
                    l.image
                );
            } else {
                assert!(
                    f.values.is_empty(),
                    "{}: web had no values file: {f:#?}",
                    l.image
                );
            }
        }
    }
    let exporter = entry(&listed, EXPORTER).one(PLATFORM, RENDER);
    assert!(
        exporter
            .at
            .contains("platform/templates/metrics-daemonset.yaml")
            && exporter.at.contains("DaemonSet"),
        "{exporter:#?}"
    );

    // The subchart's image is the subchart's, in every way that finds it; no other is.
    for l in &listed {
        for f in &l.found {
            if l.image == AGENT {
                assert_eq!(f.subchart.as_deref(), Some(SUBCHART), "{}: {f:#?}", l.image);
                assert_eq!(f.chart, PLATFORM, "the top-level chart: {f:#?}");
            } else {
                assert_eq!(f.subchart, None, "{}: {f:#?}", l.image);
            }
        }
    }
    let agent = entry(&listed, AGENT).one(PLATFORM, RENDER);
    assert!(
        agent
            .at
            .contains("platform/charts/agent/templates/statefulset.yaml")
            && agent.at.contains("StatefulSet"),
        "{agent:#?}"
    );

    // Without the values file the exporter is not rendered: listed from values.yaml alone,
    // not needed.
    let config = work.content(false);
    let (listed, _) = work.listed(&helm, &["--config", arg(&config)]);
    assert_listing(
        &listed,
        &everything(false),
        "without the metrics values file",
    );
    for l in &listed {
        for f in l.found_by(RENDER) {
            assert!(
                f.values.is_empty(),
                "{}: no values file given: {f:#?}",
                l.image
            );
        }
    }
}

/// `--only render`: what Helm renders, the values file's DaemonSet included; never the
/// operand (only the annotation names it).
#[test]
fn render_alone() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    let config = work.content(true);
    let (listed, _) = work.listed(&helm, &["--config", arg(&config), "--only", "render"]);
    assert_listing(
        &listed,
        &only(everything(true), &[RENDER], |_| true),
        "--only render",
    );
    assert!(
        listed.iter().all(|l| l.image != OPERAND),
        "{:#?}",
        summary(&listed)
    );
    assert!(listed.iter().any(|l| l.image == RELOADER));

    // Without the values file, the DaemonSet is not rendered: its image is not there at all.
    let config = work.content(false);
    let (listed, _) = work.listed(&helm, &["--config", arg(&config), "--only", "render"]);
    assert_listing(
        &listed,
        &only(everything(false), &[RENDER], |_| true),
        "--only render, no values file",
    );
    assert!(
        listed.iter().all(|l| l.image != EXPORTER),
        "{:#?}",
        summary(&listed)
    );
}

/// `--only annotations`: platform's list (the controller and the operand), nothing of web,
/// which has none; no template is rendered and no values read.
#[test]
fn annotations_alone() {
    // Helm is there, to show this way does not use it.
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    let config = work.content(true);
    let (listed, _) = work.listed(&helm, &["--config", arg(&config), "--only", "annotations"]);
    assert_listing(
        &listed,
        &[
            want(CONTROLLER, &[(PLATFORM, ANNOTATION)], true),
            want(OPERAND, &[(PLATFORM, ANNOTATION)], true),
        ],
        "--only annotations",
    );
}

/// `--only values`: every image written in values files, the subchart's through the parent,
/// the disabled exporter too (and needed: nothing was rendered); never the sidecar a template
/// puts together, nor the operand.
#[test]
fn values_alone() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    let config = work.content(false);
    let (listed, _) = work.listed(&helm, &["--config", arg(&config), "--only", "values"]);
    assert_listing(
        &listed,
        &only(everything(true), &[VALUES], |_| true),
        "--only values",
    );
    for missed in [RELOADER, OPERAND] {
        assert!(
            listed.iter().all(|l| l.image != missed),
            "{missed} is not found statically: {:#?}",
            summary(&listed)
        );
    }
    assert_eq!(
        entry(&listed, AGENT)
            .one(PLATFORM, VALUES)
            .subchart
            .as_deref(),
        Some(SUBCHART)
    );
}

/// Two ways given: their union, and nothing of the third.
#[test]
fn two_ways_together() {
    let Some(helm) = HelmFrom::flag("helm3") else {
        return;
    };
    let work = Work::new();
    let config = work.content(true);
    let (listed, _) = work.listed(
        &helm,
        &[
            "--config",
            arg(&config),
            "--only",
            "render",
            "--only",
            "annotations",
        ],
    );
    assert_listing(
        &listed,
        &only(everything(true), &[RENDER, ANNOTATION], |_| true),
        "--only render --only annotations",
    );
}

/// No helm (none on PATH, no `--helm`, no `CHARTREG_HELM`): the note, and the static ways
/// alone: every values image needed (no chart was rendered), the annotation's operand, not the
/// sidecar. Exit 0.
#[test]
fn without_helm_the_static_ways() {
    let work = Work::new();
    let config = work.content(true);
    let (listed, stderr) = work.listed(&HelmFrom::Nowhere, &["--config", arg(&config)]);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("helm is not on the PATH"))
            && stderr.contains("found statically"),
        "the note: {stderr}"
    );
    assert!(
        listed.iter().all(|l| l.found_by(RENDER).next().is_none()),
        "nothing is rendered: {:#?}",
        summary(&listed)
    );
    assert_listing(
        &listed,
        &only(everything(true), &[ANNOTATION, VALUES], |_| true),
        "without helm",
    );
}

/// Helm found through `CHARTREG_HELM`, and as `helm` on PATH: each renders.
#[rstest]
#[case::env("env")]
#[case::path("path")]
fn helm_from_the_environment(#[case] how: &str) {
    let Some(bin) = common::tool("helm4") else {
        return;
    };
    let helm = match how {
        "env" => HelmFrom::Env(bin),
        _ => HelmFrom::Path(bin),
    };
    let work = Work::new();
    let config = work.content(true);
    let (listed, stderr) = work.listed(&helm, &["--config", arg(&config)]);
    assert!(
        !stderr.contains("helm is not on the PATH"),
        "helm was found: {stderr}"
    );
    assert_listing(&listed, &everything(true), how);
}

/// `global.imageRegistry` set in platform's values.yaml, and the agent's tag set in the
/// parent's `agent:` section: rendering and the static reading both see the mirror's
/// references (the subchart's through the parent's `global` and section); the annotation
/// still says what upstream wrote.
#[test]
fn global_registry_and_the_parents_section() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    work.edit(
        "charts/platform/values.yaml",
        "  imageRegistry: \"\"",
        "  imageRegistry: mirror.example.com",
    );
    work.edit(
        "charts/platform/values.yaml",
        "    # Empty: the agent chart's appVersion.\n    tag: \"\"",
        "    tag: \"0.3.1\"",
    );
    let config = work.content(true);
    let (listed, _) = work.listed(&helm, &["--config", arg(&config)]);
    let mirror_busybox = format!("mirror.example.com/library/busybox:1.36@{PINNED}");
    let mut wants = vec![
        want(
            "mirror.example.com/example/controller:2.4.1",
            &[(PLATFORM, RENDER), (PLATFORM, VALUES)],
            true,
        ),
        want(
            "mirror.example.com/example/agent:0.3.1",
            &[(PLATFORM, RENDER), (PLATFORM, VALUES)],
            true,
        ),
        want(
            "mirror.example.com/example/exporter:v1.0.0",
            &[(PLATFORM, RENDER), (PLATFORM, VALUES)],
            true,
        ),
        want(CONTROLLER, &[(PLATFORM, ANNOTATION)], true),
        want(OPERAND, &[(PLATFORM, ANNOTATION)], true),
        want(RELOADER, &[(PLATFORM, RENDER)], true),
        want(BUSYBOX, &[(WEB, RENDER), (WEB, VALUES)], true),
        want(NGINX, &[(WEB, RENDER), (WEB, VALUES)], true),
        want(ALPINE, &[(WEB, RENDER), (WEB, VALUES)], true),
    ];
    // The plain string of the CronJob is as written in a render; a static reading may or may
    // not put the global registry before it: only the render is asserted.
    let backup = entry(&listed, BACKUP);
    assert!(
        backup
            .ways()
            .contains(&(PLATFORM.to_owned(), RENDER.to_owned())),
        "{backup:#?}"
    );
    let rest: Vec<Listed> = listed
        .into_iter()
        .filter(|l| l.image != BACKUP && !l.image.starts_with("mirror.example.com/example/backup"))
        .collect();
    let busybox = entry(&rest, &mirror_busybox);
    assert_eq!(
        busybox.ways(),
        [
            (PLATFORM.to_owned(), RENDER.to_owned()),
            (PLATFORM.to_owned(), VALUES.to_owned())
        ]
        .into_iter()
        .collect(),
        "{busybox:#?}"
    );
    let rest: Vec<Listed> = rest
        .into_iter()
        .filter(|l| l.image != mirror_busybox)
        .collect();
    wants.sort_by_key(|w| w.image);
    assert_listing(&rest, &wants, "global.imageRegistry: mirror.example.com");
    let agent = entry(&rest, "mirror.example.com/example/agent:0.3.1");
    assert!(
        agent
            .found
            .iter()
            .all(|f| f.subchart.as_deref() == Some(SUBCHART)),
        "{agent:#?}"
    );
}
