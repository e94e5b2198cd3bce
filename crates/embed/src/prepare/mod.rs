//! What the server's build script does with the content folder, in one pass ([`run`]):
//!
//! 1. Walk the folder (following symbolic links; entries at its top whose names start with
//!    `.`, the build tool's record and `.gitignore`, are not content).
//! 2. Each file smaller than the threshold is read, hashed and hard-linked into a mirror
//!    folder for rust-embed (`$OUT_DIR/embed`); a file with the same bytes as one before it
//!    is listed as an alias of it instead (`aliases.rs`), so a shared blob is embedded once.
//! 3. Each larger file is hashed as a stream (or its hash remembered from the last build, see
//!    [`hashes`]) and needs the object of its digest, `$OUT_DIR/objects/<hex>.o`: kept from an
//!    earlier build, or streamed now ([`object`]). Objects no file needs any more are removed.
//!    `linked.rs` lists each such file with its symbol and sha256; a file whose bytes another
//!    has names the same object.
//! 4. The content is described with the binary's own loader (`chartreg-core`'s
//!    `Description`), large files by path, size and sha256 (read only if they are manifests),
//!    and the description is written down as `facts.bin`, from which the binary builds its
//!    registry at start-up. Content that cannot be served is written down as that (the file
//!    and the problem) and gets a warning here; the binary refuses it at start-up, naming the
//!    file.
//!
//! Memory stays at the small files plus one 1 MiB piece, whatever the large files add up to.

mod hashes;
pub mod object;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::content::{BuildFile, Description, FactsError};
use chartreg_core::oci;

use hashes::Hashes;

/// Why the content folder cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0}: file names must be UTF-8")]
    NotUtf8(PathBuf),
    #[error("{0}: a symbolic link loops back to a folder above it")]
    Loop(PathBuf),
    #[error(transparent)]
    Facts(#[from] FactsError),
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// What to prepare, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The content folder.
    pub folder: PathBuf,
    /// Where the mirror, objects, lists and facts go (`$OUT_DIR`).
    pub out_dir: PathBuf,
    /// Which files are linked as objects, and for what; `None`: none is (targets the objects
    /// are not written for).
    pub link: Option<Link>,
}

/// Large files linked as objects: those of `threshold` bytes and more, written for `machine`
/// (the target's).
#[derive(Debug, Clone, Copy)]
pub struct Link {
    pub threshold: u64,
    pub machine: object::Machine,
}

/// What was prepared.
#[derive(Debug)]
pub struct Prepared {
    /// The folder rust-embed embeds.
    pub mirror: PathBuf,
    /// The objects to link, in digest order.
    pub objects: Vec<PathBuf>,
    /// Problems with the content (the binary will refuse it at start-up).
    pub warnings: Vec<String>,
    /// Large files hashed (the others' hashes were remembered).
    pub hashed: usize,
    /// Objects written by this build (the others were kept from an earlier one).
    pub written: usize,
    /// The content's digest (`chartreg_core::content::content_digest` of every file embedded).
    pub content_digest: chartreg_core::oci::Digest,
}

/// One large file: its path in the content, its file, size and sha256.
struct Linked {
    relative: String,
    file: PathBuf,
    size: u64,
    sha256: [u8; 32],
}

/// Prepares `options.folder` for embedding (see the module's documentation).
pub fn run(options: &Options) -> Result<Prepared, Error> {
    let out = &options.out_dir;
    let mirror = out.join("embed");
    if mirror.exists() {
        fs::remove_dir_all(&mirror).map_err(at(&mirror))?;
    }
    fs::create_dir_all(&mirror).map_err(at(&mirror))?;
    let mut files = Vec::new();
    walk(&options.folder, &mut files)?;
    files.sort();

    let record = out.join("hashes");
    let mut hashes = Hashes::load(&record);
    let mut content = Vec::with_capacity(files.len());
    let mut linked = Vec::new();
    let mut aliases = String::from("&[\n");
    // The first path of each distinct small file.
    let mut first_with: HashMap<[u8; 32], String> = HashMap::new();
    for file in files {
        let relative = relative(&options.folder, &file)?;
        if relative.starts_with('.') {
            continue;
        }
        let metadata = fs::metadata(&file).map_err(at(&file))?;
        let size = metadata.len();
        if options.link.is_some_and(|l| size >= l.threshold) {
            let sha256 = hashes.sha256(&file, &metadata).map_err(at(&file))?;
            content.push(BuildFile::on_disk(
                relative.clone(),
                file.clone(),
                size,
                sha256,
            ));
            linked.push(Linked {
                relative,
                file,
                size,
                sha256,
            });
            continue;
        }
        let data = fs::read(&file).map_err(at(&file))?;
        let sha256 = oci::sha256(&data);
        content.push(BuildFile::held(relative.clone(), data, sha256));
        if let Some(first) = first_with.get(&sha256) {
            let _ = writeln!(aliases, "    ({relative:?}, {first:?}),");
            continue;
        }
        first_with.insert(sha256, relative.clone());
        let target = mirror.join(&relative);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(at(parent))?;
        }
        // A link to the file itself (a symbolic link's target), else a copy.
        let real = file.canonicalize().map_err(at(&file))?;
        if fs::hard_link(&real, &target).is_err() {
            fs::copy(&real, &target).map_err(at(&file))?;
        }
    }
    hashes.save(&record).map_err(at(&record))?;
    aliases.push(']');
    write(&out.join("aliases.rs"), aliases)?;

    // (Without linking, no file is linked: the machine names no object written.)
    let machine = options.link.map_or(object::Machine::X86_64, |l| l.machine);
    let (objects, written) = objects(&out.join("objects"), &linked, machine)?;
    write(&out.join("linked.rs"), linked_list(&linked))?;
    let (facts, warnings) = facts(&content)?;
    write(&out.join("facts.bin"), facts)?;
    let content_digest =
        chartreg_core::content::content_digest(content.iter().map(|f| (f.path.as_str(), f.sha256)));
    Ok(Prepared {
        mirror,
        objects,
        warnings,
        hashed: hashes.hashed,
        written,
        content_digest,
    })
}

/// The linker arguments for `objects`, linked for `machine`.
///
/// x86-64: the objects, the large sections after `.bss`, and `_end` at their start. Static
/// glibc reaches `_end` with a 32-bit PC-relative reference (its early allocator starts
/// there), which the large sections would put out of range; the first linked section is
/// page-aligned, so `_end` is too and that allocator maps its own pages instead of using the
/// rest of the last one. Needs LLD (rustc's linker for this target since Rust 1.90); GNU ld
/// holds every input in memory (5.1 GB for 5 GiB, measured).
///
/// AArch64: the objects alone. Their `.rodata.chartreg` sections join `.rodata`, between the
/// code and `.eh_frame`, whose 32-bit PC-relative references (`R_AARCH64_PREL32`) reach the
/// code within ±2 GiB: the content stays under 2 GiB (1.06 GiB links, 2.1 GiB does not,
/// measured). The linker is the target's C compiler's (GNU ld), which holds every input in
/// memory while it links.
pub fn link_args(objects: &[PathBuf], machine: object::Machine) -> Vec<String> {
    if objects.is_empty() {
        return Vec::new();
    }
    let mut args: Vec<String> = objects.iter().map(|o| o.display().to_string()).collect();
    if machine == object::Machine::X86_64 {
        args.push("-Wl,-z,lrodata-after-bss".to_owned());
        args.push("-Wl,--defsym=_end=ADDR(.lrodata)".to_owned());
    }
    args
}

/// The object of every distinct large file in `folder`, kept or written; objects of files no
/// longer there are removed. Returns them, and how many were written.
fn objects(
    folder: &Path,
    linked: &[Linked],
    machine: object::Machine,
) -> Result<(Vec<PathBuf>, usize), Error> {
    fs::create_dir_all(folder).map_err(at(folder))?;
    let mut needed: BTreeMap<String, &Linked> = BTreeMap::new();
    for file in linked {
        needed.entry(hex::encode(file.sha256)).or_insert(file);
    }
    for entry in fs::read_dir(folder).map_err(at(folder))? {
        let entry = entry.map_err(at(folder))?;
        let name = entry.file_name();
        let keep = name
            .to_str()
            .and_then(|n| n.strip_suffix(".o"))
            .is_some_and(|hex| needed.contains_key(hex));
        if !keep {
            fs::remove_file(entry.path()).map_err(at(&entry.path()))?;
        }
    }
    let mut objects = Vec::with_capacity(needed.len());
    let mut written = 0;
    for (hex, file) in needed {
        let path = folder.join(format!("{hex}.o"));
        // An object is renamed into place only once whole, so one that exists is whole.
        let kept = fs::metadata(&path).is_ok_and(|m| m.len() > file.size);
        if !kept {
            let partial = folder.join(format!("{hex}.partial"));
            object::write(&file.file, file.size, &file.sha256, machine, &partial)
                .map_err(at(&file.file))?;
            fs::rename(&partial, &path).map_err(at(&path))?;
            written += 1;
        }
        objects.push(path);
    }
    Ok((objects, written))
}

/// `linked.rs`: every large file's path, bytes (by its object's symbol) and sha256.
fn linked_list(linked: &[Linked]) -> String {
    let mut list = String::from("&[\n");
    for file in linked {
        let symbol = object::symbol(&hex::encode(file.sha256));
        let _ = writeln!(
            list,
            "    ({:?}, ::chartreg_embed::linked_blob!({symbol:?}, {}), {:?}),",
            file.relative, file.size, file.sha256
        );
    }
    list.push(']');
    list
}

/// The facts of `content` (see `Description`), and the warning that it cannot be served, if it
/// cannot.
fn facts(content: &[BuildFile]) -> Result<(Vec<u8>, Vec<String>), FactsError> {
    let description = Description::of(content);
    let warnings = description
        .refusal()
        .map(|e| format!("the content cannot be served: {e}"))
        .into_iter()
        .collect();
    Ok((description.facts()?, warnings))
}

fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), Error> {
    fs::write(path, contents).map_err(at(path))
}

/// `file`'s path below `folder`, `/`-separated.
fn relative(folder: &Path, file: &Path) -> Result<String, Error> {
    let relative = file.strip_prefix(folder).unwrap_or(file);
    let text = relative
        .to_str()
        .ok_or_else(|| Error::NotUtf8(file.to_owned()))?;
    Ok(text.replace(std::path::MAIN_SEPARATOR, "/"))
}

/// Every file under `dir`, following symbolic links (to the files they name); a link back to
/// a folder being walked is refused rather than followed for ever.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), Error> {
    walk_below(dir, files, &mut Vec::new())
}

fn walk_below(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    walking: &mut Vec<PathBuf>,
) -> Result<(), Error> {
    let real = dir.canonicalize().map_err(at(dir))?;
    if walking.contains(&real) {
        return Err(Error::Loop(dir.to_owned()));
    }
    walking.push(real);
    for entry in fs::read_dir(dir).map_err(at(dir))? {
        let path = entry.map_err(at(dir))?.path();
        if path.is_dir() {
            walk_below(&path, files, walking)?;
        } else {
            files.push(path);
        }
    }
    walking.pop();
    Ok(())
}

#[cfg(test)]
mod tests;
