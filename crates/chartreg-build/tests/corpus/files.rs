//! Chart folders (links out, special files, sizes, flag-shaped paths and names) and content
//! files (YAML bombs, deep nesting, flag-shaped paths), as a content repository that took them
//! from upstream holds them.

use std::path::Path;
use std::process::Command;

use super::archive::{DEPLOYMENT, Tar, chart_yaml};
use super::charts::{alias_bomb, deep};
use super::{Case, Expect, refused};

/// A valid chart folder `evil` in `dir/evil`; its path.
pub fn chart_folder(dir: &Path, name: &str) -> std::path::PathBuf {
    let chart = dir.join("evil");
    std::fs::create_dir_all(chart.join("templates")).expect("chart folder");
    std::fs::write(chart.join("Chart.yaml"), chart_yaml(name, "1.0.0")).expect("Chart.yaml");
    std::fs::write(chart.join("values.yaml"), "image: busybox:1.36\n").expect("values");
    std::fs::write(chart.join("templates/deployment.yaml"), DEPLOYMENT).expect("template");
    chart
}

fn run(cmd: &mut Command) {
    let status = cmd.status().expect("run");
    assert!(status.success(), "{cmd:?}: {status}");
}

/// A file of `len` bytes that takes no disk (a hole).
fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path)
        .and_then(|f| f.set_len(len))
        .expect("sparse file");
}

/// The content file of the folder case: the chart folder `evil`, and an `images:` section.
fn content_with(dir: &Path, extra: &str) {
    std::fs::write(
        dir.join("content.yaml"),
        format!("charts:\n  from: [evil]\n{extra}"),
    )
    .expect("content.yaml");
}

pub fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case::folder(
            "folder-post-renderer-sh",
            "the build machine's shell: a chart folder named `--post-renderer=sh` whose template is a shell command",
            |dir| {
                let chart = chart_folder(dir, "--post-renderer=sh");
                std::fs::write(chart.join("templates/evil.yaml"), "touch pwned: y\n")
                    .expect("template");
                chart
            },
            refused(&["invalid chart name"]),
        ),
        Case::folder(
            "folder-output-dir-name",
            "Helm's command line: the chart folder's own path is `--output-dir=written-by-helm` (given to Helm, it is absolute)",
            |dir| {
                let chart = chart_folder(dir, "evil");
                let flagged = dir.join("--output-dir=written-by-helm");
                std::fs::rename(&chart, &flagged).expect("rename");
                flagged
            },
            Expect::Safe,
        ),
        Case::folder(
            "folder-symlink-shadow",
            "the build machine's files: templates/shadow.yaml links to /etc/shadow",
            |dir| {
                let chart = chart_folder(dir, "evil");
                std::os::unix::fs::symlink("/etc/shadow", chart.join("templates/shadow.yaml"))
                    .expect("link");
                chart
            },
            refused(&["symbolic link that leaves"]),
        ),
        Case::folder(
            "folder-symlink-dev-zero",
            "memory and time: a file linked to /dev/zero",
            |dir| {
                let chart = chart_folder(dir, "evil");
                std::os::unix::fs::symlink("/dev/zero", chart.join("templates/zero.yaml"))
                    .expect("link");
                chart
            },
            refused(&["symbolic link that leaves"]),
        ),
        Case::folder(
            "folder-fifo",
            "time: a FIFO among the templates (reading it would wait for ever)",
            |dir| {
                let chart = chart_folder(dir, "evil");
                run(Command::new("mkfifo").arg(chart.join("templates/fifo.yaml")));
                chart
            },
            refused(&["not a regular file"]),
        ),
        Case::folder(
            "folder-device",
            "memory and time: a character device (/dev/zero's numbers) among the templates",
            |dir| {
                let chart = chart_folder(dir, "evil");
                run(Command::new("mknod")
                    .arg(chart.join("templates/zero.yaml"))
                    .args(["c", "1", "5"]));
                chart
            },
            refused(&["not a regular file"]),
        ),
        Case::folder(
            "folder-symlink-loop",
            "the walk: a folder linking to itself",
            |dir| {
                let chart = chart_folder(dir, "evil");
                std::os::unix::fs::symlink(".", chart.join("templates/loop")).expect("link");
                chart
            },
            refused(&["loops"]),
        ),
        Case::folder(
            "folder-big-file",
            "memory: a 101 MiB file (a hole: no disk) in the folder",
            |dir| {
                let chart = chart_folder(dir, "evil");
                sparse(&chart.join("files-big"), 101 << 20);
                chart
            },
            refused(&["100 MiB"]),
        ),
        Case::folder(
            "folder-big-total",
            "memory: four 40 MiB files (holes), 160 MiB in all",
            |dir| {
                let chart = chart_folder(dir, "evil");
                for i in 0..4 {
                    sparse(&chart.join(format!("big-{i}")), 40 << 20);
                }
                chart
            },
            refused(&["MiB"]),
        ),
        Case::folder(
            "folder-subchart-traversal-name",
            "the package's paths: a subchart named `../../x`",
            |dir| {
                let chart = chart_folder(dir, "evil");
                let sub = chart.join("charts/sub");
                std::fs::create_dir_all(&sub).expect("subchart");
                std::fs::write(sub.join("Chart.yaml"), chart_yaml("../../x", "1.0.0"))
                    .expect("Chart.yaml");
                chart
            },
            refused(&["invalid chart name"]),
        ),
        Case::folder(
            "folder-subchart-package-parent-entry",
            "the file system through a folder's subchart package: an entry with `..` parts",
            |dir| {
                let chart = chart_folder(dir, "evil");
                std::fs::create_dir_all(chart.join("charts")).expect("charts");
                let sub = Tar::chart("sub", &chart_yaml("sub", "1.0.0"))
                    .file("sub/../../../tmp/pwned", "x")
                    .tgz();
                std::fs::write(chart.join("charts/sub-1.0.0.tgz"), sub).expect("subchart");
                chart
            },
            refused(&["sub-1.0.0.tgz"]),
        ),
        Case::folder(
            "folder-values-alias-bomb",
            "memory: a billion-laughs alias bomb in a folder's values.yaml",
            |dir| {
                let chart = chart_folder(dir, "evil");
                std::fs::write(chart.join("values.yaml"), alias_bomb()).expect("values");
                chart
            },
            Expect::RenderRefused(vec!["values.yaml"]),
        ),
    ];
    cases.extend([
        Case::content(
            "content-alias-bomb",
            "memory: a billion-laughs alias bomb in content.yaml",
            |dir| {
                chart_folder(dir, "evil");
                std::fs::write(
                    dir.join("content.yaml"),
                    format!("{}charts:\n  from: *a9\n", alias_bomb()),
                )
                .expect("content.yaml");
            },
            refused(&["content.yaml", "aliases are expanded"]),
        ),
        Case::content(
            "content-deep",
            "the stack: content.yaml nested 100,000 deep",
            |dir| {
                chart_folder(dir, "evil");
                std::fs::write(
                    dir.join("content.yaml"),
                    format!("charts:\n  from: {}", deep(100_000)),
                )
                .expect("content.yaml");
            },
            refused(&["content.yaml", "more than 256 deep"]),
        ),
        Case::content(
            "content-flag-path",
            "command lines: a chart path `--output-dir=written-by-helm` in content.yaml",
            |dir| {
                std::fs::write(
                    dir.join("content.yaml"),
                    "charts:\n  from: [\"--output-dir=written-by-helm\"]\n",
                )
                .expect("content.yaml");
            },
            refused(&["--output-dir=written-by-helm"]),
        ),
        Case::content(
            "content-flag-values-file",
            "Helm's command line: a values file named `--set-file=a=etc-shadow` (passed as --values=ABSOLUTE)",
            |dir| {
                chart_folder(dir, "evil");
                std::fs::write(dir.join("--set-file=a=etc-shadow"), "image: busybox:1.36\n").expect("values");
                content_with(dir, "images:\n  values:\n    evil: [\"--set-file=a=etc-shadow\"]\n");
            },
            Expect::Safe,
        ),
        Case::content(
            "content-keyring-dev-zero",
            "memory: a verify: keyring that is /dev/zero",
            |dir| {
                chart_folder(dir, "evil");
                content_with(dir, "verify:\n  charts:\n    keyring: /dev/zero\n    require: [\"*\"]\n");
            },
            refused(&["/dev/zero"]),
        ),
    ]);
    cases
}
