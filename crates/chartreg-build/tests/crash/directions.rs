//! fetch, then pack, between the two states (`states`), each way, killed at every crash
//! point (`sweep`). Each test starts from a content repository fetched and packed at one
//! state, switches the upstreams and the lists to the other, and sweeps `fetch`; then sweeps
//! `pack` from what the uninterrupted fetch gave (the new lock, the old `assets/`).

use super::common;
use super::states::{State, Upstreams};
use super::sweep::{Scenario, sweep};
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
    let Some(strace) = common::tool("strace") else {
        return;
    };
    let Some(upstreams) = Upstreams::start() else {
        return;
    };
    let tool = Tool::under_test();
    // The repository at `from`: fetched and packed.
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
    // Then the team edits the lists and the chart for `to`, and upstream moves to it.
    upstreams.inputs(to, &tool, &work);
    upstreams.serve(to);
    let before = Snapshot::of(&work);

    let fetch = Scenario {
        name: format!("fetch {from}→{to}"),
        before,
        invocation: tool.fetch(),
        replaces: tool.fetched().to_vec(),
        lock: Some(tool.lock()),
        layouts: Vec::new(),
    };
    let (fetched, after_fetch) = sweep(&strace, &fetch);
    let pack = Scenario {
        name: format!("pack {from}→{to}"),
        before: after_fetch,
        invocation: tool.pack(),
        replaces: vec!["assets"],
        lock: Some(tool.lock()),
        layouts: vec!["assets"],
    };
    let (packed, _) = sweep(&strace, &pack);
    for (scenario, figures) in [(&fetch, &fetched), (&pack, &packed)] {
        assert!(figures.clean(), "{}: {figures:#?}", scenario.name);
        // Points that kill nothing would prove nothing.
        assert!(
            figures.not_reached * 4 <= figures.ran && figures.ran > 0,
            "{}: {} of {} points were not reached",
            scenario.name,
            figures.not_reached,
            figures.ran
        );
    }
}
