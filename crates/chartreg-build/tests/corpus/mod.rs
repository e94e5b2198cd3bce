//! The hostile corpus of the build side: chart packages, chart folders, content files and OCI
//! image layouts as an attacker upstream writes them, each naming what it attacks and what the
//! build tool must do with it. `tests/hostile` runs every case through `pack` and `images`
//! (with Helm 3 and Helm 4); `tests/fetch/hostile.rs` runs the package cases through `fetch`
//! from a classic repository and from CNCF distribution.
//!
//! The cases are built here, in code (a gzip bomb is a few lines, not a committed file); what
//! each attacks is in its `attacks`.
#![allow(dead_code)]

pub mod archive;
mod charts;
mod files;
mod layouts;
mod render;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

pub use archive::{Tar, chart_yaml};

/// What a case gives the build tool.
pub enum Input {
    /// A chart package `file` (bytes), which a classic repository's index (for fetch) lists as
    /// chart `listed.0` version `listed.1`.
    Package {
        file: String,
        bytes: Vec<u8>,
        listed: (String, String),
    },
    /// A chart folder, made by the function in the folder it is given, which gives its path.
    Folder(Box<dyn Fn(&Path) -> PathBuf + Send + Sync>),
    /// A content file (`content.yaml`) and the files it names, made by the function in the
    /// folder it is given.
    Content(Box<dyn Fn(&Path) + Send + Sync>),
    /// An OCI image layout, made by the function in the folder it is given.
    Layout(Box<dyn Fn(&Path) + Send + Sync>),
}

/// What the build tool must do with a case. Whatever it is, nothing is written outside the
/// output folder, nothing is executed, no control character reaches the terminal, and every run
/// ends within its bounds (`tests/hostile` checks those for every case).
pub enum Expect {
    /// Every command refuses it, its message holding each of these.
    Refused(Vec<&'static str>),
    /// Every command takes it.
    Safe,
    /// Taken where nothing renders it (`pack` without an `images:` section); every render
    /// (`images`, `pack` with one) fails, its message holding each of these.
    RenderRefused(Vec<&'static str>),
}

impl Expect {
    /// Whether a run refuses the case (`renders`: the run renders its charts), and what its
    /// message must then hold.
    pub fn refusal(&self, renders: bool) -> Option<&[&'static str]> {
        match self {
            Expect::Refused(f) => Some(f),
            Expect::Safe => None,
            Expect::RenderRefused(f) => renders.then_some(f.as_slice()),
        }
    }
}

/// What renders may take in the runners' runs.
pub const RENDER_LIMITS: [&str; 4] = ["--render-timeout", "10s", "--render-memory", "512"];

/// The longest a run may take: the render bound and the tool's own work.
pub const RUN_BOUND: Duration = Duration::from_secs(90);

/// What one run got: its outcome for the table, and what is wrong with it.
pub struct Got {
    /// What the run is (`pack`, `images helm3`, `classic`).
    pub label: String,
    /// Its exit, and the first line of a refusal's message.
    pub outcome: String,
    /// Why it is not what the case expects, or broke a rule that holds for every run.
    pub problems: Vec<String>,
}

/// What the tool's output did to the terminal: a control character (ESC, BEL) that reached it,
/// or a line a name forged to pass for one of the tool's own.
pub fn terminal_problems(stdout: &[u8], stderr: &[u8]) -> Vec<String> {
    let mut problems = Vec::new();
    for (stream, bytes) in [("stdout", stdout), ("stderr", stderr)] {
        let text = String::from_utf8_lossy(bytes);
        if bytes.iter().any(|b| *b == 0x1b || *b == 0x07) {
            problems.push(format!("a control character reached {stream}: {text:?}"));
        }
        // The forged line of `name-forged-line` (and any like it) never starts a line.
        if text.lines().any(|l| l.starts_with("chartreg-build: wrote")) {
            problems.push(format!(
                "a line on {stream} passes for the tool's own: {text:?}"
            ));
        }
    }
    problems
}

/// `work` done on each of `items` by `threads` threads at once; the results in the items'
/// order.
pub fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    threads: usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let queue = Mutex::new(items.into_iter().enumerate().collect::<Vec<_>>());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some((i, item)) = queue.lock().expect("queue").pop() else {
                        break;
                    };
                    let got = work(item);
                    results.lock().expect("results").push((i, got));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// One case.
pub struct Case {
    /// Unique, a file name's worth.
    pub name: String,
    /// What it attacks, and how.
    pub attacks: String,
    pub input: Input,
    pub expect: Expect,
}

impl Case {
    pub fn package(name: &str, attacks: &str, bytes: Vec<u8>, expect: Expect) -> Case {
        Case::listed(name, attacks, bytes, ("evil", "1.0.0"), expect)
    }

    /// A package an index lists as `listed`.
    pub fn listed(
        name: &str,
        attacks: &str,
        bytes: Vec<u8>,
        listed: (&str, &str),
        expect: Expect,
    ) -> Case {
        Case {
            name: name.to_owned(),
            attacks: attacks.to_owned(),
            input: Input::Package {
                file: format!("{name}.tgz"),
                bytes,
                listed: (listed.0.to_owned(), listed.1.to_owned()),
            },
            expect,
        }
    }

    pub fn folder(
        name: &str,
        attacks: &str,
        make: impl Fn(&Path) -> PathBuf + Send + Sync + 'static,
        expect: Expect,
    ) -> Case {
        Case {
            name: name.to_owned(),
            attacks: attacks.to_owned(),
            input: Input::Folder(Box::new(make)),
            expect,
        }
    }

    pub fn content(
        name: &str,
        attacks: &str,
        make: impl Fn(&Path) + Send + Sync + 'static,
        expect: Expect,
    ) -> Case {
        Case {
            name: name.to_owned(),
            attacks: attacks.to_owned(),
            input: Input::Content(Box::new(make)),
            expect,
        }
    }

    pub fn layout(
        name: &str,
        attacks: &str,
        make: impl Fn(&Path) + Send + Sync + 'static,
        expect: Expect,
    ) -> Case {
        Case {
            name: name.to_owned(),
            attacks: attacks.to_owned(),
            input: Input::Layout(Box::new(make)),
            expect,
        }
    }
}

/// The file the `pwn` program on the tests' PATH writes when anything runs it, relative to the
/// work folder; and the file a post-rendered template's `touch` would write.
pub const MARKER: &str = "pwned";

/// Every case.
pub fn all() -> Vec<Case> {
    let mut cases = charts::cases();
    cases.extend(render::cases());
    cases.extend(files::cases());
    cases.extend(layouts::cases());
    cases
}

/// The chart package cases (what `fetch` can be served).
pub fn packages() -> Vec<Case> {
    all()
        .into_iter()
        .filter(|c| matches!(c.input, Input::Package { .. }))
        .collect()
}

pub fn refused(fragments: &[&'static str]) -> Expect {
    Expect::Refused(fragments.to_vec())
}
