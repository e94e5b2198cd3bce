//! The command line: `chartreg [serve]`, `chartreg pack`, `chartreg ls`.
//!
//! `main` parses arguments (every flag also reads a `CHARTREG_*` variable), sets up logging, and
//! runs one command. Content reaches it as a function returning files, so only the binary
//! embeds anything and tests can run the same commands over other content.

use std::ffi::OsString;
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use actix_web::web;
use clap::{Args, Parser, Subcommand};
use serde::Serialize;

use crate::content::{ContentFile, Registry};
use crate::{http, pack};

/// A read-only OCI registry serving the Helm charts built into it.
#[derive(Debug, Parser)]
#[command(name = "chartreg", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the embedded content over the OCI distribution API (the default command).
    Serve(ServeArgs),
    /// Turn Helm chart packages into OCI image layouts, one per chart.
    Pack(PackArgs),
    /// List what the binary holds: repository, tag, digest, size.
    Ls(LsArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CHARTREG_LISTEN", default_value = "0.0.0.0:5000")]
    pub listen: String,
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

#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Parses `args`, runs the command over `content`, and says how it went.
pub fn main<I, C>(args: impl IntoIterator<Item = OsString>, content: impl FnOnce() -> C) -> ExitCode
where
    C: IntoIterator<Item = ContentFile, IntoIter = I>,
    I: Iterator<Item = ContentFile>,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // A host program may have set up logging already; keep its logger then.
    // actix-server's own start-up lines are noise next to chartreg's summary line.
    let _ = env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("info,actix_server=warn"),
    )
    .try_init();
    let result = match cli.command {
        None => serve(&cli.serve, content),
        Some(Command::Serve(args)) => serve(&args, content),
        Some(Command::Pack(args)) => run_pack(&args),
        Some(Command::Ls(args)) => ls(&args, content),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("chartreg: {message}");
            ExitCode::FAILURE
        }
    }
}

fn load<C: IntoIterator<Item = ContentFile>>(
    content: impl FnOnce() -> C,
) -> Result<Registry, String> {
    Registry::from_files(content())
        .map_err(|e| format!("the embedded content cannot be served: {e}"))
}

fn serve<C: IntoIterator<Item = ContentFile>>(
    args: &ServeArgs,
    content: impl FnOnce() -> C,
) -> Result<(), String> {
    let started = Instant::now();
    let registry = load(content)?;
    let listener = TcpListener::bind(&args.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let s = registry.summary();
    log::info!(
        "serving {} repositories, {} tags, {} manifests, {} blobs ({} bytes) on http://{address} (ready in {} ms)",
        s.repositories,
        s.tags,
        s.manifests,
        s.blobs,
        s.bytes,
        started.elapsed().as_millis()
    );
    actix_web::rt::System::new()
        .block_on(http::serve(listener, web::Data::new(registry)))
        .map_err(|e| format!("server failed: {e}"))
}

fn run_pack(args: &PackArgs) -> Result<(), String> {
    let report = pack::pack(&args.inputs, &args.out, &args.prefix).map_err(|e| e.to_string())?;
    let target = args.out.join(&args.prefix);
    let what = match report.outcome {
        pack::Outcome::Written => "wrote",
        pack::Outcome::Unchanged => "unchanged:",
    };
    println!(
        "{what} {} ({} charts, {} versions)",
        target.display(),
        report.charts,
        report.versions
    );
    Ok(())
}

/// One line of `chartreg ls`.
#[derive(Debug, Serialize)]
struct Listed<'a> {
    repository: &'a str,
    tag: &'a str,
    digest: &'a str,
    /// Bytes a pull downloads: the manifest and everything it references.
    size: u64,
}

fn ls<C: IntoIterator<Item = ContentFile>>(
    args: &LsArgs,
    content: impl FnOnce() -> C,
) -> Result<(), String> {
    let registry = load(content)?;
    let mut rows = Vec::new();
    for repository in registry.repositories() {
        for tag in repository.tags() {
            if let Some(digest) = repository.tag_digest(tag) {
                rows.push(Listed {
                    repository: repository.name(),
                    tag,
                    digest: digest.as_str(),
                    size: repository.pull_size(digest),
                });
            }
        }
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        let width = |f: fn(&Listed) -> usize, title: &str| {
            rows.iter().map(f).max().unwrap_or(0).max(title.len())
        };
        let (wr, wt) = (
            width(|r| r.repository.len(), "REPOSITORY"),
            width(|r| r.tag.len(), "TAG"),
        );
        let mut result = writeln!(
            out,
            "{:wr$}  {:wt$}  {:71}  SIZE",
            "REPOSITORY", "TAG", "DIGEST"
        );
        for r in &rows {
            result = result.and_then(|()| {
                writeln!(
                    out,
                    "{:wr$}  {:wt$}  {:71}  {}",
                    r.repository, r.tag, r.digest, r.size
                )
            });
        }
        result
    };
    written.map_err(|e| format!("cannot write the listing: {e}"))
}
