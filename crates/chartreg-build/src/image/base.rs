//! The base image: `--base LAYOUT[:TAG]`, an OCI image layout (as `skopeo copy ... oci:DIR:TAG`
//! writes it; distroless, say), read for each platform the image is built for:
//!
//! 1. The entry of `LAYOUT/index.json` tagged `TAG` (its `org.opencontainers.image.ref.name`
//!    the tag, or a reference ending in `:TAG`); without a tag, the layout's only image (an
//!    entry with an `artifactType`, such as the SBOM `image` attaches, is none).
//! 2. An index: the manifest of each platform (os, architecture, and the variant when asked
//!    for; without one, a variant is taken when it is the only manifest of that os/arch). A
//!    single manifest: its config's platform must be the one asked for.
//! 3. The manifest and config, read and checked against their digests; each layer present
//!    with its descriptor's size and digest. The layers are then copied into the image byte
//!    for byte (same digests), their descriptors unchanged.
//!
//! Every error names the layout, and the tag or platform that is not there with those that are.

use std::fs;
use std::path::{Path, PathBuf};

use chartreg_core::oci::layout::{
    Descriptor, INDEX_FILE, ImageIndex, ImageManifest, OCI_LAYOUT_FILE, Platform, REF_NAME,
    blob_path,
};
use chartreg_core::oci::media_type::{ManifestKind, manifest_kind};
use chartreg_core::oci::{Digest, Tag};
use chartreg_core::tree::BlobFile;

use super::Error;
use super::config::ImageConfig;

/// `LAYOUT[:TAG]`, as given to `--base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseSpec {
    pub dir: PathBuf,
    pub tag: Option<Tag>,
}

/// What is wrong with a file of the base image's layout.
#[derive(Debug, thiserror::Error)]
pub enum BaseProblem {
    #[error("{0}")]
    Read(#[source] std::io::Error),
    #[error("not valid: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("only sha256 blobs are read")]
    NotSha256,
    #[error(
        "its bytes ({size} bytes, {digest}) are not the {named_size} bytes of {named} its descriptor names"
    )]
    OtherBytes {
        size: u64,
        digest: Digest,
        named_size: u64,
        named: Digest,
    },
    #[error("it lists no image")]
    NoImage,
    #[error("it tags {0} twice")]
    TaggedTwice(Tag),
    #[error("{0} is not an image manifest")]
    NotImage(String),
    #[error("no oci-layout file: not an OCI image layout")]
    NotALayout,
    #[error("its entry is a {0}, not an image or an index")]
    NotImageOrIndex(String),
}

impl BaseSpec {
    /// Parses `LAYOUT[:TAG]`: text after the last `:` (with no `/` in it) is the tag.
    pub fn parse(text: &str) -> Result<BaseSpec, Error> {
        let (dir, tag) = match text.rsplit_once(':') {
            Some((dir, tag)) if !tag.contains('/') => (dir, Some(tag)),
            _ => (text, None),
        };
        if dir.is_empty() {
            return Err(Error::BaseNoFolder {
                text: text.to_owned(),
            });
        }
        let tag = tag
            .map(|t| {
                t.parse::<Tag>().map_err(|source| Error::BaseTagInvalid {
                    text: text.to_owned(),
                    source,
                })
            })
            .transpose()?;
        Ok(BaseSpec {
            dir: PathBuf::from(dir),
            tag,
        })
    }

    /// `LAYOUT[:TAG]`, for messages.
    fn name(&self) -> String {
        match &self.tag {
            Some(tag) => format!("{}:{tag}", self.dir.display()),
            None => self.dir.display().to_string(),
        }
    }
}

/// The base image of one platform.
#[derive(Debug, Clone)]
pub struct BaseImage {
    pub manifest: Digest,
    pub config: ImageConfig,
    /// Each layer's descriptor (as the base manifest has it) and its file.
    pub layers: Vec<(Descriptor, BlobFile)>,
}

/// Reads the base image of each of `platforms`, in their order.
pub fn read(spec: &BaseSpec, platforms: &[&Platform]) -> Result<Vec<BaseImage>, Error> {
    let layout = Layout { spec };
    let marker = spec.dir.join(OCI_LAYOUT_FILE);
    if !marker.is_file() {
        return Err(layout.error(&marker, BaseProblem::NotALayout));
    }
    let index_path = spec.dir.join(INDEX_FILE);
    let index: ImageIndex = layout.json(&index_path, &layout.read(&index_path)?)?;
    let entry = layout.entry(&index_path, &index.manifests)?;
    match manifest_kind(&entry.media_type) {
        Some(ManifestKind::Index) => {
            let data = layout.blob(entry)?;
            let index: ImageIndex = layout.json(&layout.blob_file(&entry.digest), &data)?;
            platforms
                .iter()
                .map(|platform| layout.image(layout.pick(&index.manifests, platform)?, platform))
                .collect()
        }
        Some(ManifestKind::Image) => platforms
            .iter()
            .map(|platform| layout.image(entry, platform))
            .collect(),
        None => Err(layout.error(
            &index_path,
            BaseProblem::NotImageOrIndex(entry.media_type.clone()),
        )),
    }
}

/// The layout being read.
struct Layout<'a> {
    spec: &'a BaseSpec,
}

impl Layout<'_> {
    fn error(&self, path: &Path, problem: BaseProblem) -> Error {
        Error::Base {
            base: self.spec.name(),
            path: path.to_owned(),
            problem: Box::new(problem),
        }
    }

    fn blob_file(&self, digest: &Digest) -> PathBuf {
        self.spec.dir.join(blob_path(digest))
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>, Error> {
        fs::read(path).map_err(|source| self.error(path, BaseProblem::Read(source)))
    }

    fn json<T: serde::de::DeserializeOwned>(&self, path: &Path, data: &[u8]) -> Result<T, Error> {
        serde_json::from_slice(data)
            .map_err(|source| self.error(path, BaseProblem::NotJson(source)))
    }

    /// The file of blob `d`, present with `d`'s size and digest.
    fn present(&self, d: &Descriptor) -> Result<BlobFile, Error> {
        let path = self.blob_file(&d.digest);
        if d.digest.algorithm() != "sha256" {
            return Err(self.error(&path, BaseProblem::NotSha256));
        }
        let file =
            BlobFile::hash(&path).map_err(|source| self.error(&path, BaseProblem::Read(source)))?;
        if file.size != d.size || file.digest != d.digest {
            return Err(self.error(
                &path,
                BaseProblem::OtherBytes {
                    size: file.size,
                    digest: file.digest,
                    named_size: d.size,
                    named: d.digest.clone(),
                },
            ));
        }
        Ok(file)
    }

    /// The bytes of blob `d`, checked.
    fn blob(&self, d: &Descriptor) -> Result<Vec<u8>, Error> {
        let path = self.present(d)?.path;
        self.read(&path)
    }

    /// The entry of `index.json` the spec names.
    fn entry<'e>(&self, path: &Path, entries: &'e [Descriptor]) -> Result<&'e Descriptor, Error> {
        let tag_of = |d: &Descriptor| d.annotations.get(REF_NAME).cloned();
        let tags: Vec<String> = entries.iter().filter_map(tag_of).collect();
        let Some(tag) = &self.spec.tag else {
            // Artifacts referring to an image (its SBOM, signatures, by referrer or by cosign's
            // `sha256-<hex>.sig` tag) are not images.
            let images: Vec<&Descriptor> = entries
                .iter()
                .filter(|d| {
                    d.artifact_type.is_none()
                        && !tag_of(d).is_some_and(|t| crate::verify::image::is_cosign_tag(&t))
                })
                .collect();
            return match images.as_slice() {
                [one] => Ok(one),
                [] => Err(self.error(path, BaseProblem::NoImage)),
                _ => Err(Error::BaseTag {
                    base: self.spec.dir.display().to_string(),
                    tag: None,
                    tags,
                }),
            };
        };
        let names = |d: &&Descriptor| {
            tag_of(d).is_some_and(|r| {
                r == tag.as_str() || r.rsplit_once(':').is_some_and(|(_, t)| t == tag.as_str())
            })
        };
        let mut matching = entries.iter().filter(names);
        match (matching.next(), matching.next()) {
            (Some(one), None) => Ok(one),
            (Some(_), Some(_)) => Err(self.error(path, BaseProblem::TaggedTwice(tag.clone()))),
            (None, _) => Err(Error::BaseTag {
                base: self.spec.dir.display().to_string(),
                tag: Some(tag.as_str().to_owned()),
                tags,
            }),
        }
    }

    /// The manifest of `platform` in an index's `manifests`.
    fn pick<'e>(
        &self,
        manifests: &'e [Descriptor],
        platform: &Platform,
    ) -> Result<&'e Descriptor, Error> {
        let same = |d: &&Descriptor, variant: bool| {
            d.platform.as_ref().is_some_and(|p| {
                p.os == platform.os
                    && p.architecture == platform.architecture
                    && (!variant || p.variant == platform.variant)
            })
        };
        if let Some(exact) = manifests.iter().find(|d| same(d, true)) {
            return Ok(exact);
        }
        let mut near = manifests.iter().filter(|d| same(d, false));
        match (platform.variant.is_none(), near.next(), near.next()) {
            (true, Some(one), None) => Ok(one),
            _ => Err(self.missing(
                platform,
                manifests.iter().filter_map(|d| d.platform.as_ref()),
            )),
        }
    }

    fn missing<'p>(&self, platform: &Platform, has: impl Iterator<Item = &'p Platform>) -> Error {
        Error::BasePlatform {
            base: self.spec.name(),
            platform: platform.to_string(),
            platforms: has.map(Platform::to_string).collect(),
        }
    }

    /// The image manifest `d`, its config (for `platform`) and its layers.
    fn image(&self, d: &Descriptor, platform: &Platform) -> Result<BaseImage, Error> {
        let path = self.blob_file(&d.digest);
        if manifest_kind(&d.media_type) != Some(ManifestKind::Image) {
            return Err(self.error(&path, BaseProblem::NotImage(d.media_type.clone())));
        }
        let manifest: ImageManifest = self.json(&path, &self.blob(d)?)?;
        let config_path = self.blob_file(&manifest.config.digest);
        let config: ImageConfig = self.json(&config_path, &self.blob(&manifest.config)?)?;
        let has = Platform {
            architecture: config.architecture.clone(),
            os: config.os.clone(),
            variant: config.variant.clone(),
        };
        let fits = has.os == platform.os
            && has.architecture == platform.architecture
            && (platform.variant.is_none() || has.variant == platform.variant);
        if !fits {
            return Err(self.missing(platform, std::iter::once(&has)));
        }
        let layers = manifest
            .layers
            .iter()
            .map(|layer| Ok((layer.clone(), self.present(layer)?)))
            .collect::<Result<_, Error>>()?;
        Ok(BaseImage {
            manifest: d.digest.clone(),
            config,
            layers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("base", Ok(("base", None)))]
    #[case("images/distroless:nonroot", Ok(("images/distroless", Some("nonroot"))))]
    #[case("/a:b/layout", Ok(("/a:b/layout", None)))]
    #[case(":v1", Err("names no layout folder"))]
    #[case("base:.bad", Err("cannot start with"))]
    fn specs(#[case] text: &str, #[case] expected: Result<(&str, Option<&str>), &str>) {
        match (BaseSpec::parse(text), expected) {
            (Ok(spec), Ok((dir, tag))) => {
                assert_eq!(spec.dir, PathBuf::from(dir));
                assert_eq!(spec.tag.as_ref().map(Tag::as_str), tag);
            }
            (Err(e), Err(words)) => {
                let e = e.to_string();
                assert!(e.contains(words) && e.contains(text), "{e}");
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}
