//! What a run writes becomes visible at one commit point, and stays there after a crash or a
//! power loss. Every command that changes a team's files goes through here:
//!
//! - [`Generation`]: a folder a run replaces whole (`fetch`'s folder, `pack`'s and
//!   `import-bundle`'s output, `image`'s layout). The new folder is filled beside the old one
//!   (`.<name>.<run>-new`), with what stays the same hard-linked from it ([`link_tree`]); at
//!   the commit, the new folder is made durable (one `syncfs` of its file system:
//!   [`sync_new_files`]), the two folders are exchanged in one `renameat2(RENAME_EXCHANGE)`, the
//!   parent folder is fsync'd, and the old folder is removed. Before the exchange the old folder is all there is; after it, the new
//!   one. A run that fails removes its folder; one that is killed leaves it, hidden, and the
//!   next run removes it first ([`leftovers`] names what is left).
//! - [`replace_file`]: one file, written beside its place, fsync'd, renamed over it, its folder
//!   fsync'd.
//! - [`Held`]: a run holds its folder (an abstract Unix socket named after it), so that two
//!   runs never fill one staging folder; the kernel frees it when the process ends, however it
//!   ends.
//! - [`stop`]: SIGINT and SIGTERM ask a run to stop; it stops before its commit point, removes
//!   what it staged, and exits 130 or 143 ([`Stopped`]).
//!
//! Files and folders are compared by [`same_tree`] so that a run that changes nothing leaves
//! the folder as it was (its mtime too).

mod files;
mod generation;
pub mod stop;

pub use files::{Synced, link_tree, replace_file, same_tree, sync_dir, sync_new_files};
pub use generation::{Committed, Generation, Held, leftovers};
pub use stop::Stopped;

use std::path::PathBuf;

/// Why a folder or file could not be put in place; each names the path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{}: another chartreg-build run is writing it; wait for that run to end",
        .0.display()
    )]
    Busy(PathBuf),
    #[error("{}: not a folder (it is replaced whole: give a folder, or a path where none is)", .0.display())]
    NotAFolder(PathBuf),
    #[error("{}: neither a file, a folder nor a symbolic link: not taken into the new folder", .0.display())]
    Special(PathBuf),
    #[error(transparent)]
    Stopped(#[from] Stopped),
    /// The new folder is in place, but the folder holding it could not be made durable, and
    /// the swap could not be undone: the one error after which something changed.
    #[error(
        "{}: the new folder is in place, but writing that to disk failed ({source}), and it could not be put back: check the disk, then run again",
        path.display()
    )]
    NotDurable { path: PathBuf, source: Box<Error> },
}

/// Set when a run fails after its new folder was put in place ([`Error::NotDurable`]).
static CHANGED_ON_FAILURE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether a run of this process failed after changing its folder: the one failure after
/// which "nothing was changed" would not be true.
pub fn changed_on_failure() -> bool {
    CHANGED_ON_FAILURE.load(std::sync::atomic::Ordering::SeqCst)
}

impl Error {
    pub(crate) fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
        move |source| Error::Io {
            path: path.to_owned(),
            source,
        }
    }
}
