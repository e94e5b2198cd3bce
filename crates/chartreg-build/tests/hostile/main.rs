//! The hostile corpus (`tests/corpus`) through the build tool's binary: every case is refused
//! with a clear error or handled safely by each command that reads it (`pack`, `pack` with an
//! `images:` section rendering with Helm 4, `images` with Helm 3 and with Helm 4), and for
//! every run:
//! - nothing is executed: the `pwn` program on the PATH writes a marker when run, and a
//!   template that a post-renderer would run as a shell writes the same marker; neither appears;
//! - nothing is written outside the output folder: the work folder is the same before and
//!   after but for `out*/`, and the run's TMPDIR (Helm's scratch folders) is empty again;
//! - no control character reaches the terminal (no ESC or BEL byte on stdout or stderr);
//! - the run ends within its bounds (renders are given 10 s and 512 MiB here).
//!
//! The cases run on a few threads at once. The table of cases and what each got is printed
//! (`--nocapture`) and written to `hostile-corpus.txt` in cargo's test folder.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../corpus/mod.rs"]
mod corpus;
mod helm;
mod helm_network;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use corpus::{Case, Expect, Got, Input, MARKER, RENDER_LIMITS, RUN_BOUND};

/// One command run on a case.
struct Run {
    /// What it is, for the table (`pack`, `images helm3`).
    label: String,
    args: Vec<String>,
    /// Whether it renders (what `Expect::RenderRefused` refuses).
    renders: bool,
}

/// A work folder of one case: the `pwn` program on its PATH, its HOME and TMPDIR, the case's
/// input under `case/`.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        for folder in ["bin", "home", "tmp", "case"] {
            std::fs::create_dir_all(root.join(folder)).expect("work folder");
        }
        let pwn = root.join("bin/pwn");
        std::fs::write(
            &pwn,
            format!(
                "#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat\n",
                root.join(MARKER).display()
            ),
        )
        .expect("pwn");
        let mut perms = std::fs::metadata(&pwn).expect("pwn").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&pwn, perms).expect("pwn executable");
        Work { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Every path under the work folder but the output folders, with its size and kind.
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut seen = BTreeMap::new();
        walk(self.dir.path(), self.dir.path(), &mut seen);
        seen
    }
}

fn walk(root: &Path, dir: &Path, seen: &mut BTreeMap<PathBuf, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let relative = path.strip_prefix(root).expect("under the root").to_owned();
        if relative.starts_with("out") || relative.starts_with("out-config") {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let kind = if meta.is_dir() {
            "dir".to_owned()
        } else {
            format!("{:?} {}", meta.file_type(), meta.len())
        };
        seen.insert(relative, kind);
        if meta.is_dir() {
            walk(root, &path, seen);
        }
    }
}

/// The input of `case` written into `work`: the path the commands take, and for a chart
/// (package or folder) the content file that lists it with an `images:` section.
fn materialise(case: &Case, work: &Work) -> (PathBuf, Option<PathBuf>) {
    let base = work.path("case");
    let chart = match &case.input {
        Input::Package { file, bytes, .. } => {
            let path = base.join(file);
            std::fs::write(&path, bytes).expect("package");
            path
        }
        Input::Folder(make) => make(&base),
        Input::Content(make) => {
            make(&base);
            return (base.join("content.yaml"), None);
        }
        Input::Layout(make) => {
            make(&base);
            return (base.join("layout"), None);
        }
    };
    let config = base.join("content-with-images.yaml");
    std::fs::write(
        &config,
        format!(
            "charts:\n  from: [{:?}]\nimages:\n  closure: warn\n",
            chart.to_str().expect("UTF-8 path")
        ),
    )
    .expect("content file");
    (chart, Some(config))
}

fn runs(
    case: &Case,
    input: &Path,
    config: Option<&Path>,
    helms: &[(&str, PathBuf)],
    work: &Work,
) -> Vec<Run> {
    let input = input.to_str().expect("UTF-8 path").to_owned();
    let out = work.path("out").to_str().expect("UTF-8").to_owned();
    let limits = RENDER_LIMITS.map(str::to_owned);
    let run = |label: &str, args: Vec<String>, renders: bool| Run {
        label: label.to_owned(),
        args,
        renders,
    };
    match &case.input {
        Input::Package { .. } | Input::Folder(_) => {
            let mut runs = vec![run(
                "pack",
                vec!["pack".into(), input.clone(), "--out".into(), out.clone()],
                false,
            )];
            for (name, helm) in helms {
                let mut args = vec![
                    "images".into(),
                    input.clone(),
                    "--helm".into(),
                    helm.display().to_string(),
                ];
                args.extend(limits.clone());
                runs.push(run(&format!("images {name}"), args, true));
            }
            if let (Some(config), Some((name, helm))) = (config, helms.last()) {
                let mut args = vec![
                    "pack".into(),
                    "--config".into(),
                    config.display().to_string(),
                    "--out".into(),
                    work.path("out-config").display().to_string(),
                    "--helm".into(),
                    helm.display().to_string(),
                ];
                args.extend(limits.clone());
                runs.push(run(&format!("pack images: {name}"), args, true));
            }
            runs
        }
        Input::Content(_) => {
            let mut args = vec!["pack".into(), "--config".into(), input, "--out".into(), out];
            if let Some((_, helm)) = helms.last() {
                args.extend(["--helm".into(), helm.display().to_string()]);
            }
            args.extend(limits);
            vec![run("pack --config", args, true)]
        }
        Input::Layout(_) => vec![run(
            "pack --layout",
            vec![
                "pack".into(),
                "--layout".into(),
                format!("{input}=hostile/app"),
                "--out".into(),
                out,
            ],
            false,
        )],
    }
}

/// Runs `run` in `work` and judges it against `expect` and the rules for every run.
fn judge(run: &Run, expect: &Expect, work: &Work) -> Got {
    let before = work.snapshot();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .args(&run.args)
        .current_dir(work.dir.path())
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", work.path("bin").display()),
        )
        .env("HOME", work.path("home"))
        .env("TMPDIR", work.path("tmp"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run chartreg-build");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut problems = Vec::new();
    let first_line = stderr
        .lines()
        .find(|l| !l.trim().is_empty() && !l.contains("warning:") && !l.contains("note:"))
        .unwrap_or_default()
        .trim()
        .to_owned();
    let outcome = if out.status.success() {
        "ok".to_owned()
    } else {
        format!(
            "refused: {}",
            first_line.chars().take(160).collect::<String>()
        )
    };
    match expect.refusal(run.renders) {
        None if !out.status.success() => problems.push(format!(
            "should succeed, failed: {}",
            common::describe(&out)
        )),
        None => {}
        Some(fragments) => {
            if out.status.code() != Some(1) {
                problems.push(format!("should exit 1: {}", common::describe(&out)));
            }
            for f in fragments {
                if !stderr.contains(f) {
                    problems.push(format!("the message does not say {f:?}: {stderr}"));
                }
            }
        }
    }
    problems.extend(corpus::terminal_problems(&out.stdout, &out.stderr));
    if work.path(MARKER).exists() {
        problems.push(format!(
            "something ran: {}",
            std::fs::read_to_string(work.path(MARKER)).unwrap_or_default()
        ));
        let _ = std::fs::remove_file(work.path(MARKER));
    }
    let after = work.snapshot();
    if after != before {
        let added: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
        let changed: Vec<_> = after
            .iter()
            .filter(|(k, v)| before.get(*k).is_some_and(|b| b != *v))
            .map(|(k, _)| k)
            .collect();
        let removed: Vec<_> = before.keys().filter(|k| !after.contains_key(*k)).collect();
        problems.push(format!(
            "wrote outside the output folder: added {added:?}, changed {changed:?}, removed {removed:?}"
        ));
    }
    if took > RUN_BOUND {
        problems.push(format!("took {took:?}, past {RUN_BOUND:?}"));
    }
    Got {
        label: run.label.clone(),
        outcome: format!("{outcome} ({:.1} s)", took.as_secs_f64()),
        problems,
    }
}

#[test]
fn every_case_is_refused_or_handled_safely() {
    let cases = corpus::all();
    assert!(cases.len() >= 60, "the corpus has {} cases", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names are unique");

    let helms: Vec<(&str, PathBuf)> = ["helm3", "helm4"]
        .into_iter()
        .filter_map(|name| common::tool(name).map(|bin| (name, bin)))
        .collect();
    let results = corpus::in_parallel(cases, 3, |case| {
        let work = Work::new();
        let (input, config) = materialise(&case, &work);
        let got: Vec<Got> = runs(&case, &input, config.as_deref(), &helms, &work)
            .iter()
            .map(|run| judge(run, &case.expect, &work))
            .collect();
        let tmp_left: Vec<_> = std::fs::read_dir(work.path("tmp"))
            .expect("tmp")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        (case, got, tmp_left)
    });

    let mut report = String::new();
    let mut failures = Vec::new();
    for (i, (case, got, tmp_left)) in results.iter().enumerate() {
        let _ = writeln!(
            report,
            "{:>3}. {} — attacks {}",
            i + 1,
            case.name,
            case.attacks
        );
        for g in got {
            let _ = writeln!(report, "       {:<18} {}", g.label, g.outcome);
            for p in &g.problems {
                failures.push(format!("{} / {}: {p}", case.name, g.label));
            }
        }
        if !tmp_left.is_empty() {
            failures.push(format!("{}: left in TMPDIR: {tmp_left:?}", case.name));
        }
    }
    let _ = writeln!(
        report,
        "{} cases, {} runs",
        results.len(),
        results.iter().map(|r| r.1.len()).sum::<usize>()
    );
    println!("{report}");
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-corpus.txt");
    std::fs::write(&file, &report).expect("report");
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
