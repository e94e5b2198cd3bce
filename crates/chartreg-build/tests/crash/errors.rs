//! Failures without a kill at every point: each file-changing call of fetch, pack (A→B) and
//! image (v1→v2) made to fail with EIO in turn (`sweep` with `Fault::Error`). A run that
//! fails must leave the old state and say "nothing was changed" (fetch and pack), and say it
//! only then; one that goes on must give the new state; either way the next run gives the
//! uninterrupted run's folder, with nothing left over.

use super::directions::{Moving, assert_clean};
use super::image;
use super::states::State;
use super::strace::Fault;
use super::sweep::sweep;

#[test]
fn fetch_and_pack_meet_an_io_error_at_every_point() {
    let Some(moving) = Moving::start(State::A, State::B) else {
        return;
    };
    let fetch = moving.fetch();
    let (fetched, after_fetch) = sweep(&moving.strace, &fetch, Fault::Error);
    let pack = moving.pack(after_fetch);
    let (packed, _) = sweep(&moving.strace, &pack, Fault::Error);
    assert_clean(&fetch, &fetched);
    assert_clean(&pack, &packed);
}

#[test]
fn image_meets_an_io_error_at_every_point() {
    let Some((strace, scenarios)) = image::scenarios(false) else {
        return;
    };
    let first = &scenarios[0];
    let (figures, _) = sweep(&strace, first, Fault::Error);
    assert_clean(first, &figures);
}
