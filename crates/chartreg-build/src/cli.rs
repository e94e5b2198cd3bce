//! The command line: `chartreg-build init`, `fetch`, `import-bundle`, `pack`, `build`,
//! `image`, `images` and `diff`.
//!
//! `main` parses arguments, runs one command, and reports how it went: a result line on stdout,
//! or one [`Error`] on stderr naming the input (exit code 1; 2 for arguments clap refuses, and
//! for `diff`, whose 1 means "something changes"),
//! escaped as every line the tool prints is ([`crate::output`]).
//! Each command's flags and runner live beside what it runs (`pack::command`,
//! `fetch::command`, `import::command`, `init`, `compile::command`, `image::command`,
//! `chart_images::command`); this module only chooses one.
//! Flags are read from the command line; `pack`'s `--config`, `--out` and `--prefix` also read `CHARTREG_PACK_CONFIG`, `CHARTREG_PACK_OUT` and
//! `CHARTREG_PACK_PREFIX`; `build`'s and `image`'s `--kit` and `--cache` read `CHARTREG_KIT`
//! and `CHARTREG_CACHE`; `image`'s `--out`, `--tag` and `--base` read `CHARTREG_IMAGE_OUT`,
//! `CHARTREG_IMAGE_TAG` and `CHARTREG_IMAGE_BASE`.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::chart_images::command::ImagesArgs;
use crate::compile::command::BuildArgs;
use crate::diff::DiffArgs;
use crate::fetch::command::FetchArgs;
use crate::image::command::ImageArgs;
use crate::import::command::ImportArgs;
use crate::init::InitArgs;
use crate::output::eprint_line;
use crate::pack::command::PackArgs;

/// Why a command failed: one variant per command, the message made in its module, and the
/// command's name put before it where the user reads which step failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Pack(#[from] crate::pack::command::Error),
    #[error(transparent)]
    Fetch(#[from] crate::fetch::command::Error),
    /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
    #[error("import-bundle: {0}")]
    Import(Box<crate::import::ImportError>),
    #[error("init: {0}")]
    Init(#[from] crate::init::Error),
    #[error("build: {0}")]
    Build(#[from] crate::compile::command::Error),
    #[error("image: {0}")]
    Image(#[from] crate::image::command::RunError),
    #[error("images: {0}")]
    Images(#[from] crate::chart_images::command::Error),
    #[error("diff: {0}")]
    Diff(#[from] crate::diff::Error),
}

impl From<crate::import::ImportError> for Error {
    fn from(e: crate::import::ImportError) -> Self {
        Error::Import(Box::new(e))
    }
}

impl Error {
    /// The process's exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            // 1 is `diff`'s "something changes", as diff(1)'s.
            Error::Diff(_) => ExitCode::from(2),
            _ => ExitCode::FAILURE,
        }
    }
}

/// Makes chartreg's content: Helm charts and OCI image layouts in, OCI image layouts out (run it
/// on the build machine; the `chartreg` server embeds what it writes).
#[derive(Debug, Parser)]
#[command(name = "chartreg-build", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Turn charts (packages and folders) and OCI image layouts into the layouts chartreg serves.
    Pack(PackArgs),
    /// Take the charts and images that mindthegap-style lists name from upstream into the
    /// fetched folder (`fetched/`: `charts/`, `images/`), pinned by its lock (`chartreg.lock`).
    Fetch(FetchArgs),
    /// Import mindthegap bundles (earlier releases' charts and images) as OCI image layouts,
    /// digests unchanged; `pack` keeps them and merges packed charts of the same repository.
    ImportBundle(ImportArgs),
    /// Write a new content repository: a commented content.yaml, an empty charts/, a .gitignore.
    Init(InitArgs),
    /// Pack a content file's inputs, then compile the server with them inside (offline, from the
    /// server kit installed with this tool) into one statically linked binary.
    Build(BuildArgs),
    /// Write chartreg's container image as an OCI image layout, with no container engine: the
    /// static server binary in one layer, on scratch or a base layout; reproducible.
    Image(Box<ImageArgs>),
    /// List the images the charts reference (rendered with Helm, from annotations, from
    /// values), with where each comes from; write them as an images file for `fetch`.
    Images(ImagesArgs),
    /// Say what a rollout from OLD to NEW changes: the charts and images added, removed and
    /// changed (digest, size, signer), and the bytes it adds; exit 0 when nothing changes, 1
    /// when something does, 2 on an error.
    Diff(DiffArgs),
}

impl Command {
    /// The flags of how programs run (`--helm`, the render bounds, `--unbounded`), for the
    /// commands that run any.
    fn render(&self) -> Option<&crate::chart_images::flags::RenderArgs> {
        match self {
            Command::Pack(args) => Some(&args.render),
            Command::Fetch(args) => Some(&args.render),
            Command::Build(args) => Some(&args.render),
            Command::Image(args) => Some(&args.render),
            Command::Images(args) => Some(&args.render),
            Command::ImportBundle(_) | Command::Init(_) | Command::Diff(_) => None,
        }
    }
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
    // The commands that change files stop cleanly on SIGINT and SIGTERM (see `durable::stop`).
    let writes = matches!(
        cli.command,
        Command::Pack(_)
            | Command::Fetch(_)
            | Command::ImportBundle(_)
            | Command::Build(_)
            | Command::Image(_)
    );
    // What `fetch`, `pack` and `import-bundle` write, they write at one commit point: a
    // failure changed nothing.
    let all_or_nothing = match &cli.command {
        // A check writes nothing: there is nothing to say.
        Command::Pack(args) => !args.check,
        Command::Fetch(_) | Command::ImportBundle(_) => true,
        _ => false,
    };
    if writes {
        crate::durable::stop::watch();
    }
    // Every program these commands run, Helm or not, goes ahead unbounded only if told.
    if let Some(render) = cli.command.render() {
        crate::bounded::allow_unbounded(render.unbounded);
    }
    let result = match cli.command {
        Command::Pack(args) => crate::pack::command::run(&args).map_err(Error::from),
        Command::Fetch(args) => crate::fetch::command::run(&args).map_err(Error::from),
        Command::ImportBundle(args) => crate::import::command::run(&args).map_err(Error::from),
        Command::Init(args) => crate::init::run(&args).map_err(Error::from),
        Command::Build(args) => crate::compile::command::run(&args).map_err(Error::from),
        Command::Image(args) => crate::image::command::run(*args).map_err(Error::from),
        Command::Images(args) => crate::chart_images::command::run(&args).map_err(Error::from),
        Command::Diff(args) => match crate::diff::run(&args) {
            Ok(true) => return ExitCode::FAILURE,
            Ok(false) => Ok(()),
            Err(e) => Err(Error::from(e)),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprint_line(format_args!("chartreg-build: {e}"));
            // A failure after a stop was asked for is the stop's.
            if let Err(stopped) = crate::durable::stop::check() {
                return ExitCode::from(stopped.exit_code());
            }
            if all_or_nothing && !crate::durable::changed_on_failure() {
                eprint_line("chartreg-build: nothing was changed");
            }
            e.exit_code()
        }
    }
}
