//! The one walk over a chart package's archive, as Helm's loader walks it, refusing what it
//! refuses and what would make pack and Helm read two different charts:
//! 1. [`gunzip`]: the package decompressed, every gzip member (Go's reader reads them all), at
//!    most a given size (Helm loads at most 100 MiB).
//! 2. Each entry's kind: regular files are read; folders and the pax headers are passed
//!    (GNU long names and local pax headers are the tar crate's); symbolic and hard links,
//!    devices, FIFOs and sparse files are refused by name: `helm package` never writes them,
//!    and Helm's loader would read a link as an empty file where another reader follows it.
//! 3. Each file's path ([`inner_path`]): split as the loader splits it, at `\` when the path
//!    holds one (archives written on Windows), else at `/`, its first part (the chart's folder)
//!    taken off. Refused as the loader refuses them: a path leading out of the chart (a `..`
//!    part, or a path under the folder that starts with `..`), an absolute path, a Windows
//!    drive, a file beside the chart's folder rather than in it, `Chart.yaml` at the top.
//! 4. Each path under the chart's folder once: a second entry for it is refused by name, since
//!    Helm takes the last of them and a reader of the first would see another chart.
//!
//! The number of entries needs no bound of its own: each takes a 512-byte header of the
//! decompressed archive, so 100 MiB holds at most 204,800, and each costs one path here.

use std::collections::HashMap;
use std::io::Read;

use flate2::read::MultiGzDecoder;

use super::ChartError;

/// Helm refuses to load charts that decompress to more than this; so does chartreg.
pub const MAX_DECOMPRESSED: u64 = 100 * 1024 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// One regular file of a chart archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArchiveFile {
    /// Its path under the archive's top folder (the chart's), `/`-separated.
    pub inner: String,
    /// Its bytes, a UTF-8 byte order mark stripped (as Helm's loader strips it).
    pub data: Vec<u8>,
    /// Its tar entry's mtime.
    pub mtime: u64,
}

/// The tar inside `package`, refused when it decompresses to more than `most` bytes
/// ([`ChartError::TooLarge`]; the caller says which bound that was).
pub(crate) fn gunzip(package: &[u8], most: u64) -> Result<Vec<u8>, ChartError> {
    if !package.starts_with(&[0x1f, 0x8b]) {
        return Err(ChartError::NotGzip);
    }
    let mut tar = Vec::new();
    MultiGzDecoder::new(package)
        .take(most.saturating_add(1))
        .read_to_end(&mut tar)
        .map_err(ChartError::Gzip)?;
    if tar.len() as u64 > most {
        return Err(ChartError::TooLarge);
    }
    Ok(tar)
}

/// Whether `part` names a Windows drive (`C:`).
fn drive(part: &str) -> bool {
    matches!(part.as_bytes(), [letter, b':', ..] if letter.is_ascii_alphabetic())
}

/// The path under the top folder of the archive entry `path` (see the module doc), or why the
/// entry is refused.
fn inner_path(path: &str) -> Result<String, ChartError> {
    let entry = || path.to_owned();
    let delimiter = if path.contains('\\') { '\\' } else { '/' };
    if path.starts_with(['/', '\\']) || path.split(delimiter).any(|p| p.starts_with('/')) {
        return Err(ChartError::EntryAbsolute(entry()));
    }
    if drive(path) {
        return Err(ChartError::EntryDrive(entry()));
    }
    let mut parts = path.split(delimiter).filter(|p| !p.is_empty() && *p != ".");
    let top = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts
        .flat_map(|p| p.split('/'))
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if top
        .split('/')
        .chain(rest.iter().copied())
        .any(|p| p == "..")
    {
        return Err(ChartError::EntryParent(entry()));
    }
    let inner = rest.join("/");
    match rest.as_slice() {
        [] if top == "Chart.yaml" => Err(ChartError::ChartYamlAtTop),
        [] => Err(ChartError::EntryOutside(entry())),
        _ if inner.starts_with("..") => Err(ChartError::EntryParent(entry())),
        [first, _, ..] if first.len() == 2 && drive(first) => Err(ChartError::EntryDrive(entry())),
        _ => Ok(inner),
    }
}

/// What an entry that is neither a file nor a folder is, for its refusal.
fn refused_kind(entry: &tar::Entry<'_, &[u8]>) -> String {
    let kind = entry.header().entry_type();
    let target = || {
        entry
            .link_name()
            .ok()
            .flatten()
            .map_or_else(String::new, |t| format!(" to {:?}", t.to_string_lossy()))
    };
    match kind {
        tar::EntryType::Symlink => format!("a symbolic link{}", target()),
        tar::EntryType::Link => format!("a hard link{}", target()),
        tar::EntryType::Char => "a character device".to_owned(),
        tar::EntryType::Block => "a block device".to_owned(),
        tar::EntryType::Fifo => "a FIFO".to_owned(),
        tar::EntryType::GNUSparse => "a sparse file".to_owned(),
        other => format!("an entry of type {:?}", char::from(other.as_byte())),
    }
}

/// Whether a regular entry is a sparse file in pax form (GNU tar's `GNU.sparse.*` keys), whose
/// bytes are a map of holes that Go's reader expands and the tar crate does not.
fn pax_sparse(entry: &mut tar::Entry<'_, &[u8]>) -> Result<bool, ChartError> {
    let not_tar = ChartError::Tar;
    let Some(extensions) = entry.pax_extensions().map_err(not_tar)? else {
        return Ok(false);
    };
    for extension in extensions {
        if extension
            .map_err(not_tar)?
            .key_bytes()
            .starts_with(b"GNU.sparse.")
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The one walk over a chart archive (an uncompressed tar; see [`gunzip`]): its regular files
/// whose path under the top folder `wanted` accepts, in archive order, read whole; every entry
/// checked as the module doc says, wanted or not. The loader's other refusal is kept: an
/// archive with no entries.
pub(crate) fn archive_files(
    tar: &[u8],
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<ArchiveFile>, ChartError> {
    let not_tar = ChartError::Tar;
    let mut archive = tar::Archive::new(tar);
    let mut files = Vec::new();
    // Each path under the top folder, with the entry it came from.
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut entries = 0;
    for entry in archive.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        entries += 1;
        let kind = entry.header().entry_type();
        let name = entry
            .path()
            .map_err(not_tar)?
            .to_string_lossy()
            .into_owned();
        // A folder, written as folders were before tar had a type for them (as Go reads it).
        let old_folder = entry.header().as_old().linkflag == [0] && name.ends_with('/');
        if kind.is_dir() || old_folder || kind.is_pax_global_extensions() {
            continue;
        }
        if !kind.is_file() {
            return Err(ChartError::EntryKind {
                entry: name,
                kind: refused_kind(&entry),
            });
        }
        if pax_sparse(&mut entry)? {
            return Err(ChartError::EntryKind {
                entry: name,
                kind: "a sparse file".to_owned(),
            });
        }
        let inner = inner_path(&name)?;
        if let Some(first) = seen.insert(inner.clone(), name.clone()) {
            return Err(ChartError::EntryTwice {
                entry: name,
                first,
                inner,
            });
        }
        if !wanted(&inner) {
            continue;
        }
        let mut data = Vec::new();
        entry.read_to_end(&mut data).map_err(not_tar)?;
        if data.starts_with(UTF8_BOM) {
            data.drain(..UTF8_BOM.len());
        }
        let mtime = entry.header().mtime().map_err(not_tar)?;
        files.push(ArchiveFile { inner, data, mtime });
    }
    if entries == 0 {
        return Err(ChartError::EmptyArchive);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::{gzip, raw_entry};
    use rstest::rstest;

    #[rstest]
    #[case::slashes("mychart/templates/a.yaml", "templates/a.yaml")]
    #[case::backslashes("mychart\\templates\\a.yaml", "templates/a.yaml")]
    #[case::backslashes_win_over_slashes("mychart\\templates/a.yaml", "templates/a.yaml")]
    #[case::dot_and_empty_parts("./mychart//./Chart.yaml", "Chart.yaml")]
    #[case::dot_and_empty_parts_with_backslashes(".\\mychart\\\\Chart.yaml", "Chart.yaml")]
    #[case::dots_in_names("mychart/a..b/.x..", "a..b/.x..")]
    #[case::colon_in_a_name("mychart/a:b.yaml", "a:b.yaml")]
    fn archive_paths_are_split_as_helm_splits_them(#[case] path: &str, #[case] inner: &str) {
        assert_eq!(inner_path(path).unwrap(), inner);
    }

    #[rstest]
    #[case::at_the_top("Chart.yaml")]
    #[case::after_a_dot("./Chart.yaml")]
    #[case::after_a_dot_with_backslashes(".\\Chart.yaml")]
    fn a_chart_yaml_at_the_top_is_refused(#[case] path: &str) {
        assert!(matches!(inner_path(path), Err(ChartError::ChartYamlAtTop)));
    }

    #[rstest]
    #[case::parent_part("mychart/../x.yaml", "references the parent")]
    #[case::parent_part_deep("evil/../../../../tmp/pwned", "references the parent")]
    #[case::parent_with_backslashes("mychart\\..\\x.yaml", "references the parent")]
    #[case::parent_after_a_backslash("mychart\\a/../../x", "references the parent")]
    #[case::parent_as_top("../mychart/x.yaml", "references the parent")]
    #[case::dotted_name_at_the_start("mychart/..x", "references the parent")]
    #[case::absolute("/tmp/pwned-absolute", "absolute path")]
    #[case::absolute_with_backslashes("\\mychart\\x", "absolute path")]
    #[case::absolute_after_a_backslash("mychart\\/etc/passwd", "absolute path")]
    #[case::drive("C:\\chart\\x.yaml", "Windows drive")]
    #[case::drive_with_slashes("c:/chart/x.yaml", "Windows drive")]
    #[case::drive_under_the_folder("mychart/C:/x.yaml", "Windows drive")]
    #[case::beside_the_folder("README.md", "outside the chart's folder")]
    fn paths_out_of_the_chart_are_refused_naming_the_entry(
        #[case] path: &str,
        #[case] words: &str,
    ) {
        let e = inner_path(path).unwrap_err().to_string();
        assert!(e.contains(words) && e.contains(&format!("{path:?}")), "{e}");
    }

    #[test]
    fn control_characters_in_an_entry_are_shown_escaped() {
        let e = inner_path("evil/../\u{1b}[2Jx").unwrap_err().to_string();
        assert!(e.contains("\\u{1b}[2Jx") && !e.contains('\u{1b}'), "{e}");
    }

    fn tar_of(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut tar = entries.concat();
        tar.extend_from_slice(&[0; 1024]);
        tar
    }

    fn file(name: &str, data: &[u8]) -> Vec<u8> {
        raw_entry(name, b'0', "", data)
    }

    #[test]
    fn the_walk_reads_wanted_files_in_archive_order_boms_stripped() {
        let tar = tar_of(&[
            raw_entry("c/", b'5', "", b""),
            file("c\\Chart.yaml", b"\xEF\xBB\xBFname: c"),
            file("c/values.yaml", b"a: 1"),
            raw_entry("c/old-folder/", b'\0', "", b""),
            file("c/templates/x.yaml", b"x"),
        ]);
        let files = archive_files(&tar, |inner| inner != "values.yaml").unwrap();
        let got: Vec<(&str, &[u8], u64)> = files
            .iter()
            .map(|f| (f.inner.as_str(), f.data.as_slice(), f.mtime))
            .collect();
        assert_eq!(
            got,
            [
                ("Chart.yaml", b"name: c".as_slice(), 7),
                ("templates/x.yaml", b"x".as_slice(), 7)
            ]
        );
    }

    #[rstest]
    #[case::symlink(b'2', "/etc/shadow", "is a symbolic link to \"/etc/shadow\"")]
    #[case::hard_link(b'1', "/etc/shadow", "is a hard link to \"/etc/shadow\"")]
    #[case::char_device(b'3', "", "is a character device")]
    #[case::block_device(b'4', "", "is a block device")]
    #[case::fifo(b'6', "", "is a FIFO")]
    #[case::contiguous(b'7', "", "is an entry of type '7'")]
    #[case::volume_label(b'V', "", "is an entry of type 'V'")]
    fn entries_that_are_not_files_are_refused_by_name(
        #[case] kind: u8,
        #[case] link: &str,
        #[case] words: &str,
    ) {
        let tar = tar_of(&[
            file("evil/Chart.yaml", b"name: evil"),
            raw_entry("evil/templates/x.yaml", kind, link, b""),
        ]);
        // Refused even when not wanted: the entry is part of the chart Helm loads.
        let e = archive_files(&tar, |_| false).unwrap_err().to_string();
        assert!(
            e.contains("\"evil/templates/x.yaml\"") && e.contains(words),
            "{e}"
        );
    }

    #[test]
    fn a_sparse_file_in_pax_form_is_refused() {
        let record = "GNU.sparse.major=1\n";
        let record = format!("{} {record}", record.len() + 3);
        let tar = tar_of(&[
            raw_entry("evil/PaxHeaders/x.yaml", b'x', "", record.as_bytes()),
            file("evil/templates/x.yaml", b"x"),
        ]);
        let e = archive_files(&tar, |_| true).unwrap_err().to_string();
        assert!(e.contains("is a sparse file"), "{e}");
    }

    #[rstest]
    #[case::same_entry("evil/Chart.yaml", "evil/Chart.yaml")]
    #[case::another_top_folder("evil/Chart.yaml", "other/Chart.yaml")]
    #[case::another_spelling("evil/templates/a.yaml", "./evil//templates/./a.yaml")]
    fn a_path_twice_is_refused_naming_both_entries(#[case] first: &str, #[case] second: &str) {
        let tar = tar_of(&[file(first, b"name: a"), file(second, b"name: b")]);
        let e = archive_files(&tar, |_| false).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{second:?}")) && e.contains(&format!("{first:?}")),
            "{e}"
        );
    }

    #[test]
    fn an_empty_archive_is_refused() {
        let tar = tar_of(&[]);
        assert!(matches!(
            archive_files(&tar, |_| true),
            Err(ChartError::EmptyArchive)
        ));
    }

    #[test]
    fn every_gzip_member_is_read_as_go_reads_them() {
        // A tar cut in two, each half its own gzip member: Helm reads both halves, so must
        // pack, or Helm would load entries pack never saw.
        let tar = tar_of(&[
            file("c/Chart.yaml", b"name: c"),
            file("c/templates/x.yaml", b"x"),
        ]);
        let (head, tail) = tar.split_at(512 * 2);
        let package = [gzip(head), gzip(tail)].concat();
        assert_eq!(gunzip(&package, MAX_DECOMPRESSED).unwrap(), tar);
    }

    #[test]
    fn gunzip_stops_past_its_bound() {
        let package = gzip(&[0; 4096]);
        assert_eq!(gunzip(&package, 4096).unwrap().len(), 4096);
        assert!(matches!(gunzip(&package, 4095), Err(ChartError::TooLarge)));
        assert!(matches!(gunzip(b"PK", 10), Err(ChartError::NotGzip)));
    }
}
