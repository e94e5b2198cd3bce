//! `chartreg-build image`: chartreg's container image, written as an OCI image layout with no
//! container engine (as ko and jib write Go's and Java's): the static server binary in one
//! layer, a config that runs it, on `scratch` or on a base image read from a layout.
//!
//! [`write`] takes an [`ImageRequest`] through these steps, each in its own module:
//!
//! 1. Inputs, all checked before anything is written: the platforms (no two binaries for
//!    one), the time (`created`), the labels (none may set what the request decides), `OUT`
//!    ([`layout::Output`]: absent, empty, or a layout to replace), each binary
//!    ([`binary`]: a statically linked ELF executable), the base ([`base`]: a layout, its
//!    image for each platform, every blob checked).
//! 2. The layer of each binary ([`layer`]: a deterministic gzipped tar holding `/chartreg`),
//!    and the layer of the content listing ([`listing`]: `/chartreg.listing.json`, what the
//!    server serves as data, for `diff`; one for every platform), written into a work folder
//!    beside `OUT`.
//! 3. Each platform's config ([`config`]: the Containerfile's, over the base's), manifest, and
//!    with several platforms an image index ([`layout`]), as a tree of files; the SBOM, when
//!    given, as a referrer of what `index.json` tags (`application/spdx+json`, its manifest
//!    annotated with the same `created`).
//!    With a key, cosign signatures ([`sign`]) naming the repository the image is pushed to
//!    ([`repository`]).
//! 4. The tree put into place by the core's writer: unchanged when `OUT` holds it already,
//!    else staged and renamed in; a failure leaves `OUT` as it was.
//!
//! Nothing from the machine or the folders it runs in reaches the image: the same binaries,
//! base, tag, labels and time give the same digests, byte for byte, anywhere.
//! [`command`] is the command line that makes a request.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use chartreg_core::oci::gojson::Unwritable;
use chartreg_core::oci::layout::{Descriptor, Platform};
use chartreg_core::oci::{Digest, Tag};
use chartreg_core::tree::{Outcome, WriteError};

mod asked;
pub mod base;
pub mod binary;
pub mod command;
pub mod config;
mod emulator;
pub mod layer;
pub mod layout;
pub mod listing;
pub mod repository;
pub mod sign;

pub use base::BaseSpec;
pub use binary::{Binary, Warning};

/// The latest `created` time written: 9999-12-31T23:59:59Z (RFC 3339 has four-digit years).
pub const MAX_CREATED: u64 = 253_402_300_799;

/// What to build.
#[derive(Debug, Clone)]
pub struct ImageRequest {
    /// The server binaries, one per platform: one makes an image, several an image index.
    pub binaries: Vec<Binary>,
    /// The layout folder to write (replaced if it holds one).
    pub out: PathBuf,
    /// The tag in `index.json`, and the `org.opencontainers.image.version` label.
    pub tag: Tag,
    /// The base image; `scratch` when `None`.
    pub base: Option<BaseSpec>,
    /// The digest of the content inside the binaries (`chartreg ls --content-digest`).
    pub content_digest: Digest,
    /// chartreg's version (the history entry names it).
    pub version: String,
    /// `created`, in seconds since the epoch (`SOURCE_DATE_EPOCH`): the config's, the
    /// labels', and the layer's file time.
    pub created: u64,
    /// Labels set over chartreg's own (revision, source, ...).
    pub labels: BTreeMap<String, String>,
    /// The SBOMs to attach (SPDX 2.3, CycloneDX), if any.
    pub sboms: Vec<Sbom>,
    /// The content listing to carry in a layer of its own (`None`: the image carries none,
    /// and `diff` refuses it).
    pub listing: Option<listing::Listing>,
    /// The key that signs the image and the repository the signatures name, if signed.
    pub signing: Option<sign::Signing>,
    /// `--tag-file`: a file that names the tag, kept with the layout (a link to the tag the
    /// layout holds: see `layout::TAG_FILE`).
    pub tag_file: Option<PathBuf>,
}

/// An SBOM to attach: its media type (the referrer's artifactType), its bytes, and the
/// platform whose manifest it is about (`None`: what `index.json` lists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sbom {
    pub media_type: &'static str,
    pub data: Vec<u8>,
    pub platform: Option<Platform>,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct ImageReport {
    pub layout: PathBuf,
    pub tag: Tag,
    /// What `index.json` lists: the manifest, or the index of several.
    pub top: Descriptor,
    /// Each platform's manifest.
    pub manifests: Vec<(Platform, Descriptor)>,
    /// The referrers attached (the SBOMs' manifests, the signatures').
    pub referrers: Vec<Descriptor>,
    /// The cosign signatures, when signed.
    pub signatures: Option<layout::Signatures>,
    pub outcome: Outcome,
    pub warnings: Vec<Warning>,
}

/// Why no image was written. `OUT` is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{text}` is not a platform: {reason}")]
    Platform { text: String, reason: String },
    #[error("two binaries for {0}: give one per platform")]
    DuplicatePlatform(String),
    #[error("no binary to build the image of")]
    NoBinaries,
    #[error("the binary {}: {source}", path.display())]
    Binary { path: PathBuf, source: io::Error },
    #[error("the binary {} is not {size} bytes any more: it changed while being read", path.display())]
    BinaryChanged { path: PathBuf, size: u64 },
    #[error("the binary {} is not an ELF executable ({reason})", path.display())]
    NotElf { path: PathBuf, reason: String },
    #[error("the binary {} is not an ELF executable ({source})", path.display())]
    ElfUnreadable {
        path: PathBuf,
        source: object::read::Error,
    },
    #[error(
        "the binary {} is dynamically linked (it asks for {interpreter}): the image has no C library; build it static (RUSTFLAGS=-Ctarget-feature=+crt-static with --target, as `make image` does)",
        path.display()
    )]
    Dynamic { path: PathBuf, interpreter: String },
    #[error("created time {0} is after 9999-12-31T23:59:59Z ({MAX_CREATED})")]
    Created(u64),
    #[error("the label {key} is set from {from}, not by a label")]
    Label { key: String, from: &'static str },
    #[error("`{text}` is not LAYOUT or LAYOUT:TAG: it names no layout folder")]
    BaseNoFolder { text: String },
    #[error("`{text}` is not LAYOUT or LAYOUT:TAG: {source}")]
    BaseTagInvalid {
        text: String,
        source: chartreg_core::oci::TagError,
    },
    #[error("base image {base}: {}: {problem}", path.display())]
    Base {
        base: String,
        path: PathBuf,
        problem: Box<base::BaseProblem>,
    },
    #[error(
        "base image {base}: {} (it has {})",
        match tag { Some(t) => format!("no image tagged {t}"), None => "several images: name one, LAYOUT:TAG".to_owned() },
        if tags.is_empty() { "no tags".to_owned() } else { tags.join(", ") }
    )]
    BaseTag {
        base: String,
        tag: Option<String>,
        tags: Vec<String>,
    },
    #[error("base image {base} has no {platform} image (it has {})", if platforms.is_empty() { "no platforms named".to_owned() } else { platforms.join(", ") })]
    BasePlatform {
        base: String,
        platform: String,
        platforms: Vec<String>,
    },
    #[error("{} names no folder to write the layout as", .0.display())]
    OutName(PathBuf),
    #[error(
        "the tag file {} lies in the layout it names: give it a place outside the layout folder",
        .0.display()
    )]
    TagFileInLayout(PathBuf),
    #[error("{} is not an OCI image layout ({reason}): not replacing it; name a new folder or remove it", path.display())]
    OutNotLayout { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Unwritable(#[from] Unwritable),
    /// The layout could not be put in place (or the run was stopped): `OUT` is as it was.
    #[error(transparent)]
    Durable(#[from] crate::durable::Error),
}

/// `seconds` since the epoch, as RFC 3339 in UTC (`1970-01-01T00:00:00Z`).
pub fn rfc3339(seconds: u64) -> Result<String, Error> {
    if seconds > MAX_CREATED {
        return Err(Error::Created(seconds));
    }
    let time = UNIX_EPOCH
        .checked_add(Duration::from_secs(seconds))
        .ok_or(Error::Created(seconds))?;
    Ok(humantime::format_rfc3339_seconds(time).to_string())
}

/// Writes the image `request` describes (see the module doc).
pub fn write(request: &ImageRequest) -> Result<ImageReport, Error> {
    // 1. Inputs.
    if request.binaries.is_empty() {
        return Err(Error::NoBinaries);
    }
    let platforms: Vec<&Platform> = request.binaries.iter().map(|b| &b.platform).collect();
    for (i, platform) in platforms.iter().enumerate() {
        if platforms
            .get(..i)
            .is_some_and(|seen| seen.contains(platform))
        {
            return Err(Error::DuplicatePlatform(platform.to_string()));
        }
    }
    let created = rfc3339(request.created)?;
    let decided = [
        (config::VERSION, "the tag"),
        (config::CREATED, "the created time (SOURCE_DATE_EPOCH)"),
        (config::CONTENT_DIGEST, "the content digest"),
    ];
    for (key, from) in decided {
        if request.labels.contains_key(key) {
            return Err(Error::Label {
                key: key.to_owned(),
                from,
            });
        }
    }
    let output = layout::Output::new(&request.out)?;
    let mut warnings = Vec::new();
    for binary in &request.binaries {
        warnings.extend(binary::inspect(binary)?);
    }
    let bases = match &request.base {
        Some(spec) => Some(base::read(spec, &platforms)?),
        None => None,
    };

    // 2. Layers (a binary given for several platforms is laid once).
    let work = output.work()?;
    let mut layers: Vec<layer::Layer> = Vec::new();
    for (i, binary) in request.binaries.iter().enumerate() {
        let earlier = request
            .binaries
            .iter()
            .zip(&layers)
            .find_map(|(b, layer)| (b.path == binary.path).then(|| layer.clone()));
        let layer = match earlier {
            Some(layer) => layer,
            None => layer::write(
                &binary.path,
                request.created,
                &work.path().join(format!("layer-{i}.tar.gz")),
            )?,
        };
        layers.push(layer);
    }
    let listing = match &request.listing {
        Some(listing) => {
            let data = listing.to_bytes().map_err(|e| Error::Io {
                path: PathBuf::from(listing::FILE),
                source: io::Error::other(e),
            })?;
            Some(layer::write_data(
                listing::FILE,
                &data,
                request.created,
                &work.path().join("listing.tar.gz"),
            )?)
        }
        None => None,
    };

    // 3. Configs, manifests, index.
    let images: Vec<layout::PlatformImage<'_>> = request
        .binaries
        .iter()
        .zip(&layers)
        .enumerate()
        .map(|(i, (binary, layer))| {
            let base = bases.as_ref().and_then(|b| b.get(i));
            let settings = config::Settings {
                platform: &binary.platform,
                created: &created,
                tag: request.tag.as_str(),
                version: &request.version,
                content_digest: &request.content_digest,
                labels: &request.labels,
                diff_id: layer.diff_id.clone(),
                listing_diff_id: listing.as_ref().map(|l| l.diff_id.clone()),
            };
            layout::PlatformImage {
                platform: binary.platform.clone(),
                base,
                layer,
                listing: listing.as_ref(),
                config: config::build(base.map(|b| b.config.clone()), settings),
            }
        })
        .collect();
    let attachments: Vec<layout::Attachment> = request
        .sboms
        .iter()
        .map(|sbom| layout::Attachment {
            artifact_type: sbom.media_type,
            data: sbom.data.clone(),
            about: sbom.platform.clone(),
            annotations: [(config::CREATED.to_owned(), created.clone())]
                .into_iter()
                .collect(),
        })
        .collect();
    let assembled = layout::assemble(
        output.leaf(),
        &images,
        &request.tag,
        &attachments,
        request.signing.as_ref(),
    )?;

    // 4. Into place.
    let outcome = output.write(&assembled.tree, &request.tag, request.tag_file.as_deref())?;
    drop(work);
    Ok(ImageReport {
        layout: request.out.clone(),
        tag: request.tag.clone(),
        top: assembled.top,
        manifests: assembled.manifests,
        referrers: assembled.referrers,
        signatures: assembled.signatures,
        outcome,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0, Ok("1970-01-01T00:00:00Z"))]
    #[case(1_700_000_000, Ok("2023-11-14T22:13:20Z"))]
    #[case(MAX_CREATED, Ok("9999-12-31T23:59:59Z"))]
    #[case(MAX_CREATED + 1, Err(()))]
    fn created_times(#[case] seconds: u64, #[case] expected: Result<&str, ()>) {
        match (rfc3339(seconds), expected) {
            (Ok(text), Ok(want)) => assert_eq!(text, want),
            (Err(Error::Created(s)), Err(())) => assert_eq!(s, seconds),
            (got, want) => panic!("{seconds}: got {got:?}, want {want:?}"),
        }
    }
}
