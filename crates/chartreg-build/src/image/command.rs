//! `chartreg-build image`: the flags, and [`run`], which turns parsed flags into an
//! [`ImageRequest`], writes the image and reports it:
//!
//! 1. `--binary [OS/ARCH[/VARIANT]=]FILE`: without a platform, the host's.
//! 2. The content digest: `--content-digest`, else what the host's binary prints for
//!    `ls --content-digest` (module `asked`); when no binary is the host's, an error asking for
//!    `--content-digest`.
//! 3. The tag: `--tag`, else `VERSION-<first 12 hex digits of the content digest>`, so that
//!    every change of content is a new tag.
//! 4. `created` from `SOURCE_DATE_EPOCH` (unset or empty: 0, 1970-01-01T00:00:00Z, as ko
//!    does, so that output is reproducible).
//! 5. The SBOMs attached to the image: `--sbom FILE` (repeatable), else the SPDX and CycloneDX
//!    documents the host's binary prints; `--no-sbom` attaches none (module `asked`, which
//!    asks for the content digest too).
//! 6. The content listing the image carries (`super::listing`, what `diff` reads): what the
//!    host's binary says (`--version`, `ls --content-digest`, `ls --json`), else `--listing
//!    FILE`; `--no-listing` carries none (module `asked`). Its content digest must be the
//!    image's.
//! 7. `--sign-key FILE`: the cosign key that signs the image ([`super::sign`]), opened with
//!    `COSIGN_PASSWORD` before anything is written, and the repository the signatures name
//!    (`--repository`, else `image.repository` of the values file: [`super::repository`]).
//! 8. [`super::write`]; then `--tag-file` gets the tag, and stdout one line: the layout, tag,
//!    manifest or index digest, content digest, and the `skopeo copy` that takes it anywhere.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use chartreg_core::oci::{Digest, Tag, TagError};
use chartreg_core::tree::Outcome;
use clap::Args;

use super::binary::{Binary, host_platform, parse_platform};
use super::{BaseSpec, Error, ImageReport, ImageRequest};
use crate::compile::{self, command::BuildArgs};

/// chartreg's version: the first part of the default tag.
const VERSION: &str = env!("CARGO_PKG_VERSION");
const EPOCH_VARIABLE: &str = "SOURCE_DATE_EPOCH";

#[derive(Debug, Clone, Args)]
pub struct ImageArgs {
    /// A statically linked chartreg binary, for the platform before `=` [default: this
    /// machine's]; repeat it for an image index of several platforms.
    #[arg(
        long = "binary",
        value_name = "[OS/ARCH[/VARIANT]=]FILE",
        required_unless_present = "config",
        conflicts_with = "config",
        value_parser = binary_arg
    )]
    pub binaries: Vec<Binary>,
    /// Build the binaries first from this content file, as `chartreg-build build` does (one per
    /// `--platform`), instead of taking them with `--binary`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With --config: a platform to build for (linux/amd64, linux/arm64; repeatable: several
    /// make an image index) [default: this machine's].
    #[arg(long = "platform", value_name = "OS/ARCH", requires = "config")]
    pub platforms: Vec<String>,
    /// With --config: the folder the content is packed into [default: assets beside it].
    #[arg(long, value_name = "DIR", requires = "config")]
    pub assets: Option<PathBuf>,
    /// With --config: the server kit [default: the one installed with this tool].
    #[arg(long, value_name = "DIR", env = "CHARTREG_KIT", requires = "config")]
    pub kit: Option<PathBuf>,
    /// With --config: the compile cache [default: $XDG_CACHE_HOME/chartreg or ~/.cache/chartreg].
    #[arg(long, value_name = "DIR", env = "CHARTREG_CACHE", requires = "config")]
    pub cache: Option<PathBuf>,
    /// The OCI image layout to write (replaced if it holds one; any other folder is refused).
    #[arg(long, value_name = "DIR", env = "CHARTREG_IMAGE_OUT")]
    pub out: PathBuf,
    /// The image's tag [default: VERSION-<first 12 hex digits of the content digest>].
    #[arg(long, value_name = "TAG", env = "CHARTREG_IMAGE_TAG")]
    pub tag: Option<Tag>,
    /// The base image: an OCI image layout, and the tag in it (its layers are kept)
    /// [default: scratch].
    #[arg(long, value_name = "LAYOUT[:TAG]", value_parser = base_arg, env = "CHARTREG_IMAGE_BASE")]
    pub base: Option<BaseSpec>,
    /// A label to add (`org.opencontainers.image.revision=...`, `...source=...`); repeatable.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label_arg)]
    pub labels: Vec<(String, String)>,
    /// The content digest the binaries hold [default: what the host's binary prints for
    /// `ls --content-digest`].
    #[arg(long, value_name = "sha256:HEX")]
    pub content_digest: Option<Digest>,
    /// An SBOM to attach: SPDX 2.3 or CycloneDX JSON, as `chartreg ls --sbom [cyclonedx]`
    /// prints it (repeatable, each format once) [default: both, as the binary for this machine
    /// prints them].
    #[arg(long, value_name = "FILE", conflicts_with = "no_sbom")]
    pub sbom: Vec<PathBuf>,
    /// Attach no SBOM to the image.
    #[arg(long)]
    pub no_sbom: bool,
    /// The content listing the image carries (what `chartreg-build diff` reads): this file, the
    /// `chartreg.listing.json` of an image of the same content built where its binary runs
    /// [default: what the binary for this machine says: `--version`, `ls --content-digest`,
    /// `ls --json`].
    #[arg(long, value_name = "FILE", conflicts_with = "no_listing")]
    pub listing: Option<PathBuf>,
    /// Carry no content listing (`chartreg-build diff` then refuses the image).
    #[arg(long)]
    pub no_listing: bool,
    /// Sign the image with this cosign private key (`cosign generate-key-pair`'s cosign.key;
    /// its password in COSIGN_PASSWORD), as pushed to --repository: the signatures (of the
    /// image, and of each platform's manifest of an index) are written into the layout, tagged
    /// `sha256-<digest>.sig` and as OCI 1.1 referrers.
    #[arg(long, value_name = "FILE", env = "CHARTREG_SIGN_KEY")]
    pub sign_key: Option<PathBuf>,
    /// With --sign-key: the repository the image is pushed to (HOST[:PORT]/PATH, no tag), which
    /// the signatures name and CRI-O and Podman check them against [default: image.repository
    /// of --values].
    #[arg(
        long,
        value_name = "HOST/PATH",
        env = "CHARTREG_IMAGE_REPOSITORY",
        requires = "sign_key"
    )]
    pub repository: Option<super::repository::Repository>,
    /// With --sign-key: the deploy chart's values file whose image.repository is the default
    /// --repository [default: chartreg-values.yaml beside --config, else in this folder].
    #[arg(long, value_name = "FILE", requires = "sign_key")]
    pub values: Option<PathBuf>,
    /// A file that names the tag (with a newline): a link to the tag file the layout holds, so
    /// that the two change together (outside the layout folder).
    #[arg(long, value_name = "FILE")]
    pub tag_file: Option<PathBuf>,
    /// With --config: how charts are rendered to find the images they need, when the content
    /// file has an `images:` section.
    #[command(flatten)]
    pub render: crate::chart_images::flags::RenderArgs,
}

/// Why `image` did not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Image(#[from] Error),
    /// `--config`: packing or compiling the binaries.
    #[error(transparent)]
    Build(#[from] compile::command::Error),
    #[error(transparent)]
    Binary(#[from] BinaryError),
    #[error(
        "{EPOCH_VARIABLE}={value:?} is not a number of seconds since 1970 (an integer, 0 or more)"
    )]
    SourceDateEpoch { value: String },
    #[error("--content-digest {0} is not a sha256 digest")]
    NotSha256(Digest),
    #[error(transparent)]
    Ask(#[from] super::asked::AskError),
    #[error(transparent)]
    Sign(#[from] super::sign::SignError),
    #[error(transparent)]
    Identity(#[from] super::repository::IdentityError),
    #[error("the default tag: {0}")]
    DefaultTag(#[from] TagError),
}

/// Why a `--binary` value is not `[OS/ARCH[/VARIANT]=]FILE`.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    #[error(transparent)]
    Platform(Error),
    #[error("this machine is no Linux platform an image names: give OS/ARCH={0}")]
    NoHostPlatform(String),
    #[error("`{0}` names no file")]
    NoFile(String),
}

/// Why a `--label` value is not `KEY=VALUE`.
#[derive(Debug, thiserror::Error)]
pub enum LabelError {
    #[error("`{0}` is not KEY=VALUE")]
    NotKeyValue(String),
    #[error("`{0}` is not a label key (not empty, no spaces)")]
    Key(String),
}

/// Operating systems an image platform can name (Go's GOOS values): text before `=` starting
/// with one and `/` is a platform.
const SYSTEMS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "illumos",
    "ios",
    "js",
    "linux",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
];

/// `[OS/ARCH[/VARIANT]=]FILE`: text before the first `=` is a platform when it starts with an
/// OS and `/` (any case, so that `Linux/amd64=...` is refused rather than taken as a path).
fn binary_arg(text: &str) -> Result<Binary, BinaryError> {
    let platform_text = text.split_once('=').filter(|(p, _)| {
        p.split_once('/')
            .is_some_and(|(os, _)| SYSTEMS.contains(&os.to_ascii_lowercase().as_str()))
    });
    let (platform, path) = match platform_text {
        Some((p, path)) => (parse_platform(p).map_err(BinaryError::Platform)?, path),
        None => (
            host_platform().ok_or_else(|| BinaryError::NoHostPlatform(text.to_owned()))?,
            text,
        ),
    };
    if path.is_empty() {
        return Err(BinaryError::NoFile(text.to_owned()));
    }
    Ok(Binary {
        platform,
        path: PathBuf::from(path),
    })
}

fn base_arg(text: &str) -> Result<BaseSpec, Error> {
    BaseSpec::parse(text)
}

/// `KEY=VALUE`, the key not empty and without spaces.
fn label_arg(text: &str) -> Result<(String, String), LabelError> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| LabelError::NotKeyValue(text.to_owned()))?;
    if key.is_empty() || key.chars().any(char::is_whitespace) {
        return Err(LabelError::Key(key.to_owned()));
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// `SOURCE_DATE_EPOCH`'s seconds: unset or empty is 0.
pub fn created(value: Option<OsString>) -> Result<u64, RunError> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(0);
    };
    let text = value.to_string_lossy();
    text.parse::<u64>()
        .ok()
        .filter(|_| text.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| RunError::SourceDateEpoch {
            value: text.into_owned(),
        })
}

/// The tag given, else `VERSION-<first 12 hex digits of the content digest>`.
fn tag(given: Option<&Tag>, content: &Digest) -> Result<Tag, RunError> {
    match given {
        Some(tag) => Ok(tag.clone()),
        None => {
            let short = content.encoded().get(..12).unwrap_or(content.encoded());
            Ok(format!("{VERSION}-{short}").parse()?)
        }
    }
}

impl ImageArgs {
    /// The request these flags make, `created` from `source_date_epoch`, signed as `signing`
    /// says.
    pub fn request(
        &self,
        source_date_epoch: Option<OsString>,
        signing: Option<super::sign::Signing>,
    ) -> Result<ImageRequest, RunError> {
        let created = created(source_date_epoch)?;
        let content_digest = match &self.content_digest {
            Some(d) if d.sha256().is_none() => return Err(RunError::NotSha256(d.clone())),
            Some(d) => d.clone(),
            None => super::asked::content_digest(&self.binaries)?,
        };
        let sboms = super::asked::sboms(&self.binaries, &self.sbom, self.no_sbom)?;
        let listing = super::asked::listing(
            &self.binaries,
            self.listing.as_deref(),
            self.no_listing,
            &content_digest,
        )?;
        Ok(ImageRequest {
            binaries: self.binaries.clone(),
            out: self.out.clone(),
            tag: tag(self.tag.as_ref(), &content_digest)?,
            base: self.base.clone(),
            content_digest,
            version: VERSION.to_owned(),
            created,
            labels: self.labels.iter().cloned().collect::<BTreeMap<_, _>>(),
            sboms,
            listing,
            signing,
            tag_file: self.tag_file.clone(),
        })
    }
}

/// Runs `chartreg-build image` with `args` (see the module doc). With `--config`, the content
/// is packed once and the binaries are built first, as `build` does, one per `--platform`.
pub fn run(mut args: ImageArgs) -> Result<(), RunError> {
    // The repository the signatures name is found, and the key opens, before anything is built
    // or written.
    let signing = match &args.sign_key {
        Some(path) => {
            let repository = super::repository::signed_identity(
                args.repository.as_ref(),
                args.values.as_deref(),
                args.config.as_deref(),
            )?;
            // Wiped once the key is open.
            let password = zeroize::Zeroizing::new(
                std::env::var_os(super::sign::PASSWORD_VARIABLE)
                    .map(|p| p.into_encoded_bytes())
                    .unwrap_or_default(),
            );
            let signer = super::sign::Signer::read(path, &password)?;
            Some(super::sign::Signing { signer, repository })
        }
        None => None,
    };
    if let Some(config) = args.config.clone() {
        let build = BuildArgs {
            config,
            assets: args.assets.clone(),
            out: None,
            kit: args.kit.clone(),
            cache: args.cache.clone(),
            platform: None,
            render: args.render.clone(),
            signer: signing.as_ref().map(|s| s.signer.fingerprint.clone()),
        };
        let platforms = match args.platforms.as_slice() {
            [] => vec![None],
            given => given.iter().cloned().map(Some).collect(),
        };
        for (platform, path) in compile::command::binaries(&build, &platforms)? {
            let platform = parse_platform(&platform).map_err(BinaryError::Platform)?;
            args.binaries.push(Binary { platform, path });
        }
    }
    let request = args.request(std::env::var_os(EPOCH_VARIABLE), signing)?;
    let report = super::write(&request)?;
    for warning in &report.warnings {
        crate::output::warn(warning);
    }

    crate::output::print_line(summary(&report, &request.content_digest));
    Ok(())
}

/// The result line.
fn summary(report: &ImageReport, content: &Digest) -> String {
    let what = match report.outcome {
        Outcome::Written => "wrote",
        Outcome::Unchanged => "unchanged:",
    };
    let platforms: Vec<String> = report
        .manifests
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    let kind = if report.manifests.len() == 1 {
        "manifest"
    } else {
        "index"
    };
    let (dir, tag) = (report.layout.display(), &report.tag);
    let sbom = report
        .referrers
        .iter()
        .filter_map(|r| match r.artifact_type.as_deref() {
            Some(chartreg_core::oci::media_type::SPDX_JSON) => Some(format!(", SBOM {}", r.digest)),
            Some(chartreg_core::oci::media_type::CYCLONEDX_JSON) => {
                Some(format!(", CycloneDX SBOM {}", r.digest))
            }
            _ => None,
        })
        .collect::<String>();
    let (signed, copy) = match &report.signatures {
        Some(s) => (
            format!(
                ", signed by key {} as {} ({})",
                s.fingerprint,
                s.repository,
                s.signed
                    .iter()
                    .map(|t| t.tag.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!("{}:{tag}, and the same for each .sig tag", s.repository),
        ),
        None => (String::new(), format!("REGISTRY/chartreg:{tag}")),
    };
    let all = if report.manifests.len() == 1 {
        ""
    } else {
        "--all "
    };
    format!(
        "{what} {dir} (tag {tag}, {kind} {} for {}, content {content}{sbom}{signed}): skopeo copy {all}oci:{dir}:{tag} docker://{copy}",
        report.top.digest,
        platforms.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("linux/arm64=bin/chartreg", Ok(("linux/arm64", "bin/chartreg")))]
    #[case("linux/arm/v7=a=b", Ok(("linux/arm/v7", "a=b")))]
    #[case("target/x=1/chartreg", Ok(("linux/amd64", "target/x=1/chartreg")))]
    #[case("chartreg", Ok(("linux/amd64", "chartreg")))]
    #[case("linux/sparc=chartreg", Err("unknown architecture `sparc`"))]
    #[case("linux/amd64=", Err("names no file"))]
    #[case("Linux/amd64=chartreg", Err("must be `linux`"))]
    #[case("windows/amd64=chartreg.exe", Err("must be `linux`"))]
    fn binaries(#[case] text: &str, #[case] expected: Result<(&str, &str), &str>) {
        if host_platform().is_none_or(|h| h.architecture != "amd64") {
            return;
        }
        match (binary_arg(text), expected) {
            (Ok(b), Ok((platform, path))) => {
                assert_eq!(b.platform.to_string(), platform);
                assert_eq!(b.path, PathBuf::from(path));
            }
            (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[rstest]
    #[case(None, Ok(0))]
    #[case(Some(""), Ok(0))]
    #[case(Some("1700000000"), Ok(1_700_000_000))]
    #[case(Some("-1"), Err(()))]
    #[case(Some("+5"), Err(()))]
    #[case(Some("1.5"), Err(()))]
    #[case(Some("yesterday"), Err(()))]
    fn source_date_epoch(#[case] value: Option<&str>, #[case] expected: Result<u64, ()>) {
        match (created(value.map(OsString::from)), expected) {
            (Ok(s), Ok(want)) => assert_eq!(s, want),
            (Err(e), Err(())) => {
                let e = e.to_string();
                assert!(
                    e.contains("SOURCE_DATE_EPOCH") && e.contains(value.unwrap()),
                    "{e}"
                );
            }
            (got, want) => panic!("{value:?}: got {got:?}, want {want:?}"),
        }
    }

    #[rstest]
    #[case("org.opencontainers.image.revision=abc", Ok(("org.opencontainers.image.revision", "abc")))]
    #[case("k=a=b", Ok(("k", "a=b")))]
    #[case("k=", Ok(("k", "")))]
    #[case("novalue", Err("is not KEY=VALUE"))]
    #[case("=v", Err("is not a label key"))]
    #[case("a b=v", Err("is not a label key"))]
    fn labels(#[case] text: &str, #[case] expected: Result<(&str, &str), &str>) {
        match (label_arg(text), expected) {
            (Ok((k, v)), Ok((key, value))) => assert_eq!((k.as_str(), v.as_str()), (key, value)),
            (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn the_default_tag_names_the_version_and_the_content() {
        let digest = Digest::sha256_of(b"content");
        let tag = tag(None, &digest).unwrap();
        assert_eq!(
            tag.as_str(),
            format!("{VERSION}-{}", &digest.encoded()[..12])
        );
        let given: Tag = "v1".parse().unwrap();
        assert_eq!(super::tag(Some(&given), &digest).unwrap(), given);
    }
}
