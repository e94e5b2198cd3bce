//! `chartreg-build build`: the flags, and [`run`], which packs the content file's inputs and
//! then compiles the server with them inside ([`super::compile`]), printing one result line.
//! [`binaries`] does the same for `image --config`, once per platform.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{Request, Target, Toolchain};
use crate::pack::command::PackArgs;

/// Why `build` did not finish: the compile (or what it needs), or the packing before it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Compile(#[from] super::Error),
    #[error(transparent)]
    Pack(#[from] crate::pack::command::Error),
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
    /// How charts are rendered to find the images they need, when the content file has an
    /// `images:` section.
    #[command(flatten)]
    pub render: crate::chart_images::flags::RenderArgs,
    /// The fingerprint of the key `image --sign-key` signs the image with, compiled in as the
    /// binary's signer (not a flag of `build`).
    #[arg(skip)]
    pub signer: Option<String>,
}

impl BuildArgs {
    /// The folder holding the content file.
    fn base(&self) -> PathBuf {
        self.config
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned()
    }

    /// The packing this build starts with.
    fn pack_args(&self) -> PackArgs {
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
            render: self.render.clone(),
        }
    }

    /// The compile this build ends with, once the content is packed.
    fn compile_request(&self) -> Result<Request, super::Error> {
        let target = match &self.platform {
            Some(platform) => platform.parse()?,
            None => {
                let host = Toolchain::find()?.host;
                Target::of_triple(&host).ok_or(super::Error::UnknownPlatform(host))?
            }
        };
        Ok(Request {
            assets: self.pack_args().out,
            out: self
                .out
                .clone()
                .unwrap_or_else(|| self.base().join("chartreg")),
            kit: self.kit.clone(),
            cache: self.cache.clone(),
            target,
            signer: self.signer.clone(),
        })
    }
}

/// Runs `chartreg-build build` with `args`. The platform is checked before anything is packed.
pub fn run(args: &BuildArgs) -> Result<(), Error> {
    let request = args.compile_request()?;
    crate::pack::command::run(&args.pack_args())?;
    Ok(compile(&request)?)
}

/// Packs the content `build` names once and compiles a server per platform (`None`: this
/// machine's), as `build` does: `chartreg` beside the content file for one platform,
/// `chartreg.OS-ARCH` for each of several. Each binary with its platform (`linux/amd64`).
/// `build`'s own `platform` and `out` are not used.
pub fn binaries(
    build: &BuildArgs,
    platforms: &[Option<String>],
) -> Result<Vec<(String, PathBuf)>, Error> {
    let several = platforms.len() > 1;
    let mut build = BuildArgs {
        out: None,
        ..build.clone()
    };
    let mut built = Vec::with_capacity(platforms.len());
    for platform in platforms {
        build.platform.clone_from(platform);
        let mut request = build.compile_request()?;
        if built.is_empty() {
            crate::pack::command::run(&build.pack_args())?;
        }
        let platform = request.target.platform().to_owned();
        if several {
            let name = format!("chartreg.{}", platform.replace('/', "-"));
            request.out = request.out.with_file_name(name);
        }
        compile(&request)?;
        built.push((platform, request.out));
    }
    Ok(built)
}

/// Compiles what `request` asks for (the content already packed) and says what it wrote.
fn compile(request: &Request) -> Result<(), super::Error> {
    let report = super::compile(request)?;
    crate::output::print_line(format_args!(
        "wrote {} (server for {}, kit {}, {}; {:.1} s, cache {})",
        report.out.display(),
        request.target.platform(),
        report.kit.id,
        report.toolchain.version,
        report.elapsed.as_secs_f64(),
        report.target_dir.display()
    ));
    Ok(())
}
