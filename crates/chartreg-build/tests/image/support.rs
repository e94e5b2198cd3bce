//! What the image tests share: a static test binary, running `chartreg-build image` and
//! external tools, and reading the layouts, layers and root file systems they write.

use std::borrow::BorrowMut;
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use chartreg_core::tree::read_dir;
use serde_json::Value;

/// A content digest for tests that give `--content-digest`.
pub const CONTENT: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Whether the external `tool` runs: under `CI=true` a missing tool fails the test; elsewhere
/// the test is skipped with a note.
pub fn have(tool: &str) -> bool {
    let runs = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        assert!(
            !ci(),
            "{tool} is missing (CI=true): run scripts/install-tools.sh, which `make test` does"
        );
        eprintln!("SKIPPED: {tool} is not installed; run scripts/install-tools.sh");
    }
    runs
}

/// Whether [`static_elf`]'s programs run here (an x86-64 Linux machine); elsewhere the tests
/// that run one are skipped.
pub fn runs_here() -> bool {
    let runs = cfg!(all(target_arch = "x86_64", target_os = "linux"));
    if !runs {
        eprintln!("SKIPPED: the test binaries are x86-64 Linux programs");
    }
    runs
}

/// A statically linked x86-64 Linux executable: one `PT_LOAD` segment, no interpreter, that
/// writes `message` to stdout and exits 0 whatever its arguments.
pub fn static_elf(message: &[u8]) -> Vec<u8> {
    const BASE: u64 = 0x40_0000;
    const HEADERS: u64 = 64 + 56;
    let len = u32::try_from(message.len()).unwrap();
    let mut code = Vec::new();
    code.extend([0xb8, 1, 0, 0, 0]); // mov eax, 1 (write)
    code.extend([0xbf, 1, 0, 0, 0]); // mov edi, 1 (stdout)
    code.extend([0x48, 0x8d, 0x35, 16, 0, 0, 0]); // lea rsi, [rip + 16]: the message
    code.push(0xba); // mov edx, len
    code.extend(len.to_le_bytes());
    code.extend([0x0f, 0x05]); // syscall
    code.extend([0xb8, 60, 0, 0, 0]); // mov eax, 60 (exit)
    code.extend([0x31, 0xff]); // xor edi, edi
    code.extend([0x0f, 0x05]); // syscall
    assert_eq!(code.len(), 33);
    let size = HEADERS + code.len() as u64 + message.len() as u64;

    let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    elf.extend([0; 8]);
    elf.extend(2u16.to_le_bytes()); // ET_EXEC
    elf.extend(62u16.to_le_bytes()); // EM_X86_64
    elf.extend(1u32.to_le_bytes());
    elf.extend((BASE + HEADERS).to_le_bytes()); // entry
    elf.extend(64u64.to_le_bytes()); // program headers
    elf.extend(0u64.to_le_bytes()); // no section headers
    elf.extend(0u32.to_le_bytes());
    for half in [64u16, 56, 1, 64, 0, 0] {
        elf.extend(half.to_le_bytes());
    }
    elf.extend(1u32.to_le_bytes()); // PT_LOAD
    elf.extend(5u32.to_le_bytes()); // R+X
    elf.extend(0u64.to_le_bytes());
    elf.extend(BASE.to_le_bytes());
    elf.extend(BASE.to_le_bytes());
    elf.extend(size.to_le_bytes());
    elf.extend(size.to_le_bytes());
    elf.extend(0x1000u64.to_le_bytes());
    elf.extend(code);
    elf.extend(message);
    elf
}

/// Writes [`static_elf`] of `message` to `path`, executable. `install` writes `path`, not this
/// process: a file this test process held open for writing would be inherited by every child
/// another test thread forks meanwhile, and running it (as `image` does for its content digest)
/// would fail with ETXTBSY until those children exec.
pub fn write_binary(path: &Path, message: &[u8]) -> PathBuf {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap();
    }
    let staged = tempfile::NamedTempFile::new().unwrap();
    fs::write(staged.path(), static_elf(message)).unwrap();
    ok(Command::new("install")
        .args(["-m", "0755"])
        .arg(staged.path())
        .arg(path));
    path.to_owned()
}

/// `chartreg-build image ARGS --no-sbom --no-listing` (the test binaries print no SBOM and no
/// listing; ARGS with `--sbom FILE` or `--listing FILE` attach that one), with none of its
/// settings from this environment.
pub fn image(args: &[&str]) -> Command {
    let mut command = image_asking_sbom(args);
    if !args.contains(&"--sbom") {
        command.arg("--no-sbom");
    }
    if !args.contains(&"--listing") {
        command.arg("--no-listing");
    }
    command
}

/// `chartreg-build image ARGS`: the SBOM and the listing, unless ARGS say otherwise, asked of
/// the host's binary (the real server's `ls --sbom`, `ls --json`).
pub fn image_asking_sbom(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chartreg-build"));
    command.arg("image").args(args);
    for name in [
        "SOURCE_DATE_EPOCH",
        "CHARTREG_IMAGE_OUT",
        "CHARTREG_IMAGE_TAG",
        "CHARTREG_IMAGE_BASE",
        "CHARTREG_IMAGE_REPOSITORY",
        "CHARTREG_SIGN_KEY",
    ] {
        command.env_remove(name);
    }
    command
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `command`, which must succeed; its stdout.
pub fn ok(mut command: impl BorrowMut<Command>) -> String {
    let command = command.borrow_mut();
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed: {}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    text(&out.stdout)
}

/// Runs `command`, which must fail; its output.
pub fn fails(mut command: impl BorrowMut<Command>) -> Output {
    let command = command.borrow_mut();
    let out = command.output().unwrap();
    assert!(
        !out.status.success(),
        "{command:?} succeeded: {}",
        text(&out.stdout)
    );
    out
}

pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

pub fn json(data: &[u8]) -> Value {
    serde_json::from_slice(data).unwrap()
}

pub fn blob(layout: &Path, digest: &Value) -> Vec<u8> {
    let digest = digest.as_str().unwrap();
    let path = layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"));
    fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `index.json`'s one entry, tagged `tag`.
pub fn top(layout: &Path, tag: &str) -> Value {
    let index = json(&fs::read(layout.join("index.json")).unwrap());
    let entries = index["manifests"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{index}");
    assert_eq!(
        entries[0]["annotations"]["org.opencontainers.image.ref.name"],
        tag
    );
    entries[0].clone()
}

/// The manifest and config of a one-platform image.
pub fn manifest_and_config(layout: &Path, tag: &str) -> (Value, Value) {
    let top = top(layout, tag);
    assert_eq!(
        top["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let manifest = json(&blob(layout, &top["digest"]));
    let config = json(&blob(layout, &manifest["config"]["digest"]));
    (manifest, config)
}

/// One tar entry, as the tests compare them.
#[derive(Debug, PartialEq, Eq)]
pub struct TarEntry {
    pub path: String,
    pub kind: tar::EntryType,
    pub mode: u32,
    pub owner: (u64, u64),
    pub names: (String, String),
    pub mtime: u64,
    pub data: Vec<u8>,
}

/// The entries of a gzipped layer.
pub fn layer_entries(gz: &[u8]) -> Vec<TarEntry> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let h = e.header().clone();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            TarEntry {
                path: e.path().unwrap().to_string_lossy().into_owned(),
                kind: h.entry_type(),
                mode: h.mode().unwrap(),
                owner: (h.uid().unwrap(), h.gid().unwrap()),
                names: (
                    h.username().unwrap().unwrap_or("?").to_owned(),
                    h.groupname().unwrap().unwrap_or("?").to_owned(),
                ),
                mtime: h.mtime().unwrap(),
                data,
            }
        })
        .collect()
}

/// Every file under `dir` and its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    read_dir(dir, dir).unwrap()
}

/// The files and folders of an unpacked root file system: path -> (mode, bytes of a file).
pub fn rootfs(dir: &Path) -> BTreeMap<String, (u32, Option<Vec<u8>>)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let key = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                pending.push(path);
                found.insert(key, (mode, None));
            } else {
                found.insert(key, (mode, Some(fs::read(&path).unwrap())));
            }
        }
    }
    found
}

/// `umoci unpack --rootless` of `layout:tag` into `bundle`; the root file system.
pub fn unpack(layout: &Path, tag: &str, bundle: &Path) -> BTreeMap<String, (u32, Option<Vec<u8>>)> {
    ok(Command::new("umoci").args([
        "unpack",
        "--rootless",
        "--image",
        &format!("{}:{tag}", s(layout)),
        s(bundle),
    ]));
    rootfs(&bundle.join("rootfs"))
}
