//! What the binary knows of its own build, set once by the binary (`main.rs`, from what its
//! build script wrote) before the command runs: the git revision, the time of the build's
//! inputs, the crates linked into it (`crates.json`), and the digest
//! of the content it embeds (as `ls --content-digest` computes it from the files). The
//! metrics, the pages and the SBOM (`web::sbom`) read it; a program that records nothing (the
//! in-process tests) gets [`ThisBuild::UNRECORDED`]. Imports nothing else of the server.

use std::sync::OnceLock;

/// See the module's documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThisBuild {
    /// The git revision the build script found, if any.
    pub revision: Option<&'static str>,
    /// When the build's inputs were made, in seconds since 1970: `SOURCE_DATE_EPOCH`, else the
    /// last commit's time, else the content's newest file (build.rs); 0 only when unrecorded.
    pub created: u64,
    /// `crates.json`: the crates linked in, a JSON list of `{name, version, license, source,
    /// location, root, dependencies}` (indices into the list), sorted.
    pub crates: &'static [u8],
    /// The embedded content's digest, `sha256:<hex>`, as the build computed it.
    pub content_digest: Option<&'static str>,
    /// The fingerprint (`sha256:<hex>`) of the key the image of this binary is signed with,
    /// when `chartreg-build image --sign-key` built it.
    pub signer: Option<&'static str>,
}

impl ThisBuild {
    /// What a program that recorded nothing has: no revision, time 0, no crates listed.
    pub const UNRECORDED: ThisBuild = ThisBuild {
        revision: None,
        created: 0,
        crates: b"[]",
        content_digest: None,
        signer: None,
    };

    /// `created` in RFC 3339 (UTC); `None` past year 9999.
    pub fn created_rfc3339(&self) -> Option<String> {
        const LAST: u64 = 253_402_300_799;
        let time =
            std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(self.created))?;
        (self.created <= LAST).then(|| humantime::format_rfc3339_seconds(time).to_string())
    }
}

static RECORDED: OnceLock<ThisBuild> = OnceLock::new();

/// Records this binary's build; the first call wins.
pub fn record(build: ThisBuild) {
    let _ = RECORDED.set(build);
}

/// This binary's build, as recorded ([`ThisBuild::UNRECORDED`] when nothing was).
pub fn get() -> &'static ThisBuild {
    RECORDED.get().unwrap_or(&ThisBuild::UNRECORDED)
}
