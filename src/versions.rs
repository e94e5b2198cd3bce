//! Chart versions in the order Helm orders them: the core's (`chartreg_core::oci::version`).

pub use chartreg_core::oci::version::{newest_first, order};
