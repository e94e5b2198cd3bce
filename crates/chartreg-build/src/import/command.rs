//! `chartreg-build import-bundle`: the flags, and [`run`], which imports the bundles
//! ([`super::import`]) and prints what it wrote (escaped: names and notes come from the
//! bundles).

use std::path::PathBuf;

use clap::Args;

use super::{ImportError, Options};
use crate::output::print_line;

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Bundles (`mindthegap create bundle` output: an uncompressed tar), merged in this order:
    /// a tag names the first bundle's manifest.
    #[arg(required = true, value_name = "BUNDLE")]
    pub bundles: Vec<PathBuf>,
    /// The content folder the layouts are written into (the one `pack` writes).
    #[arg(long, value_name = "DIR", default_value = "assets")]
    pub out: PathBuf,
    /// The chart prefix `pack` uses (to tell its repositories in an output folder it has not
    /// recorded yet).
    #[arg(long, default_value = "charts")]
    pub prefix: String,
}

/// Runs `chartreg-build import-bundle` with `args`.
pub fn run(args: &ImportArgs) -> Result<(), ImportError> {
    let options = Options {
        bundles: args.bundles.clone(),
        out: args.out.clone(),
        prefix: args.prefix.clone(),
    };
    let report = super::import(&options)?;
    let tags: usize = report.repositories.values().sum();
    print_line(format_args!(
        "imported {} repositories, {tags} tags into {} ({} written, {} unchanged)",
        report.repositories.len(),
        args.out.display(),
        report.written.len(),
        report.unchanged
    ));
    for name in &report.written {
        print_line(format_args!("  wrote {name}"));
    }
    for note in &report.notes {
        print_line(format_args!("  note: {note}"));
    }
    Ok(())
}
