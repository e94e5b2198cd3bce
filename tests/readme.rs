//! The documentation's check: the README and every guide in `docs/`.
//!
//! - Every command they show in a `sh` block (a user's path outside the cluster) is run here,
//!   against the release binary serving on a port of its own (`localhost:5000` in the text),
//!   with Helm 3 and with Helm 4 as `helm`, and `chartreg` and `chartreg-build` on the PATH.
//! - Every `make` target they name exists; every `chartreg` and `chartreg-build` command they
//!   name is one the binaries list, and every flag a guide's table gives a command is one its
//!   `--help` lists.
//! - Every relative link leads to a file, and its `#anchor` to a heading of that file.
//! - `docs/commands.md` is what the binaries' own `--help` says now (`make docs` rewrites it).
//! - The README is a first page: under 150 lines, with the install and `make run` / `make test`
//!   on its first screen.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Process;

/// A page of the documentation: its path from the repository root, and its text.
struct Page {
    path: PathBuf,
    text: String,
}

/// The README and every guide in `docs/`, in a stable order.
fn pages() -> Vec<Page> {
    let root = common::root();
    let mut paths = vec![root.join("README.md")];
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    guides.sort();
    paths.extend(guides);
    paths
        .into_iter()
        .map(|path| Page {
            text: std::fs::read_to_string(&path).unwrap(),
            path: path.strip_prefix(&root).unwrap().to_owned(),
        })
        .collect()
}

/// The fenced blocks of `markdown` in `language`, each as its commands (a line ending in `\`
/// continues on the next; a ` #` starts a comment).
fn blocks(markdown: &str, language: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    let mut pending = String::new();
    for line in markdown.lines() {
        let fence = line.trim_start();
        match &mut current {
            None if fence == format!("```{language}") => current = Some(Vec::new()),
            Some(commands) if fence == "```" => {
                blocks.push(std::mem::take(commands));
                current = None;
            }
            Some(commands) => {
                let line = line.trim();
                if let Some(start) = line.strip_suffix('\\') {
                    pending.push_str(start);
                    continue;
                }
                pending.push_str(line);
                let command = std::mem::take(&mut pending);
                let command = command
                    .split(" #")
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                if !command.is_empty() && !command.starts_with('#') {
                    commands.push(command);
                }
            }
            None => {}
        }
    }
    blocks
}

/// The words of `text` in backticks (inline code).
fn code_words(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

#[test]
fn every_sh_command_runs() {
    let mut commands = Vec::new();
    for page in pages() {
        for command in blocks(&page.text, "sh").into_iter().flatten() {
            commands.push((page.path.clone(), command));
        }
    }
    assert!(
        commands.len() >= 8,
        "the documentation shows commands: {commands:?}"
    );
    for tool in ["curl", "skopeo"] {
        if common::tool(tool).is_none() {
            return;
        }
    }
    let server = Process::start();
    let binaries = common::chartreg_bin().parent().unwrap().to_owned();
    for helm in ["helm3", "helm4"] {
        let Some(bin) = common::tool(helm) else {
            continue;
        };
        // The commands run in a scratch folder (what they write stays there) holding a link to
        // the repository's tests/, so that paths given from the repository's root resolve.
        let home = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(common::root().join("tests"), home.path().join("tests"))
            .unwrap();
        let path = format!(
            "{}:{}:{}",
            bin.parent().unwrap().display(),
            binaries.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        for (page, command) in &commands {
            let command = command.replace("localhost:5000", &server.host());
            let mut cmd = Command::new("sh");
            cmd.args(["-c", &command]).env("PATH", &path);
            common::isolate_helm(&mut cmd, home.path());
            let out = common::output_of(&mut cmd, &command);
            assert!(
                out.status.success(),
                "{helm}: {}: `{command}` failed: {}",
                page.display(),
                common::describe(&out)
            );
        }
    }
}

#[test]
fn make_targets_and_commands_the_docs_name_exist() {
    let makefile = std::fs::read_to_string(common::root().join("Makefile")).unwrap();
    let targets: BTreeSet<&str> = makefile
        .lines()
        .filter_map(|l| l.split_once(':').map(|(t, _)| t))
        .filter(|t| !t.is_empty() && !t.contains([' ', '\t', '$', '.', '=']))
        .collect();
    let helps: Vec<(&str, String)> = [
        (common::chartreg_bin(), "chartreg"),
        (common::chartreg_build_bin(), "chartreg-build"),
    ]
    .into_iter()
    .map(|(bin, tool)| (tool, help(&bin, &[])))
    .collect();
    for page in pages() {
        let shown = page.path.display();
        for word in code_words(&page.text).filter(|w| w.starts_with("make ")) {
            let Some(target) = word.split_whitespace().nth(1) else {
                continue;
            };
            let target = target.trim_end_matches([',', '.', ':', ')']);
            assert!(
                target.contains('=') || targets.contains(target),
                "{shown} names `make {target}`, which the Makefile does not have"
            );
        }
        for (tool, help) in &helps {
            for word in code_words(&page.text) {
                let Some(rest) = word.strip_prefix(&format!("{tool} ")) else {
                    continue;
                };
                let Some(sub) = rest.split_whitespace().next() else {
                    continue;
                };
                if sub.starts_with(['-', '[', '(']) || sub.chars().any(|c| c.is_uppercase()) {
                    continue;
                }
                assert!(
                    help.contains(&format!("  {sub} ")),
                    "{shown} names `{tool} {sub}`, which `{tool} --help` does not list"
                );
            }
        }
    }
}

/// Every flag a guide's table gives a command (the first column's `--flag`) is one that
/// command's `--help` lists (`page` is in docs/).
#[rstest::rstest]
#[case::fetch("content.md", "## Fetching from upstream", "chartreg-build fetch", 12)]
#[case::pack("content.md", "## The `pack` command", "chartreg-build pack", 6)]
#[case::images(
    "images.md",
    "## The images the charts need",
    "chartreg-build images",
    8
)]
#[case::serve("operations.md", "## Serving", "chartreg serve", 10)]
fn the_flags_a_guide_names_exist(
    #[case] page: &str,
    #[case] section: &str,
    #[case] command_line: &str,
    #[case] at_least: usize,
) {
    let (tool, command) = command_line.split_once(' ').unwrap();
    let page = format!("docs/{page}");
    let text = std::fs::read_to_string(common::root().join(&page)).unwrap();
    let section = text
        .split(section)
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("{page} has a section {section}"));
    let bin = match tool {
        "chartreg" => common::chartreg_bin(),
        _ => common::chartreg_build_bin(),
    };
    let help = help(&bin, &[command]);
    let mut named = 0;
    for row in section.lines().filter(|l| l.starts_with("| `--")) {
        for flag in code_words(row.split(" | ").next().unwrap_or_default()) {
            let flag = flag.split([' ', '=']).next().unwrap();
            if !flag.starts_with("--") {
                continue;
            }
            named += 1;
            assert!(
                help.contains(flag),
                "{page} names `{tool} {command} {flag}`, which its --help does not list:\n{help}"
            );
        }
    }
    assert!(
        named >= at_least,
        "{page}'s table of `{tool} {command}` lost its rows ({named})"
    );
}

/// A heading's anchor as GitHub makes it: lower case, spaces as `-`, no punctuation but `-`
/// and `_`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of `markdown`'s headings (outside fenced blocks).
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut found = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of `markdown`'s links, `[text](TARGET)`, outside fenced blocks.
fn links(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for part in line.split("](").skip(1) {
            if let Some((target, _)) = part.split_once(')') {
                found.push(target.to_owned());
            }
        }
    }
    found
}

#[test]
fn every_link_leads_somewhere() {
    let root = common::root();
    let mut checked = 0;
    for page in pages() {
        let dir = root.join(page.path.parent().unwrap_or(Path::new("")));
        for target in links(&page.text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let file = if file.is_empty() {
                root.join(&page.path)
            } else {
                dir.join(file)
            };
            assert!(
                file.exists(),
                "{}: the link ({target}) leads to no file",
                page.path.display()
            );
            if let Some(fragment) = fragment {
                let text = std::fs::read_to_string(&file).unwrap();
                assert!(
                    anchors(&text).contains(fragment),
                    "{}: the link ({target}) names no heading of {}",
                    page.path.display(),
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 30,
        "the documentation's links were not found ({checked})"
    );
}

#[test]
fn the_readme_is_a_first_page() {
    let text = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines < 150,
        "the README has {lines} lines: guides go in docs/"
    );
    let first_screen: String = text.lines().take(60).collect::<Vec<_>>().join("\n");
    for shown in ["## Install", "tar xJf", "make run", "make test"] {
        assert!(
            first_screen.contains(shown),
            "the README's first 60 lines do not show {shown}"
        );
    }
}

/// `BIN ARGS... --help`, as a terminal 100 columns wide shows it with no variable of ours set
/// (clap shows an environment variable's value beside its flag).
fn help(bin: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .arg("--help")
        .env_clear()
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?} --help failed",
        bin.display()
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a `--help` lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim() != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The command reference: each binary's `--help`, then each subcommand's.
fn command_reference() -> String {
    let mut out = String::from(
        "# Command reference\n\n\
         Every command and flag of the two binaries, as their own `--help` gives it. This page is\n\
         generated from the binaries by `make docs`, and `tests/readme.rs` fails when it is not\n\
         what they say now. The guides explain each command at work: see the\n\
         [README](../README.md#guides).\n",
    );
    for (bin, tool) in [
        (common::chartreg_bin(), "chartreg"),
        (common::chartreg_build_bin(), "chartreg-build"),
    ] {
        let top = help(&bin, &[]);
        out.push_str(&format!("\n## `{tool}`\n\n```text\n{}```\n", top));
        for sub in subcommands(&top) {
            let text = help(&bin, &[&sub]);
            out.push_str(&format!("\n### `{tool} {sub}`\n\n```text\n{text}```\n"));
        }
    }
    out
}

#[test]
fn the_command_reference_is_current() {
    let path = common::root().join("docs/commands.md");
    let now = command_reference();
    if std::env::var_os("CHARTREG_WRITE_DOCS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == now,
        "docs/commands.md is not what the binaries' --help says now: run `make docs` and commit it"
    );
}
