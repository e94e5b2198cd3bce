//! The image written as an OCI image layout at `OUT`:
//!
//! 1. [`Output::new`] checks `OUT`: absent, an empty folder, or an OCI image layout (it holds
//!    `oci-layout`), which is replaced; anything else is a user's folder, refused by name.
//! 2. Layers are written into a work folder beside `OUT` ([`Output::work`], removed when
//!    dropped), on the same file system, so that they are linked into the layout, not copied.
//! 3. [`assemble`] lays out each platform's image (base layers copied byte for byte, the
//!    content listing's layer annotated `io.chartreg.listing`, the binary's layer, the config,
//!    the manifest) with the core's layout builder; one platform is listed
//!    in `index.json` itself, several through an image index of their manifests (each with its
//!    platform). The entry is tagged (`org.opencontainers.image.ref.name`). Each artifact
//!    about the image (its SBOM) is an OCI 1.1 referrer: a manifest of one layer whose
//!    `subject` is that entry, listed untagged in `index.json` with its `artifactType` (as
//!    oras and the registries' referrers API find it). With a key, a cosign signature
//!    ([`sign`](super::sign)) of that entry and, for an index, of each platform's manifest (as
//!    `cosign sign --recursive` signs), each naming the repository the image is pushed to:
//!    tagged `sha256-<hex>.sig`, and as a referrer of the manifest it signs.
//! 4. [`Output::write`] puts the tree into place with the core's writer: left alone when `OUT`
//!    already holds exactly it; otherwise written beside `OUT` and exchanged with it in one
//!    rename (`crate::durable::Generation`), so that a failure or a kill leaves the layout that
//!    was there, and a reader sees the old layout or the new one.

use std::fs;
use std::path::{Path, PathBuf};

use chartreg_core::oci::gojson::{self, Unwritable};
use chartreg_core::oci::layout::{
    Annotations, Descriptor, ImageIndex, ImageManifest, OCI_LAYOUT_FILE, Platform, blob_path,
};
use chartreg_core::oci::{Tag, media_type};
use chartreg_core::tree::{self, Entry, LayoutBuilder, Outcome, Tree};

use super::Error;
use super::base::BaseImage;
use super::config::ImageConfig;
use super::layer::Layer;
use super::repository::Repository;
use super::sign::{self, Signer, Signing};
use crate::durable::{Committed, Generation};

/// The annotation naming the manifest of the base image (as ko and buildah write it).
const BASE_DIGEST: &str = "org.opencontainers.image.base.digest";

/// Where the layout goes: the folder holding `OUT`, and `OUT`'s name in it.
#[derive(Debug)]
pub struct Output {
    parent: PathBuf,
    leaf: String,
}

impl Output {
    /// Checks `out` (see the module doc, step 1).
    pub fn new(out: &Path) -> Result<Output, Error> {
        let leaf = out
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::OutName(out.to_owned()))?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let refuse = |reason: &str| Error::OutNotLayout {
            path: out.to_owned(),
            reason: reason.to_owned(),
        };
        match fs::symlink_metadata(out) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(Error::Io {
                    path: out.to_owned(),
                    source,
                });
            }
            Ok(meta) if !meta.is_dir() => return Err(refuse("it is not a folder")),
            Ok(_) => {
                let mut entries = fs::read_dir(out).map_err(|source| Error::Io {
                    path: out.to_owned(),
                    source,
                })?;
                if entries.next().is_some() && !out.join(OCI_LAYOUT_FILE).is_file() {
                    return Err(refuse("it holds files and no oci-layout"));
                }
            }
        }
        Ok(Output {
            parent,
            leaf: leaf.to_owned(),
        })
    }

    /// A fresh work folder beside `OUT`, removed when dropped.
    pub fn work(&self) -> Result<WorkDir, Error> {
        let path = self.parent.join(format!(".{}.image-work", self.leaf));
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        if path.exists() {
            fs::remove_dir_all(&path).map_err(io)?;
        }
        fs::create_dir_all(&path).map_err(io)?;
        Ok(WorkDir(path))
    }

    /// Writes `tree` (from [`assemble`]) into place (see the module doc, step 4); with a tag
    /// file, the tag goes into the layout ([`TAG_FILE`]) and the tag file is made a link to it,
    /// so that the tag it names and the layout change at the same commit point.
    pub fn write(&self, tree: &Tree, tag: &Tag, tag_file: Option<&Path>) -> Result<Outcome, Error> {
        let out = self.parent.join(&self.leaf);
        let generation = Generation::begin(&out, "image")?;
        tree::write_into(tree, &self.parent, &self.leaf, generation.path())?;
        if tag_file.is_some() {
            let path = generation.path().join(TAG_FILE);
            fs::write(&path, format!("{tag}\n")).map_err(|source| Error::Io { path, source })?;
        }
        let outcome = match generation.commit()? {
            Committed::Written => Outcome::Written,
            Committed::Unchanged => Outcome::Unchanged,
        };
        if let Some(path) = tag_file {
            link_tag_file(path, &out)?;
        }
        Ok(outcome)
    }

    /// The name of the layout's folder in the tree.
    pub fn leaf(&self) -> &str {
        &self.leaf
    }
}

/// The file in the layout that holds its tag when `image --tag-file` asks for one (hidden:
/// layout readers look at `index.json`, `oci-layout` and `blobs/` only).
pub const TAG_FILE: &str = ".chartreg.tag";

/// Makes `path` a symbolic link to the layout `out`'s [`TAG_FILE`] (relative, so that the two
/// move together), replacing what is there in one rename; nothing when it already is one.
fn link_tag_file(path: &Path, out: &Path) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let inside = |p: &Path| fs::canonicalize(p).ok();
    if let (Some(folder), Some(layout)) = (
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| inside(Path::new(".")), inside),
        inside(out),
    ) && folder.starts_with(&layout)
    {
        return Err(Error::TagFileInLayout(path.to_owned()));
    }
    let target = PathBuf::from(crate::lock::recorded(path, &out.join(TAG_FILE)));
    if fs::read_link(path).ok().as_deref() == Some(target.as_path()) {
        return Ok(());
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staged = path.with_file_name(format!(".{name}.image-new"));
    if fs::symlink_metadata(&staged).is_ok() {
        fs::remove_file(&staged).map_err(io)?;
    }
    std::os::unix::fs::symlink(&target, &staged).map_err(io)?;
    if let Err(source) = fs::rename(&staged, path) {
        let _ = fs::remove_file(&staged);
        return Err(io(source));
    }
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::durable::sync_dir(folder)?;
    }
    Ok(())
}

/// A folder removed, with what it holds, when dropped.
#[derive(Debug)]
pub struct WorkDir(PathBuf);

impl WorkDir {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One platform's image, ready to be laid out.
#[derive(Debug, Clone)]
pub struct PlatformImage<'a> {
    pub platform: Platform,
    pub base: Option<&'a BaseImage>,
    pub layer: &'a Layer,
    /// The content listing's layer ([`super::listing`]), laid below the binary's.
    pub listing: Option<&'a Layer>,
    pub config: ImageConfig,
}

/// The laid-out images: the tree to write, what `index.json` lists, and each platform's
/// manifest.
#[derive(Debug)]
pub struct Assembled {
    pub tree: Tree,
    pub top: Descriptor,
    pub manifests: Vec<(Platform, Descriptor)>,
    /// Each attachment's manifest, in the order given, then each signature's referrer.
    pub referrers: Vec<Descriptor>,
    pub signatures: Option<Signatures>,
}

/// The signatures written, by one key, naming one repository: one per manifest signed.
#[derive(Debug, Clone)]
pub struct Signatures {
    pub fingerprint: String,
    pub repository: Repository,
    /// What `index.json` tags first, then each platform's manifest of an index.
    pub signed: Vec<SignatureTag>,
}

/// One signature: the manifest it signs, and its own manifest under cosign's tag.
#[derive(Debug, Clone)]
pub struct SignatureTag {
    pub signs: Descriptor,
    /// `sha256-<hex of the signed digest>.sig`.
    pub tag: String,
    pub tagged: Descriptor,
}

/// An artifact about the image, attached as a referrer: its type (the artifactType and the
/// layer's media type), its bytes, the manifest's annotations, and the platform whose manifest
/// it refers to (`None`, or a platform the image does not have: what `index.json` lists).
#[derive(Debug, Clone)]
pub struct Attachment {
    pub artifact_type: &'static str,
    pub data: Vec<u8>,
    pub annotations: Annotations,
    pub about: Option<Platform>,
}

/// Lays out `images` in a layout folder named `leaf`, tagged `tag`, with `attachments`
/// referring to what `index.json` lists or to a platform's manifest, signed as `signing` says when given (see the module
/// doc, step 3).
pub fn assemble(
    leaf: &str,
    images: &[PlatformImage<'_>],
    tag: &Tag,
    attachments: &[Attachment],
    signing: Option<&Signing>,
) -> Result<Assembled, Unwritable> {
    let mut layout = LayoutBuilder::new(leaf);
    let mut manifests = Vec::new();
    for image in images {
        let mut layers = Vec::new();
        let mut annotations = Annotations::new();
        if let Some(base) = image.base {
            for (descriptor, file) in &base.layers {
                layout.blob_file(&descriptor.media_type, file.clone());
                layers.push(descriptor.clone());
            }
            annotations.insert(BASE_DIGEST.to_owned(), base.manifest.to_string());
        }
        if let Some(listing) = image.listing {
            let mut descriptor = layout.blob_file(media_type::OCI_LAYER_GZIP, listing.blob.clone());
            descriptor.annotations.insert(
                super::listing::ANNOTATION.to_owned(),
                super::listing::FILE.to_owned(),
            );
            layers.push(descriptor);
        }
        layers.push(layout.blob_file(media_type::OCI_LAYER_GZIP, image.layer.blob.clone()));
        let config = layout.blob(media_type::OCI_CONFIG, gojson::to_vec(&image.config)?);
        let mut manifest = ImageManifest::new(config, layers);
        manifest.annotations = annotations;
        let mut descriptor = layout.manifest(media_type::OCI_MANIFEST, &manifest);
        descriptor.platform = Some(image.platform.clone());
        manifests.push((image.platform.clone(), descriptor));
    }
    let top = match manifests.as_slice() {
        [(_, one)] => Descriptor {
            platform: None,
            ..one.clone()
        },
        _ => {
            let index = ImageIndex {
                schema_version: 2,
                media_type: Some(media_type::OCI_INDEX.to_owned()),
                artifact_type: None,
                manifests: manifests.iter().map(|(_, d)| d.clone()).collect(),
                subject: None,
                annotations: Annotations::new(),
            };
            layout.manifest(media_type::OCI_INDEX, &index)
        }
    };
    layout.list(top.clone(), Some(tag.as_str()));
    let mut referrers = Vec::new();
    for attachment in attachments {
        let config = layout.blob(media_type::OCI_EMPTY, b"{}".to_vec());
        let layer = layout.blob(attachment.artifact_type, attachment.data.clone());
        let mut manifest = ImageManifest::new(config, vec![layer]);
        manifest.artifact_type = Some(attachment.artifact_type.to_owned());
        let subject = attachment
            .about
            .as_ref()
            .and_then(|about| manifests.iter().find(|(p, _)| p == about))
            .map_or(&top, |(_, d)| d);
        manifest.subject = Some(Descriptor::new(
            &subject.media_type,
            subject.digest.clone(),
            subject.size,
        ));
        manifest.annotations = attachment.annotations.clone();
        let mut descriptor = layout.manifest(media_type::OCI_MANIFEST, &manifest);
        descriptor.artifact_type = Some(attachment.artifact_type.to_owned());
        descriptor.annotations = attachment.annotations.clone();
        layout.list(descriptor.clone(), None);
        referrers.push(descriptor);
    }
    let signatures = signing.map(|signing| {
        // The index first, then each platform's manifest (one platform: the manifest itself).
        let mut targets = vec![top.clone()];
        if manifests.len() > 1 {
            targets.extend(manifests.iter().map(|(_, d)| Descriptor {
                platform: None,
                ..d.clone()
            }));
        }
        let signed = targets
            .into_iter()
            .map(|target| {
                let (tagged, referrer) =
                    sign_manifest(&mut layout, &signing.signer, &signing.repository, &target);
                referrers.push(referrer);
                tagged
            })
            .collect();
        Signatures {
            fingerprint: signing.signer.fingerprint.clone(),
            repository: signing.repository.clone(),
            signed,
        }
    });
    let mut tree = layout.finish()?;
    // The layers were written beside the layout for it: linked in, not copied.
    for image in images {
        for blob in std::iter::once(&image.layer.blob).chain(image.listing.map(|l| &l.blob)) {
            tree.insert(
                format!("{leaf}/{}", blob_path(&blob.digest)),
                Entry::Link(blob.clone()),
            );
        }
    }
    Ok(Assembled {
        tree,
        top,
        manifests,
        referrers,
        signatures,
    })
}

/// cosign's signature of `target` as pushed to `repository`, laid out in `layout`: tagged
/// `sha256-<hex>.sig` (cosign's config and manifest: the payload as its one layer), and as an
/// OCI 1.1 referrer of `target` (its descriptor returned beside the signature).
fn sign_manifest(
    layout: &mut LayoutBuilder,
    signer: &Signer,
    repository: &Repository,
    target: &Descriptor,
) -> (SignatureTag, Descriptor) {
    let signed = signer.sign(&target.digest, repository);
    let mut layer = layout.blob(sign::SIMPLE_SIGNING, signed.payload);
    layer
        .annotations
        .insert(sign::SIGNATURE_ANNOTATION.to_owned(), signed.signature);
    let config = format!(
        r#"{{"architecture":"","config":{{}},"created":"0001-01-01T00:00:00Z","history":[{{"created":"0001-01-01T00:00:00Z"}}],"os":"","rootfs":{{"type":"layers","diff_ids":["{}"]}}}}"#,
        layer.digest
    );
    let config = layout.blob(media_type::OCI_CONFIG, config.into_bytes());
    let tagged = layout.manifest(
        media_type::OCI_MANIFEST,
        &ImageManifest::new(config, vec![layer.clone()]),
    );
    let tag = format!("sha256-{}.sig", target.digest.encoded());
    layout.list(tagged.clone(), Some(&tag));
    let empty = layout.blob(media_type::OCI_EMPTY, b"{}".to_vec());
    let mut referrer = ImageManifest::new(empty, vec![layer]);
    referrer.artifact_type = Some(sign::SIGNATURE_ARTIFACT.to_owned());
    referrer.subject = Some(Descriptor::new(
        &target.media_type,
        target.digest.clone(),
        target.size,
    ));
    let mut descriptor = layout.manifest(media_type::OCI_MANIFEST, &referrer);
    descriptor.artifact_type = Some(sign::SIGNATURE_ARTIFACT.to_owned());
    layout.list(descriptor.clone(), None);
    (
        SignatureTag {
            signs: target.clone(),
            tag,
            tagged,
        },
        descriptor,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_is_absent_empty_or_a_layout() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("oci");
        assert_eq!(Output::new(&out).unwrap().leaf(), "oci");
        fs::create_dir(&out).unwrap();
        Output::new(&out).unwrap();
        fs::write(out.join("notes.txt"), "mine").unwrap();
        let err = Output::new(&out).unwrap_err();
        assert!(matches!(err, Error::OutNotLayout { .. }), "{err}");
        assert!(
            err.to_string().contains(&out.display().to_string()),
            "{err}"
        );
        fs::write(out.join(OCI_LAYOUT_FILE), "{}").unwrap();
        Output::new(&out).unwrap();
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        assert!(matches!(
            Output::new(&file),
            Err(Error::OutNotLayout { .. })
        ));
        assert!(matches!(
            Output::new(Path::new("/")),
            Err(Error::OutName(_))
        ));
        assert!(matches!(
            Output::new(Path::new("a/..")),
            Err(Error::OutName(_))
        ));
    }

    #[test]
    fn the_work_folder_goes_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let output = Output::new(&dir.path().join("oci")).unwrap();
        let work = output.work().unwrap();
        let path = work.path().to_owned();
        fs::write(path.join("layer"), "x").unwrap();
        assert!(path.starts_with(dir.path()));
        drop(work);
        assert!(!path.exists());
    }
}
