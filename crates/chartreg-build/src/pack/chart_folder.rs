//! The chart folder input: a chart's source folder (one holding `Chart.yaml`) packaged as
//! `helm package` packages it, but deterministically.
//!
//! What goes in, as Helm's loader and `helm package` decide it:
//! 1. Every regular file under the folder, except what `.helmignore` ignores, symbolic links
//!    followed inside the chart folder or the content file's folder, at most 100 MiB in all
//!    (`walk`).
//! 2. Under `charts/`, each entry is a subchart: a folder holding a `Chart.yaml`, or a `.tgz`
//!    package, which is unpacked (so a `helm dependency update` that only rewrote the archives
//!    changes nothing) with the checks of `chart::archive`; `.prov` files stay as files;
//!    entries starting with `_` or `.` are skipped; anything else is refused, as Helm refuses
//!    it. A subchart is written under `charts/<its chart name>/`. Subcharts, of folders and of
//!    packages, are read within one budget (`chart::unpacking`): at most 10 deep,
//!    their packages at most 256 MiB decompressed together, their YAML read within bounds.
//! 3. Dependencies that `Chart.yaml` (or a v1 chart's `requirements.yaml`) lists must be among
//!    the subcharts, by name; `values.schema.json` must be valid JSON.
//!
//! The archive: entries sorted by path under `<chart name>/`, no folder entries, mode 0644,
//! owner 0:0 with no names, mtime `SOURCE_DATE_EPOCH` (default 0, the epoch), GNU tar headers;
//! gzip from flate2's Rust backend (miniz_oxide) at level 9 with no name and mtime 0. The same
//! folder gives the same bytes, so the same digests, on every machine.

mod walk;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::{PackError, Problem, at, io_at};
use crate::chart::{self, Chart, ChartError, Unpacking};
use walk::read_folder;

/// A chart's files by path relative to the chart, and its subcharts.
struct ChartFiles {
    name: String,
    files: BTreeMap<String, Vec<u8>>,
    subcharts: Vec<ChartFiles>,
}

/// Whether `path` is a chart folder.
pub(super) fn is_chart_folder(path: &Path) -> bool {
    path.join("Chart.yaml").is_file()
}

/// A chart folder packaged: the package's bytes, what it holds, and what was worth a warning.
pub(super) struct Packaged {
    pub data: Vec<u8>,
    pub chart: Chart,
    pub warnings: Vec<String>,
}

/// Packages the chart folder `folder`, following symbolic links inside it or inside
/// `links_within` (the content file's folder).
pub(super) fn package(folder: &Path, links_within: Option<&Path>) -> Result<Packaged, PackError> {
    if !is_chart_folder(folder) {
        return Err(at(&folder.join("Chart.yaml"))(Problem::NotAChartFolder));
    }
    let mut warnings = Vec::new();
    let files = read_folder(folder, links_within, &mut warnings)?;
    let chart = split(folder.to_owned(), files, 0, &mut Unpacking::default())?;
    let mtime = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(value) => value
            .trim()
            .parse::<u64>()
            .map_err(|_| at(folder)(Problem::SourceDateEpoch(value)))?,
        Err(_) => 0,
    };
    let mut entries = BTreeMap::new();
    flatten(chart, "", &mut entries);
    let tgz = archive(&entries, mtime).map_err(io_at(folder))?;
    let read = chart::read(&tgz).map_err(|problem| {
        let file = problem.yaml_file().unwrap_or("Chart.yaml");
        at(&folder.join(file))(problem)
    })?;
    Ok(Packaged {
        data: tgz,
        chart: read,
        warnings,
    })
}

/// The files of an archived chart (a `.tgz` subchart), its top folder stripped.
fn read_archive(
    path: &Path,
    tgz: &[u8],
    unpacking: &mut Unpacking,
) -> Result<BTreeMap<String, Vec<u8>>, PackError> {
    let tar = unpacking.gunzip(tgz).map_err(at(path))?;
    let files = chart::archive_files(&tar, |_| true).map_err(at(path))?;
    Ok(files.into_iter().map(|f| (f.inner, f.data)).collect())
}

/// Splits a chart's files into its own and its subcharts' (recursively, the chart `depth`
/// subcharts below the folder's), as Helm's loader does, and checks what `helm package`
/// checks.
fn split(
    origin: PathBuf,
    files: BTreeMap<String, Vec<u8>>,
    depth: usize,
    unpacking: &mut Unpacking,
) -> Result<ChartFiles, PackError> {
    let chart_yaml = origin.join("Chart.yaml");
    let Some(metadata) = files.get("Chart.yaml") else {
        return Err(at(&chart_yaml)(Problem::NotAChartFolder));
    };
    let (name, dependencies) = names(metadata, files.get("requirements.yaml"), unpacking)
        .map_err(|(file, problem)| at(&origin.join(file))(problem))?;
    let mut own = BTreeMap::new();
    let mut grouped: BTreeMap<String, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    for (path, data) in files {
        let Some(inside) = path.strip_prefix("charts/") else {
            own.insert(path, data);
            continue;
        };
        if path.ends_with(".prov") {
            own.insert(path, data);
            continue;
        }
        let (entry, rest) = inside.split_once('/').unwrap_or((inside, ""));
        grouped
            .entry(entry.to_owned())
            .or_default()
            .insert(rest.to_owned(), data);
    }
    if let Some(schema) = own.get("values.schema.json")
        && serde_json::from_slice::<serde_json::Value>(schema).is_err()
    {
        return Err(at(&origin.join("values.schema.json"))(Problem::SchemaJson));
    }
    let mut subcharts = Vec::new();
    for (entry, mut files) in grouped {
        let path = origin.join("charts").join(&entry);
        if entry.starts_with(['_', '.']) {
            continue;
        }
        let nested = || Unpacking::nest(depth + 1).map_err(at(&path));
        let subchart = if entry.ends_with(".tgz") && files.len() == 1 && files.contains_key("") {
            nested()?;
            let tgz = files.remove("").unwrap_or_default();
            let files = read_archive(&path, &tgz, unpacking)?;
            split(path.clone(), files, depth + 1, unpacking)?
        } else if files.contains_key("Chart.yaml") {
            nested()?;
            split(path, files, depth + 1, unpacking)?
        } else {
            return Err(at(&path)(Problem::NotASubchart));
        };
        subcharts.push(subchart);
    }
    let missing: Vec<String> = dependencies
        .into_iter()
        .filter(|d| !subcharts.iter().any(|s| s.name == *d))
        .collect();
    if !missing.is_empty() {
        return Err(at(&chart_yaml)(Problem::MissingDependencies(missing)));
    }
    Ok(ChartFiles {
        name,
        files: own,
        subcharts,
    })
}

/// A chart's name and the names of the dependencies it lists; an error with the file it is
/// about.
fn names(
    chart_yaml: &[u8],
    requirements: Option<&Vec<u8>>,
    unpacking: &mut Unpacking,
) -> Result<(String, Vec<String>), (&'static str, ChartError)> {
    #[derive(serde::Deserialize, Default)]
    struct Named {
        #[serde(default)]
        name: Option<serde_yaml_ng::Value>,
        #[serde(default)]
        dependencies: Option<Vec<Dependency>>,
    }
    #[derive(serde::Deserialize)]
    struct Dependency {
        name: Option<serde_yaml_ng::Value>,
    }
    let text = |v: &Option<serde_yaml_ng::Value>| match v {
        Some(serde_yaml_ng::Value::String(s)) => s.clone(),
        Some(serde_yaml_ng::Value::Number(n)) => n.to_string(),
        Some(serde_yaml_ng::Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    };
    let mut parse =
        |data: &[u8], file: &'static str| -> Result<Named, (&'static str, ChartError)> {
            let value = unpacking
                .yaml(data)
                .map_err(|source| (file, ChartError::Yaml { file, source }))?;
            if value.is_null() {
                return Ok(Named::default());
            }
            serde_yaml_ng::from_value(value).map_err(|e| (file, ChartError::Metadata(e)))
        };
    let chart = parse(chart_yaml, "Chart.yaml")?;
    let name = text(&chart.name);
    if name.is_empty() {
        return Err(("Chart.yaml", ChartError::MissingField("name")));
    }
    // The name is a folder of the package (`<name>/`, `charts/<name>/`).
    chart::name::check_helm(&name).map_err(|reason| {
        let name = name.clone();
        ("Chart.yaml", ChartError::InvalidChartName { name, reason })
    })?;
    let mut listed = chart.dependencies.unwrap_or_default();
    if let Some(requirements) = requirements {
        listed.extend(
            parse(requirements, "requirements.yaml")?
                .dependencies
                .unwrap_or_default(),
        );
    }
    Ok((name, listed.iter().map(|d| text(&d.name)).collect()))
}

/// Every file of `chart` and its subcharts, by its path in the package.
fn flatten(chart: ChartFiles, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    let base = format!("{prefix}{}", chart.name);
    for (path, data) in chart.files {
        out.insert(format!("{base}/{path}"), data);
    }
    for subchart in chart.subcharts {
        flatten(subchart, &format!("{base}/charts/"), out);
    }
}

/// The deterministic `.tgz` of `entries` (see the module doc).
fn archive(entries: &BTreeMap<String, Vec<u8>>, mtime: u64) -> std::io::Result<Vec<u8>> {
    let gz = GzEncoder::new(Vec::new(), Compression::new(9));
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, data.as_slice())?;
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    gz.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::{alias_bomb, deep};
    use rstest::rstest;
    use std::fs;

    const CHART: &str = "apiVersion: v2\nname: c\nversion: 1.0.0\n";

    /// A chart folder in `dir` with `files` besides its Chart.yaml (which `files` may replace).
    fn folder(dir: &Path, files: &[(&str, &[u8])]) -> PathBuf {
        let chart = dir.join("c");
        fs::create_dir_all(chart.join("charts")).unwrap();
        fs::write(chart.join("Chart.yaml"), CHART).unwrap();
        for (path, data) in files {
            fs::write(chart.join(path), data).unwrap();
        }
        chart
    }

    /// A folder's YAML with a bomb: refused naming the file (in 11 ms and 0.1 ms, as a
    /// package's is).
    #[rstest]
    #[case::chart_yaml_alias_bomb("Chart.yaml", format!("{CHART}{}", alias_bomb()), "alias bomb")]
    #[case::chart_yaml_deep("Chart.yaml", format!("{CHART}{}", deep()), "256 deep")]
    #[case::requirements_alias_bomb("requirements.yaml", alias_bomb(), "alias bomb")]
    #[case::requirements_deep("requirements.yaml", deep(), "256 deep")]
    fn yaml_bombs_are_refused_naming_the_file(
        #[case] file: &str,
        #[case] text: String,
        #[case] words: &str,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let chart = folder(dir.path(), &[(file, text.as_bytes())]);
        let e = package(&chart, None).err().unwrap();
        assert_eq!(e.path, chart.join(file));
        assert!(e.to_string().contains(words), "{e}");
    }

    #[test]
    fn subchart_packages_nested_past_the_limit_are_refused_naming_the_chain() {
        let mut sub = crate::samples::tar_gz(&[("s/Chart.yaml", b"name: s\nversion: 1.0.0\n")]);
        for _ in 0..12 {
            sub = crate::samples::tar_gz(&[
                ("s/Chart.yaml", b"name: s\nversion: 1.0.0\n"),
                ("s/charts/s.tgz", &sub),
            ]);
        }
        let dir = tempfile::tempdir().unwrap();
        let chart = folder(dir.path(), &[("charts/s.tgz", &sub)]);
        let e = package(&chart, None).err().unwrap();
        assert!(
            matches!(*e.problem, Problem::Chart(ChartError::SubchartsTooDeep)),
            "{e}"
        );
        let chain: PathBuf = std::iter::repeat_n("charts/s.tgz", 11).collect();
        assert_eq!(e.path, chart.join(chain));
    }

    #[test]
    fn a_subchart_package_s_entries_are_checked() {
        use crate::samples::{gzip, raw_entry};
        let subchart = gzip(
            &[
                raw_entry("s/Chart.yaml", b'0', "", b"name: s\nversion: 1.0.0\n"),
                raw_entry("s/../../../tmp/pwned", b'0', "", b"x"),
                vec![0; 1024],
            ]
            .concat(),
        );
        let dir = tempfile::tempdir().unwrap();
        let chart = folder(dir.path(), &[("charts/s-1.0.0.tgz", &subchart)]);
        let e = package(&chart, None).err().unwrap();
        assert_eq!(e.path, chart.join("charts/s-1.0.0.tgz"));
        assert!(
            e.to_string()
                .contains("archive entry \"s/../../../tmp/pwned\" references the parent"),
            "{e}"
        );
    }
}
