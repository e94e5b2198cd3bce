//! The crates linked into the binary, with the real edges between them, from one resolve:
//! `cargo tree -p chartreg-bin --target TARGET -e normal,no-proc-macro --prefix depth`, run
//! offline and locked. Normal edges only: no dev-dependencies (so nothing the build itself did
//! not download is needed, unlike `cargo metadata`), no build-dependencies, no proc-macros and
//! nothing reached only through them; for the target being built (a cross build lists what
//! is linked for its target). Features are those of `cargo build -p chartreg-bin`.
//!
//! 1. `cargo tree` prints each package as `DEPTH` `LICENCE` TAB `NAME vVERSION [(SOURCE)]`, a
//!    package it printed before followed by ` (*)` without its dependencies again;
//! 2. each line's parent is the nearest line above it one level up: the edges are read off
//!    that way, and a package is known by its whole `NAME vVERSION (SOURCE)` text;
//! 3. the packages are sorted (name, version, source) and each edge becomes an index.
//!
//! `crates.json` (what `chartreg::this_build` reads) and the `.dep-v0` section (module
//! `auditable`) are both written from the [`Linked`] list this returns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Why the crates linked in cannot be listed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot list the crates linked in: cargo tree {0}")]
    Tree(#[from] crate::RunError),
    #[error("cannot list the crates linked in: cargo tree {0}")]
    Printed(&'static str),
    #[error("cannot list the crates linked in: cargo tree printed `{line}`: {reason}")]
    Line { line: String, reason: &'static str },
}

/// Where a crate came from, as cargo-auditable names sources.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// crates.io (cargo prints no source for it).
    #[serde(rename = "crates.io")]
    CratesIo,
    /// A path on the building machine (this workspace's own crates).
    Local,
    /// A git repository.
    Git,
    /// Another registry.
    Registry,
}

/// One crate linked into the binary.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Linked {
    pub name: String,
    pub version: String,
    /// As the crate declares it; `None` when it names a licence file only.
    pub license: Option<String>,
    pub source: Source,
    /// What cargo says of the source beyond its kind: a git URL and commit, a registry's
    /// name, a local crate's folder relative to the workspace (`crates/server`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The crate being built (`chartreg-bin`): exactly one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub root: bool,
    /// Indices of the crates it depends on, in this list.
    pub dependencies: Vec<usize>,
}

/// The crates `cargo` (the build's own) finds linked into this package for `target`.
pub fn linked(cargo: &Path, manifest_dir: &Path, target: &str) -> Result<Vec<Linked>, Error> {
    let mut command = std::process::Command::new(cargo);
    command
        .args(["tree", "--offline", "--locked", "-p", "chartreg-bin"])
        .args(["-e", "normal,no-proc-macro", "--prefix", "depth"])
        .args(["--charset", "ascii", "--color", "never"])
        .args(["--format", "{l}\t{p}", "--target"])
        .arg(target)
        .arg("--manifest-path")
        .arg(manifest_dir.join("Cargo.toml"))
        .current_dir(manifest_dir);
    // About 30 KB here; 64 MiB and 120 s are far beyond any.
    let printed = crate::bounded_output(
        command,
        64 * 1024 * 1024,
        std::time::Duration::from_secs(120),
    )?;
    let printed =
        String::from_utf8(printed).map_err(|_| Error::Printed("printed what is not UTF-8"))?;
    parse(&printed, manifest_dir)
}

/// One line of `cargo tree`, read.
struct Line<'a> {
    depth: usize,
    license: &'a str,
    /// `NAME vVERSION [(SOURCE)]`: the package's identity.
    package: &'a str,
    repeated: bool,
}

fn line(text: &str) -> Result<Line<'_>, &'static str> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (depth, rest) = text.split_at(digits);
    let depth = depth.parse().map_err(|_| "no depth")?;
    let (license, package) = rest.split_once('\t').ok_or("no tab after the licence")?;
    let (package, repeated) = match package.strip_suffix(" (*)") {
        Some(package) => (package, true),
        None => (package, false),
    };
    Ok(Line {
        depth,
        license,
        package,
        repeated,
    })
}

/// A package's `NAME vVERSION [(SOURCE)]` as its parts.
fn package(
    text: &str,
    manifest_dir: &Path,
) -> Result<(String, String, Source, Option<String>), &'static str> {
    let (name, rest) = text.split_once(" v").ok_or("no ` v` after the name")?;
    let (version, source) = match rest.split_once(' ') {
        Some((version, source)) => (version, Some(source)),
        None => (rest, None),
    };
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !name_ok {
        return Err("not a crate name");
    }
    if version.is_empty()
        || !version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
    {
        return Err("not a version");
    }
    let (source, location) = match source {
        None => (Source::CratesIo, None),
        Some(said) => {
            let said = said
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or("a source not in parentheses")?;
            if let Some(registry) = said.strip_prefix("registry ") {
                (
                    Source::Registry,
                    Some(registry.trim_matches('`').to_owned()),
                )
            } else if Path::new(said).is_absolute() {
                let relative = Path::new(said)
                    .strip_prefix(manifest_dir)
                    .ok()
                    .map(|p| p.display().to_string())
                    .filter(|p| !p.is_empty());
                (Source::Local, relative)
            } else if said.contains('#') {
                (Source::Git, Some(said.to_owned()))
            } else {
                return Err("a source that is no path, git repository or registry");
            }
        }
    };
    Ok((name.to_owned(), version.to_owned(), source, location))
}

/// `printed`, `cargo tree`'s answer, as the sorted list of packages (see the module's steps).
fn parse(printed: &str, manifest_dir: &Path) -> Result<Vec<Linked>, Error> {
    let bad = |text: &str, reason| Error::Line {
        line: text.to_owned(),
        reason,
    };
    let mut licenses: BTreeMap<&str, &str> = BTreeMap::new();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut path: Vec<&str> = Vec::new();
    let mut root = None;
    for text in printed.lines().filter(|l| !l.trim().is_empty()) {
        let read = line(text).map_err(|reason| bad(text, reason))?;
        if read.depth > path.len() {
            return Err(bad(text, "deeper than the line before allows"));
        }
        path.truncate(read.depth);
        match path.last() {
            Some(parent) => {
                edges.entry(parent).or_default().insert(read.package);
            }
            None if root.is_none() => root = Some(read.package),
            None => return Err(bad(text, "a second package at depth 0")),
        }
        licenses.insert(read.package, read.license);
        edges.entry(read.package).or_default();
        if !read.repeated {
            path.push(read.package);
        }
    }
    let root = root.ok_or(Error::Printed("printed no package"))?;
    let mut parsed = Vec::with_capacity(licenses.len());
    for (&text, &license) in &licenses {
        let (name, version, source, location) =
            package(text, manifest_dir).map_err(|reason| bad(text, reason))?;
        parsed.push((text, name, version, source, location, license));
    }
    parsed.sort_by(|a, b| (&a.1, &a.2, &a.3, &a.4).cmp(&(&b.1, &b.2, &b.3, &b.4)));
    let index: BTreeMap<&str, usize> = parsed.iter().enumerate().map(|(at, p)| (p.0, at)).collect();
    Ok(parsed
        .into_iter()
        .map(|(text, name, version, source, location, license)| Linked {
            name,
            version,
            license: Some(license.trim().to_owned()).filter(|l| !l.is_empty()),
            source,
            location,
            root: text == root,
            dependencies: edges
                .get(text)
                .into_iter()
                .flatten()
                .filter_map(|d| index.get(d).copied())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        })
        .collect())
}
