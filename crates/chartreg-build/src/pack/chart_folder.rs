//! The chart folder input: a chart's source folder (one holding `Chart.yaml`) packaged as
//! `helm package` packages it, but deterministically.
//!
//! What goes in, as Helm's loader and `helm package` decide it:
//! 1. Every regular file under the folder, walked in name order, except what the folder's
//!    `.helmignore` rules ignore (see `helmignore`; `templates/.?*` always). Symbolic links are
//!    followed, as `helm package` follows them, when they stay inside the chart folder, or
//!    inside the folder holding the content file (a team's content repository: upstream charts
//!    such as tigera-operator link `crds/` to a folder beside the chart; each such link is a
//!    warning); one that leads elsewhere is refused. A UTF-8 byte order mark is stripped from
//!    every file, as the loader strips it.
//! 2. Under `charts/`, each entry is a subchart: a folder holding a `Chart.yaml`, or a `.tgz`
//!    package, which is unpacked (so a `helm dependency update` that only rewrote the archives
//!    changes nothing); `.prov` files stay as files; entries starting with `_` or `.` are
//!    skipped; anything else is refused, as Helm refuses it. A subchart is written under
//!    `charts/<its chart name>/`.
//! 3. Dependencies that `Chart.yaml` (or a v1 chart's `requirements.yaml`) lists must be among
//!    the subcharts, by name; `values.schema.json` must be valid JSON.
//!
//! The archive: entries sorted by path under `<chart name>/`, no folder entries, mode 0644,
//! owner 0:0 with no names, mtime `SOURCE_DATE_EPOCH` (default 0, the epoch), GNU tar headers;
//! gzip from flate2's Rust backend (miniz_oxide) at level 9 with no name and mtime 0. The same
//! folder gives the same bytes, so the same digests, on every machine.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::chart::{self, Chart, gunzip};
use super::helmignore::Rules;
use super::{PackError, Problem, at, io_at};

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

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
    let chart = split(folder.to_owned(), files)?;
    let mtime = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(value) => value
            .trim()
            .parse::<u64>()
            .map_err(|_| at(folder)(Problem::SourceDateEpoch(value)))?,
        Err(_) => 0,
    };
    let mut entries = BTreeMap::new();
    flatten(&chart, "", &mut entries);
    let tgz = archive(&entries, mtime).map_err(io_at(folder))?;
    let read = chart::read(&tgz).map_err(|problem| {
        let file = match &problem {
            Problem::Yaml(file, _) => *file,
            _ => "Chart.yaml",
        };
        at(&folder.join(file))(problem)
    })?;
    Ok(Packaged {
        data: tgz,
        chart: read,
        warnings,
    })
}

/// Every file of the folder Helm's loader would take, by `/`-separated relative path.
fn read_folder(
    folder: &Path,
    links_within: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Vec<u8>>, PackError> {
    let ignore_file = folder.join(".helmignore");
    let rules = match fs::read_to_string(&ignore_file) {
        Ok(text) => Rules::parse(&text)
            .map_err(|(line, e)| at(&ignore_file)(Problem::HelmIgnore { line, problem: e }))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Rules::default(),
        Err(e) => return Err(io_at(&ignore_file)(e)),
    };
    let root = folder.canonicalize().map_err(io_at(folder))?;
    let bound = match links_within {
        Some(within) => Some(within.canonicalize().map_err(io_at(within))?),
        None => None,
    };
    let mut walk = Walk {
        root: &root,
        bound: bound.as_deref(),
        rules: &rules,
        walking: vec![root.clone()],
        files: BTreeMap::new(),
        warnings,
    };
    walk.folder(folder, "")?;
    Ok(walk.files)
}

/// A chart folder being read.
struct Walk<'a> {
    /// The chart folder, links resolved.
    root: &'a Path,
    /// Where links may lead besides `root` (the content file's folder).
    bound: Option<&'a Path>,
    rules: &'a Rules,
    /// The folders being walked, links resolved (a link back to one is a loop).
    walking: Vec<PathBuf>,
    files: BTreeMap<String, Vec<u8>>,
    warnings: &'a mut Vec<String>,
}

impl Walk<'_> {
    /// Walks `shown` (at `relative` in the chart), following symbolic links that stay inside
    /// the chart folder or `bound`.
    fn folder(&mut self, shown: &Path, relative: &str) -> Result<(), PackError> {
        let (root, rules) = (self.root, self.rules);
        let mut entries: Vec<_> = fs::read_dir(shown)
            .map_err(io_at(shown))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(io_at(shown))?;
        entries.sort();
        for name in entries {
            let path = shown.join(&name);
            let Some(name) = name.to_str() else {
                return Err(at(&path)(Problem::NotUtf8Name));
            };
            let inner = if relative.is_empty() {
                name.to_owned()
            } else {
                format!("{relative}/{name}")
            };
            let real = path.canonicalize().map_err(io_at(&path))?;
            if !real.starts_with(self.bound.unwrap_or(root)) && !real.starts_with(root) {
                return Err(at(&path)(Problem::SymlinkOutside {
                    target: real,
                    bound: self.bound.map(Path::to_owned),
                }));
            }
            let link = fs::symlink_metadata(&path)
                .map_err(io_at(&path))?
                .file_type()
                .is_symlink();
            if link && !real.starts_with(root) {
                self.warnings.push(format!(
                "{}: a symbolic link that leaves the chart folder, to {}: its files are packaged (as `helm package` does)",
                path.display(),
                real.display()
            ));
            }
            let meta = fs::metadata(&real).map_err(io_at(&path))?;
            if meta.is_dir() {
                if rules.ignores(&inner, true) {
                    continue;
                }
                if self.walking.contains(&real) {
                    return Err(at(&path)(Problem::SymlinkLoop));
                }
                self.walking.push(real);
                self.folder(&path, &inner)?;
                self.walking.pop();
                continue;
            }
            if rules.ignores(&inner, false) {
                continue;
            }
            if !meta.is_file() {
                return Err(at(&path)(Problem::NotRegularFile));
            }
            if meta.len() > chart::MAX_DECOMPRESSED {
                return Err(at(&path)(Problem::TooLarge));
            }
            let mut data = fs::read(&real).map_err(io_at(&path))?;
            strip_bom(&mut data);
            self.files.insert(inner, data);
        }
        Ok(())
    }
}

fn strip_bom(data: &mut Vec<u8>) {
    if data.starts_with(UTF8_BOM) {
        data.drain(..UTF8_BOM.len());
    }
}

/// The files of an archived chart (a `.tgz` subchart), its top folder stripped.
fn read_archive(path: &Path, tgz: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, PackError> {
    let tar = gunzip(tgz).map_err(at(path))?;
    let files = chart::archive_files(&tar, |_| true).map_err(at(path))?;
    Ok(files.into_iter().map(|f| (f.inner, f.data)).collect())
}

/// Splits a chart's files into its own and its subcharts' (recursively), as Helm's loader
/// does, and checks what `helm package` checks.
fn split(origin: PathBuf, files: BTreeMap<String, Vec<u8>>) -> Result<ChartFiles, PackError> {
    let chart_yaml = origin.join("Chart.yaml");
    let Some(metadata) = files.get("Chart.yaml") else {
        return Err(at(&chart_yaml)(Problem::NotAChartFolder));
    };
    let (name, dependencies) =
        names(metadata, files.get("requirements.yaml")).map_err(at(&chart_yaml))?;
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
        let subchart = if entry.ends_with(".tgz") && files.len() == 1 && files.contains_key("") {
            let tgz = files.remove("").unwrap_or_default();
            split(path.clone(), read_archive(&path, &tgz)?)?
        } else if files.contains_key("Chart.yaml") {
            split(path, files)?
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

/// A chart's name and the names of the dependencies it lists.
fn names(
    chart_yaml: &[u8],
    requirements: Option<&Vec<u8>>,
) -> Result<(String, Vec<String>), Problem> {
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
    let parse = |data: &[u8], file: &'static str| -> Result<Named, Problem> {
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_slice(data).map_err(|e| Problem::Yaml(file, e.to_string()))?;
        if value.is_null() {
            return Ok(Named::default());
        }
        serde_yaml_ng::from_value(value).map_err(|e| Problem::Metadata(e.to_string()))
    };
    let chart = parse(chart_yaml, "Chart.yaml")?;
    let name = text(&chart.name);
    if name.is_empty() {
        return Err(Problem::MissingField("name"));
    }
    // The name is a folder of the package (`<name>/`, `charts/<name>/`).
    super::chart_name::check_helm(&name).map_err(|reason| Problem::InvalidChartName {
        name: name.clone(),
        reason,
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
fn flatten(chart: &ChartFiles, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    let base = format!("{prefix}{}", chart.name);
    for (path, data) in &chart.files {
        out.insert(format!("{base}/{path}"), data.clone());
    }
    for subchart in &chart.subcharts {
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
