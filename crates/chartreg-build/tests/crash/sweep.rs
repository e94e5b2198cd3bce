//! One run of the tool ([`Scenario`]) killed at its crash points, one fresh folder per point:
//!
//! 1. The reference: the run, uninterrupted, from the folder before it (`before`): what it
//!    replaces must change, and nothing staged may be left (`Snapshot::staged`).
//! 2. The points: the same run under strace, counted ([`strace::count`]); it must give the
//!    reference too. All of them run with `CHARTREG_CRASH_POINTS=all` (`make crash-points`);
//!    otherwise a sample ([`select`]): every point of a system call with few of them, a fixed
//!    stride of the others.
//! 3. For each point: the folder before, written afresh; the run, killed there
//!    ([`strace::kill_at`]); then, at once, [`checks`] (the lock and what it pins, the
//!    layouts) and what the run replaces is byte for byte the old one or the new one; then the
//!    run again, which must succeed and leave the whole folder as the reference, with nothing
//!    left over.
//!
//! Each point's outcome is counted in [`Figures`], printed as one line (and appended to the
//! file `CHARTREG_CRASH_REPORT` names, if any): a state torn (a check failed, or what was
//! replaced is neither old nor new), hidden debris inside it, a re-run that fails (stuck),
//! leftovers beside the reference after the re-run, or another result than the reference.

use std::path::Path;

use super::checks;
use super::strace::{self, Point};
use super::tool::{Invocation, run};
use super::tree::{Difference, Snapshot, describe};

/// A run to kill at every crash point.
pub struct Scenario {
    /// `fetch A→B`, for messages.
    pub name: String,
    /// The work folder before the run.
    pub before: Snapshot,
    pub invocation: Invocation,
    /// What the run replaces (paths in the work folder): after a kill, each is old or new.
    pub replaces: Vec<&'static str>,
    /// The lock to check after a kill (a path in the work folder).
    pub lock: Option<&'static str>,
    /// Folders whose OCI layouts are checked after a kill.
    pub layouts: Vec<&'static str>,
}

/// What the points came to (see the module doc).
#[derive(Debug, Default)]
pub struct Figures {
    pub points: usize,
    pub ran: usize,
    /// Points the run ended before reaching (see `strace`'s module doc).
    pub not_reached: usize,
    pub torn: usize,
    pub debris: usize,
    pub stuck: usize,
    pub leftovers: usize,
    pub wrong: usize,
    /// What went wrong, by point (the first few).
    pub found: Vec<String>,
}

impl Figures {
    pub fn clean(&self) -> bool {
        self.torn + self.debris + self.stuck + self.leftovers + self.wrong == 0
    }

    fn note(&mut self, point: &Point, what: String) {
        if self.found.len() < 12 {
            self.found.push(format!("at {point}: {what}"));
        }
    }
}

/// Whether every point runs (`CHARTREG_CRASH_POINTS=all`) or a sample.
pub fn every_point() -> bool {
    match std::env::var("CHARTREG_CRASH_POINTS").as_deref() {
        Ok("all") => true,
        Ok("" | "sample") | Err(_) => false,
        Ok(other) => panic!("CHARTREG_CRASH_POINTS={other}: `all` or `sample`"),
    }
}

/// A system call with at most this many points has them all run in a sample.
const FEW: usize = 6;
/// A system call with more has about this many run, at a fixed stride (its last one
/// included: the last removals and syncs come right before or after the commit).
const PER_SYSCALL: usize = 6;

/// The points to run (see the module doc, step 2), in the order the run reaches them.
pub fn select(points: &[Point], all: bool) -> Vec<&Point> {
    if all {
        return points.iter().collect();
    }
    let counts = strace::by_syscall(points);
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    points
        .iter()
        .filter(|p| {
            let count = counts[p.syscall];
            let index = seen.entry(p.syscall).or_default();
            *index += 1;
            let stride = count.div_ceil(PER_SYSCALL);
            count <= FEW || (*index - 1).is_multiple_of(stride) || *index == count
        })
        .collect()
}

/// Runs `scenario` at its points (see the module doc); its figures, and the reference (the
/// folder after an uninterrupted run).
pub fn sweep(strace_bin: &Path, scenario: &Scenario) -> (Figures, Snapshot) {
    let name = &scenario.name;
    // 1. The reference.
    let reference = {
        let root = tempfile::tempdir().expect("temp dir");
        let (work, scratch) = folders(root.path());
        scenario.before.restore(&work);
        let ran = run(scenario.invocation.command(&work), &scratch);
        assert!(
            ran.ok(),
            "{name}: {} failed: {}",
            scenario.invocation.describe(),
            ran.describe()
        );
        Snapshot::of(&work)
    };
    let old = scenario.before.part(&scenario.replaces);
    let new = reference.part(&scenario.replaces);
    assert!(old != new, "{name}: the run changes nothing it replaces");
    assert!(
        reference.staged().is_empty(),
        "{name}: an uninterrupted run leaves {:?}",
        reference.staged()
    );
    // 2. The points.
    let points = {
        let root = tempfile::tempdir().expect("temp dir");
        let (work, scratch) = folders(root.path());
        scenario.before.restore(&work);
        let (ran, points) = strace::count(strace_bin, &scenario.invocation, &work, &scratch);
        assert!(ran.ok(), "{name}: under strace: {}", ran.describe());
        let traced = Snapshot::of(&work);
        assert!(
            traced == reference,
            "{name}: a second run gives another result: {}",
            describe(&traced.differences(&reference))
        );
        points
    };
    let all = every_point();
    let chosen = select(&points.all, all);
    let mut figures = Figures {
        points: points.all.len(),
        ran: chosen.len(),
        ..Figures::default()
    };
    // 3. Each point.
    for point in chosen {
        let root = tempfile::tempdir().expect("temp dir");
        let (work, scratch) = folders(root.path());
        scenario.before.restore(&work);
        let ran = strace::kill_at(strace_bin, &scenario.invocation, point, &work, &scratch);
        if !ran.killed() {
            if ran.ok() {
                figures.not_reached += 1;
            } else {
                figures.wrong += 1;
                figures.note(
                    point,
                    format!("neither killed nor done: {}", ran.describe()),
                );
            }
            continue;
        }
        if let Some(why) = torn(scenario, &work, &old, &new) {
            match why {
                Torn::State(why) => {
                    figures.torn += 1;
                    figures.note(point, format!("torn: {why}"));
                }
                Torn::Debris(why) => {
                    figures.debris += 1;
                    figures.note(point, format!("debris: {why}"));
                }
            }
        }
        let again = run(scenario.invocation.command(&work), &scratch);
        if !again.ok() {
            figures.stuck += 1;
            figures.note(point, format!("the re-run failed: {}", again.stderr.trim()));
            continue;
        }
        let differences = Snapshot::of(&work).differences(&reference);
        if differences.is_empty() {
            continue;
        }
        if differences.iter().all(Difference::is_leftover) {
            figures.leftovers += 1;
            figures.note(
                point,
                format!("left after the re-run: {}", describe(&differences)),
            );
        } else {
            figures.wrong += 1;
            figures.note(
                point,
                format!("the re-run gave another result: {}", describe(&differences)),
            );
        }
    }
    let line = format!(
        "{name}: {} points ({}), {} run{}, {} not reached; {} torn, {} with debris, {} stuck re-runs, {} with leftovers, {} other results; {} file-changing calls on {} thread(s), {} reached by no point",
        figures.points,
        strace::by_syscall(&points.all)
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        figures.ran,
        if all {
            ""
        } else {
            " (a sample: CHARTREG_CRASH_POINTS=all runs them all)"
        },
        figures.not_reached,
        figures.torn,
        figures.debris,
        figures.stuck,
        figures.leftovers,
        figures.wrong,
        points.calls,
        points.threads,
        points.shadowed,
    );
    eprintln!("{line}");
    if let Some(report) = std::env::var_os("CHARTREG_CRASH_REPORT") {
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(report)
            .expect("open CHARTREG_CRASH_REPORT");
        writeln!(file, "{line}").expect("write CHARTREG_CRASH_REPORT");
    }
    (figures, reference)
}

/// The work folder and a scratch folder beside it (outputs, strace's log).
fn folders(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let work = root.join("work");
    let scratch = root.join("scratch");
    std::fs::create_dir_all(&work).expect("create folder");
    std::fs::create_dir_all(&scratch).expect("create folder");
    (work, scratch)
}

/// Why a folder right after a kill is not as it must be.
enum Torn {
    /// A check failed, or what was replaced is neither old nor new.
    State(String),
    /// What was replaced is old or new but for hidden entries inside it.
    Debris(String),
}

/// The checks right after a kill (see the module doc, step 3).
fn torn(scenario: &Scenario, work: &Path, old: &Snapshot, new: &Snapshot) -> Option<Torn> {
    if let Some(lock) = scenario.lock
        && let Err(why) = checks::lock_holds(work, lock)
    {
        return Some(Torn::State(why));
    }
    for layouts in &scenario.layouts {
        if let Err(why) = checks::layouts_hold(&work.join(layouts)) {
            return Some(Torn::State(why));
        }
    }
    let now = Snapshot::of(work).part(&scenario.replaces);
    if now == *old || now == *new {
        return None;
    }
    let (to_old, to_new) = (now.differences(old), now.differences(new));
    for differences in [&to_old, &to_new] {
        if differences.iter().all(Difference::is_leftover) {
            return Some(Torn::Debris(describe(differences)));
        }
    }
    Some(Torn::State(format!(
        "neither old ({}) nor new ({})",
        describe(&to_old),
        describe(&to_new)
    )))
}
