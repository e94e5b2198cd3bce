//! One run of the tool ([`Scenario`]) with a fault at each of its crash points, one fresh
//! folder per point:
//!
//! 1. The reference: the run, uninterrupted, from the folder before it (`before`): what it
//!    replaces must change, and nothing staged may be left (`Snapshot::staged`).
//! 2. The points: the same run under strace, counted ([`strace::count`]); it must give the
//!    reference too. All of them run with `CHARTREG_CRASH_POINTS=all` (`make crash-points`);
//!    otherwise a sample ([`select`]): every point of a system call with few of them, a fixed
//!    stride of the others.
//! 3. For each point: the folder before, written afresh; the run, with the fault there
//!    ([`strace::hit`]); then, at once, [`checks`] (the lock and what it pins, the layouts)
//!    and what the run replaces is byte for byte the old one or the new one. A run whose call
//!    failed ([`Fault::Error`]) must also have given the new state if it succeeded, and the
//!    old one if it failed: then the whole folder as it was, and (the commands that say it:
//!    [`Scenario::says_nothing_changed`]) said "nothing was changed". Then the run again,
//!    which must succeed and leave the whole folder as the reference, with nothing left over.
//!
//! Each point's outcome is counted in [`Figures`], printed as one line (and appended to the
//! file `CHARTREG_CRASH_REPORT` names, if any): a state torn (a check failed, or what was
//! replaced is neither old nor new), hidden debris inside it, a failed run that had replaced
//! it, a failure that does not say "nothing was changed" or that left something, a re-run
//! that fails (stuck), leftovers beside the reference after the re-run, or another result
//! than the reference.

use std::path::Path;

use super::checks;
use super::strace::{self, Fault, Point};
use super::tool::{Invocation, Ran, run};
use super::tree::{Difference, Snapshot, describe};

/// A run to put faults into at every crash point.
pub struct Scenario {
    /// `fetch A→B`, for messages.
    pub name: String,
    /// The work folder before the run.
    pub before: Snapshot,
    pub invocation: Invocation,
    /// What the run replaces (paths in the work folder): after a fault, each is old or new.
    pub replaces: Vec<&'static str>,
    /// The lock to check after a fault (a path in the work folder).
    pub lock: Option<&'static str>,
    /// Folders whose OCI layouts are checked after a fault.
    pub layouts: Vec<&'static str>,
    /// Whether a failure of the command says "nothing was changed" (fetch, pack).
    pub says_nothing_changed: bool,
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
    /// Runs that failed, and had replaced what they replace (whatever they said).
    pub failed_yet_replaced: usize,
    /// Runs that failed and changed nothing without saying "nothing was changed" (the
    /// commands that say it).
    pub unsaid: usize,
    /// Failed runs that left something in the folder (a removal that failed excepted: those
    /// are `cleanup_failed`).
    pub left_by_failure: usize,
    /// Failed runs whose failing call was a removal, and that left what it could not remove:
    /// the re-run must remove it.
    pub cleanup_failed: usize,
    pub stuck: usize,
    pub leftovers: usize,
    pub wrong: usize,
    /// What went wrong, by point (the first few).
    pub found: Vec<String>,
}

impl Figures {
    /// Nothing went wrong (a failed removal leaving what it could not remove is no fault).
    pub fn clean(&self) -> bool {
        self.torn
            + self.debris
            + self.failed_yet_replaced
            + self.unsaid
            + self.left_by_failure
            + self.stuck
            + self.leftovers
            + self.wrong
            == 0
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

/// What one sweep compares against.
struct Expected<'a> {
    scenario: &'a Scenario,
    /// What the run replaces, before and after an uninterrupted run.
    old: Snapshot,
    new: Snapshot,
    /// The whole folder after an uninterrupted run.
    reference: Snapshot,
}

/// Runs `scenario` with `fault` at its points (see the module doc); its figures, and the
/// reference (the folder after an uninterrupted run).
pub fn sweep(strace_bin: &Path, scenario: &Scenario, fault: Fault) -> (Figures, Snapshot) {
    let name = match fault {
        Fault::Kill => format!("{}, killed", scenario.name),
        Fault::Error => format!("{}, an I/O error", scenario.name),
    };
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
    let expected = Expected {
        scenario,
        old: scenario.before.part(&scenario.replaces),
        new: reference.part(&scenario.replaces),
        reference,
    };
    assert!(
        expected.old != expected.new,
        "{name}: the run changes nothing it replaces"
    );
    assert!(
        expected.reference.staged().is_empty(),
        "{name}: an uninterrupted run leaves {:?}",
        expected.reference.staged()
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
            traced == expected.reference,
            "{name}: a second run gives another result: {}",
            describe(&traced.differences(&expected.reference))
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
        let ran = strace::hit(
            strace_bin,
            &scenario.invocation,
            point,
            fault,
            &work,
            &scratch,
        );
        if at_rest(&expected, point, fault, &ran, &work, &mut figures) {
            again(&expected, point, &work, &scratch, &mut figures);
        }
    }
    let line = format!(
        "{name}: {} points ({}), {} run{}, {} not reached; {} torn, {} with debris, {} failed runs that had replaced it, {} failures not saying \"nothing was changed\", {} failures that left something ({} more whose removal failed), {} stuck re-runs, {} with leftovers, {} other results; {} file-changing calls on {} thread(s), {} reached by no point",
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
        figures.failed_yet_replaced,
        figures.unsaid,
        figures.left_by_failure,
        figures.cleanup_failed,
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
    (figures, expected.reference)
}

/// The work folder and a scratch folder beside it (outputs, strace's log).
fn folders(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let work = root.join("work");
    let scratch = root.join("scratch");
    std::fs::create_dir_all(&work).expect("create folder");
    std::fs::create_dir_all(&scratch).expect("create folder");
    (work, scratch)
}

/// The checks right after the fault (see the module doc, step 3), counted; whether the point
/// was reached (and the run is to be re-run).
fn at_rest(
    expected: &Expected<'_>,
    point: &Point,
    fault: Fault,
    ran: &Ran,
    work: &Path,
    figures: &mut Figures,
) -> bool {
    match fault {
        Fault::Kill if !ran.killed() => {
            if ran.ok() {
                figures.not_reached += 1;
            } else {
                figures.wrong += 1;
                figures.note(
                    point,
                    format!("neither killed nor done: {}", ran.describe()),
                );
            }
            return false;
        }
        Fault::Error if ran.killed() => {
            figures.wrong += 1;
            figures.note(point, format!("killed by an I/O error: {}", ran.describe()));
            return false;
        }
        Fault::Kill | Fault::Error => {}
    }
    match torn(expected, work) {
        Some(Torn::State(why)) => {
            figures.torn += 1;
            figures.note(point, format!("torn: {why}"));
        }
        Some(Torn::Debris(why)) => {
            figures.debris += 1;
            figures.note(point, format!("debris: {why}"));
        }
        None => {}
    }
    if fault == Fault::Kill {
        return true;
    }
    let now = Snapshot::of(work);
    let replaced = now.part(&expected.scenario.replaces);
    match (ran.ok(), replaced == expected.new, replaced == expected.old) {
        (true, true, _) => {}
        (true, false, _) => {
            figures.wrong += 1;
            figures.note(point, "succeeded without the new state".to_owned());
        }
        (false, true, _) => {
            figures.failed_yet_replaced += 1;
            figures.note(
                point,
                format!("failed, and had replaced it: {}", ran.stderr.trim()),
            );
        }
        (false, false, true) => {
            if expected.scenario.says_nothing_changed && !ran.stderr.contains("nothing was changed")
            {
                figures.unsaid += 1;
                figures.note(
                    point,
                    format!(
                        "failed without saying nothing was changed: {}",
                        ran.stderr.trim()
                    ),
                );
            }
            let differences = now.differences(&expected.scenario.before);
            let removal = ["unlink", "unlinkat", "rmdir"].contains(&point.syscall);
            if !differences.is_empty() && removal {
                figures.cleanup_failed += 1;
            } else if !differences.is_empty() {
                figures.left_by_failure += 1;
                figures.note(
                    point,
                    format!("failed, and left {}", describe(&differences)),
                );
            }
        }
        // Neither: counted as torn above.
        (false, false, false) => {}
    }
    true
}

/// The run again after a fault (see the module doc, step 3), counted.
fn again(
    expected: &Expected<'_>,
    point: &Point,
    work: &Path,
    scratch: &Path,
    figures: &mut Figures,
) {
    let invocation: &Invocation = &expected.scenario.invocation;
    let again = run(invocation.command(work), scratch);
    if !again.ok() {
        figures.stuck += 1;
        figures.note(point, format!("the re-run failed: {}", again.stderr.trim()));
        return;
    }
    let differences = Snapshot::of(work).differences(&expected.reference);
    if differences.is_empty() {
        return;
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

/// Why a folder right after a fault is not as it must be.
enum Torn {
    /// A check failed, or what was replaced is neither old nor new.
    State(String),
    /// What was replaced is old or new but for hidden entries inside it.
    Debris(String),
}

/// The checks at rest (see the module doc, step 3).
fn torn(expected: &Expected<'_>, work: &Path) -> Option<Torn> {
    let scenario = expected.scenario;
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
    if now == expected.old || now == expected.new {
        return None;
    }
    let (to_old, to_new) = (
        now.differences(&expected.old),
        now.differences(&expected.new),
    );
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
