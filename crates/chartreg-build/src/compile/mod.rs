//! Compiles the server with a content folder inside: `chartreg-build build`.
//!
//! The server is compiled from a [`kit`] (the server's crates and the vendored source of every
//! dependency) by the build machine's Rust toolchain ([`toolchain`], checked first), offline,
//! into a cache folder per kit ([`cache_dir`]). Content reaches the compile only through
//! `CHARTREG_ASSETS`, read by the kit's `build.rs`, so after the first compile a change of
//! content recompiles the one small crate that embeds it (`chartreg-bin`) and links. The binary
//! is linked statically (`crt-static`, for the target given with `--target` so that build
//! scripts and proc macros stay ordinary) and copied to the output beside it, then renamed over
//! it: a failed compile leaves the previous binary in place.

pub mod command;
pub mod kit;
pub mod toolchain;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::bounded::{Bounded, BoundedError, Limits, Sink};

pub use kit::Kit;
pub use toolchain::{Target, ToolFailure, Toolchain};

/// Why a compile could not start or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no server kit at {}: chartreg-build compiles the server from the kit its release archive installs beside it (share/chartreg/kit); give --kit DIR or set CHARTREG_KIT (in chartreg's own tree: scripts/make-kit.sh DIR)",
        looked.display()
    )]
    NoKit { looked: PathBuf },
    #[error(
        "{} is not a whole server kit: {missing} is missing (write it again with scripts/make-kit.sh, or unpack the release archive again)",
        kit.display()
    )]
    BrokenKit { kit: PathBuf, missing: &'static str },
    #[error("{}: `{id}` is not a kit id (VERSION-HEX)", file.display())]
    BadKitId { file: PathBuf, id: String },
    #[error(
        "{} does not run ({why}): compiling the server needs a Rust toolchain (cargo and rustc, 1.85 or later; https://rustup.rs, or the builder image), found on the PATH or named by $CARGO and $RUSTC",
        tool.display()
    )]
    NoRust { tool: PathBuf, why: ToolFailure },
    #[error(
        "the Rust standard library for {target} is not installed ({why}): `rustup target add {target}`, or Debian's Rust (Debian 12, from bookworm-security: dpkg --add-architecture {arch} && apt-get update && apt-get install rustc-web libstd-rust-web-dev:{arch})"
    )]
    NoStd {
        target: &'static str,
        /// The target's Debian architecture.
        arch: &'static str,
        why: ToolFailure,
    },
    #[error(
        "no C compiler `{}` to link the server ({why}): install it (Debian: apt-get install {packages})",
        cc.display()
    )]
    NoLinker {
        cc: PathBuf,
        packages: &'static str,
        why: ToolFailure,
    },
    #[error(
        "`{}` has no static C library (libc.a), which the statically linked server needs: install it (Debian: apt-get install {packages})",
        cc.display()
    )]
    NoStaticLibc { cc: PathBuf, packages: &'static str },
    #[error(
        "{} is not a platform the server is built for (linux/amd64, linux/arm64)",
        .0
    )]
    UnknownPlatform(String),
    #[error("{}: not a folder (the content to embed: `chartreg-build pack` writes it)", .0.display())]
    NoContent(PathBuf),
    #[error(
        "no cache folder: give --cache DIR or set CHARTREG_CACHE (neither XDG_CACHE_HOME nor HOME is set)"
    )]
    NoCache,
    #[error("compiling the server: {0}")]
    CargoRun(BoundedError),
    #[error("compiling the server failed ({status}); cargo's messages are above (kit {kit})")]
    Cargo {
        status: std::process::ExitStatus,
        kit: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The binary could not be put in place: the one there is as it was.
    #[error("installing the server: {0}")]
    Install(crate::durable::Error),
}

/// What to compile, from what, and where to.
#[derive(Debug, Clone)]
pub struct Request {
    /// The content folder to embed (what `pack` wrote).
    pub assets: PathBuf,
    /// The binary to write.
    pub out: PathBuf,
    /// The kit folder, if given (else the installed one).
    pub kit: Option<PathBuf>,
    /// The cache folder, if given (else [`cache_dir`]'s default).
    pub cache: Option<PathBuf>,
    pub target: Target,
    /// The fingerprint of the key the image of this binary is signed with (`image
    /// --sign-key`), which the binary shows as its signer; `None`: unsigned.
    pub signer: Option<String>,
}

/// What a compile did.
#[derive(Debug, Clone)]
pub struct Report {
    pub out: PathBuf,
    pub kit: Kit,
    /// The folder cargo compiled into.
    pub target_dir: PathBuf,
    pub toolchain: Toolchain,
    pub elapsed: Duration,
}

/// Where a kit's compiles are cached: `given`, else `$XDG_CACHE_HOME/chartreg`, else
/// `$HOME/.cache/chartreg`; a folder per kit inside (`build-<KIT_ID>`).
pub fn cache_dir(given: Option<&Path>, kit: &Kit) -> Result<PathBuf, Error> {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let root = match given {
        Some(dir) => dir.to_owned(),
        None => env("XDG_CACHE_HOME")
            .map(|d| PathBuf::from(d).join("chartreg"))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache/chartreg")))
            .ok_or(Error::NoCache)?,
    };
    // Absolute: cargo runs in the kit's folder, and would take a relative one from there.
    let root = std::path::absolute(&root).map_err(|source| Error::Io {
        path: root.clone(),
        source,
    })?;
    Ok(root.join(format!("build-{}", kit.id)))
}

/// The bounds of compiling the server: a cold release compile takes ~10 minutes on two cores
/// and a few GiB; the bounds stop a compile that would take the machine (three quarters of
/// its memory) or never end, not a slow one.
fn compile_limits() -> Limits {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                let kb = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
                kb.trim().parse::<u64>().ok()
            })
        })
        .map_or(16 << 30, |kb| kb * 1024);
    Limits {
        time: Duration::from_secs(3 * 60 * 60),
        memory: total / 4 * 3,
        output: 64 << 20,
    }
}

/// Compiles the server with `request.assets` inside and writes it to `request.out`. Cargo's
/// progress goes to stderr as cargo writes it.
pub fn compile(request: &Request) -> Result<Report, Error> {
    let started = Instant::now();
    let assets = request
        .assets
        .canonicalize()
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| Error::NoContent(request.assets.clone()))?;
    let toolchain = Toolchain::for_target(request.target)?;
    let kit = Kit::find(request.kit.as_deref())?;
    let target_dir = cache_dir(request.cache.as_deref(), &kit)?;
    std::fs::create_dir_all(&target_dir).map_err(|source| Error::Io {
        path: target_dir.clone(),
        source,
    })?;
    let triple = request.target.triple();
    let mut cargo = Bounded::new(&toolchain.cargo, compile_limits())
        .args(["build", "--release", "--locked", "--offline"])
        .args([
            "-p",
            "chartreg-bin",
            "--bin",
            "chartreg",
            "--target",
            triple,
        ])
        .current_dir(&kit.dir)
        .env_from_parent_where(toolchain::passes_to_toolchain)
        .env("CHARTREG_ASSETS", &assets)
        // Set either way, so that no CHARTREG_SIGNER of this environment names a signer.
        .env("CHARTREG_SIGNER", request.signer.as_deref().unwrap_or(""))
        .env("CARGO_TARGET_DIR", &target_dir)
        // Intermediate artifacts in the cache too, whatever cargo's configuration says.
        .env("CARGO_BUILD_BUILD_DIR", &target_dir)
        // The target's crates only (with --target, build scripts and proc macros are not).
        .env("CARGO_ENCODED_RUSTFLAGS", "-Ctarget-feature=+crt-static")
        .stdout(Sink::Forward)
        .stderr(Sink::Forward);
    if std::io::stderr().is_terminal() && std::env::var_os("CARGO_TERM_COLOR").is_none() {
        // Its stderr is a pipe to this process, which forwards it to a terminal.
        cargo = cargo.env("CARGO_TERM_COLOR", "always");
    }
    if toolchain.rustc_for_cargo {
        cargo = cargo.env("RUSTC", &toolchain.rustc);
    }
    if toolchain.host != triple {
        // The cross C compiler links, and compiles the target's C code (cc-rs: ring).
        let cc = request.target.c_compiler(&toolchain.host);
        for var in [
            format!(
                "CARGO_TARGET_{}_LINKER",
                triple.to_uppercase().replace('-', "_")
            ),
            format!("CC_{}", triple.replace('-', "_")),
        ] {
            if std::env::var_os(&var).is_none() {
                cargo = cargo.env(var, cc);
            }
        }
    }
    let status = cargo.run().map_err(Error::CargoRun)?.status;
    if !status.success() {
        return Err(Error::Cargo {
            status,
            kit: kit.id.clone(),
        });
    }
    let built = target_dir.join(triple).join("release/chartreg");
    install(&built, &request.out)?;
    Ok(Report {
        out: request.out.clone(),
        kit,
        target_dir,
        toolchain,
        elapsed: started.elapsed(),
    })
}

/// Copies `from` beside `to` (`.<name>.build-new`), fsyncs it, and renames it over `to`,
/// executable, then fsyncs the folder: a running `to` keeps running the file it started from,
/// and `to` is the old binary or the new one, never a part, whatever stops this. `to` is held
/// against other runs while it is written (`crate::durable::Held`); a staged copy a killed run
/// left is replaced.
fn install(from: &Path, to: &Path) -> Result<(), Error> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    let folder = match to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&folder).map_err(io(&folder))?;
    let _held = crate::durable::Held::place(to).map_err(Error::Install)?;
    let name = to
        .file_name()
        .map_or_else(|| "chartreg".into(), |n| n.to_string_lossy().into_owned());
    let staged = folder.join(format!(".{name}.build-new"));
    let copied = (|| {
        if std::fs::symlink_metadata(&staged).is_ok() {
            std::fs::remove_file(&staged)?;
        }
        let mut source = std::fs::File::open(from)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&staged)?;
        std::io::copy(&mut source, &mut file)?;
        file.flush()?;
        file.sync_all()?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755))?;
        // Asked to stop (SIGINT, SIGTERM) while compiling: the old binary stays.
        crate::durable::stop::check().map_err(std::io::Error::other)?;
        std::fs::rename(&staged, to)
    })();
    if let Err(source) = copied {
        let _ = std::fs::remove_file(&staged);
        return Err(Error::Io {
            path: to.to_owned(),
            source,
        });
    }
    crate::durable::sync_dir(&folder).map_err(Error::Install)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary of this machine that runs until it is stopped.
    fn program() -> PathBuf {
        PathBuf::from("/bin/sleep")
    }

    #[test]
    fn a_running_binary_is_replaced_by_one_rename_and_keeps_running() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("chartreg");
        install(&program(), &out).unwrap();
        let mut running = std::process::Command::new(&out).arg("60").spawn().unwrap();
        let other = dir.path().join("other");
        std::fs::write(&other, b"#!/bin/sh\necho new\n").unwrap();
        // Replacing it while it runs: no ETXTBSY, and the new bytes are in place at once.
        install(&other, &out).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&other).unwrap());
        assert!(
            running.try_wait().unwrap().is_none(),
            "the old binary kept running"
        );
        running.kill().unwrap();
        running.wait().unwrap();
        // A staged copy a killed run left is replaced, and nothing is left beside.
        std::fs::write(dir.path().join(".chartreg.build-new"), b"stale").unwrap();
        install(&program(), &out).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["chartreg", "other"]);
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }
}
