//! The chartreg binary: the library plus the content compiled into it.
//!
//! The embedded folder is `assets/` unless `CHARTREG_ASSETS` named another at build time. build.rs
//! prepares it with `chartreg-embed` (its `prepare` module): small files come through rust-embed
//! (with `debug-embed`, every build serves from the binary), large ones are linked in as objects
//! named by their digest (`$OUT_DIR/linked.rs`), a small file whose bytes another has already is
//! embedded once (`$OUT_DIR/aliases.rs`), and the content is described and the description
//! written down (`$OUT_DIR/facts.bin`, see `Description::facts`): the registry is built from
//! those facts and these files (`Registry::from_facts`), without reading the content again.
//! Here they are only named; `chartreg_embed::files` reads them back. What build.rs found of
//! the build itself (revision, `SOURCE_DATE_EPOCH`, the crates compiled in) is recorded for
//! `chartreg::this_build` before the command runs.
//!
//! `unsafe_code` is forbidden in every crate of the project (`[workspace.lints]`). The one
//! `unsafe` in the binary is in the expansion of `chartreg_embed::linked_blob!` (the project's
//! own macro crate, where the lint does not look): an `extern` static per linked object, whose
//! symbol and size build.rs wrote together; start-up checks the sha256 written beside them
//! against the build's facts, and `chartreg verify` checks the bytes against that sha256, like
//! every other file's (see `chartreg_embed`).

use std::process::ExitCode;

use chartreg::this_build::ThisBuild;
use chartreg_embed::files::Embedded;
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$CHARTREG_EMBED_DIR"]
struct Assets;

/// What build.rs wrote besides the rust-embed folder. A static, so that each linked file is
/// reached through a 64-bit address whatever its distance from the code.
static EMBEDDED: Embedded = Embedded {
    linked: include!(concat!(env!("OUT_DIR"), "/linked.rs")),
    aliases: include!(concat!(env!("OUT_DIR"), "/aliases.rs")),
    facts: include_bytes!(concat!(env!("OUT_DIR"), "/facts.bin")),
};

fn main() -> ExitCode {
    chartreg::this_build::record(ThisBuild {
        revision: option_env!("CHARTREG_GIT_REVISION"),
        created: include!(concat!(env!("OUT_DIR"), "/created.rs")),
        crates: include_bytes!(concat!(env!("OUT_DIR"), "/crates.json")),
        content_digest: Some(include_str!(concat!(
            env!("OUT_DIR"),
            "/content-digest.txt"
        ))),
        signer: Some(include_str!(concat!(env!("OUT_DIR"), "/signer.txt")))
            .filter(|s| !s.is_empty()),
    });
    chartreg::cli::main(std::env::args_os(), || EMBEDDED.content::<Assets>())
}
