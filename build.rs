//! Chooses the folder the binary embeds, `assets/` by default or `$CHARTREG_ASSETS` (relative to
//! this package) when set, and prepares it for embedding in two ways:
//!
//! - files smaller than `$CHARTREG_LINK_THRESHOLD` bytes (default 1 MiB: every manifest, index
//!   and chart) go through rust-embed, from a mirror of the folder under `$OUT_DIR/embed` made of
//!   hard links (`CHARTREG_EMBED_DIR`);
//! - larger files (big layers) become object files that the linker places in the binary
//!   (include-blob), listed with their sha256 in `$OUT_DIR/linked.rs` for `main.rs`;
//! - a file with the same bytes as one before it (a blob shared by several repositories) is
//!   embedded once: `$OUT_DIR/aliases.rs` lists it as an alias of the first.
//!
//! Entries at the top of the folder whose names start with `.` (the build tool's record and
//! `.gitignore`) are not content and are left out.
//!
//! Why: `include_bytes!`, which rust-embed uses, holds about 12 times a file's size in compiler
//! memory (1 GiB took 12.6 GB and 57 s here), so a few GiB of content cannot be built on an
//! ordinary machine; an object file costs the size of the file twice, in the build script.
//! On ELF targets a linker script moves those objects' sections after `.bss`, out of the way of
//! the 32-bit PC-relative references between code and data: with 2 GiB of blobs among the
//! ordinary read-only data the x86-64 link fails with "relocation R_X86_64_PC32 out of range".
//!
//! Then it loads the content with the same loading code the binary uses (`chartreg-core`, a
//! build-dependency) and writes down what it found, `$OUT_DIR/facts.bin`: with it the
//! binary builds its registry at start-up without reading the content's JSON again (see
//! `content::facts`). Content that cannot be served gets a warning here and empty facts, so the
//! binary still refuses it at start-up, naming the file.
//!
//! Cargo reruns this when anything under the folder changes, including files being added or
//! removed (rust-embed alone only notices changed contents).

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use chartreg_core::content;

const DEFAULT_LINK_THRESHOLD: u64 = 1024 * 1024;

fn main() {
    println!("cargo:rerun-if-env-changed=CHARTREG_ASSETS");
    println!("cargo:rerun-if-env-changed=CHARTREG_LINK_THRESHOLD");
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let chosen = env::var_os("CHARTREG_ASSETS");
    let folder = manifest_dir.join(chosen.as_deref().unwrap_or("assets".as_ref()));
    if !folder.is_dir() {
        panic!(
            "the assets folder {} does not exist; run `make assets` (or point CHARTREG_ASSETS at a folder)",
            folder.display()
        );
    }
    let folder = folder
        .canonicalize()
        .expect("the assets folder can be resolved");
    println!("cargo:rerun-if-changed={}", folder.display());
    let threshold = match env::var("CHARTREG_LINK_THRESHOLD") {
        Ok(value) => value.parse().unwrap_or_else(|_| {
            panic!("CHARTREG_LINK_THRESHOLD must be a number of bytes, not `{value}`")
        }),
        Err(_) => DEFAULT_LINK_THRESHOLD,
    };
    let threshold = if linkable_target() {
        threshold
    } else {
        println!(
            "cargo:warning=include-blob does not know this target: embedding every file with rust-embed"
        );
        u64::MAX
    };
    split_for_embedding(&folder, &out_dir, threshold);
    git_revision(&manifest_dir);
}

/// Mirrors the small files of `folder` into `$OUT_DIR/embed` for rust-embed, turns the large
/// ones into linked objects, and writes `$OUT_DIR/linked.rs`.
fn split_for_embedding(folder: &Path, out_dir: &Path, threshold: u64) {
    let mirror = out_dir.join("embed");
    if mirror.exists() {
        fs::remove_dir_all(&mirror).expect("the previous embed mirror can be removed");
    }
    fs::create_dir_all(&mirror).expect("the embed mirror can be created");
    // Archives include-blob wrote for an earlier content set.
    for entry in fs::read_dir(out_dir)
        .expect("OUT_DIR can be read")
        .flatten()
    {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("libinclude_blob_")
        {
            fs::remove_file(entry.path()).expect("an old archive can be removed");
        }
    }
    let mut files = Vec::new();
    walk(folder, &mut files);
    files.sort();

    let mut linked = String::from("vec![\n");
    let mut aliases = String::from("vec![\n");
    // Every file with its path in the content (the facts match the binary's files by path).
    let mut embedded = Vec::new();
    let mut linked_any = false;
    // The first path of each distinct content: a blob shared by several repositories is
    // embedded once, and the others are aliases of it.
    let mut first_with: HashMap<[u8; 32], String> = HashMap::new();
    for file in files {
        let relative = file
            .strip_prefix(folder)
            .expect("walked from the folder")
            .to_str()
            .unwrap_or_else(|| panic!("{}: file names must be UTF-8", file.display()));
        let relative = relative.replace(std::path::MAIN_SEPARATOR, "/");
        // What the build tool keeps beside the repositories (its record, a `.gitignore`,
        // staging folders) is not content.
        if relative.starts_with('.') {
            continue;
        }
        let size = fs::metadata(&file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .len();
        let sha256 = sha256_of(&file);
        embedded.push((relative.clone(), file.clone(), sha256));
        if let Some(first) = first_with.get(&sha256) {
            writeln!(aliases, "    ({relative:?}, {first:?}),").expect("writing to a String");
            continue;
        }
        first_with.insert(sha256, relative.clone());
        if size < threshold {
            let target = mirror.join(&relative);
            fs::create_dir_all(target.parent().expect("below the mirror"))
                .expect("the embed mirror can be written");
            // Links to the file itself (a symbolic link's target), else a copy.
            let real = file
                .canonicalize()
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if fs::hard_link(&real, &target).is_err() {
                fs::copy(&real, &target).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            }
            continue;
        }
        include_blob::make_includable(&file);
        writeln!(
            linked,
            "    ({relative:?}, include_blob::include_blob!({:?}), {sha256:?}),",
            file.to_str().expect("checked above")
        )
        .expect("writing to a String");
        linked_any = true;
    }
    aliases.push(']');
    fs::write(out_dir.join("aliases.rs"), aliases).expect("aliases.rs can be written");
    linked.push(']');
    fs::write(out_dir.join("linked.rs"), linked).expect("linked.rs can be written");
    println!("cargo:rustc-env=CHARTREG_EMBED_DIR={}", mirror.display());

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if linked_any && matches!(target_os.as_str(), "linux" | "android") {
        let script = out_dir.join("linked-blobs.ld");
        fs::write(
            &script,
            "SECTIONS {\n  .lrodata : { *(.rodata.include_blob_*) }\n} INSERT AFTER .bss;\n",
        )
        .expect("the linker script can be written");
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
    }
    write_facts(&embedded, out_dir);
}

/// Loads `files` (relative path, file, sha256) as the binary will, and writes
/// `$OUT_DIR/facts.bin`: what loading found, or nothing when the content cannot be served or
/// described.
fn write_facts(files: &[(String, PathBuf, [u8; 32])], out_dir: &Path) {
    let files: Vec<content::ContentFile> = files
        .iter()
        .map(|(relative, file, sha256)| {
            let data = fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            content::ContentFile {
                path: relative.clone().into(),
                sha256: Some(*sha256),
                data: data.into(),
            }
        })
        .collect();
    let facts = match content::Registry::from_files(files.clone()) {
        Ok(registry) => registry.facts(&files).unwrap_or_default(),
        Err(e) => {
            println!("cargo:warning=the content cannot be served: {e}");
            Vec::new()
        }
    };
    fs::write(out_dir.join("facts.bin"), facts).expect("facts.bin can be written");
}

/// The targets include-blob writes objects for (it panics on others).
fn linkable_target() -> bool {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    matches!(
        os.as_str(),
        "linux" | "android" | "macos" | "ios" | "windows"
    ) && matches!(
        arch.as_str(),
        "x86"
            | "x86_64"
            | "arm"
            | "aarch64"
            | "riscv32"
            | "riscv64"
            | "mips"
            | "mips64"
            | "powerpc"
            | "powerpc64"
    )
}

/// Every file under `dir`, following symbolic links (to the files they name); a link back to
/// a folder being walked is refused rather than followed for ever.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut walking = Vec::new();
    walk_below(dir, files, &mut walking);
}

fn walk_below(dir: &Path, files: &mut Vec<PathBuf>, walking: &mut Vec<PathBuf>) {
    let real = dir
        .canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    if walking.contains(&real) {
        panic!(
            "{}: a symbolic link loops back to a folder above it",
            dir.display()
        );
    }
    walking.push(real);
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let path = entry.path();
        let kind = entry
            .file_type()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if kind.is_dir() || (kind.is_symlink() && path.is_dir()) {
            walk_below(&path, files, walking);
        } else {
            files.push(path);
        }
    }
    walking.pop();
}

fn sha256_of(file: &Path) -> [u8; 32] {
    let mut reader = fs::File::open(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    loop {
        let n = reader
            .read(&mut buffer)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    hasher.finalize().into()
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
    let output = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(manifest_dir)
        .output()
        .ok()
        .filter(|output| output.status.success());
    if let Some(output) = output {
        let revision = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        println!("cargo:rustc-env=CHARTREG_GIT_REVISION={revision}");
    }
}
