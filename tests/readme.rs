//! The README's doc check: every command it shows in a `sh` block (a user's path outside the
//! cluster) is run here, against the release binary serving on a port of its own
//! (`localhost:5000` in the text), with Helm 3 and with Helm 4 as `helm`; every `make` target
//! the README names exists; every `chartreg` and `chartreg-build` command it names is one the
//! binaries know.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::Process;

/// The fenced blocks of `markdown` in `language`, each as its commands (a line ending in `\`
/// continues on the next).
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

fn readme() -> String {
    std::fs::read_to_string(common::root().join("README.md")).unwrap()
}

#[test]
fn every_sh_command_runs() {
    let commands: Vec<String> = blocks(&readme(), "sh").into_iter().flatten().collect();
    assert!(
        commands.len() >= 3,
        "the README shows commands: {commands:?}"
    );
    for tool in ["curl", "skopeo"] {
        if common::tool(tool).is_none() {
            return;
        }
    }
    let server = Process::start();
    for helm in ["helm3", "helm4"] {
        let Some(bin) = common::tool(helm) else {
            continue;
        };
        let home = tempfile::tempdir().unwrap();
        let path = format!(
            "{}:{}",
            bin.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        for command in &commands {
            let command = command.replace("localhost:5000", &server.host());
            let mut cmd = Command::new("sh");
            cmd.args(["-c", &command]).env("PATH", &path);
            common::isolate_helm(&mut cmd, home.path());
            let out = common::output_of(&mut cmd, &command);
            assert!(
                out.status.success(),
                "{helm}: `{command}` failed: {}",
                common::describe(&out)
            );
        }
    }
}

#[test]
fn make_targets_and_commands_the_readme_names_exist() {
    let text = readme();
    let makefile = std::fs::read_to_string(common::root().join("Makefile")).unwrap();
    let targets: BTreeSet<&str> = makefile
        .lines()
        .filter_map(|l| l.split_once(':').map(|(t, _)| t))
        .filter(|t| !t.is_empty() && !t.contains([' ', '\t', '$', '.', '=']))
        .collect();
    let mut named = BTreeSet::new();
    for word in text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.starts_with("make "))
    {
        if let Some(target) = word.split_whitespace().nth(1) {
            named.insert(target.trim_end_matches([',', '.', ':', ')']).to_owned());
        }
    }
    for target in &named {
        if target.contains('=') {
            continue;
        }
        assert!(
            targets.contains(target.as_str()),
            "the README names `make {target}`, which the Makefile does not have"
        );
    }
    for (bin, tool) in [
        (common::chartreg_bin(), "chartreg"),
        (common::chartreg_build_bin(), "chartreg-build"),
    ] {
        let help =
            String::from_utf8(Command::new(&bin).arg("--help").output().unwrap().stdout).unwrap();
        for word in text.split('`').skip(1).step_by(2) {
            let Some(rest) = word.strip_prefix(&format!("{tool} ")) else {
                continue;
            };
            let Some(sub) = rest.split_whitespace().next() else {
                continue;
            };
            if sub.starts_with('-') || sub.starts_with('[') || sub.chars().any(|c| c.is_uppercase())
            {
                continue;
            }
            assert!(
                help.contains(&format!("  {sub}")),
                "the README names `{tool} {sub}`, which `{tool} --help` does not list"
            );
        }
    }
}

/// Every flag the README's fetch table names is one `chartreg-build fetch --help` lists.
#[test]
fn the_fetch_flags_the_readme_names_exist() {
    let text = readme();
    let section = text
        .split("### Fetching from upstream")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .expect("the README has a fetch section");
    let out = Command::new(common::chartreg_build_bin())
        .args(["fetch", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let mut named = 0;
    for row in section.lines().filter(|l| l.starts_with("| `--")) {
        let flag = row
            .trim_start_matches("| `")
            .split([' ', '`'])
            .next()
            .unwrap();
        named += 1;
        assert!(
            help.contains(flag),
            "the README names `fetch {flag}`, which `chartreg-build fetch --help` does not list:\n{help}"
        );
    }
    assert!(named >= 10, "the fetch table lost its rows ({named})");
}
