//! What compiling the server needs on the build machine, checked before cargo runs so that a
//! missing piece is named with the way to get it: cargo and rustc (`$CARGO`, `$RUSTC`, else on
//! the `PATH`), the standard library for the target, and a C compiler driving the linker with
//! the static C library (the server is linked with `crt-static`, so the image needs nothing
//! else).
//!
//! The standard library for the other platform comes from rustup (`rustup target add`) or from
//! Debian's own Rust (`rustc-web` with `libstd-rust-web-dev:ARCH`, in bookworm-security, for
//! every architecture; its rustc is `/usr/bin/rustc`, its sysroot `/usr`). When `$RUSTC` is not
//! set and the rustc on the `PATH` has no library for the target, Debian's is used if it has
//! one ([`Toolchain::for_target`]), and cargo is told so (`RUSTC`).
//!
//! [`Target`] maps the image platforms the server is built for (`linux/amd64`, `linux/arm64`)
//! to Rust target triples and to the C compiler that links for each.

use std::path::{Path, PathBuf};

use crate::bounded::{Bounded, BoundedError, Limits};

use super::Error;

/// A platform the server can be linked statically for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Amd64,
    Arm64,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Amd64, Target::Arm64];

    /// The image platform, `linux/amd64`.
    pub fn platform(self) -> &'static str {
        match self {
            Target::Amd64 => "linux/amd64",
            Target::Arm64 => "linux/arm64",
        }
    }

    /// The Rust target triple.
    pub fn triple(self) -> &'static str {
        match self {
            Target::Amd64 => "x86_64-unknown-linux-gnu",
            Target::Arm64 => "aarch64-unknown-linux-gnu",
        }
    }

    /// The C compiler that links for this target when the host is `host`: `cc` natively, else
    /// Debian's cross compiler name.
    pub fn c_compiler(self, host: &str) -> &'static str {
        if host == self.triple() {
            "cc"
        } else {
            match self {
                Target::Amd64 => "x86_64-linux-gnu-gcc",
                Target::Arm64 => "aarch64-linux-gnu-gcc",
            }
        }
    }

    /// The Debian architecture (`dpkg --print-architecture`).
    fn debian_arch(self) -> &'static str {
        match self {
            Target::Amd64 => "amd64",
            Target::Arm64 => "arm64",
        }
    }

    /// The Debian packages holding that compiler and the static C library.
    fn c_packages(self, host: &str) -> &'static str {
        if host == self.triple() {
            "gcc libc6-dev"
        } else {
            match self {
                Target::Amd64 => "gcc-x86-64-linux-gnu libc6-dev-amd64-cross",
                Target::Arm64 => "gcc-aarch64-linux-gnu libc6-dev-arm64-cross",
            }
        }
    }

    /// The target for the host triple `host`, if the server is built for it.
    pub fn of_triple(host: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.triple() == host)
    }
}

impl std::str::FromStr for Target {
    type Err = Error;

    fn from_str(s: &str) -> Result<Target, Error> {
        Target::ALL
            .into_iter()
            .find(|t| t.platform() == s)
            .ok_or_else(|| Error::UnknownPlatform(s.to_owned()))
    }
}

/// The tools found, each checked to run.
#[derive(Debug, Clone)]
pub struct Toolchain {
    pub cargo: PathBuf,
    pub rustc: PathBuf,
    /// The host's triple (`rustc -vV`).
    pub host: String,
    /// `rustc --version`.
    pub version: String,
    /// Whether cargo is to be given `rustc` as `RUSTC`: it is Debian's, chosen because the one
    /// found first has no standard library for the target.
    pub rustc_for_cargo: bool,
}

/// Debian's rustc (`rustc-web`), whose sysroot `/usr` holds the standard library of each
/// architecture whose `libstd-rust-web-dev` is installed.
pub const DEBIAN_RUSTC: &str = "/usr/bin/rustc";

impl Toolchain {
    /// cargo and rustc, from `$CARGO`/`$RUSTC` or the `PATH`.
    pub fn find() -> Result<Toolchain, Error> {
        Toolchain::with_rustc(tool("RUSTC", "rustc"))
    }

    /// [`Toolchain::find`]'s, checked for `target` ([`Toolchain::check`]); when it has no
    /// standard library for `target` and `$RUSTC` is not set, Debian's rustc
    /// ([`DEBIAN_RUSTC`]) instead if that has one.
    pub fn for_target(target: Target) -> Result<Toolchain, Error> {
        let found = Toolchain::find()?;
        let missing = match found.check(target) {
            Err(e @ Error::NoStd { .. }) => e,
            checked => return checked.map(|()| found),
        };
        let rustc_given = std::env::var_os("RUSTC").is_some_and(|v| !v.is_empty());
        if rustc_given || found.rustc == Path::new(DEBIAN_RUSTC) {
            return Err(missing);
        }
        match Toolchain::with_rustc(PathBuf::from(DEBIAN_RUSTC)) {
            Ok(debian) if debian.has_std(target).is_ok() => {
                debian.check(target)?;
                Ok(Toolchain {
                    rustc_for_cargo: true,
                    ..debian
                })
            }
            _ => Err(missing),
        }
    }

    /// `$CARGO` (else cargo on the `PATH`) with `rustc`, each checked to run.
    fn with_rustc(rustc: PathBuf) -> Result<Toolchain, Error> {
        let cargo = tool("CARGO", "cargo");
        let verbose = run(&rustc, &["-vV"]).map_err(|why| Error::NoRust {
            tool: rustc.clone(),
            why,
        })?;
        run(&cargo, &["--version"]).map_err(|why| Error::NoRust {
            tool: cargo.clone(),
            why,
        })?;
        let field = |name: &str| {
            verbose
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_owned())
        };
        let host = field("host:").ok_or_else(|| Error::NoRust {
            tool: rustc.clone(),
            why: ToolFailure::NoHost(verbose.clone()),
        })?;
        let version = verbose.lines().next().unwrap_or_default().to_owned();
        Ok(Toolchain {
            cargo,
            rustc,
            host,
            version,
            rustc_for_cargo: false,
        })
    }

    /// Whether this rustc has the standard library for `target` (the folder
    /// `rustc --print target-libdir` names holds a `libstd-*`).
    fn has_std(&self, target: Target) -> Result<(), Error> {
        let no_std = |why| Error::NoStd {
            target: target.triple(),
            arch: target.debian_arch(),
            why,
        };
        let libdir = run(
            &self.rustc,
            &["--print", "target-libdir", "--target", target.triple()],
        )
        .map_err(no_std)?;
        let libdir = PathBuf::from(libdir.trim());
        let has_std = std::fs::read_dir(&libdir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
        });
        if !has_std {
            return Err(no_std(ToolFailure::NoLibstd(libdir)));
        }
        Ok(())
    }

    /// Checks that `target` can be compiled and linked statically here.
    pub fn check(&self, target: Target) -> Result<(), Error> {
        self.has_std(target)?;
        let cc = PathBuf::from(target.c_compiler(&self.host));
        let packages = target.c_packages(&self.host);
        run(&cc, &["--version"]).map_err(|why| Error::NoLinker {
            cc: cc.clone(),
            packages,
            why,
        })?;
        // A compiler without the static C library prints the bare name back; one that cannot
        // answer (it ran a moment ago) is taken as one without it: the error names the library.
        let libc = run(&cc, &["-print-file-name=libc.a"]).unwrap_or_default();
        if !Path::new(libc.trim()).is_absolute() {
            return Err(Error::NoStaticLibc { cc, packages });
        }
        Ok(())
    }
}

/// `$VAR` when set, else `name` (found on the `PATH` when run).
fn tool(var: &str, name: &str) -> PathBuf {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(name), PathBuf::from)
}

/// Why a tool of the toolchain did not give what was asked of it.
#[derive(Debug, thiserror::Error)]
pub enum ToolFailure {
    #[error(transparent)]
    Run(BoundedError),
    #[error("{status}: {stderr}")]
    Status {
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("`rustc -vV` printed no host: {0}")]
    NoHost(String),
    #[error("{} holds no libstd", .0.display())]
    NoLibstd(PathBuf),
}

/// The bounds of asking a tool of the toolchain a question (`rustc -vV`, `cc --version`).
const ASK_LIMITS: Limits = Limits {
    time: std::time::Duration::from_secs(60),
    memory: 1024 * 1024 * 1024,
    output: 1024 * 1024,
};

/// Whether the toolchain (cargo, rustc, rustup's proxies, the C compiler cc-rs drives, a
/// compiler cache) is given this process's variable `key`: where they are and how they are
/// set up, nothing else. `CARGO_BUILD_TARGET*`, `CARGO_BUILD_BUILD_DIR` and `RUSTFLAGS` are
/// left out: the compile names its target, folders and flags itself. So are the variables cargo
/// sets for a crate it builds or runs (`CARGO_PKG_*`, `CARGO_MANIFEST_*` ..., present when this
/// tool runs under `cargo run`, a test or a build script): build scripts watch some of them
/// (ring's does), and one that differs from the cache's compile reruns them and recompiles
/// every crate after them.
pub(super) fn passes_to_toolchain(key: &str) -> bool {
    const EXACT: [&str; 12] = [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LC_ALL",
        "TERM",
        "NO_COLOR",
        "TMPDIR",
        "RUSTC_WRAPPER",
        "SOURCE_DATE_EPOCH",
        "RUSTC",
    ];
    const PREFIXES: [&str; 12] = [
        "CARGO_",
        "RUSTUP_",
        "SCCACHE_",
        "CC",
        "CXX",
        "AR",
        "CFLAGS",
        "CXXFLAGS",
        "TARGET_",
        "HOST_",
        "CHARTREG_",
        "XDG_CACHE_HOME",
    ];
    const SET_BY_CARGO: [&str; 4] = [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
    ];
    if key.starts_with("CARGO_BUILD_TARGET")
        || SET_BY_CARGO.iter().any(|p| key.starts_with(p))
        || [
            "CARGO_BUILD_BUILD_DIR",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
        ]
        .contains(&key)
    {
        return false;
    }
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}

/// What `program args` printed on stdout, or why it could not run.
fn run(program: &Path, args: &[&str]) -> Result<String, ToolFailure> {
    let out = Bounded::new(program, ASK_LIMITS)
        .args(args)
        .env_from_parent_where(passes_to_toolchain)
        .run()
        .map_err(ToolFailure::Run)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(ToolFailure::Status {
            status: out.status,
            stderr: stderr.trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("linux/amd64", Some("x86_64-unknown-linux-gnu"))]
    #[case("linux/arm64", Some("aarch64-unknown-linux-gnu"))]
    #[case("linux/arm/v7", None)]
    #[case("windows/amd64", None)]
    fn platforms_map_to_triples(#[case] platform: &str, #[case] triple: Option<&str>) {
        let target = platform.parse::<Target>().ok();
        assert_eq!(target.map(Target::triple), triple);
        if let Some(t) = target {
            assert_eq!(Target::of_triple(t.triple()), Some(t));
        }
    }

    #[rstest]
    #[case("PATH", true)]
    #[case("RUSTUP_TOOLCHAIN", true)]
    #[case("CARGO_HOME", true)]
    #[case("CC_aarch64_unknown_linux_gnu", true)]
    #[case("CARGO_BUILD_TARGET", false)]
    #[case("CARGO_BUILD_TARGET_DIR", false)]
    #[case("CARGO_BUILD_BUILD_DIR", false)]
    #[case("CARGO_PKG_NAME", false)]
    #[case("CARGO_PKG_VERSION_MAJOR", false)]
    #[case("CARGO_MANIFEST_DIR", false)]
    #[case("CARGO_MANIFEST_LINKS", false)]
    #[case("CARGO_CRATE_NAME", false)]
    #[case("CARGO_BIN_EXE_chartreg", false)]
    #[case("CARGO_PRIMARY_PACKAGE", false)]
    #[case("CARGO_TARGET_TMPDIR", false)]
    #[case("CARGO_NET_OFFLINE", true)]
    #[case("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER", true)]
    #[case("RUSTFLAGS", false)]
    #[case("HELM_PLUGINS", false)]
    #[case("KUBECONFIG", false)]
    #[case("LD_PRELOAD", false)]
    fn the_toolchain_is_given_only_its_own_variables(#[case] key: &str, #[case] passed: bool) {
        assert_eq!(passes_to_toolchain(key), passed);
    }

    #[rstest]
    #[case(Target::Arm64, "libstd-rust-web-dev:arm64", "--add-architecture arm64")]
    #[case(Target::Amd64, "libstd-rust-web-dev:amd64", "--add-architecture amd64")]
    fn a_missing_standard_library_names_rustup_and_debians_packages(
        #[case] target: Target,
        #[case] package: &str,
        #[case] architecture: &str,
    ) {
        let message = Error::NoStd {
            target: target.triple(),
            arch: target.debian_arch(),
            why: ToolFailure::NoLibstd(PathBuf::from("/nowhere")),
        }
        .to_string();
        for part in [
            &format!("rustup target add {}", target.triple()),
            "rustc-web",
            package,
            architecture,
        ] {
            assert!(message.contains(part), "{part} in: {message}");
        }
    }

    #[test]
    fn the_native_linker_is_cc_and_a_cross_one_is_named() {
        let host = "x86_64-unknown-linux-gnu";
        assert_eq!(Target::Amd64.c_compiler(host), "cc");
        assert_eq!(Target::Arm64.c_compiler(host), "aarch64-linux-gnu-gcc");
    }
}
