//! Chooses the folder the binary embeds, `assets/` by default or `$CHARTREG_ASSETS` (relative to
//! this package) when set, and prepares it with `chartreg-embed` (see its `prepare` module):
//!
//! - files smaller than `$CHARTREG_LINK_THRESHOLD` bytes (default 1 MiB: every manifest, index
//!   and chart) go through rust-embed, from a mirror of hard links (`CHARTREG_EMBED_DIR`); a
//!   file with the same bytes as one before it is embedded once (`$OUT_DIR/aliases.rs`);
//! - larger files (image layers) are streamed into objects named by their digest, kept in
//!   `$OUT_DIR/objects` for the next build, and linked in (`$OUT_DIR/linked.rs` names them);
//! - the content is described with the binary's own loader and the description written down,
//!   `$OUT_DIR/facts.bin`, from which the binary builds its registry without reading the
//!   content's JSON again. Content that cannot be served is written down as that and gets a
//!   warning here, and the binary refuses it, naming the file.
//!
//! Why objects: `include_bytes!` holds about 12 times a file's size in compiler memory (1 GiB
//! took 12.6 GB and 57 s here), so a few GiB of content could not be built; an object is
//! written in 1 MiB pieces, and the linker (LLD) maps it rather than reading it into memory.
//! Objects are written for x86-64 and AArch64 Linux; elsewhere every file goes through
//! rust-embed.
//!
//! It also writes what the binary says of its own build (`chartreg::this_build`, for its SBOM
//! and pages): `$OUT_DIR/crates.json`, the crates linked into it with the edges between them
//! (module `crates`: `cargo tree` of the normal, non-proc-macro dependencies for the target),
//! and the same list as cargo-auditable's dependency data, a `.dep-v0` section in an object
//! linked into the binary, which vulnerability scanners read (module `auditable`);
//! `$OUT_DIR/created.rs`, when the inputs were made (`$SOURCE_DATE_EPOCH`, else the last
//! commit's time, else the content's newest file: never 1970); `$OUT_DIR/content-digest.txt`,
//! the content's digest (what `chartreg ls --content-digest` prints); `$OUT_DIR/signer.txt`,
//! the fingerprint of the key its image is signed with (`$CHARTREG_SIGNER`, which
//! `chartreg-build image --sign-key` sets; empty when unsigned).
//!
//! Cargo reruns this when anything under the folder changes, including files being added or
//! removed (rust-embed alone only notices changed contents). A folder that cannot be built in
//! stops the build with one line saying why (cargo shows it under the build script's output).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chartreg_embed::prepare::{self, Link, Options, link_args};

#[path = "build/auditable.rs"]
mod auditable;
#[path = "build/crates.rs"]
mod crates;

const DEFAULT_LINK_THRESHOLD: u64 = 1024 * 1024;

/// Why the content cannot be built into the binary.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("cargo did not set {0}")]
    Cargo(&'static str),
    #[error(
        "the assets folder {} does not exist; run `make assets` (or point CHARTREG_ASSETS at a folder)",
        .0.display()
    )]
    NoAssets(PathBuf),
    #[error("the assets folder {}: {source}", .folder.display())]
    Resolve {
        folder: PathBuf,
        source: std::io::Error,
    },
    #[error("CHARTREG_LINK_THRESHOLD must be a number of bytes, not `{0}`")]
    Threshold(String),
    #[error(transparent)]
    Prepare(#[from] prepare::Error),
    #[error("SOURCE_DATE_EPOCH must be whole seconds since 1970, not `{0}`")]
    SourceDateEpoch(String),
    #[error(
        "CHARTREG_SIGNER must be a key's fingerprint, sha256:<64 lowercase hex digits>, not `{0}`"
    )]
    Signer(String),
    #[error(transparent)]
    Crates(#[from] crates::Error),
    #[error(transparent)]
    Auditable(#[from] auditable::Error),
    #[error("cannot write the crates linked in: {0}")]
    CratesJson(#[from] serde_json::Error),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Error> {
    println!("cargo:rerun-if-env-changed=CHARTREG_ASSETS");
    println!("cargo:rerun-if-env-changed=CHARTREG_LINK_THRESHOLD");
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or(Error::Cargo("CARGO_MANIFEST_DIR"))?);
    let chosen = env::var_os("CHARTREG_ASSETS");
    let folder = manifest_dir.join(chosen.as_deref().unwrap_or("assets".as_ref()));
    if !folder.is_dir() {
        return Err(Error::NoAssets(folder));
    }
    let folder = folder
        .canonicalize()
        .map_err(|source| Error::Resolve { folder, source })?;
    println!("cargo:rerun-if-changed={}", folder.display());
    let threshold = match env::var("CHARTREG_LINK_THRESHOLD") {
        Ok(value) => value.parse().map_err(|_| Error::Threshold(value))?,
        Err(_) => DEFAULT_LINK_THRESHOLD,
    };
    let machine = prepare::object::Machine::of_target(
        &env::var("CARGO_CFG_TARGET_OS").unwrap_or_default(),
        &env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default(),
    );
    if machine.is_none() {
        println!(
            "cargo:warning=large files are linked as objects on x86-64 and AArch64 Linux only: embedding every file with rust-embed"
        );
    }
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or(Error::Cargo("OUT_DIR"))?);
    let prepared = prepare::run(&Options {
        folder: folder.clone(),
        out_dir: out_dir.clone(),
        link: machine.map(|machine| Link { threshold, machine }),
    })?;
    write(
        &out_dir.join("content-digest.txt"),
        prepared.content_digest.as_str().as_bytes(),
    )?;
    for warning in &prepared.warnings {
        println!("cargo:warning={warning}");
    }
    if let Some(machine) = machine {
        for arg in link_args(&prepared.objects, machine) {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
    println!(
        "cargo:rustc-env=CHARTREG_EMBED_DIR={}",
        prepared.mirror.display()
    );
    git_revision(&manifest_dir);
    created(&manifest_dir, &folder, &out_dir)?;
    signer(&out_dir)?;
    crates(&manifest_dir, &out_dir)?;
    Ok(())
}

/// `$OUT_DIR/signer.txt`: `$CHARTREG_SIGNER`, the fingerprint (`sha256:<hex>`) of the key
/// `chartreg-build image --sign-key` signs this binary's image with; empty when unsigned.
fn signer(out_dir: &Path) -> Result<(), Error> {
    println!("cargo:rerun-if-env-changed=CHARTREG_SIGNER");
    let signer = env::var("CHARTREG_SIGNER").unwrap_or_default();
    let fingerprint = signer.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    });
    if !signer.is_empty() && !fingerprint {
        return Err(Error::Signer(signer));
    }
    write(&out_dir.join("signer.txt"), signer.as_bytes())
}

/// `$OUT_DIR/created.rs`: when the build's inputs were made, in seconds since 1970, as a `u64`
/// literal: `$SOURCE_DATE_EPOCH` when set; else the last commit's time when the package is a
/// git checkout; else (a copy without .git) the newest modification time of the content
/// folder's files and `Cargo.lock`. Never 0: with no time found anywhere, the time of the build.
fn created(manifest_dir: &Path, content: &Path, out_dir: &Path) -> Result<(), Error> {
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let seconds: u64 = match env::var("SOURCE_DATE_EPOCH") {
        Ok(value) if !value.is_empty() => {
            value.parse().map_err(|_| Error::SourceDateEpoch(value))?
        }
        _ => last_commit(manifest_dir)
            .or_else(|| newest([manifest_dir.join("Cargo.lock"), content.to_owned()]))
            .unwrap_or_else(|| seconds_of(std::time::SystemTime::now()).unwrap_or(1)),
    };
    write(
        &out_dir.join("created.rs"),
        format!("{seconds}u64").as_bytes(),
    )
}

/// The committer time of HEAD (`git log -1 --format=%ct`), when `dir` is a git checkout.
fn last_commit(dir: &Path) -> Option<u64> {
    if !dir.join(".git").exists() {
        return None;
    }
    let printed = git(dir, &["log", "-1", "--format=%ct", "HEAD"])?;
    printed.parse().ok().filter(|&s| s > 0)
}

/// The newest modification time (seconds since 1970, after 1970) of the files under `paths`.
fn newest(paths: impl IntoIterator<Item = PathBuf>) -> Option<u64> {
    let mut next: Vec<PathBuf> = paths.into_iter().collect();
    let mut newest = None;
    while let Some(path) = next.pop() {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = fs::read_dir(&path) {
                next.extend(entries.flatten().map(|e| e.path()));
            }
        } else if let Some(seconds) = meta.modified().ok().and_then(seconds_of) {
            newest = newest.max(Some(seconds));
        }
    }
    newest.filter(|&s| s > 0)
}

fn seconds_of(time: std::time::SystemTime) -> Option<u64> {
    time.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

fn write(path: &Path, data: &[u8]) -> Result<(), Error> {
    fs::write(path, data).map_err(|source| Error::Write {
        path: path.to_owned(),
        source,
    })
}

/// `$OUT_DIR/crates.json`, the crates linked into the binary for the target (module `crates`),
/// and the same list as cargo-auditable's `.dep-v0` in an object linked into it (module
/// `auditable`).
fn crates(manifest_dir: &Path, out_dir: &Path) -> Result<(), Error> {
    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir.join("Cargo.lock").display()
    );
    let target = env::var("TARGET").map_err(|_| Error::Cargo("TARGET"))?;
    let cargo = PathBuf::from(env::var_os("CARGO").ok_or(Error::Cargo("CARGO"))?);
    let linked = crates::linked(&cargo, manifest_dir, &target)?;
    // A feature or dependency changed in a local crate's manifest changes the list.
    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir.join("Cargo.toml").display()
    );
    for folder in linked.iter().filter_map(|c| c.location.as_deref()) {
        let manifest = manifest_dir.join(folder).join("Cargo.toml");
        if manifest.is_file() {
            println!("cargo:rerun-if-changed={}", manifest.display());
        }
    }
    write(
        &out_dir.join("crates.json"),
        &serde_json::to_vec_pretty(&linked)?,
    )?;
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let elf = !matches!(
        env::var("CARGO_CFG_TARGET_OS").as_deref(),
        Ok("macos" | "ios" | "windows" | "uefi")
    );
    let object = match elf {
        true => auditable::write(&linked, &arch, &out_dir.join("dep-v0.o"))?,
        false => None,
    };
    match object {
        Some(object) => {
            println!("cargo:rustc-link-arg-bins={}", object.display());
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--undefined={}",
                auditable::SYMBOL
            );
        }
        None => println!(
            "cargo:warning=the binary carries no dependency data (.dep-v0) for {target}: written for x86-64 and AArch64 ELF only"
        ),
    }
    Ok(())
}

/// Why a command build.rs runs gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("could not start: {0}")]
    Start(std::io::Error),
    #[error("ran longer than {0} s")]
    Time(u64),
    #[error("could not be waited for: {0}")]
    Wait(std::io::Error),
    #[error("could not be read: {0}")]
    Read(std::io::Error),
    #[error("gave no output to read")]
    Pipes,
    #[error("failed ({status}): {said}")]
    Failed {
        status: std::process::ExitStatus,
        said: String,
    },
    #[error("printed more than {0} bytes")]
    Long(u64),
}

/// What `command` prints on stdout when it succeeds within `time` and `limit` bytes; its
/// stderr's first lines name why when it does not.
fn bounded_output(
    mut command: std::process::Command,
    limit: u64,
    time: std::time::Duration,
) -> Result<Vec<u8>, RunError> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(RunError::Start)?;
    let readers = child
        .stdout
        .take()
        .zip(child.stderr.take())
        .map(|(out, err)| {
            (
                std::thread::spawn(move || {
                    let mut data = Vec::new();
                    out.take(limit + 1).read_to_end(&mut data).map(|_| data)
                }),
                std::thread::spawn(move || {
                    let mut data = Vec::new();
                    err.take(64 * 1024).read_to_end(&mut data).map(|_| data)
                }),
            )
        });
    let deadline = std::time::Instant::now() + time;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Time(time.as_secs()));
            }
            Err(e) => return Err(RunError::Wait(e)),
        }
    };
    let (out, err) = readers.ok_or(RunError::Pipes)?;
    let joined = |reader: std::thread::JoinHandle<std::io::Result<Vec<u8>>>| match reader.join() {
        Ok(Ok(data)) => Ok(data),
        Ok(Err(e)) => Err(RunError::Read(e)),
        Err(_) => Err(RunError::Pipes),
    };
    let (out, err) = (joined(out)?, joined(err)?);
    if !status.success() {
        let said = String::from_utf8_lossy(&err).trim().to_owned();
        return Err(RunError::Failed { status, said });
    }
    if out.len() as u64 > limit {
        return Err(RunError::Long(limit));
    }
    Ok(out)
}

/// `CHARTREG_GIT_REVISION` for the build-info metric: from the environment (builds without a
/// checkout, such as container builds, pass it in), else from git, else unset ("unknown").
fn git_revision(manifest_dir: &Path) {
    println!("cargo:rerun-if-env-changed=CHARTREG_GIT_REVISION");
    if let Ok(revision) = env::var("CHARTREG_GIT_REVISION") {
        println!("cargo:rustc-env=CHARTREG_GIT_REVISION={revision}");
        return;
    }
    let git = manifest_dir.join(".git");
    if !git.is_dir() {
        return;
    }
    // Rebuild when HEAD moves: HEAD itself, and the branch file it names.
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    if let Ok(head) = fs::read_to_string(git.join("HEAD"))
        && let Some(branch) = head.trim().strip_prefix("ref: ")
    {
        println!("cargo:rerun-if-changed={}", git.join(branch).display());
    }
    if let Some(revision) = head_revision(manifest_dir) {
        println!("cargo:rustc-env=CHARTREG_GIT_REVISION={revision}");
    }
}

/// `git rev-parse --short=12 HEAD` in `dir`; `None` when git gives none.
fn head_revision(dir: &Path) -> Option<String> {
    git(dir, &["rev-parse", "--short=12", "HEAD"])
}

/// What `git ARGS` prints in `dir`, trimmed, with only `PATH` and `HOME` passed on (no `GIT_*`
/// variable can point it elsewhere), given 10 s and 256 bytes of answer; `None` when git is
/// missing, fails, prints nothing or passes a bound.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let mut git = std::process::Command::new("git");
    git.args(args).current_dir(dir).env_clear();
    for key in ["PATH", "HOME"] {
        if let Some(value) = env::var_os(key) {
            git.env(key, value);
        }
    }
    // A copy without .git (or without git) has no revision: not an error.
    let printed = bounded_output(git, 256, std::time::Duration::from_secs(10)).ok()?;
    let said = String::from_utf8_lossy(&printed).trim().to_owned();
    (!said.is_empty()).then_some(said)
}
