//! The command line: `chartreg-build init`, `fetch`, `import-bundle`, `pack`, `build` and
//! `image`.
//!
//! `main` parses arguments, runs one command, and reports how it went: a result line on stdout,
//! or one [`Error`] on stderr naming the input (exit code 1; 2 for arguments clap refuses).
//! Flags are read from the command line; `pack`'s `--config`, `--out` and `--prefix` also read
//! `CHARTREG_PACK_CONFIG`, `CHARTREG_PACK_OUT` and `CHARTREG_PACK_PREFIX`; `build`'s and
//! `image`'s `--kit` and `--cache` read `CHARTREG_KIT` and `CHARTREG_CACHE`; `image`'s `--out`,
//! `--tag` and `--base` read `CHARTREG_IMAGE_OUT`, `CHARTREG_IMAGE_TAG` and `CHARTREG_IMAGE_BASE`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::content_file::ContentFile;
use crate::pack::{self, LayoutSpec, LayoutSpecError, Report, Request};

/// Why a command failed: one variant per module that fails, the message made there, and the
/// command's name put before it where the user reads which step failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Pack(#[from] pack::PackError),
    #[error(transparent)]
    ContentFile(#[from] crate::content_file::Error),
    /// The large causes are boxed: errors are rare, and small `Result`s keep the happy path
    /// cheap.
    #[error(transparent)]
    Lock(Box<crate::lock::Error>),
    #[error("init: {0}")]
    Init(#[from] crate::init::Error),
    #[error("build: {0}")]
    Build(#[source] crate::compile::Error),
    #[error("image: {0}")]
    ImageBuild(#[source] crate::compile::Error),
    #[error("image: {0}")]
    ImageBinary(#[source] crate::image::command::BinaryError),
    #[error("image: {0}")]
    Image(#[from] crate::image::command::RunError),
    #[error(
        "fetch: give --helm-charts-file, --images-file, or both (or --lock FILE: the lists that lock was made from)"
    )]
    NoLists,
    #[error(
        "fetch: {} names no lists: give --helm-charts-file, --images-file, or both",
        .0.display()
    )]
    LockNamesNoLists(PathBuf),
    #[error(transparent)]
    CaFile(#[from] crate::fetch::CaFileError),
    #[error("fetch failed:\n{0}")]
    Fetch(Box<crate::fetch::FetchError>),
    #[error("import-bundle: {0}")]
    Import(Box<crate::import::ImportError>),
}

impl From<crate::lock::Error> for Error {
    fn from(e: crate::lock::Error) -> Self {
        Error::Lock(Box::new(e))
    }
}

impl From<crate::fetch::FetchError> for Error {
    fn from(e: crate::fetch::FetchError) -> Self {
        Error::Fetch(Box::new(e))
    }
}

impl From<crate::import::ImportError> for Error {
    fn from(e: crate::import::ImportError) -> Self {
        Error::Import(Box::new(e))
    }
}

impl Error {
    /// The process's exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::FAILURE
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
    /// Take the charts and images that mindthegap-style lists name from upstream into `charts/`
    /// and `images/`, pinned by a lock file (`chartreg.lock`).
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
    Image(crate::image::command::ImageArgs),
}

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// The folder to write into (created if missing; nothing in it is overwritten).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    /// The content file (paths in it are relative to it).
    #[arg(long, value_name = "FILE", default_value = "content.yaml")]
    pub config: PathBuf,
    /// The folder the content is packed into [default: assets beside the content file].
    #[arg(long, value_name = "DIR")]
    pub assets: Option<PathBuf>,
    /// The server binary to write [default: chartreg beside the content file].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The server kit to compile from [default: share/chartreg/kit of this tool's installation].
    #[arg(long, value_name = "DIR", env = "CHARTREG_KIT")]
    pub kit: Option<PathBuf>,
    /// Where compiles are cached, a folder per kit [default: $XDG_CACHE_HOME/chartreg, else
    /// ~/.cache/chartreg].
    #[arg(long, value_name = "DIR", env = "CHARTREG_CACHE")]
    pub cache: Option<PathBuf>,
    /// The platform to build for (linux/amd64, linux/arm64) [default: this machine's].
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
}

impl BuildArgs {
    /// The folder holding the content file.
    fn base(&self) -> PathBuf {
        self.config
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."))
            .to_owned()
    }

    /// The packing this build starts with.
    pub fn pack_args(&self) -> PackArgs {
        PackArgs {
            inputs: Vec::new(),
            layouts: Vec::new(),
            config: Some(self.config.clone()),
            out: self
                .assets
                .clone()
                .unwrap_or_else(|| self.base().join("assets")),
            prefix: None,
            check: false,
        }
    }

    /// The compile this build ends with, once the content is packed.
    pub fn compile_request(&self) -> Result<crate::compile::Request, crate::compile::Error> {
        use crate::compile::{Target, Toolchain};
        let target = match &self.platform {
            Some(platform) => platform.parse()?,
            None => {
                let host = Toolchain::find()?.host;
                Target::of_triple(&host).ok_or(crate::compile::Error::UnknownPlatform(host))?
            }
        };
        Ok(crate::compile::Request {
            assets: self.pack_args().out,
            out: self
                .out
                .clone()
                .unwrap_or_else(|| self.base().join("chartreg")),
            kit: self.kit.clone(),
            cache: self.cache.clone(),
            target,
        })
    }
}

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

#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// mindthegap's Helm charts file: classic repositories and their chart versions, and
    /// `chartURLs` (`oci://...`, packages).
    #[arg(long, value_name = "FILE")]
    pub helm_charts_file: Option<PathBuf>,
    /// mindthegap's images file: registries, their images and tags.
    #[arg(long, value_name = "FILE")]
    pub images_file: Option<PathBuf>,
    /// Folder the chart packages are written into.
    #[arg(long, value_name = "DIR", default_value = "charts")]
    pub out: PathBuf,
    /// Folder the image layouts are written into (`<DIR>/<registry>/<repository>`).
    #[arg(long, value_name = "DIR", default_value = "images")]
    pub images_out: PathBuf,
    /// The lock file [default: chartreg.lock beside the charts file, else the images file].
    /// Given alone, the lists are the ones it was made from.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Take exactly what the lock pins: fail, naming each entry, if a source now serves other
    /// bytes or the lists ask for other entries; the lock is never written.
    #[arg(long)]
    pub locked: bool,
    /// Only these platforms of multi-platform images (`linux/amd64`, `linux/arm64/v8`;
    /// repeatable) [default: every platform].
    #[arg(long = "platform", value_name = "OS/ARCH[/VARIANT]")]
    pub platforms: Vec<String>,
    /// PEM certificates to trust (besides the system's) for HTTPS sources.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// A registry host (`host` or `host:port`) reached over plain HTTP (repeatable; loopback
    /// hosts always are).
    #[arg(long = "plain-http", value_name = "HOST")]
    pub plain_http: Vec<String>,
    /// Do not take images' referrers (signatures, attestations, SBOMs).
    #[arg(long)]
    pub no_referrers: bool,
    /// Downloads at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub parallel: usize,
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
    /// A content file listing the inputs (see the README); paths in it are relative to it.
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
}

/// `--layout`'s value parser (clap shows the error after the value it refuses).
fn layout_spec(s: &str) -> Result<LayoutSpec, LayoutSpecError> {
    s.parse()
}

impl PackArgs {
    /// The request these arguments (and the content file, if any) make.
    fn request(&self) -> Result<Request, Error> {
        let mut charts = Vec::new();
        let mut layouts = Vec::new();
        let mut prefix = None;
        let mut links_within = None;
        if let Some(path) = &self.config {
            links_within = Some(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(std::path::Path::new("."))
                    .to_owned(),
            );
            let file = ContentFile::read(path)?;
            if let Some(c) = &file.charts {
                charts.extend(c.from.iter().cloned());
                prefix.clone_from(&c.prefix);
            }
            layouts.extend(file.layout_specs(path)?);
            if let Some(lock) = &file.lock {
                let (locked_charts, locked_layouts) = crate::lock::Lock::pack_inputs(lock)?;
                // A package a folder above already holds is not given twice (however either
                // path is written: the lock's are relative to its own folder).
                let real = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
                for chart in locked_charts {
                    let (file, folder) = (real(&chart), chart.parent().map(real));
                    let held = charts.iter().any(|from| {
                        let from = real(from);
                        folder.as_ref() == Some(&from) || file == from
                    });
                    if !held {
                        charts.push(chart);
                    }
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
        })
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
    let result = match cli.command {
        Command::Pack(args) => run_pack(&args),
        Command::Fetch(args) => run_fetch(&args),
        Command::ImportBundle(args) => run_import(&args),
        Command::Init(args) => run_init(&args),
        Command::Build(args) => run_build(&args),
        Command::Image(args) => run_image(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chartreg-build: {e}");
            e.exit_code()
        }
    }
}

fn run_pack(args: &PackArgs) -> Result<(), Error> {
    let request = args.request()?;
    if args.check {
        let report = pack::check(&request)?;
        warn(&report);
        println!(
            "up to date: {} ({})",
            request.out.display(),
            counts(&report)
        );
        return Ok(());
    }
    let report = pack::pack(&request)?;
    warn(&report);
    let what = match report.outcome() {
        chartreg_core::tree::Outcome::Written => "wrote",
        chartreg_core::tree::Outcome::Unchanged => "unchanged:",
    };
    println!("{what} {} ({})", request.out.display(), counts(&report));
    for name in &report.written {
        println!("  wrote {name}");
    }
    for name in &report.removed {
        println!("  removed {name}");
    }
    Ok(())
}

fn run_init(args: &InitArgs) -> Result<(), Error> {
    let report = crate::init::init(&args.dir)?;
    println!(
        "wrote {}: {}",
        report.dir.display(),
        report.written.join(", ")
    );
    println!("{}", crate::init::next_steps(&args.dir));
    Ok(())
}

fn run_build(args: &BuildArgs) -> Result<(), Error> {
    let request = args.compile_request().map_err(Error::Build)?;
    run_pack(&args.pack_args())?;
    compile(&request)
}

/// Compiles what `request` asks for (the content already packed) and says what it wrote.
fn compile(request: &crate::compile::Request) -> Result<(), Error> {
    let report = crate::compile::compile(request).map_err(Error::Build)?;
    println!(
        "wrote {} (server for {}, kit {}, {}; {:.1} s, cache {})",
        report.out.display(),
        request.target.platform(),
        report.kit.id,
        report.toolchain.version,
        report.elapsed.as_secs_f64(),
        report.target_dir.display()
    );
    Ok(())
}

/// `image`: with `--config`, the content is packed once and the binaries are built first
/// (`chartreg` beside the content file for one platform; `chartreg.OS-ARCH` for each of
/// several), then written into the image.
fn run_image(mut args: crate::image::command::ImageArgs) -> Result<(), Error> {
    if let Some(config) = args.config.clone() {
        let platforms = match args.platforms.as_slice() {
            [] => vec![None],
            given => given.iter().cloned().map(Some).collect(),
        };
        let several = platforms.len() > 1;
        let mut build = BuildArgs {
            config,
            assets: args.assets.clone(),
            out: None,
            kit: args.kit.clone(),
            cache: args.cache.clone(),
            platform: None,
        };
        let mut packed = false;
        for platform in platforms {
            build.platform = platform;
            let mut request = build.compile_request().map_err(Error::ImageBuild)?;
            if !packed {
                run_pack(&build.pack_args())?;
                packed = true;
            }
            let platform = request.target.platform();
            if several {
                let name = format!("chartreg.{}", platform.replace('/', "-"));
                request.out = request.out.with_file_name(name);
            }
            compile(&request)?;
            let platform = crate::image::binary::parse_platform(platform)
                .map_err(|e| Error::ImageBinary(crate::image::command::BinaryError::Platform(e)))?;
            args.binaries.push(crate::image::binary::Binary {
                platform,
                path: request.out,
            });
        }
    }
    Ok(crate::image::command::run(&args)?)
}

fn run_fetch(args: &FetchArgs) -> Result<(), Error> {
    use crate::fetch;
    let given = args.helm_charts_file.as_ref().or(args.images_file.as_ref());
    let lock = match (&args.lock, given) {
        (Some(lock), _) => lock.clone(),
        (None, Some(list)) => list
            .parent()
            .unwrap_or(std::path::Path::new(""))
            .join("chartreg.lock"),
        (None, None) => return Err(Error::NoLists),
    };
    // No list given: the ones the lock was made from.
    let (charts_file, images_file) = if given.is_some() {
        (args.helm_charts_file.clone(), args.images_file.clone())
    } else {
        // No lock names no lists: the error below says so.
        let lists = fetch::Lock::read(&lock)?
            .map(|l| l.lists)
            .unwrap_or_default();
        let resolve = |p: Option<String>| p.map(|p| crate::lock::resolved(&lock, &p));
        let lists = (resolve(lists.helm_charts_file), resolve(lists.images_file));
        if lists.0.is_none() && lists.1.is_none() {
            return Err(Error::LockNamesNoLists(lock));
        }
        lists
    };
    let ca_pem = match &args.ca_file {
        Some(path) => Some(fetch::Transport::read_ca_file(path)?),
        None => None,
    };
    let options = fetch::Options {
        charts_file,
        images_file,
        out: args.out.clone(),
        images_out: args.images_out.clone(),
        lock,
        locked: args.locked,
        platforms: args.platforms.clone(),
        referrers: !args.no_referrers,
        transport: fetch::Transport {
            ca_pem,
            plain_http: args.plain_http.clone(),
        },
        parallel: args.parallel,
    };
    let report = fetch::fetch(&options)?;
    let lock_state = if options.locked {
        "matches"
    } else if report.changes.is_empty() {
        "unchanged:"
    } else {
        "updated"
    };
    println!(
        "fetched {} charts, {} images; lock {lock_state} {}",
        report.charts,
        report.images,
        options.lock.display()
    );
    for change in &report.changes {
        println!("  {change}");
    }
    Ok(())
}

fn run_import(args: &ImportArgs) -> Result<(), Error> {
    let options = crate::import::Options {
        bundles: args.bundles.clone(),
        out: args.out.clone(),
        prefix: args.prefix.clone(),
    };
    let report = crate::import::import(&options)?;
    let tags: usize = report.repositories.values().sum();
    println!(
        "imported {} repositories, {tags} tags into {} ({} written, {} unchanged)",
        report.repositories.len(),
        args.out.display(),
        report.written.len(),
        report.unchanged
    );
    for name in &report.written {
        println!("  wrote {name}");
    }
    for note in &report.notes {
        println!("  note: {note}");
    }
    Ok(())
}

fn warn(report: &Report) {
    for warning in &report.warnings {
        eprintln!("chartreg-build: warning: {warning}");
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
