//! What the binary holds: `chartreg ls` lists it, `chartreg verify` checks it again from the
//! bytes up.
//!
//! `ls`: a row per tag, and one per referrer (signatures, attestations, SBOMs attached by
//! `subject`, which have no tag): repository, tag, kind, platforms, digest, and the bytes a
//! pull downloads; the table ends with the total of distinct bytes (a blob shared by several
//! images counted once), and whether its signature was verified at build (`verified`,
//! `warned`: a failed signature let through by `mode: warn`, `not verified`; `-` for a
//! referrer). With `--json`, a chart version's row carries the images it needs, each held or
//! not, when the content lists them, and every tag's row what verified it at build (`null`:
//! not verified), as its page shows them (`web::model`). Names, tags and platforms come from
//! upstream (content packed before names were checked, imported bundles): the table shows
//! them [`escaped`] and the JSON with such characters in JSON's escapes ([`escaped_json`]), so
//! neither sends a control or bidirectional formatting character to the terminal.
//!
//! `verify`: re-hashes every embedded file, describes the content in full with nothing trusted
//! (no hash from the build, no facts), checks that the facts the binary was built with are
//! the facts of that description (naming where they differ) and that start-up builds its
//! registry from them. Every problem is named; any problem is a non-zero exit.
//!
//! `ls --content-digest`: one digest naming every embedded file ([`content_digest`]), which
//! `make image` puts in the image's tag.

use std::io::{self, Write};

use serde::Serialize;

use chartreg_core::content::{
    BuildFile, Content, Description, HeldFile, Kind, Manifest, Registry, Repository, Unreadable,
};
use chartreg_core::oci::Digest;
use chartreg_core::shown::{escaped, escaped_json};

use crate::web::model::{ImageView, Signed, Verified, chart_parts, images, verified};

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
    /// The images a chart version needs, when the content lists them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<ImageView>>,
    /// A tag's: what verified its signature at build (`null`: not verified). A referrer has
    /// none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<Option<Verified>>,
}

/// Every row of `ls` for `registry`: repositories in catalog order, tags then referrers.
pub fn rows(registry: &Registry) -> Result<Vec<Listed<'_>>, Unreadable> {
    let mut rows = Vec::new();
    for repository in registry.repositories() {
        for tag in repository.tags() {
            // Each tag listed names a stored manifest.
            let Some(manifest) = repository.tagged(tag) else {
                continue;
            };
            let mut listed = row(repository, manifest, Some(tag), None)?;
            if listed.kind == Kind::Chart && registry.has_chart_images() {
                listed.images = chart_images(registry, repository, manifest)?;
            }
            listed.verified = Some(verification(
                registry,
                repository,
                manifest,
                tag,
                listed.kind,
            )?);
            rows.push(listed);
        }
        for (subject, manifest) in repository.referring() {
            rows.push(row(repository, manifest, None, Some(subject))?);
        }
    }
    Ok(rows)
}

/// The images the chart `manifest` needs, by the version its metadata names.
fn chart_images(
    registry: &Registry,
    repository: &Repository,
    manifest: &Manifest,
) -> Result<Option<Vec<ImageView>>, Unreadable> {
    let Some(parts) = chart_parts(repository, manifest)? else {
        return Ok(None);
    };
    let version = parts.metadata.get("version").and_then(|v| v.as_str());
    Ok(version.and_then(|version| images(registry, repository.name(), version)))
}

/// What verified the version `tag` names at build: a chart by its version and package, as
/// its page finds it.
fn verification(
    registry: &Registry,
    repository: &Repository,
    manifest: &Manifest,
    tag: &str,
    kind: Kind,
) -> Result<Option<Verified>, Unreadable> {
    if !registry.has_verification() {
        return Ok(None);
    }
    if kind != Kind::Chart {
        let signed = Signed::Tag {
            tag,
            digest: &manifest.digest,
        };
        return Ok(verified(registry, repository.name(), signed));
    }
    let Some(parts) = chart_parts(repository, manifest)? else {
        return Ok(None);
    };
    let version = parts.metadata.get("version").and_then(|v| v.as_str());
    Ok(version.and_then(|version| {
        let signed = Signed::Chart {
            version,
            package: &parts.package.digest,
        };
        verified(registry, repository.name(), signed)
    }))
}

/// What a table row says of a version's signature.
fn verified_word(row: &Listed<'_>) -> &'static str {
    match &row.verified {
        None => "-",
        Some(None) => "not verified",
        Some(Some(v)) if !v.by.is_empty() => "verified",
        Some(Some(_)) => "warned",
    }
}

fn row<'a>(
    repository: &'a Repository,
    manifest: &'a Manifest,
    tag: Option<&'a str>,
    subject: Option<&'a Digest>,
) -> Result<Listed<'a>, Unreadable> {
    let artifact = repository.artifact(manifest, tag)?;
    Ok(Listed {
        repository: repository.name(),
        tag,
        digest: manifest.digest.as_str(),
        size: repository.pull_size(manifest)?,
        kind: artifact.kind,
        platforms: artifact.platforms,
        subject: subject.map(Digest::as_str),
        artifact_type: artifact.artifact_type,
        images: None,
        verified: None,
    })
}

/// Writes the rows as JSON (what `ls --json` prints), escaped as [`escaped_json`] escapes.
pub fn write_json(out: &mut impl Write, rows: &[Listed<'_>]) -> io::Result<()> {
    let json = serde_json::to_string_pretty(rows).map_err(io::Error::from)?;
    writeln!(out, "{}", escaped_json(&json))
}

/// Writes the rows as a table, with the total of distinct bytes; each cell [`escaped`] before
/// the columns are measured.
pub fn write_table(out: &mut impl Write, rows: &[Listed<'_>], total: u64) -> io::Result<()> {
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let platforms = if r.platforms.is_empty() {
                "-".to_owned()
            } else {
                r.platforms.join(",")
            };
            [
                r.repository,
                r.tag.unwrap_or("-"),
                r.kind.as_str(),
                platforms.as_str(),
            ]
            .map(|cell| escaped(cell).into_owned())
        })
        .collect();
    let width = |column: usize, title: &str| {
        cells
            .iter()
            .filter_map(|c| c.get(column))
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(title.len())
    };
    let (wr, wt, wk, wp) = (
        width(0, "REPOSITORY"),
        width(1, "TAG"),
        width(2, "KIND"),
        width(3, "PLATFORMS"),
    );
    let ws = rows
        .iter()
        .map(|r| r.size.to_string().len())
        .max()
        .unwrap_or(0)
        .max("SIZE".len());
    writeln!(
        out,
        "{:wr$}  {:wt$}  {:wk$}  {:wp$}  {:71}  {:ws$}  VERIFIED",
        "REPOSITORY", "TAG", "KIND", "PLATFORMS", "DIGEST", "SIZE"
    )?;
    for (r, [repository, tag, kind, platforms]) in rows.iter().zip(&cells) {
        writeln!(
            out,
            "{repository:wr$}  {tag:wt$}  {kind:wk$}  {platforms:wp$}  {:71}  {:ws$}  {}",
            escaped(r.digest),
            r.size,
            verified_word(r)
        )?;
    }
    writeln!(
        out,
        "TOTAL  {total} bytes (each blob and manifest counted once)"
    )
}

/// Everything `verify` found wrong, each naming what it is about.
pub fn verify(content: &Content) -> Vec<String> {
    verify_all(content).0
}

/// Everything `verify` found wrong, and how many records of what the build verified were
/// checked again (`None`: the content records none).
pub fn verify_all(content: &Content) -> (Vec<String>, Option<usize>) {
    let mut problems = Vec::new();
    let mut rechecked = None;
    // 1. Every file, hashed again from its bytes.
    let mut files = Vec::with_capacity(content.files.len());
    for file in &content.files {
        let hash = chartreg_core::oci::sha256(&file.data);
        let actual = Digest::from_sha256(hash);
        if file.sha256 != hash {
            problems.push(format!(
                "{}: its bytes are {actual}, not what the build recorded ({})",
                file.path,
                Digest::from_sha256(file.sha256)
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
        files.push(BuildFile::held(file.path.as_ref(), file.data.clone(), hash));
    }
    // 2. The content described in full, trusting nothing.
    let description = Description::of(&files);
    if let Some(refused) = description.refusal() {
        problems.push(refused.to_string());
        return (problems, rechecked);
    }
    // 3. The build-time facts are that description's, and start-up serves from them.
    match description.differences(&content.facts) {
        Ok(differences) => problems.extend(
            differences
                .into_iter()
                .map(|d| format!("the build-time facts do not match the content: {d}")),
        ),
        Err(e) => problems.push(e.to_string()),
    }
    match Registry::from_facts(&content.facts, &content.files) {
        // 4. The signatures the build verified, checked again against the embedded policy.
        Ok(registry) => {
            if let Some(done) = crate::recheck::signatures(&content.files, &registry) {
                problems.extend(done.problems);
                rechecked = Some(done.records);
            }
        }
        Err(e) => problems.push(format!("start-up refuses the content: {e}")),
    }
    (problems, rechecked)
}

/// The content digest: the sha256 of one line per embedded file, `<sha256 hex>  <path>` ended
/// by a NUL byte, in byte order of the paths; the lines `sha256sum -z` prints for the files of
/// the folder the build embedded (its top-level entries starting with `.` are not content), so
/// that the same files give the same digest however they were built, and any changed, added
/// or removed file another. Each file's sha256 is the one the build recorded (`verify` checks
/// those against the bytes), so that nothing is hashed again.
pub fn content_digest(files: &[HeldFile]) -> Digest {
    chartreg_core::content::content_digest(files.iter().map(|f| (f.path.as_ref(), f.sha256)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn file(path: &'static str, data: &'static [u8]) -> HeldFile {
        HeldFile::new(path, data)
    }

    /// `a/b` = "one", `c` = "two": what `sha256sum -z` prints for such a folder, hashed
    /// (`find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum -z | sha256sum`).
    const A_B_C: &str = "sha256:5d44e875302d0c86b4f5cbdcdfd771ce6687c05fa911a90624a89637a552fd99";

    #[rstest]
    #[case::sha256sum_of_the_folder(vec![file("a/b", b"one"), file("c", b"two")], A_B_C)]
    #[case::in_any_order(vec![file("c", b"two"), file("a/b", b"one")], A_B_C)]
    #[case::recorded_sha256_used(
        vec![
            HeldFile::with_sha256("a/b", &b"not read"[..], chartreg_core::oci::sha256(b"one")),
            file("c", b"two"),
        ],
        A_B_C
    )]
    #[case::nothing(vec![], "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")]
    fn content_digest_is_sha256sum_of_the_files(
        #[case] files: Vec<HeldFile>,
        #[case] expected: &str,
    ) {
        assert_eq!(content_digest(&files).as_str(), expected);
    }

    /// A row whose repository, tag, platform and image hold a screen clear, a bell, a CSI and a
    /// right-to-left override (content packed before names were checked, or imported from a
    /// bundle).
    fn hostile_row() -> Listed<'static> {
        Listed {
            repository: "charts/ctl\u{1b}[2J",
            tag: Some("1.0.0\u{7}"),
            digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            size: 7,
            kind: Kind::Chart,
            platforms: vec!["linux/amd64\u{202e}".to_owned()],
            subject: None,
            artifact_type: None,
            images: Some(vec![ImageView {
                image: "quay.io/x\u{9b}y:1".to_owned(),
                repository: "quay.io/x".to_owned(),
                held: true,
                from: Vec::new(),
            }]),
            verified: Some(None),
        }
    }

    fn hidden(c: char) -> bool {
        (c.is_control() && c != '\n') || c == '\u{202e}'
    }

    #[test]
    fn the_table_shows_control_characters_written_out_and_aligned() {
        let mut out = Vec::new();
        write_table(&mut out, &[hostile_row()], 7).unwrap();
        let table = String::from_utf8(out).unwrap();
        assert!(!table.contains(hidden), "{table:?}");
        let lines: Vec<&str> = table.lines().collect();
        let row = lines[1];
        assert!(
            row.starts_with("charts/ctl\\u{1b}[2J  1.0.0\\u{7}  chart  linux/amd64\\u{202e}  "),
            "{row}"
        );
        assert_eq!(lines[0].find("TAG"), row.find("1.0.0"), "{table}");
        assert_eq!(lines[0].find("DIGEST"), row.find("sha256:"), "{table}");
    }

    #[test]
    fn the_json_keeps_the_values_with_no_raw_control_character() {
        let mut out = Vec::new();
        write_json(&mut out, &[hostile_row()]).unwrap();
        let json = String::from_utf8(out).unwrap();
        assert!(!json.contains(hidden), "{json:?}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back[0]["repository"], "charts/ctl\u{1b}[2J");
        assert_eq!(back[0]["platforms"][0], "linux/amd64\u{202e}");
        assert_eq!(back[0]["images"][0]["image"], "quay.io/x\u{9b}y:1");
    }

    #[rstest]
    #[case::bytes_changed(vec![file("a/b", b"one!"), file("c", b"two")])]
    #[case::renamed(vec![file("a/bb", b"one"), file("c", b"two")])]
    #[case::file_added(vec![file("a/b", b"one"), file("c", b"two"), file("d", b"")])]
    #[case::file_removed(vec![file("a/b", b"one")])]
    #[case::bytes_moved_between_files(vec![file("a/b", b"two"), file("c", b"one")])]
    fn any_change_changes_the_content_digest(#[case] files: Vec<HeldFile>) {
        assert_ne!(content_digest(&files).as_str(), A_B_C);
    }
}
