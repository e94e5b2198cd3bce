//! `verify:` in the content file: checked by the trust crate (`chartreg_trust`), which the
//! server's `chartreg verify` shares; fetch and pack use it through this name.

pub use chartreg_trust::*;
