//! The command line that starts a run's program: the file it names ([`resolve`]), and the gate
//! that holds it until it is in its cgroup ([`gate`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The shell that holds the program until it is in its cgroup, and what it runs: it reads
/// `go` from its stdin (a pipe from this process), then `exec`s its arguments with stdin
/// `/dev/null`; anything else (the pipe closed) and it exits without running them. Its
/// arguments start with [`GATE_ENV`], which drops what the shell adds to the environment.
const GATE_SHELL: &str = "/bin/sh";
const GATE: &str = r#"read -r go && [ "$go" = go ] && exec "$@" </dev/null; exit 125"#;

/// What the gate's shell adds to the environment (dash `PWD`; bash `SHLVL` and `_` too),
/// dropped by `env -u` unless the run names it.
const GATE_ENV: &str = "/usr/bin/env";
const SHELL_ADDS: [&str; 4] = ["PWD", "OLDPWD", "SHLVL", "_"];

/// Puts the gate before `argv`, whose environment is `env`, where this machine has its shell
/// and `env`; whether it did (the program's stdin is then the gate's pipe). `env` would take a
/// program path holding `=` for a variable: such a program is not gated, and is moved into
/// its cgroup just after it starts instead.
pub fn gate(argv: &mut Vec<OsString>, env: &[(OsString, OsString)]) -> bool {
    let can = Path::new(GATE_SHELL).is_file()
        && Path::new(GATE_ENV).is_file()
        && !argv
            .first()
            .is_some_and(|p| p.as_encoded_bytes().contains(&b'='));
    if can {
        let mut gate: Vec<OsString> = [GATE_SHELL, "-c", GATE, "chartreg-gate", GATE_ENV]
            .into_iter()
            .map(OsString::from)
            .collect();
        for name in SHELL_ADDS {
            if !env.iter().any(|(k, _)| k == name) {
                gate.extend(["-u".into(), name.into()]);
            }
        }
        gate.push("--".into());
        gate.append(argv);
        *argv = gate;
    }
    can
}

/// The file `program` names: itself if it holds a `/`, else the first on the run's `PATH` (or
/// this process's, if the run has none), as `execvp` would find it.
pub fn resolve(
    program: &Path,
    env: &[(OsString, OsString)],
    dir: Option<&Path>,
) -> std::io::Result<PathBuf> {
    if program.as_os_str().as_encoded_bytes().contains(&b'/') {
        let at = match dir {
            Some(dir) if program.is_relative() => dir.join(program),
            _ => program.to_owned(),
        };
        return if at.is_file() {
            Ok(program.to_owned())
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file",
            ))
        };
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "not found on the PATH"))
}
