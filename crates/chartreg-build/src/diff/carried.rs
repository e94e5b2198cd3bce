//! The content listing an image carries (`image::listing`), found in its layout as data:
//!
//! 1. [`entry`]: the entry of `index.json` the side names (`LAYOUT:TAG`), or the layout's
//!    only image (signatures and SBOMs, cosign's `sha256-<hex>.*` tags and referrers, are no
//!    images).
//! 2. [`listing`]: its manifest, or each platform's manifest of its index (at most
//!    [`MAX_PLATFORMS`]); in each, the one layer annotated `io.chartreg.listing` (none: an
//!    image from before listings, refused with what to do; two: refused), every platform the
//!    same layer; each config's `io.chartreg.content.digest` label, when there is one, must be
//!    the listing's content digest.
//! 3. The layer (gzip or plain tar, at most `listing::MAX_BYTES`) read by
//!    `Listing::from_layer`, in memory.
//!
//! No other layer is opened: the binary's is never read, let alone run.

use chartreg_core::oci::layout::{Descriptor, ImageIndex, ImageManifest, REF_NAME, tag_of};
use chartreg_core::oci::media_type::{self, ManifestKind, manifest_kind};

use super::layout::{Layout, ReadError};
use crate::image::config::{CONTENT_DIGEST, ImageConfig};
use crate::image::listing::{self, Listing, ListingError};
use crate::verify::image::is_cosign_tag;

/// The most platforms of an index read.
pub const MAX_PLATFORMS: usize = 64;
/// Docker's gzipped layer, as registries may hand OCI layers back.
const DOCKER_LAYER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
/// An uncompressed OCI layer.
const OCI_LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";

/// Why an image's listing cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CarriedError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("it lists no image")]
    NoImage,
    #[error("it holds several images ({}): name one, LAYOUT:TAG", tags.join(", "))]
    SeveralImages { tags: Vec<String> },
    #[error("no image is tagged {tag} (it has {})", if tags.is_empty() { "no tags".to_owned() } else { tags.join(", ") })]
    NoTag { tag: String, tags: Vec<String> },
    #[error("it tags {0} twice")]
    TaggedTwice(String),
    #[error("{digest} is a {media_type}, not an image or an index")]
    NotImage { digest: String, media_type: String },
    #[error("its index lists {0} manifests, more than {MAX_PLATFORMS}, the most read")]
    TooManyPlatforms(usize),
    #[error(
        "its image {0} carries no content listing (/{file}): it was built by a chartreg-build before listings, or with --no-listing; rebuild it with this chartreg-build (`chartreg-build image`), whose images diff reads without running them",
        file = listing::FILE
    )]
    NoListing(String),
    #[error("its image {0} has two layers annotated {ann}: refused", ann = listing::ANNOTATION)]
    TwoListings(String),
    #[error("its platforms carry different listings ({0} and {1}): refused")]
    Differ(String, String),
    #[error("its listing layer {digest} is a {media_type}, not a tar or a gzipped tar")]
    LayerType { digest: String, media_type: String },
    #[error("its listing layer {digest}: {source}")]
    Listing {
        digest: String,
        #[source]
        source: Box<ListingError>,
    },
    #[error("its listing says content {listed}, its config {config} labels it {labelled}: refused")]
    Mislabelled {
        listed: String,
        config: String,
        labelled: String,
    },
}

/// The entry of `index.json` that `tag` names, or the only image.
pub fn entry(layout: &Layout, tag: Option<&str>) -> Result<Descriptor, CarriedError> {
    let index = layout.index()?;
    let tag_of_entry = |d: &Descriptor| d.annotations.get(REF_NAME).and_then(|r| tag_of(r));
    let tags: Vec<String> = index.manifests.iter().filter_map(tag_of_entry).collect();
    let Some(tag) = tag else {
        let mut images = index.manifests.iter().filter(|d| {
            d.artifact_type.is_none() && !tag_of_entry(d).is_some_and(|t| is_cosign_tag(&t))
        });
        return match (images.next(), images.next()) {
            (Some(one), None) => Ok(one.clone()),
            (None, _) => Err(CarriedError::NoImage),
            (Some(_), Some(_)) => Err(CarriedError::SeveralImages { tags }),
        };
    };
    let mut named = index
        .manifests
        .iter()
        .filter(|d| tag_of_entry(d).is_some_and(|t| t == tag));
    match (named.next(), named.next()) {
        (Some(one), None) => Ok(one.clone()),
        (Some(_), Some(_)) => Err(CarriedError::TaggedTwice(tag.to_owned())),
        (None, _) => Err(CarriedError::NoTag {
            tag: tag.to_owned(),
            tags,
        }),
    }
}

/// The listing the image `entry` names carries (see the module's documentation).
pub fn listing(layout: &Layout, entry: &Descriptor) -> Result<Listing, CarriedError> {
    let not_image = |d: &Descriptor| CarriedError::NotImage {
        digest: d.digest.to_string(),
        media_type: d.media_type.clone(),
    };
    let manifests: Vec<Descriptor> = match manifest_kind(&entry.media_type) {
        Some(ManifestKind::Image) => vec![entry.clone()],
        Some(ManifestKind::Index) => {
            let index: ImageIndex = layout.document(entry)?;
            if index.manifests.len() > MAX_PLATFORMS {
                return Err(CarriedError::TooManyPlatforms(index.manifests.len()));
            }
            index.manifests
        }
        None => return Err(not_image(entry)),
    };
    let mut found: Option<Descriptor> = None;
    let mut configs = Vec::new();
    for d in &manifests {
        if manifest_kind(&d.media_type) != Some(ManifestKind::Image) {
            return Err(not_image(d));
        }
        let manifest: ImageManifest = layout.document(d)?;
        let mut annotated = manifest
            .layers
            .iter()
            .filter(|l| l.annotations.contains_key(listing::ANNOTATION));
        let layer = match (annotated.next(), annotated.next()) {
            (Some(one), None) => one.clone(),
            (None, _) => return Err(CarriedError::NoListing(d.digest.to_string())),
            (Some(_), Some(_)) => return Err(CarriedError::TwoListings(d.digest.to_string())),
        };
        if let Some(first) = &found
            && first.digest != layer.digest
        {
            return Err(CarriedError::Differ(
                first.digest.to_string(),
                layer.digest.to_string(),
            ));
        }
        found = Some(layer);
        configs.push(manifest.config);
    }
    let layer = found.ok_or(CarriedError::NoImage)?;
    let gzip = match layer.media_type.as_str() {
        media_type::OCI_LAYER_GZIP | DOCKER_LAYER_GZIP => true,
        OCI_LAYER_TAR => false,
        other => {
            return Err(CarriedError::LayerType {
                digest: layer.digest.to_string(),
                media_type: other.to_owned(),
            });
        }
    };
    let data = layout.blob(&layer, listing::MAX_BYTES)?;
    let listing = Listing::from_layer(&data, gzip).map_err(|source| CarriedError::Listing {
        digest: layer.digest.to_string(),
        source: Box::new(source),
    })?;
    for config in &configs {
        let read: ImageConfig = layout.document(config)?;
        if let Some(labelled) = read.config.labels.get(CONTENT_DIGEST)
            && labelled != listing.content_digest.as_str()
        {
            return Err(CarriedError::Mislabelled {
                listed: listing.content_digest.to_string(),
                config: config.digest.to_string(),
                labelled: labelled.clone(),
            });
        }
    }
    Ok(listing)
}
