//! fetch, then pack, between the two states (`states`), each way, killed at every crash
//! point (`sweep`). Each test starts from a content repository fetched and packed at one
//! state, switches the upstreams and the lists to the other, and sweeps `fetch`; then sweeps
//! `pack` from what the uninterrupted fetch gave (the new lock, the old `assets/`).

use std::path::PathBuf;

use super::common;
use super::states::{State, Upstreams};
use super::strace::Fault;
use super::sweep::{Figures, Scenario, sweep};
use super::tool::{Tool, run};
use super::tree::Snapshot;

#[test]
fn fetch_and_pack_from_a_to_b_at_every_crash_point() {
    from_to(State::A, State::B);
}

#[test]
fn fetch_and_pack_from_b_to_a_at_every_crash_point() {
    from_to(State::B, State::A);
}

fn from_to(from: State, to: State) {
    let Some(moving) = Moving::start(from, to) else {
        return;
    };
    let fetch = moving.fetch();
    let (fetched, after_fetch) = sweep(&moving.strace, &fetch, Fault::Kill);
    let pack = moving.pack(after_fetch);
    let (packed, _) = sweep(&moving.strace, &pack, Fault::Kill);
    assert_clean(&fetch, &fetched);
    assert_clean(&pack, &packed);
}

/// Fails the test, naming what went wrong, unless `figures` are clean and most points were
/// reached (points that hit nothing would prove nothing).
pub fn assert_clean(scenario: &Scenario, figures: &Figures) {
    assert!(figures.clean(), "{}: {figures:#?}", scenario.name);
    assert!(
        figures.not_reached * 4 <= figures.ran && figures.ran > 0,
        "{}: {} of {} points were not reached",
        scenario.name,
        figures.not_reached,
        figures.ran
    );
}

/// A content repository fetched and packed at one state, whose team has just edited the lists
/// and the chart for the other, with upstream moved to it.
pub struct Moving {
    pub strace: PathBuf,
    pub tool: Tool,
    from: State,
    to: State,
    before: Snapshot,
    /// Serving `to` as long as the sweeps run.
    _upstreams: Upstreams,
}

impl Moving {
    /// `None` (the test is skipped) when strace or an upstream's tool is missing; under
    /// `CI=true` the test fails instead.
    pub fn start(from: State, to: State) -> Option<Moving> {
        let strace = common::tool("strace")?;
        let upstreams = Upstreams::start()?;
        let tool = Tool::under_test();
        upstreams.serve(from);
        let root = tempfile::tempdir().expect("temp dir");
        let (work, scratch) = (root.path().join("work"), root.path().join("scratch"));
        std::fs::create_dir_all(&scratch).expect("create folder");
        std::fs::create_dir_all(&work).expect("create folder");
        upstreams.inputs(from, &tool, &work);
        for invocation in [tool.fetch(), tool.pack()] {
            let ran = run(invocation.command(&work), &scratch);
            assert!(ran.ok(), "{}: {}", invocation.describe(), ran.describe());
        }
        upstreams.inputs(to, &tool, &work);
        upstreams.serve(to);
        Some(Moving {
            strace,
            tool,
            from,
            to,
            before: Snapshot::of(&work),
            _upstreams: upstreams,
        })
    }

    /// The fetch that takes the repository to `to`.
    pub fn fetch(&self) -> Scenario {
        Scenario {
            name: format!("fetch {}→{}", self.from, self.to),
            before: self.before.clone(),
            invocation: self.tool.fetch(),
            replaces: self.tool.fetched().to_vec(),
            lock: Some(self.tool.lock()),
            layouts: Vec::new(),
            says_nothing_changed: true,
        }
    }

    /// The pack after it, from what the fetch gave (`fetched`: the whole folder).
    pub fn pack(&self, fetched: Snapshot) -> Scenario {
        Scenario {
            name: format!("pack {}→{}", self.from, self.to),
            before: fetched,
            invocation: self.tool.pack(),
            replaces: vec!["assets"],
            lock: Some(self.tool.lock()),
            layouts: vec!["assets"],
            says_nothing_changed: true,
        }
    }
}
