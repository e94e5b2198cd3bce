//! The flag injection and the runaway render that opened this corpus, with Helm 3 and Helm 4,
//! at both layers: the binary refuses the chart by its name before Helm runs, and the render
//! itself (`chart_images::Helm`, called here with the name check bypassed) puts nothing of the
//! chart on Helm's command line and stops a render at its bounds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chartreg_build::bounded::BoundedError;
use chartreg_build::chart_images::{Helm, HelmError, RenderLimits};

use super::corpus::{MARKER, Tar, chart_yaml};
use super::{Work, common};

fn helms() -> Vec<(&'static str, PathBuf)> {
    ["helm3", "helm4"]
        .into_iter()
        .filter_map(|name| common::tool(name).map(|bin| (name, bin)))
        .collect()
}

/// The chart the issue tried: named `--post-renderer=pwn` (`pwn` on the PATH writes the marker),
/// and one named `--post-renderer=sh` whose template is a shell command writing it.
fn flag_named(work: &Work) -> Vec<PathBuf> {
    let pwn = work.path("case/evil-1.0.0.tgz");
    std::fs::write(
        &pwn,
        Tar::chart("evil", &chart_yaml("--post-renderer=pwn", "1.0.0")).tgz(),
    )
    .expect("package");
    let sh = work.path("case/sh");
    std::fs::create_dir_all(sh.join("templates")).expect("folder");
    std::fs::write(
        sh.join("Chart.yaml"),
        chart_yaml("--post-renderer=sh", "1.0.0"),
    )
    .expect("Chart.yaml");
    std::fs::write(
        sh.join("templates/evil.yaml"),
        format!("touch {}: y\n", work.path(MARKER).display()),
    )
    .expect("template");
    let out = work.path("case/output-dir");
    std::fs::create_dir_all(out.join("templates")).expect("folder");
    std::fs::write(
        out.join("Chart.yaml"),
        chart_yaml("--output-dir=written-by-helm", "1.0.0"),
    )
    .expect("Chart.yaml");
    std::fs::write(
        out.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    )
    .expect("template");
    vec![pwn, sh, out]
}

#[test]
fn a_flag_shaped_chart_name_runs_nothing_with_helm_3_and_4() {
    for (name, helm) in helms() {
        let work = Work::new();
        for chart in flag_named(&work) {
            for command in ["images", "pack"] {
                let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_chartreg-build"));
                cmd.arg(command).arg(&chart).arg("--helm").arg(&helm);
                if command == "pack" {
                    cmd.arg("--out").arg(work.path("out"));
                }
                let out = cmd
                    .current_dir(work.dir.path())
                    .env(
                        "PATH",
                        format!("{}:/usr/bin:/bin", work.path("bin").display()),
                    )
                    .env("TMPDIR", work.path("tmp"))
                    .output()
                    .expect("run");
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(
                    out.status.code(),
                    Some(1),
                    "{name} {command}: {}",
                    common::describe(&out)
                );
                assert!(
                    stderr.contains("invalid chart name")
                        && stderr.contains(&*chart.to_string_lossy()),
                    "{name} {command}: names the chart's file and why: {stderr}"
                );
                assert!(
                    !work.path(MARKER).exists(),
                    "{name} {command}: something ran"
                );
                assert!(
                    !work.path("written-by-helm").exists(),
                    "{name} {command}: Helm wrote files"
                );
            }
        }
    }
}

/// Below the name check: the same charts given straight to the render. Helm renders them as
/// `release-name`, runs nothing and writes nothing: the chart's name is never an argument.
#[test]
fn the_render_puts_nothing_of_the_chart_on_helm_s_command_line() {
    for (name, bin) in helms() {
        let work = Work::new();
        let helm = Helm {
            bin: bin.clone(),
            limits: RenderLimits::default(),
        };
        for chart in flag_named(&work) {
            let rendered = helm
                .template(&chart, &[])
                .unwrap_or_else(|e| panic!("{name} {}: {e}", chart.display()));
            assert!(!work.path(MARKER).exists(), "{name}: something ran");
            assert!(
                !Path::new("written-by-helm").exists() && !work.path("written-by-helm").exists()
            );
            if chart.ends_with("output-dir") {
                assert!(
                    rendered.contains("name: release-name"),
                    "{name}: {rendered}"
                );
            }
        }
    }
}

/// `range until 2000000000` took 24 GB and 108 s before the OOM killer ended it: now the
/// render is stopped at its memory bound, well within its time, with a clear error.
#[test]
fn a_runaway_render_ends_at_its_memory_bound() {
    for (name, bin) in helms() {
        let work = Work::new();
        let chart = work.path("case/runaway.tgz");
        std::fs::write(
            &chart,
            Tar::chart("runaway", &chart_yaml("runaway", "1.0.0"))
                .file(
                    "runaway/templates/x.yaml",
                    "{{ range $i := until 2000000000 }}{{ $i }}{{ end }}\n",
                )
                .tgz(),
        )
        .expect("package");
        let helm = Helm {
            bin,
            limits: RenderLimits {
                time: Duration::from_secs(120),
                memory: 512 << 20,
                output: RenderLimits::DEFAULT_OUTPUT,
            },
        };
        let started = Instant::now();
        let err = helm.template(&chart, &[]).expect_err("stopped");
        let took = started.elapsed();
        assert!(
            matches!(err, HelmError::Run(BoundedError::Memory { .. })),
            "{name}: {err}"
        );
        assert!(err.to_string().contains("512 MiB"), "{name}: {err}");
        assert!(took < Duration::from_secs(60), "{name}: took {took:?}");
        println!(
            "{name}: runaway render stopped after {:.1} s: {err}",
            took.as_secs_f64()
        );
    }
}
