//! What the binary holds: `chartreg ls` lists it, `chartreg verify` checks it again from the
//! bytes up.
//!
//! `ls`: a row per tag, and one per referrer (signatures, attestations, SBOMs attached by
//! `subject`, which have no tag): repository, tag, kind, platforms, digest, and the bytes a
//! pull downloads; the table ends with the total of distinct bytes (a blob shared by several
//! images counted once).
//!
//! `verify`: re-hashes every embedded file, loads the content in full with nothing trusted (no
//! hash from the build, no facts), and compares what start-up builds from the build-time
//! facts with that. Every problem is named; any problem is a non-zero exit.

use std::io::{self, Write};

use serde::Serialize;

use chartreg_core::content::{Content, ContentFile, Kind, Registry, Repository};
use chartreg_core::oci::Digest;

/// One row of `chartreg ls`.
#[derive(Debug, Serialize)]
pub struct Listed<'a> {
    pub repository: &'a str,
    /// `None` for a referrer, which has no tag.
    pub tag: Option<&'a str>,
    pub digest: &'a str,
    /// Bytes a pull downloads: the manifest and everything it references.
    pub size: u64,
    pub kind: Kind,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    /// The manifest a referrer refers to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

/// Every row of `ls` for `registry`: repositories in catalog order, tags then referrers.
pub fn rows(registry: &Registry) -> Vec<Listed<'_>> {
    let mut rows = Vec::new();
    for repository in registry.repositories() {
        for tag in repository.tags() {
            let Some(digest) = repository.tag_digest(tag) else {
                continue;
            };
            rows.push(row(repository, digest, Some(tag), None));
        }
        for (subject, manifest) in repository.referring() {
            rows.push(row(repository, &manifest.digest, None, Some(subject)));
        }
    }
    rows
}

fn row<'a>(
    repository: &'a Repository,
    digest: &'a Digest,
    tag: Option<&'a str>,
    subject: Option<&'a Digest>,
) -> Listed<'a> {
    let manifest = repository.manifest(&chartreg_core::oci::Reference::Digest(digest.clone()));
    let artifact = manifest.map(|m| repository.artifact(m, tag)).ok();
    Listed {
        repository: repository.name(),
        tag,
        digest: digest.as_str(),
        size: repository.pull_size(digest),
        kind: artifact.as_ref().map_or(Kind::Other, |a| a.kind),
        platforms: artifact
            .as_ref()
            .map(|a| a.platforms.clone())
            .unwrap_or_default(),
        subject: subject.map(Digest::as_str),
        artifact_type: artifact.and_then(|a| a.artifact_type),
    }
}

/// Writes the rows as a table, with the total of distinct bytes.
pub fn write_table(out: &mut impl Write, rows: &[Listed<'_>], total: u64) -> io::Result<()> {
    let kind = |r: &Listed| {
        serde_json::to_value(r.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let platforms = |r: &Listed| {
        if r.platforms.is_empty() {
            "-".to_owned()
        } else {
            r.platforms.join(",")
        }
    };
    let width = |f: &dyn Fn(&Listed) -> usize, title: &str| {
        rows.iter().map(f).max().unwrap_or(0).max(title.len())
    };
    let wr = width(&|r| r.repository.len(), "REPOSITORY");
    let wt = width(&|r| r.tag.map_or(1, str::len), "TAG");
    let wk = width(&|r| kind(r).len(), "KIND");
    let wp = width(&|r| platforms(r).len(), "PLATFORMS");
    writeln!(
        out,
        "{:wr$}  {:wt$}  {:wk$}  {:wp$}  {:71}  SIZE",
        "REPOSITORY", "TAG", "KIND", "PLATFORMS", "DIGEST"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:wr$}  {:wt$}  {:wk$}  {:wp$}  {:71}  {}",
            r.repository,
            r.tag.unwrap_or("-"),
            kind(r),
            platforms(r),
            r.digest,
            r.size
        )?;
    }
    writeln!(
        out,
        "TOTAL  {total} bytes (each blob and manifest counted once)"
    )
}

/// Everything `verify` found wrong, each naming what it is about.
pub fn verify(content: &Content) -> Vec<String> {
    let mut problems = Vec::new();
    // 1. Every file, hashed again from its bytes.
    let mut files = Vec::with_capacity(content.files.len());
    for file in &content.files {
        // A binary holds every file (only the build leaves large ones on disk).
        let Some(data) = file.held() else {
            problems.push(format!("{}: not held in the binary", file.path));
            continue;
        };
        let actual = Digest::sha256_of(data);
        if let Some(recorded) = file.sha256
            && Some(recorded) != actual.sha256()
        {
            problems.push(format!(
                "{}: its bytes are {actual}, not what the build recorded ({})",
                file.path,
                Digest::from_sha256(recorded)
            ));
        }
        if let Some((_, name)) = file.path.rsplit_once("/blobs/sha256/")
            && name != actual.encoded()
        {
            problems.push(format!(
                "{}: its bytes are {actual}, not the digest it is stored under",
                file.path
            ));
        }
        files.push(ContentFile::new(file.path.clone(), data.clone()));
    }
    // 2. The content loaded in full, trusting nothing.
    let loaded = match Registry::from_files(files) {
        Ok(registry) => registry,
        Err(e) => {
            problems.push(e.to_string());
            return problems;
        }
    };
    // 3. What start-up serves, from the build's facts, against that.
    match Registry::from_facts(&content.facts, &content.files) {
        Ok(served) => problems.extend(
            served
                .differences(&loaded)
                .into_iter()
                .map(|d| format!("the build-time facts do not match the content: {d}")),
        ),
        Err(stale) if !content.facts.is_empty() => problems.push(stale.to_string()),
        Err(_) => {}
    }
    problems
}
