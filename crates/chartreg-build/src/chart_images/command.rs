//! `chartreg-build images`: the flags, the charts they name (a content file's, as pack reads
//! them, or chart packages and folders given), and the three outputs: a table for people
//! (`--why` says where each image was found), `--json`, and `--images-file` in mindthegap's
//! images format, which `fetch --images-file` takes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chartreg_core::shown::{escaped, escaped_json};
use clap::Args;
use serde::Serialize;

// `fetch` takes the render flags' options and note from here, as `images` does.
use super::flags::RenderArgs;
pub use super::flags::{note, options};
use super::{ChartInput, Closure, Found, ImageRef, Way};
use crate::content_file::ContentFile;
use crate::pack::closure::chart_input;
use crate::pack::command::PackArgs;
use crate::pack::{Input, read_inputs};
use crate::pin::Pin;

/// Why `images` did not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Inputs(#[from] crate::pack::command::Error),
    #[error(transparent)]
    Pack(#[from] crate::pack::PackError),
    #[error(transparent)]
    ContentFile(#[from] crate::content_file::Error),
    #[error(transparent)]
    Find(#[from] super::Error),
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not written: the charts need {image}, which fetch cannot take ({why})", path.display())]
    NotListable {
        path: PathBuf,
        image: String,
        why: String,
    },
    #[error("nothing to read: give chart packages or folders, or --config")]
    NoInputs,
}

#[derive(Debug, Clone, Args)]
pub struct ImagesArgs {
    /// Chart packages (`.tgz`), chart folders, or folders holding them.
    pub inputs: Vec<PathBuf>,
    /// A content file: its charts (and its lock's), and the values files its `images.values`
    /// names per chart.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// A values file to find a chart's images with: `CHART=FILE` (repeatable; after the
    /// content file's).
    #[arg(long = "values", value_name = "CHART=FILE", value_parser = chart_values)]
    pub values: Vec<(String, PathBuf)>,
    /// Print a JSON list: per image, `image`, `repository` (as chartreg serves it), `tag`,
    /// `digest`, `charts`, `needed`, and `found` (where).
    #[arg(long)]
    pub json: bool,
    /// Under each image, where each chart references it.
    #[arg(long)]
    pub why: bool,
    /// Also write the needed images to FILE in mindthegap's images format (`fetch
    /// --images-file FILE` takes it).
    #[arg(long, value_name = "FILE")]
    pub images_file: Option<PathBuf>,
    #[command(flatten)]
    pub render: RenderArgs,
    /// Use only these ways of finding (repeatable).
    #[arg(long = "only", value_name = "render|annotations|values", value_parser = way_flag)]
    pub only: Vec<Way>,
}

/// `--values CHART=FILE`'s value parser (clap shows the error after the value it refuses).
pub fn chart_values(s: &str) -> Result<(String, PathBuf), &'static str> {
    s.split_once('=')
        .filter(|(chart, file)| !chart.is_empty() && !file.is_empty())
        .map(|(chart, file)| (chart.to_owned(), PathBuf::from(file)))
        .ok_or("expected CHART=FILE: a chart name, `=`, a values file")
}

/// `--values` flags as values files by chart name, in the order given.
pub fn by_chart(flags: &[(String, PathBuf)]) -> BTreeMap<String, Vec<PathBuf>> {
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for (chart, file) in flags {
        files.entry(chart.clone()).or_default().push(file.clone());
    }
    files
}

/// The charts and values files `config` and `inputs` name, read, and the values files per
/// chart name (the content file's, then `extra`).
pub fn chart_inputs(
    config: Option<&Path>,
    inputs: &[PathBuf],
    extra: &BTreeMap<String, Vec<PathBuf>>,
) -> Result<Vec<ChartInput>, Error> {
    let pack = PackArgs {
        inputs: inputs.to_vec(),
        layouts: Vec::new(),
        config: config.map(Path::to_owned),
        out: PathBuf::from("assets"),
        prefix: None,
        check: false,
        render: RenderArgs::default(),
    };
    let mut request = pack.request()?;
    request.layouts.clear();
    request.images = None;
    if request.charts.is_empty() {
        return Err(Error::NoInputs);
    }
    let mut values: BTreeMap<String, Vec<PathBuf>> = match config {
        Some(path) => ContentFile::read(path)?
            .images
            .map(|i| i.values)
            .unwrap_or_default(),
        None => BTreeMap::new(),
    };
    for (chart, files) in extra {
        values
            .entry(chart.clone())
            .or_default()
            .extend(files.iter().cloned());
    }
    read_inputs(&request)?
        .into_iter()
        .filter_map(|input| match input {
            Input::Chart(chart) => Some(chart),
            Input::Layout(_) => None,
        })
        .map(|chart| {
            let values = values.get(chart.chart.name()).cloned().unwrap_or_default();
            Ok(chart_input(&chart, values)?)
        })
        .collect()
}

/// `--only`'s value parser.
fn way_flag(s: &str) -> Result<Way, &'static str> {
    match s {
        "render" => Ok(Way::Render),
        "annotations" => Ok(Way::Annotation),
        "values" => Ok(Way::Values),
        _ => Err("expected render, annotations or values"),
    }
}

/// Runs `chartreg-build images`.
pub fn run(args: &ImagesArgs) -> Result<(), Error> {
    let extra = by_chart(&args.values);
    let charts = chart_inputs(args.config.as_deref(), &args.inputs, &extra)?;
    let options = options(&args.render, &args.only)?;
    note(&options);
    let closure = super::find(&charts, &options)?;
    for warning in &closure.warnings {
        crate::output::warn(warning);
    }
    if args.json {
        println!("{}", json(&closure));
    } else {
        print!("{}", table(&closure, args.why));
    }
    if let Some(path) = &args.images_file {
        let (text, left_out) = images_file(&closure);
        if let Some((image, why)) = left_out.first() {
            // fetch could not take it: no list that leaves an image out is written.
            return Err(Error::NotListable {
                path: path.clone(),
                image: image.clone(),
                why: why.clone(),
            });
        }
        std::fs::write(path, text).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        crate::output::eprint_line(format_args!("chartreg-build: wrote {}", path.display()));
    }
    Ok(())
}

/// One image in `--json`.
#[derive(Debug, Serialize)]
struct Entry<'a> {
    image: String,
    repository: String,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
    charts: BTreeSet<&'a str>,
    needed: bool,
    found: &'a [Found],
}

fn entries(closure: &Closure) -> Vec<Entry<'_>> {
    closure
        .images
        .iter()
        .map(|(image, found)| Entry {
            image: image.to_string(),
            repository: image.repository(),
            tag: image.tag().map(|t| t.as_str()),
            digest: image.digest().map(|d| d.as_str()),
            charts: found.iter().map(|f| f.chart.as_str()).collect(),
            needed: found.iter().any(|f| f.needed),
            found,
        })
        .collect()
}

/// The `--json` document: control characters in its strings escaped as JSON escapes them
/// (serde_json writes C0 so; [`escaped_json`] the rest), so it reads as the same values.
pub fn json(closure: &Closure) -> String {
    let json = serde_json::to_string_pretty(&entries(closure))
        .unwrap_or_else(|_| unreachable!("strings, lists and booleans serialise"));
    escaped_json(&json).into_owned()
}

/// The table: image, needed, charts, ways; with `why`, one line per finding under each. What
/// it quotes of the charts (their names, templates, values paths) is [`escaped`] before the
/// columns are measured.
pub fn table(closure: &Closure, why: bool) -> String {
    let entries = entries(closure);
    let rows: Vec<[String; 4]> = entries
        .iter()
        .map(|e| {
            let ways: BTreeSet<Way> = e.found.iter().map(|f| f.from).collect();
            let ways = ways.into_iter().map(Way::as_str);
            [
                escaped(&e.image).into_owned(),
                if e.needed { "yes" } else { "no" }.to_owned(),
                escaped(&e.charts.iter().copied().collect::<Vec<_>>().join(", ")).into_owned(),
                ways.collect::<Vec<_>>().join(", "),
            ]
        })
        .collect();
    let header = ["IMAGE", "NEEDED", "CHARTS", "FOUND BY"].map(str::to_owned);
    let mut widths = [0; 4];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, row: &[String; 4]| {
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    };
    line(&mut out, &header);
    for (row, entry) in rows.iter().zip(&entries) {
        line(&mut out, row);
        if why {
            for f in entry.found {
                let sub = f
                    .subchart
                    .as_ref()
                    .map(|s| format!(" (subchart {s})"))
                    .unwrap_or_default();
                let values = if f.values.is_empty() {
                    String::new()
                } else {
                    format!(" [values: {}]", f.values.join(", "))
                };
                let line = format!("    {}{sub} {}: {}{values}", f.chart, f.from.as_str(), f.at);
                let _ = writeln!(out, "{}", escaped(&line));
            }
        }
    }
    let rendered = closure.charts.values().filter(|r| **r).count();
    let _ = writeln!(
        out,
        "{} images ({} needed) in {} charts ({} rendered by Helm)",
        entries.len(),
        entries.iter().filter(|e| e.needed).count(),
        closure.charts.len(),
        rendered
    );
    out
}

/// The needed images in mindthegap's images format (registry -> `images` -> path -> what to
/// take: a tag, `sha256:<hex>`, or `TAG@sha256:<hex>`, as fetch reads them: `crate::pin`), and
/// those it cannot hold (a digest other than sha256), each with why.
///
/// Every registry, path and entry is written double-quoted, as YAML strings: each is an
/// [`ImageRef`]'s part, which its grammar holds to ASCII letters, digits and `.`, `_`, `-`, `/`,
/// `:`, `@` (no quote, backslash, space or control character, so nothing needs escaping inside
/// the quotes), and quoted, no path reads as another YAML value (`null`, `yes`, `1.5`).
pub fn images_file(closure: &Closure) -> (String, Vec<(String, String)>) {
    let mut registries: BTreeMap<&str, BTreeMap<&str, BTreeSet<String>>> = BTreeMap::new();
    let mut left_out = Vec::new();
    let needed: Vec<&ImageRef> = closure.needed().map(|(image, _)| image).collect();
    for image in needed {
        match Pin::of(image.tag(), image.digest()) {
            Some(Ok(pin)) => {
                registries
                    .entry(image.registry().as_str())
                    .or_default()
                    .entry(image.path())
                    .or_default()
                    .insert(pin.entry());
            }
            Some(Err(e)) => left_out.push((image.to_string(), e.to_string())),
            None => left_out.push((image.to_string(), "it names no tag or digest".to_owned())),
        }
    }
    let mut text =
        String::from("# The images the charts need, as `chartreg-build images` found them.\n");
    for (registry, images) in registries {
        let _ = writeln!(text, "\"{registry}\":\n  images:");
        for (path, tags) in images {
            let tags: Vec<String> = tags.iter().map(|t| format!("\"{t}\"")).collect();
            let _ = writeln!(text, "    \"{path}\": [{}]", tags.join(", "));
        }
    }
    (text, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closure(images: &[&str]) -> Closure {
        let found = |at: &str| Found {
            chart: "web:1.0.0".to_owned(),
            subchart: None,
            from: Way::Render,
            at: at.to_owned(),
            values: Vec::new(),
            needed: true,
        };
        Closure {
            images: images
                .iter()
                .map(|i| (ImageRef::parse(i).unwrap(), vec![found("templates/a.yaml")]))
                .collect(),
            charts: [("web:1.0.0".to_owned(), true)].into(),
            warnings: Vec::new(),
        }
    }

    /// Paths and tags YAML would otherwise read as null, a boolean or a number stay strings.
    #[test]
    fn the_images_file_quotes_every_name() {
        let (text, left_out) = images_file(&closure(&[
            "quay.io/null:on",
            "quay.io/yes:1.5",
            "10.0.0.1:5000/a/b:v1",
        ]));
        assert!(left_out.is_empty());
        assert!(
            text.contains("\"quay.io\":\n  images:\n    \"null\": [\"on\"]\n"),
            "{text}"
        );
        let read: BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<String>>>> =
            serde_yaml_ng::from_str(&text).unwrap();
        let images = |registry: &str| read[registry]["images"].clone();
        assert_eq!(images("quay.io")["null"], ["on"]);
        assert_eq!(images("quay.io")["yes"], ["1.5"]);
        assert_eq!(images("10.0.0.1:5000")["a/b"], ["v1"]);
    }

    /// Images pinned by digest are listed as fetch reads them: the digest, or TAG@DIGEST.
    #[test]
    fn the_images_file_lists_digests_as_fetch_takes_them() {
        let hex = "b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291";
        let (text, left_out) = images_file(&closure(&[
            &format!("quay.io/a/b@sha256:{hex}"),
            &format!("quay.io/a/b:1.36@sha256:{hex}"),
        ]));
        assert!(left_out.is_empty(), "{left_out:?}");
        let read: crate::fetch::lists::ImagesFile = serde_yaml_ng::from_str(&text).unwrap();
        let sources =
            crate::fetch::lists::image_sources(&read, std::path::Path::new("images.yaml")).unwrap();
        let described: Vec<String> = sources.iter().map(|s| s.describe()).collect();
        assert_eq!(
            described,
            [
                format!("quay.io/a/b@sha256:{hex}"),
                format!("quay.io/a/b:1.36@sha256:{hex}")
            ]
        );
    }

    /// What the table and `--why` quote of a chart is escaped; `--json` keeps the values, with
    /// no raw control or bidirectional character in its text.
    #[test]
    fn the_table_and_json_show_control_characters_escaped() {
        let mut closure = closure(&["quay.io/a/b:v1"]);
        for found in closure.images.values_mut() {
            found[0].at = "templates/\u{1b}[2J\u{202e}x.yaml".to_owned();
        }
        let table = table(&closure, true);
        assert!(!table.contains(['\u{1b}', '\u{202e}']), "{table}");
        assert!(
            table.contains("templates/\\u{1b}[2J\\u{202e}x.yaml"),
            "{table}"
        );
        let json = json(&closure);
        assert!(!json.contains(['\u{1b}', '\u{202e}']), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            back[0]["found"][0]["at"],
            "templates/\u{1b}[2J\u{202e}x.yaml"
        );
    }
}
