//! OCI image layouts as upstream could hand them over: descriptors that lead out of the
//! layout, blobs that are links, special files or not what their descriptors say, documents too
//! large or too deep to read.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::archive::{Tar, gzip};
use super::{Case, refused};

fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// A small valid image layout in `dir/layout` (one manifest tagged `v1`): the layout's folder
/// and the digests of its config, layer and manifest.
pub struct Layout {
    pub dir: PathBuf,
    pub config: String,
    pub layer: String,
    pub manifest: String,
}

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";

fn blob_path(dir: &Path, digest: &str) -> PathBuf {
    dir.join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

fn put(dir: &Path, data: &[u8]) -> String {
    let digest = sha256(data);
    let path = blob_path(dir, &digest);
    std::fs::create_dir_all(path.parent().expect("blobs folder")).expect("blobs folder");
    std::fs::write(path, data).expect("blob");
    digest
}

fn manifest_json(config: (&str, usize), layer: (&str, usize)) -> String {
    format!(
        r#"{{"schemaVersion":2,"mediaType":"{MANIFEST}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"{}","size":{}}}]}}"#,
        config.0, config.1, layer.0, layer.1
    )
}

fn index_json(media_type: &str, digest: &str, size: usize) -> String {
    format!(
        r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"{media_type}","digest":"{digest}","size":{size},"annotations":{{"org.opencontainers.image.ref.name":"v1"}}}}]}}"#
    )
}

impl Layout {
    pub fn write(base: &Path) -> Layout {
        let dir = base.join("layout");
        std::fs::create_dir_all(&dir).expect("layout folder");
        std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#)
            .expect("oci-layout");
        let config_bytes =
            br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
        let config = put(&dir, config_bytes);
        let layer_bytes = gzip(&Tar::new().file("hello.txt", "hello\n").bytes());
        let layer = put(&dir, &layer_bytes);
        let manifest_bytes =
            manifest_json((&config, config_bytes.len()), (&layer, layer_bytes.len()));
        let manifest = put(&dir, manifest_bytes.as_bytes());
        std::fs::write(
            dir.join("index.json"),
            index_json(MANIFEST, &manifest, manifest_bytes.len()),
        )
        .expect("index.json");
        Layout {
            dir,
            config,
            layer,
            manifest,
        }
    }

    /// Replaces the layer blob's file by what `make` puts at its path.
    fn replace_layer(&self, make: impl FnOnce(&Path)) {
        let path = blob_path(&self.dir, &self.layer);
        std::fs::remove_file(&path).expect("remove blob");
        make(&path);
    }
}

pub fn cases() -> Vec<Case> {
    vec![
        Case::layout(
            "layout-digest-traversal",
            "the file system: index.json names the manifest `sha256:../../../../etc/shadow`",
            |base| {
                let l = Layout::write(base);
                std::fs::write(
                    l.dir.join("index.json"),
                    index_json(MANIFEST, "sha256:../../../../etc/shadow", 10),
                )
                .expect("index");
            },
            refused(&["index.json"]),
        ),
        Case::layout(
            "layout-blob-symlink-out",
            "the build machine's files: a layer blob that links to a file outside the layout (its digest is that file's, so the digest check alone passes)",
            |base| {
                let l = Layout::write(base);
                let outside = base.join("secret.txt");
                std::fs::write(&outside, "a secret of the build machine\n").expect("secret");
                // The descriptor names the outside file's digest and size.
                let secret = std::fs::read(&outside).expect("secret");
                let digest = sha256(&secret);
                let config_size = std::fs::metadata(blob_path(&l.dir, &l.config))
                    .expect("config")
                    .len() as usize;
                let manifest = manifest_json((&l.config, config_size), (&digest, secret.len()));
                std::os::unix::fs::symlink(&outside, blob_path(&l.dir, &digest)).expect("link");
                let m = put(&l.dir, manifest.as_bytes());
                std::fs::write(
                    l.dir.join("index.json"),
                    index_json(MANIFEST, &m, manifest.len()),
                )
                .expect("index");
            },
            refused(&["link"]),
        ),
        Case::layout(
            "layout-blob-dev-zero",
            "memory and time: a layer blob that links to /dev/zero",
            |base| {
                let l = Layout::write(base);
                l.replace_layer(|p| std::os::unix::fs::symlink("/dev/zero", p).expect("link"));
            },
            refused(&["layout"]),
        ),
        Case::layout(
            "layout-blob-fifo",
            "time: a layer blob that is a FIFO",
            |base| {
                let l = Layout::write(base);
                l.replace_layer(|p| {
                    let status = std::process::Command::new("mkfifo")
                        .arg(p)
                        .status()
                        .expect("mkfifo");
                    assert!(status.success());
                });
            },
            refused(&["layout"]),
        ),
        Case::layout(
            "layout-blob-wrong-size",
            "what is served: a layer blob longer than its descriptor says",
            |base| {
                let l = Layout::write(base);
                let path = blob_path(&l.dir, &l.layer);
                let mut data = std::fs::read(&path).expect("blob");
                data.extend_from_slice(b"more");
                std::fs::write(&path, data).expect("blob");
            },
            refused(&["bytes"]),
        ),
        Case::layout(
            "layout-blob-wrong-digest",
            "what is served: a layer blob whose bytes are not its digest's (same size)",
            |base| {
                let l = Layout::write(base);
                let path = blob_path(&l.dir, &l.layer);
                let mut data = std::fs::read(&path).expect("blob");
                if let Some(last) = data.last_mut() {
                    *last ^= 0xff;
                }
                std::fs::write(&path, data).expect("blob");
            },
            refused(&["do not have the digest", "nothing was written"]),
        ),
        Case::layout(
            "layout-huge-index",
            "memory: an index.json of 8 GiB (a hole)",
            |base| {
                let l = Layout::write(base);
                std::fs::File::create(l.dir.join("index.json"))
                    .and_then(|f| f.set_len(8 << 30))
                    .expect("sparse index");
            },
            refused(&["index.json"]),
        ),
        Case::layout(
            "layout-huge-manifest",
            "memory: a manifest blob of 2 GiB (a hole) its descriptor claims",
            |base| {
                let l = Layout::write(base);
                let digest =
                    "sha256:0000000000000000000000000000000000000000000000000000000000000000";
                std::fs::File::create(blob_path(&l.dir, digest))
                    .and_then(|f| f.set_len(2 << 30))
                    .expect("sparse manifest");
                std::fs::write(
                    l.dir.join("index.json"),
                    index_json(MANIFEST, digest, 2 << 30),
                )
                .expect("index");
            },
            refused(&["MiB"]),
        ),
        Case::layout(
            "layout-nested-indexes",
            "the stack: indexes nested 20 deep",
            |base| {
                let l = Layout::write(base);
                let (mut digest, mut size, mut media_type) = (
                    l.manifest.clone(),
                    std::fs::metadata(blob_path(&l.dir, &l.manifest))
                        .expect("manifest")
                        .len() as usize,
                    MANIFEST,
                );
                for _ in 0..20 {
                    let index = format!(
                        r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[{{"mediaType":"{media_type}","digest":"{digest}","size":{size}}}]}}"#
                    );
                    digest = put(&l.dir, index.as_bytes());
                    size = index.len();
                    media_type = INDEX;
                }
                std::fs::write(l.dir.join("index.json"), index_json(INDEX, &digest, size))
                    .expect("index");
            },
            refused(&["deeper"]),
        ),
        Case::layout(
            "layout-deep-json",
            "the stack: index.json nested 100,000 deep",
            |base| {
                let l = Layout::write(base);
                std::fs::write(
                    l.dir.join("index.json"),
                    format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
                )
                .expect("index");
            },
            refused(&["index.json", "invalid JSON"]),
        ),
        Case::layout(
            "layout-missing-blob",
            "what is served: a manifest whose layer is not there",
            |base| {
                let l = Layout::write(base);
                std::fs::remove_file(blob_path(&l.dir, &l.layer)).expect("remove");
            },
            refused(&["no blob"]),
        ),
        Case::layout(
            "layout-version",
            "the reader: an oci-layout of another version",
            |base| {
                let l = Layout::write(base);
                std::fs::write(
                    l.dir.join("oci-layout"),
                    r#"{"imageLayoutVersion":"9.0.0"}"#,
                )
                .expect("oci-layout");
            },
            refused(&["9.0.0"]),
        ),
    ]
}
