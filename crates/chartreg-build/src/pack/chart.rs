//! Reading a Helm chart package (`.tgz`) the way Helm's loader does, as far as the OCI artifact
//! depends on it: the chart's metadata and the time its `Chart.yaml` was packaged.

use std::io::Read;
use std::time::{Duration, SystemTime};

use flate2::read::GzDecoder;
use serde_yaml_ng::{Mapping, Value};

use super::Problem;
use super::metadata::Metadata;
use chartreg_core::oci::Tag;

/// Helm refuses to load charts that decompress to more than this; so does `pack`.
pub const MAX_DECOMPRESSED: u64 = 100 * 1024 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What `pack` needs to know about one package.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Normalised as Helm normalises it before `helm push`.
    pub metadata: Metadata,
    /// The chart version as a tag (`+` written `_`).
    pub tag: Tag,
    /// When `Chart.yaml` was written into the package (its tar entry's mtime).
    pub created: SystemTime,
}

impl Chart {
    pub fn name(&self) -> &str {
        &self.metadata.name.0
    }

    pub fn version(&self) -> &str {
        &self.metadata.version.0
    }
}

/// The files of the package that end up in the metadata, in archive order.
struct MetadataFiles {
    /// Every `<top>/Chart.yaml` (Helm applies them in turn) and its mtime.
    charts: Vec<(Vec<u8>, u64)>,
    requirements: Option<Vec<u8>>,
}

/// Reads and checks one package.
pub fn read(package: &[u8]) -> Result<Chart, Problem> {
    let tar = gunzip(package)?;
    let files = metadata_files(&tar)?;
    let Some(&(_, mtime)) = files.charts.last() else {
        return Err(Problem::NoChartYaml);
    };

    // Helm decodes each Chart.yaml, then requirements.yaml, into one value: later top-level keys
    // replace earlier ones.
    let mut merged = Mapping::new();
    for (data, _) in &files.charts {
        overlay(&mut merged, data, "Chart.yaml")?;
    }
    if let Some(data) = &files.requirements {
        overlay(&mut merged, data, "requirements.yaml")?;
    }
    let mut metadata: Metadata = serde_yaml_ng::from_value(Value::Mapping(merged))
        .map_err(|e| Problem::Metadata(e.to_string()))?;
    metadata.normalise();

    let tag = validate(&metadata)?;
    Ok(Chart {
        metadata,
        tag,
        created: SystemTime::UNIX_EPOCH + Duration::from_secs(mtime),
    })
}

pub(crate) fn gunzip(package: &[u8]) -> Result<Vec<u8>, Problem> {
    if !package.starts_with(&[0x1f, 0x8b]) {
        return Err(Problem::NotGzip);
    }
    let mut tar = Vec::new();
    GzDecoder::new(package)
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut tar)
        .map_err(|e| Problem::Gzip(e.to_string()))?;
    if tar.len() as u64 > MAX_DECOMPRESSED {
        return Err(Problem::TooLarge);
    }
    Ok(tar)
}

fn metadata_files(tar: &[u8]) -> Result<MetadataFiles, Problem> {
    let mut files = MetadataFiles {
        charts: Vec::new(),
        requirements: None,
    };
    for file in archive_files(tar, |inner| {
        inner == "Chart.yaml" || inner == "requirements.yaml"
    })? {
        if file.inner == "Chart.yaml" {
            files.charts.push((file.data, file.mtime));
        } else {
            files.requirements = Some(file.data);
        }
    }
    Ok(files)
}

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

/// The path under the top folder of the archive entry `path`, as Helm's loader splits it: at
/// `\` when the path holds one (archives written on Windows), else at `/`; empty and `.` parts
/// dropped. `None` for an entry at the top (no folder) or one with a `..` part.
fn inner_path(path: &str) -> Result<Option<String>, Problem> {
    let delimiter = if path.contains('\\') { '\\' } else { '/' };
    let mut parts = path.split(delimiter).filter(|p| !p.is_empty() && *p != ".");
    let top = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() {
        if top == "Chart.yaml" {
            return Err(Problem::ChartYamlAtTop);
        }
        return Ok(None);
    }
    if rest.contains(&"..") {
        return Ok(None);
    }
    Ok(Some(rest.join("/")))
}

/// The one walk over a chart archive (an uncompressed tar; see [`gunzip`]): its regular files
/// whose path under the top folder `wanted` accepts, in archive order, read whole. The loader's
/// refusals are kept: an archive with no entries, a `Chart.yaml` outside the chart's folder.
pub(crate) fn archive_files(
    tar: &[u8],
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<ArchiveFile>, Problem> {
    let not_tar = |e: std::io::Error| Problem::Tar(e.to_string());
    let mut archive = tar::Archive::new(tar);
    let mut files = Vec::new();
    let mut entries = 0;
    for entry in archive.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        entries += 1;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(not_tar)?;
        let Some(inner) = inner_path(&path.to_string_lossy())? else {
            continue;
        };
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
        return Err(Problem::Tar("the archive holds no files".into()));
    }
    Ok(files)
}

/// Decodes one YAML file and lays its top-level keys over `merged`.
fn overlay(merged: &mut Mapping, data: &[u8], file: &'static str) -> Result<(), Problem> {
    let value: Value =
        serde_yaml_ng::from_slice(data).map_err(|e| Problem::Yaml(file, e.to_string()))?;
    match value {
        Value::Null => Ok(()),
        Value::Mapping(map) => {
            merged.extend(map);
            Ok(())
        }
        _ => Err(Problem::Yaml(file, "the document is not a mapping".into())),
    }
}

/// Refuses what Helm refuses, and what cannot become an OCI tag.
fn validate(m: &Metadata) -> Result<Tag, Problem> {
    let name = m.name.0.as_str();
    if name.is_empty() {
        return Err(Problem::MissingField("name"));
    }
    super::chart_name::check(name).map_err(|reason| Problem::InvalidChartName {
        name: name.to_owned(),
        reason,
    })?;
    let version = m.version.0.as_str();
    if version.is_empty() {
        return Err(Problem::MissingField("version"));
    }
    super::version::check(version).map_err(|e| Problem::Version(version.to_owned(), e))?;
    let tag = version.replace('+', "_");
    let tag: Tag = tag
        .parse()
        .map_err(|e| Problem::Tag(version.to_owned(), e))?;
    if !matches!(m.chart_type.0.as_str(), "" | "application" | "library") {
        return Err(Problem::ChartType(m.chart_type.0.clone()));
    }
    let mut seen = std::collections::HashSet::new();
    for d in &m.dependencies {
        let alias = d.alias.0.as_str();
        if !alias.is_empty()
            && !alias
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(Problem::DependencyAlias(alias.to_owned()));
        }
        let key = if alias.is_empty() { &d.name.0 } else { alias };
        if !seen.insert(key.to_owned()) {
            return Err(Problem::DuplicateDependency(key.to_owned()));
        }
    }
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::slashes("mychart/templates/a.yaml", Some("templates/a.yaml"))]
    #[case::backslashes("mychart\\templates\\a.yaml", Some("templates/a.yaml"))]
    #[case::backslashes_win_over_slashes("mychart\\templates/a.yaml", Some("templates/a.yaml"))]
    #[case::dot_and_empty_parts("./mychart//./Chart.yaml", Some("Chart.yaml"))]
    #[case::dot_and_empty_parts_with_backslashes(".\\mychart\\\\Chart.yaml", Some("Chart.yaml"))]
    #[case::top_file("README.md", None)]
    #[case::top_folder("mychart/", None)]
    #[case::parent_part("mychart/../x.yaml", None)]
    #[case::parent_part_with_backslashes("mychart\\..\\x.yaml", None)]
    fn archive_paths_are_split_as_helm_splits_them(
        #[case] path: &str,
        #[case] inner: Option<&str>,
    ) {
        assert_eq!(inner_path(path).unwrap().as_deref(), inner);
    }

    #[rstest]
    #[case("Chart.yaml")]
    #[case("./Chart.yaml")]
    #[case(".\\Chart.yaml")]
    fn a_chart_yaml_at_the_top_is_refused(#[case] path: &str) {
        assert!(matches!(inner_path(path), Err(Problem::ChartYamlAtTop)));
    }

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(7);
            header.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut header, path, *data).unwrap();
        }
        tar.into_inner().unwrap()
    }

    #[test]
    fn the_walk_reads_wanted_files_in_archive_order_boms_stripped() {
        let tar = tar_of(&[
            ("c\\Chart.yaml", b"\xEF\xBB\xBFname: c"),
            ("c/values.yaml", b"a: 1"),
            ("c/templates/x.yaml", b"x"),
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

    #[test]
    fn an_empty_archive_is_refused() {
        let tar = tar_of(&[]);
        assert!(matches!(
            archive_files(&tar, |_| true),
            Err(Problem::Tar(_))
        ));
    }
}
