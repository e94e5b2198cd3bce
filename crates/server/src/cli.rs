//! The command line: `chartreg [serve]`, `chartreg ls`, `chartreg verify`,
//! `chartreg addons-config`, `chartreg mirror-config`. (Content is made by the other
//! binary, `chartreg-build`.)
//!
//! `main` parses arguments (every `serve` flag also reads a `CHARTREG_*` variable), sets up
//! logging, and runs one command. Its error, and `verify`'s problems, quote the content (names
//! and paths an upstream chose): they are printed [`escaped`], as `ls` prints its listing. Content reaches it as a function returning files, so only the binary
//! embeds anything and tests can run the same commands over other content.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};

use crate::logging::LogFormat;
use crate::serve::{self, ServeOptions, StartupError};
use crate::tls::TlsFiles;
use crate::{addons, http, inspect, mirror_config};
use chartreg_core::content::{Content, Registry};
use chartreg_core::shown::escaped;

/// A read-only OCI registry serving the Helm charts built into it.
#[derive(Debug, Parser)]
#[command(name = "chartreg", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

// Parsed once per process: the size of the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the embedded content over the OCI distribution API (the default command).
    Serve(ServeArgs),
    /// List what the binary holds: repository, tag, kind, platforms, digest, size.
    Ls(LsArgs),
    /// Check everything the binary holds again, from the bytes up; name every problem.
    Verify,
    /// Print the add-ons ConfigMap: which chart versions this binary serves, and where.
    AddonsConfig(AddonsArgs),
    /// Write the files that make nodes pull the images this binary holds through it: a
    /// containerd hosts.toml per upstream registry and a CRI-O drop-in.
    MirrorConfig(MirrorArgs),
}

/// What `mirror-config` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MirrorFormat {
    /// The files under --out: `<registry>/hosts.toml` (containerd's certs.d),
    /// `containers/registries.conf.d/50-chartreg.conf` and `containers/certs.d/<mirror>/ca.crt`
    /// (CRI-O).
    Files,
    /// A Cluster API KubeadmConfigTemplate whose `files:` put them on nodes, on stdout.
    Kubeadm,
}

#[derive(Debug, Clone, Args)]
pub struct MirrorArgs {
    /// Where nodes reach chartreg: http(s)://HOST[:PORT].
    #[arg(long)]
    pub mirror_url: crate::mirror_config::MirrorUrl,
    /// The PEM CA that signed chartreg's certificate, written beside each hosts.toml.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    /// Also `_default/hosts.toml`: every other registry asks chartreg first.
    #[arg(long)]
    pub default: bool,
    /// chartreg is each registry's only host: pulls never reach upstream.
    #[arg(long)]
    pub no_upstream_fallback: bool,
    #[arg(long, value_enum, default_value_t = MirrorFormat::Files)]
    pub format: MirrorFormat,
    /// The folder to write the files into (needed by `--format files`); `ctr images pull
    /// --hosts-dir` and containerd's `config_path` read its top.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The KubeadmConfigTemplate's name (`--format kubeadm`).
    #[arg(long, default_value = "chartreg-mirror", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub name: String,
    /// The KubeadmConfigTemplate's namespace (none: left to `kubectl apply -n`).
    #[arg(long)]
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CHARTREG_LISTEN", default_value = "0.0.0.0:5000")]
    pub listen: String,
    /// PEM certificate chain (e.g. a mounted secret's tls.crt); serves HTTPS when given.
    #[arg(
        long,
        env = "CHARTREG_TLS_CERT_FILE",
        requires = "tls_private_key_file"
    )]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1; e.g. a mounted secret's tls.key).
    #[arg(
        long,
        env = "CHARTREG_TLS_PRIVATE_KEY_FILE",
        requires = "tls_cert_file"
    )]
    pub tls_private_key_file: Option<PathBuf>,
    /// How often the certificate and key files are re-read for a new pair.
    #[arg(long, env = "CHARTREG_TLS_RELOAD_INTERVAL", default_value = "2s", value_parser = duration)]
    pub tls_reload_interval: Duration,
    /// Serve /metrics on this address instead of the main listener.
    #[arg(long, env = "CHARTREG_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
    /// Log lines as text or as one JSON object per line.
    #[arg(long, env = "CHARTREG_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Worker threads [default: the number of CPUs].
    #[arg(long, env = "CHARTREG_WORKERS")]
    pub workers: Option<usize>,
    /// After SIGTERM/SIGINT, keep serving (with /readyz at 503) this long before draining.
    #[arg(long, env = "CHARTREG_SHUTDOWN_DELAY", default_value = "5s", value_parser = duration)]
    pub shutdown_delay: Duration,
    /// How long requests in flight may take to finish once draining starts.
    #[arg(long, env = "CHARTREG_SHUTDOWN_TIMEOUT", default_value = "30s", value_parser = duration)]
    pub shutdown_timeout: Duration,
    /// A client must send its whole request head within this time of connecting (else 408).
    #[arg(long, env = "CHARTREG_REQUEST_HEADER_TIMEOUT", default_value = "5s", value_parser = duration)]
    pub request_header_timeout: Duration,
    /// How long an idle keep-alive connection stays open.
    #[arg(long, env = "CHARTREG_KEEP_ALIVE", default_value = "15s", value_parser = duration)]
    pub keep_alive: Duration,
    /// Connections served at once; more wait in the listen backlog.
    #[arg(long, env = "CHARTREG_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
    /// Largest request head (request line and headers) accepted, in bytes; larger gets 431.
    #[arg(long, env = "CHARTREG_MAX_HEADER_BYTES", default_value_t = http::DEFAULT_MAX_HEADER_BYTES)]
    pub max_header_bytes: usize,
}

/// Durations are written with a unit: `500ms`, `5s`, `1m`.
// A clap value parser: clap takes its errors as `String`.
fn duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration with a unit such as 500ms or 5s: {e}"))
}

impl ServeArgs {
    fn options(&self) -> ServeOptions {
        let workers = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        ServeOptions {
            listen: self.listen.clone(),
            tls: match (&self.tls_cert_file, &self.tls_private_key_file) {
                (Some(cert), Some(key)) => Some(TlsFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                }),
                _ => None,
            },
            tls_reload_interval: self.tls_reload_interval,
            metrics_listen: self.metrics_listen.clone(),
            workers,
            shutdown_delay: self.shutdown_delay,
            shutdown_timeout: self.shutdown_timeout,
            request_header_timeout: self.request_header_timeout,
            keep_alive: self.keep_alive,
            max_connections: self.max_connections,
            max_header_bytes: self.max_header_bytes,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct AddonsArgs {
    /// Where clusters reach the charts: `oci://<service>.<namespace>.svc/charts`.
    #[arg(long)]
    pub repository_url: String,
    /// The ConfigMap's name.
    #[arg(long, default_value = "default-helm-addons-config")]
    pub name: String,
    /// The ConfigMap's namespace (none: left to `kubectl apply -n`).
    #[arg(long)]
    pub namespace: Option<String>,
    /// A file of `KEY: CHART` lines (a YAML map) naming data keys other than the chart names,
    /// e.g. `nfd: node-feature-discovery`.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// Only the charts the mapping file names.
    #[arg(long, requires = "mapping")]
    pub only_mapped: bool,
    /// Leave this chart out (repeatable); a name that is no chart under the URL is an error.
    #[arg(long, value_name = "CHART")]
    pub exclude: Vec<String>,
    /// Every version of every chart, as `KEY-VERSION` keys (default: the version `helm pull`
    /// without `--version` gets).
    #[arg(long)]
    pub all_versions: bool,
}

#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print only the content digest, `sha256:<hex>`: the sha256 of the lines `sha256sum -z`
    /// prints for every embedded file, sorted by path (`make image` tags the image with it).
    #[arg(long, conflicts_with = "json")]
    pub content_digest: bool,
    /// Print only the SBOM: what the binary serves and the crates it is made of, as SPDX 2.3
    /// JSON (`/sbom.spdx.json`) or CycloneDX 1.5 JSON (`--sbom cyclonedx`, `/sbom.cdx.json`);
    /// `chartreg-build image` attaches both to the image.
    #[arg(
        long,
        value_name = "FORMAT",
        num_args = 0..=1,
        default_missing_value = "spdx",
        conflicts_with_all = ["json", "content_digest"]
    )]
    pub sbom: Option<SbomFormat>,
}

/// The formats `ls --sbom` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SbomFormat {
    /// SPDX 2.3 JSON.
    Spdx,
    /// CycloneDX 1.5 JSON.
    Cyclonedx,
}

impl SbomFormat {
    fn format(self) -> crate::web::sbom::Format {
        match self {
            SbomFormat::Spdx => crate::web::sbom::Format::Spdx,
            SbomFormat::Cyclonedx => crate::web::sbom::Format::CycloneDx,
        }
    }
}

/// Parses `args`, runs the command over `content`, and says how it went.
pub fn main(
    args: impl IntoIterator<Item = OsString>,
    content: impl FnOnce() -> Content,
) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // A host program may have set up logging already; keep its logger then.
    let format = match &cli.command {
        Some(Command::Serve(args)) => args.log_format,
        None => cli.serve.log_format,
        Some(
            Command::Ls(_) | Command::Verify | Command::AddonsConfig(_) | Command::MirrorConfig(_),
        ) => LogFormat::Text,
    };
    crate::logging::init(format);
    let result = match cli.command {
        None => serve(&cli.serve, content),
        Some(Command::Serve(args)) => serve(&args, content),
        Some(Command::Ls(args)) => ls(&args, content),
        Some(Command::Verify) => verify(content),
        Some(Command::AddonsConfig(args)) => addons_config(&args, content),
        Some(Command::MirrorConfig(args)) => mirror_config(&args, content),
    };
    // Bounded: a log output nobody reads does not hold the exit (logging::FINISH_BOUND).
    let _ = crate::logging::finish();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chartreg: {}", escaped(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
enum CommandError {
    #[error(transparent)]
    Serve(#[from] serve::Error),
    #[error("cannot write the listing: {0}")]
    Listing(std::io::Error),
    #[error("{0} problem(s) found")]
    Verify(usize),
    #[error(transparent)]
    Unreadable(#[from] chartreg_core::content::Unreadable),
    #[error(transparent)]
    Sbom(#[from] crate::web::sbom::SbomError),
    #[error(transparent)]
    Mapping(#[from] addons::MappingError),
    #[error(transparent)]
    Addons(#[from] addons::AddonsError),
    #[error(transparent)]
    Mirror(#[from] mirror_config::MirrorError),
    #[error(
        "mirror-config writes its files into a folder: give --out DIR (or --format kubeadm, which prints them)"
    )]
    MirrorOut,
    #[error("--format kubeadm prints the KubeadmConfigTemplate; it writes nothing into --out {}", .0.display())]
    MirrorOutWithKubeadm(PathBuf),
}

/// The registry the binary serves, from its facts and files (see `Registry::from_facts`).
fn load(content: impl FnOnce() -> Content) -> Result<Registry, CommandError> {
    let content = content();
    let loaded = Registry::from_facts(&content.facts, &content.files).map_err(StartupError::from);
    Ok(loaded.map_err(serve::Error::from)?)
}

fn serve(args: &ServeArgs, content: impl FnOnce() -> Content) -> Result<(), CommandError> {
    let started = Instant::now();
    let registry = load(content)?;
    Ok(serve::run(registry, &args.options(), started)?)
}

fn ls(args: &LsArgs, content: impl FnOnce() -> Content) -> Result<(), CommandError> {
    if args.content_digest {
        let digest = inspect::content_digest(&content().files);
        let mut out = std::io::stdout().lock();
        return match writeln!(out, "{}", digest.as_str()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other.map_err(CommandError::Listing),
        };
    }
    let registry = load(content)?;
    if let Some(format) = args.sbom {
        let overview = crate::web::model::Overview::of(&registry)?;
        let build = crate::this_build::get();
        let sbom = crate::web::sbom::document(&registry, &overview, build, format.format())?;
        return match std::io::stdout().lock().write_all(&sbom) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other.map_err(CommandError::Listing),
        };
    }
    let rows = inspect::rows(&registry)?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        inspect::write_json(&mut out, &rows)
    } else {
        inspect::write_table(&mut out, &rows, registry.summary().bytes)
    };
    match written {
        // The reader has what it wanted (`chartreg ls | head`): not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CommandError::Listing),
    }
}

fn addons_config(args: &AddonsArgs, content: impl FnOnce() -> Content) -> Result<(), CommandError> {
    let mapping = match &args.mapping {
        Some(path) => addons::read_mapping(path)?,
        None => Default::default(),
    };
    let request = addons::Request {
        repository_url: args.repository_url.clone(),
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        mapping,
        only_mapped: args.only_mapped,
        exclude: args.exclude.iter().cloned().collect(),
        all_versions: args.all_versions,
    };
    let registry = load(content)?;
    let entries = addons::entries(&registry, &request)?;
    let mut out = std::io::stdout().lock();
    match out.write_all(addons::config_map(&entries, &request).as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CommandError::Listing),
    }
}

fn mirror_config(args: &MirrorArgs, content: impl FnOnce() -> Content) -> Result<(), CommandError> {
    let request = mirror_config::Request {
        mirror: args.mirror_url.clone(),
        ca: match &args.ca_file {
            Some(path) => Some(mirror_config::read_ca(path)?),
            None => None,
        },
        default: args.default,
        no_upstream_fallback: args.no_upstream_fallback,
    };
    let registry = load(content)?;
    let files = mirror_config::node_files(registry.namespaces(), &request)?;
    let text = match (args.format, &args.out) {
        (MirrorFormat::Files, Some(out)) => {
            let written = mirror_config::write(out, &files)?;
            let mut text = String::new();
            for path in written {
                text.push_str(&format!("wrote {}\n", path.display()));
            }
            text
        }
        (MirrorFormat::Files, None) => return Err(CommandError::MirrorOut),
        (MirrorFormat::Kubeadm, Some(out)) => {
            return Err(CommandError::MirrorOutWithKubeadm(out.clone()));
        }
        (MirrorFormat::Kubeadm, None) => {
            mirror_config::kubeadm_config_template(&files, &args.name, args.namespace.as_deref())?
        }
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CommandError::Listing),
    }
}

fn verify(content: impl FnOnce() -> Content) -> Result<(), CommandError> {
    let content = content();
    let files = content.files.len();
    let (problems, rechecked) = inspect::verify_all(&content);
    if problems.is_empty() {
        println!(
            "verified {files} files: every byte is what its digest says, and start-up serves exactly the content"
        );
        if let Some(n) = rechecked {
            println!(
                "re-checked {n} signed artifacts against the embedded policy: each verifies as the build recorded"
            );
        }
        return Ok(());
    }
    for problem in &problems {
        eprintln!("chartreg: {}", escaped(problem));
    }
    Err(CommandError::Verify(problems.len()))
}
