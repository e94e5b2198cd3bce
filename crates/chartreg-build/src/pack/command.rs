//! `chartreg-build pack`: the flags, the [`Request`] they make (with the content file and the
//! lock it names, if any), and [`run`], which packs (or, with `--check`, compares) and prints
//! the result lines (escaped, as every line the tool prints: names and signers come from
//! upstream).

use std::path::{Path, PathBuf};

use clap::Args;

use super::{LayoutSpec, LayoutSpecError, PackError, Report, Request};
use crate::content_file::{self, ContentFile};
use crate::output::print_line;

/// Why `pack` did not run: the content file, the lock it names, or packing itself.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Pack(#[from] PackError),
    #[error(transparent)]
    ContentFile(#[from] content_file::Error),
    /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
    #[error(transparent)]
    Lock(Box<crate::lock::Error>),
    #[error(transparent)]
    Images(Box<crate::chart_images::Error>),
    #[error("verify: {0}")]
    Policy(#[from] crate::verify::PolicyError),
}

impl From<crate::lock::Error> for Error {
    fn from(e: crate::lock::Error) -> Self {
        Error::Lock(Box::new(e))
    }
}

#[derive(Debug, Clone, Args)]
pub struct PackArgs {
    /// Chart packages (`.tgz`, with a `.tgz.prov` beside one added as its provenance), chart
    /// folders (with a `Chart.yaml`), or folders holding them [default: charts, when nothing
    /// else is given].
    pub inputs: Vec<PathBuf>,
    /// An OCI image layout to serve as a repository: `DIR=REPOSITORY`, or `DIR=REPOSITORY:TAG`
    /// to take one tag (repeatable).
    #[arg(long = "layout", value_name = "DIR=REPOSITORY[:TAG]", value_parser = layout_spec)]
    pub layouts: Vec<LayoutSpec>,
    /// A content file listing the inputs (see docs/content.md); paths in it are relative to it.
    #[arg(long, env = "CHARTREG_PACK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Folder to write into: one folder per repository, and the record of what pack wrote.
    #[arg(long, env = "CHARTREG_PACK_OUT", default_value = "assets")]
    pub out: PathBuf,
    /// Repository path prefix: charts are served as `<prefix>/<chart name>`.
    #[arg(long, env = "CHARTREG_PACK_PREFIX")]
    pub prefix: Option<String>,
    /// Write nothing; fail, naming them, if the committed parts of the output (chart
    /// repositories and the record) are not what packing gives.
    #[arg(long)]
    pub check: bool,
    /// How charts are rendered to find the images they need, when the content file has an
    /// `images:` section.
    #[command(flatten)]
    pub render: crate::chart_images::flags::RenderArgs,
}

/// `--layout`'s value parser (clap shows the error after the value it refuses).
fn layout_spec(s: &str) -> Result<LayoutSpec, LayoutSpecError> {
    s.parse()
}

impl PackArgs {
    /// The request these arguments (and the content file, if any) make.
    pub(crate) fn request(&self) -> Result<Request, Error> {
        let mut charts = Vec::new();
        let mut layouts = Vec::new();
        let mut prefix = None;
        let mut links_within = None;
        let mut images = None;
        let mut verify = None;
        let mut downloaded = Vec::new();
        if let Some(path) = &self.config {
            links_within = Some(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .to_owned(),
            );
            let file = ContentFile::read(path)?;
            if let Some(c) = &file.charts {
                charts.extend(c.from.iter().cloned());
                prefix.clone_from(&c.prefix);
            }
            layouts.extend(file.layout_specs(path)?);
            if let Some(section) = &file.verify {
                verify = Some(crate::verify::Policy::of(path, section)?);
            }
            if let Some(i) = &file.images {
                let options = crate::chart_images::flags::options(&self.render, &[])
                    .map_err(|e| Error::Images(Box::new(e)))?;
                images = Some(super::closure::ImagesCheck {
                    config: path.clone(),
                    mode: i.closure,
                    values: i.values.clone(),
                    options,
                });
            }
            if let Some(lock) = &file.lock {
                let (locked_charts, locked_layouts) = crate::lock::Lock::pack_inputs(lock)?;
                // A package a folder above already holds is not given twice (however either
                // path is written: the lock's are relative to its own folder).
                let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
                for chart in locked_charts {
                    let (file, folder) = (real(&chart.file), chart.file.parent().map(real));
                    let held = charts.iter().any(|from| {
                        let from = real(from);
                        folder.as_ref() == Some(&from) || file == from
                    });
                    if !held {
                        charts.push(chart.file.clone());
                    }
                    downloaded.push(chart);
                }
                layouts.extend(locked_layouts);
            }
        }
        charts.extend(self.inputs.iter().cloned());
        layouts.extend(self.layouts.iter().cloned());
        if charts.is_empty() && layouts.is_empty() && self.config.is_none() {
            charts.push(PathBuf::from("charts"));
        }
        Ok(Request {
            charts,
            prefix: self
                .prefix
                .clone()
                .or(prefix)
                .unwrap_or_else(|| "charts".to_owned()),
            layouts,
            out: self.out.clone(),
            links_within,
            images,
            verify,
            downloaded,
        })
    }
}

/// Runs `chartreg-build pack` with `args`: packs, or with `--check` compares, and says what it
/// found on stdout (warnings on stderr).
pub fn run(args: &PackArgs) -> Result<(), Error> {
    let request = args.request()?;
    if let Some(images) = &request.images {
        crate::chart_images::flags::note(&images.options);
    }
    if args.check {
        let report = super::check(&request)?;
        warn(&report);
        print_line(format_args!(
            "up to date: {} ({})",
            request.out.display(),
            counts(&report)
        ));
        return Ok(());
    }
    let report = super::pack(&request)?;
    warn(&report);
    let what = match report.outcome {
        chartreg_core::tree::Outcome::Written => "wrote",
        chartreg_core::tree::Outcome::Unchanged => "unchanged:",
    };
    print_line(format_args!(
        "{what} {} ({})",
        request.out.display(),
        counts(&report)
    ));
    for name in &report.written {
        print_line(format_args!("  wrote {name}"));
    }
    for name in &report.removed {
        print_line(format_args!("  removed {name}"));
    }
    for line in &report.verified {
        print_line(format_args!("  verified {line}"));
    }
    Ok(())
}

fn warn(report: &Report) {
    for warning in &report.warnings {
        crate::output::warn(warning);
    }
}

fn counts(report: &Report) -> String {
    let mut text = format!("{} charts, {} versions", report.charts, report.versions);
    match report.layouts {
        0 => {}
        1 => text.push_str(", 1 image layout"),
        n => text.push_str(&format!(", {n} image layouts")),
    }
    text
}
