//! Two upstream registries for the mirror tests: CNCF distribution instances that hold the same
//! repository path with different bytes, as two real registries (quay.io, ghcr.io) may, and a
//! multi-platform image on one of them; with the mindthegap images file that lists all of it.
//!
//! Flow: [`TwoUpstreams::start`] starts two [`Distribution`]s, builds each image as an OCI layout
//! in a temporary folder (real images: an uncompressed tar layer holding one file, a config whose
//! `rootfs.diff_ids` names it, for this machine's architecture or the index's platforms), copies
//! it in with `skopeo copy --all --preserve-digests`, then asks the registry for the manifest it
//! now serves (`skopeo inspect --raw`) and keeps its sha256: the upstream digest a pull through
//! chartreg must give too. Last it writes `images.yaml` (registry -> images -> tags) for
//! `chartreg-build fetch --images-file`.
//!
//! | upstream | `nutanix/demo-app:v1`                      | `nutanix/multi:v1`               |
//! |----------|--------------------------------------------|----------------------------------|
//! | `a`      | an image, its file `demo-app/upstream`: a  | index: linux/amd64, linux/arm64  |
//! | `b`      | an image, its file `demo-app/upstream`: b  | (none)                           |

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{Distribution, Skopeo, generated_layout, sha256};

/// The repository path both upstreams hold, with different bytes.
pub const DEMO_APP: &str = "nutanix/demo-app";
/// The multi-platform image (upstream `a` only).
pub const MULTI: &str = "nutanix/multi";
/// The one tag of each.
pub const TAG: &str = "v1";
/// The platforms of [`MULTI`], in its index's order.
pub const MULTI_PLATFORMS: [&str; 2] = ["linux/amd64", "linux/arm64"];

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const OCI_LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// An image on an upstream, as that upstream serves it.
#[derive(Debug, Clone)]
pub struct UpstreamImage {
    pub repository: &'static str,
    pub tag: &'static str,
    /// The digest of the manifest (or index) the upstream serves for the tag.
    pub digest: String,
    /// Each platform's image: the one image itself, or every image an index lists.
    pub platforms: Vec<PlatformImage>,
}

/// One platform's image of an [`UpstreamImage`].
#[derive(Debug, Clone)]
pub struct PlatformImage {
    /// `os/arch`
    pub platform: String,
    /// Its manifest's digest (the tag's own digest for a single image).
    pub manifest: String,
    /// The chain ID of its layers: the key of the snapshot unpacking it makes. Its one layer's
    /// diff ID (the sha256 of the uncompressed tar), as a single layer's chain ID is.
    pub chain_id: String,
}

/// One upstream registry and what it holds.
pub struct Upstream {
    pub registry: Distribution,
    pub images: Vec<UpstreamImage>,
}

impl Upstream {
    /// `127.0.0.1:PORT`: the registry's name in references and hosts.toml folders.
    pub fn host(&self) -> String {
        self.registry.host()
    }

    /// The image of `repository`; fails the test if this upstream has none.
    pub fn image(&self, repository: &str) -> &UpstreamImage {
        self.images
            .iter()
            .find(|image| image.repository == repository)
            .unwrap_or_else(|| panic!("upstream {} holds no {repository}", self.host()))
    }

    /// The digest this upstream serves for `repository`'s tag.
    pub fn digest(&self, repository: &str) -> &str {
        &self.image(repository).digest
    }

    /// The image `repository` has for `platform` (`os/arch`); fails the test if none.
    pub fn platform(&self, repository: &str, platform: &str) -> &PlatformImage {
        self.image(repository)
            .platforms
            .iter()
            .find(|image| image.platform == platform)
            .unwrap_or_else(|| panic!("{} has no {platform} image", self.reference(repository)))
    }

    /// `HOST/REPOSITORY:TAG`, as a node names the image.
    pub fn reference(&self, repository: &str) -> String {
        format!(
            "{}/{repository}:{}",
            self.host(),
            self.image(repository).tag
        )
    }
}

/// The two upstreams of the table above, and `images.yaml` listing everything they hold.
pub struct TwoUpstreams {
    pub a: Upstream,
    pub b: Upstream,
    /// The mindthegap images file: both hosts, each with its repositories and tags.
    pub images_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl TwoUpstreams {
    /// Stops both registries; what they held stays described.
    pub fn stop(&mut self) {
        self.a.registry.stop();
        self.b.registry.stop();
    }

    /// Starts both registries and fills them; `None` (the test is skipped) when distribution,
    /// curl or skopeo is missing (under `CI=true` the test fails instead).
    pub fn start() -> Option<TwoUpstreams> {
        let skopeo = Skopeo::new()?;
        let registry_a = Distribution::start()?;
        let registry_b = Distribution::start()?;
        let dir = tempfile::tempdir().expect("temp dir");
        let arch = host_arch();

        let demo_a = demo_app_layout(&dir.path().join("demo-a"), arch, "a");
        let demo_b = demo_app_layout(&dir.path().join("demo-b"), arch, "b");
        let multi = multi_layout(&dir.path().join("multi"));
        let a = Upstream {
            images: vec![
                push(&skopeo, &registry_a, DEMO_APP, &demo_a),
                push(&skopeo, &registry_a, MULTI, &multi),
            ],
            registry: registry_a,
        };
        let b = Upstream {
            images: vec![push(&skopeo, &registry_b, DEMO_APP, &demo_b)],
            registry: registry_b,
        };

        let images_file = dir.path().join("images.yaml");
        let mut text = String::new();
        for upstream in [&a, &b] {
            text.push_str(&format!("\"{}\":\n  images:\n", upstream.host()));
            for image in &upstream.images {
                text.push_str(&format!("    {}: [\"{}\"]\n", image.repository, image.tag));
            }
        }
        std::fs::write(&images_file, text).expect("write images.yaml");
        Some(TwoUpstreams {
            a,
            b,
            images_file,
            _dir: dir,
        })
    }
}

/// A layout as it was built: where it is, the digest its tag names and its platforms' images.
struct BuiltLayout {
    dir: PathBuf,
    digest: String,
    platforms: Vec<PlatformImage>,
}

/// `skopeo copy` of the layout's tag to `registry/repository:TAG`, digests kept; the digest the
/// registry then serves, which must be the layout's.
fn push(
    skopeo: &Skopeo,
    registry: &Distribution,
    repository: &'static str,
    layout: &BuiltLayout,
) -> UpstreamImage {
    let destination = format!("docker://{}/{repository}:{TAG}", registry.host());
    skopeo.ok(&[
        "copy",
        "--all",
        "--preserve-digests",
        "--dest-tls-verify=false",
        &format!("oci:{}:{TAG}", layout.dir.display()),
        &destination,
    ]);
    let raw = skopeo.ok(&["inspect", "--raw", "--tls-verify=false", &destination]);
    let digest = sha256(&raw.stdout);
    assert_eq!(
        digest, layout.digest,
        "{destination} serves another manifest than the layout copied to it"
    );
    UpstreamImage {
        repository,
        tag: TAG,
        digest,
        platforms: layout.platforms.clone(),
    }
}

/// The single-platform `demo-app` layout of upstream `upstream`: its one file says which.
fn demo_app_layout(dir: &Path, arch: &str, upstream: &str) -> BuiltLayout {
    let (config, layer) = image_parts(
        "linux",
        arch,
        "demo-app/upstream",
        format!("{upstream}\n").as_bytes(),
    );
    let chain_id = sha256(&layer);
    let layout = generated_layout(
        DEMO_APP,
        TAG,
        (OCI_CONFIG, &config),
        &[(OCI_LAYER_TAR, &layer)],
    );
    write_files(dir, &layout.files, DEMO_APP);
    BuiltLayout {
        dir: dir.to_owned(),
        platforms: vec![PlatformImage {
            platform: format!("linux/{arch}"),
            manifest: layout.manifest_digest.clone(),
            chain_id,
        }],
        digest: layout.manifest_digest,
    }
}

/// The `multi` layout: an index of one image per platform in [`MULTI_PLATFORMS`], each with a
/// file naming its platform.
fn multi_layout(dir: &Path) -> BuiltLayout {
    let mut manifests = Vec::new();
    let mut platforms = Vec::new();
    for platform in MULTI_PLATFORMS {
        let (os, arch) = platform.split_once('/').expect("os/arch");
        let (config, layer) = image_parts(os, arch, "multi/platform", platform.as_bytes());
        let image = generated_layout(
            MULTI,
            TAG,
            (OCI_CONFIG, &config),
            &[(OCI_LAYER_TAR, &layer)],
        );
        // Its blobs (and oci-layout); index.json is written again below, tagging the index.
        write_files(dir, &image.files, MULTI);
        manifests.push(json!({
            "mediaType": OCI_MANIFEST,
            "digest": image.manifest_digest,
            "size": image.manifest.len(),
            "platform": {"architecture": arch, "os": os},
        }));
        platforms.push(PlatformImage {
            platform: platform.to_owned(),
            manifest: image.manifest_digest,
            chain_id: sha256(&layer),
        });
    }
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": manifests,
    }))
    .expect("index serialises");
    let digest = sha256(&index);
    write_blob(dir, &digest, &index);
    let top = json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [{
            "mediaType": OCI_INDEX,
            "digest": digest,
            "size": index.len(),
            "annotations": {REF_NAME: TAG},
        }],
    });
    std::fs::write(
        dir.join("index.json"),
        serde_json::to_vec(&top).expect("index.json serialises"),
    )
    .expect("write index.json");
    BuiltLayout {
        dir: dir.to_owned(),
        digest,
        platforms,
    }
}

/// An image's config and its one layer: an uncompressed tar holding `path` with `contents`
/// (mode 0644, owner 0, mtime 0), named in the config's `rootfs.diff_ids` as containerd checks
/// when it unpacks.
fn image_parts(os: &str, arch: &str, path: &str, contents: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_size(contents.len() as u64);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut header, path, contents)
        .expect("tar entry");
    let layer = tar.into_inner().expect("tar ends");
    let config = serde_json::to_vec(&json!({
        "architecture": arch,
        "os": os,
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": [sha256(&layer)]},
    }))
    .expect("config serialises");
    (config, layer)
}

/// Writes [`generated_layout`]'s files of `repository` into `dir` (their paths without the
/// repository).
fn write_files(dir: &Path, files: &[chartreg_core::content::HeldFile], repository: &str) {
    for file in files {
        let relative = file
            .path
            .strip_prefix(&format!("{repository}/"))
            .expect("a generated file lies in its repository");
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
        std::fs::write(&path, &file.data)
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// Writes a blob into the layout `dir` under its digest.
fn write_blob(dir: &Path, digest: &str, data: &[u8]) {
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    let path = dir.join("blobs/sha256").join(hex);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
    std::fs::write(&path, data).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// This machine's architecture as OCI names it: what containerd pulls of an image by default.
pub fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}
