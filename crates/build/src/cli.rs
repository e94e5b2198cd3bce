//! The command line: `chartreg-build pack`.
//!
//! `main` parses arguments (every flag also reads a `CHARTREG_*` variable), runs one command,
//! and reports how it went: a result line on stdout, or one error on stderr naming the input.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::pack::{self, PackError};

/// Makes chartreg's content: Helm charts in, OCI image layouts out (run it on the build
/// machine; the `chartreg` server embeds what it writes).
#[derive(Debug, Parser)]
#[command(name = "chartreg-build", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Turn Helm chart packages into OCI image layouts, one per chart.
    Pack(PackArgs),
}

#[derive(Debug, Clone, Args)]
pub struct PackArgs {
    /// Chart packages (`.tgz`) or folders holding them; a `.tgz.prov` beside a package is
    /// added as its provenance.
    #[arg(default_value = "charts")]
    pub inputs: Vec<PathBuf>,
    /// Folder to write into; `<out>/<prefix>` is replaced as a whole.
    #[arg(long, env = "CHARTREG_PACK_OUT", default_value = "assets")]
    pub out: PathBuf,
    /// Repository path prefix: charts are served as `<prefix>/<chart name>`.
    #[arg(long, env = "CHARTREG_PACK_PREFIX", default_value = "charts")]
    pub prefix: String,
}

/// Parses `args`, runs the command, and says how it went.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Pack(args) => run_pack(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chartreg-build: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_pack(args: &PackArgs) -> Result<(), PackError> {
    let report = pack::pack(&args.inputs, &args.out, &args.prefix)?;
    let target = args.out.join(&args.prefix);
    let what = match report.outcome {
        chartreg_core::tree::Outcome::Written => "wrote",
        chartreg_core::tree::Outcome::Unchanged => "unchanged:",
    };
    println!(
        "{what} {} ({} charts, {} versions)",
        target.display(),
        report.charts,
        report.versions
    );
    Ok(())
}
