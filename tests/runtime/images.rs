//! The two images the tests run: the one `make image` wrote (`target/image/oci`, the sample
//! content: the "old" image of a rollout), and a "new" one `chartreg-build image` writes here
//! from the same content with one chart more (`rollout` 1.0.0) and a 1 GiB blob (repository
//! `big/blob`), built once per test run into `TARGET/runtime-test`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::common;

/// The big blob's size: four times the memory limit the chart gives at most (512 MiB).
pub const BIG: u64 = 1 << 30;

/// An image layout and the tag of the image in it.
pub struct Layout {
    pub dir: PathBuf,
    pub tag: String,
}

/// The new image, and what its big blob is.
pub struct New {
    pub layout: Layout,
    /// `sha256:HEX` of the big blob (repository `big/blob`).
    pub big_digest: String,
}

/// The folder cargo builds into (the test binaries' release folder's parent).
fn target_dir() -> PathBuf {
    let bin = common::chartreg_bin();
    bin.parent()
        .and_then(Path::parent)
        .expect("target/release/chartreg")
        .to_owned()
}

/// `target/image/oci`, which `make image` writes (`make test` does before the tests);
/// `None` (skipped) when it is missing, a failure under CI=true.
pub fn old() -> Option<Layout> {
    let dir = common::root().join("target/image/oci");
    if !dir.join("index.json").is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "target/image/oci is missing: `make image` (make test does) builds it before the tests"
        );
        eprintln!("SKIPPED: no image built (make image)");
        return None;
    }
    let tag = fs::read_to_string(dir.with_file_name("tag")).expect("target/image/tag");
    Some(Layout {
        dir,
        tag: tag.trim_end().to_owned(),
    })
}

/// The new image, built on first use; `None` (skipped) where the kit is missing (`make
/// build` writes it), a failure under CI=true.
pub fn new() -> Option<&'static New> {
    static NEW: OnceLock<Option<New>> = OnceLock::new();
    NEW.get_or_init(build_new).as_ref()
}

fn build_new() -> Option<New> {
    let target = target_dir();
    let kit = target.join("share/chartreg/kit");
    if !kit.is_dir() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{} is missing: `make build` (make test does) writes the kit",
            kit.display()
        );
        eprintln!("SKIPPED: no kit (make build)");
        return None;
    }
    let dir = target.join("runtime-test");
    if dir.exists() {
        fs::remove_dir_all(&dir).expect("remove the last run's folder");
    }
    let chart = dir.join("more/rollout");
    fs::create_dir_all(chart.join("templates")).expect("chart folder");
    fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: rollout\nversion: 1.0.0\ndescription: the chart a rollout adds\n",
    )
    .expect("Chart.yaml");
    fs::write(
        chart.join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rollout\ndata:\n  added: \"yes\"\n",
    )
    .expect("template");
    let big_digest = big_layout(&dir.join("big"));
    let root = common::root();
    let show = |p: &Path| p.to_str().expect("UTF-8 path").to_owned();
    fs::write(
        dir.join("content.yaml"),
        format!(
            "charts:\n  prefix: charts\n  from: [{}, {}, {}]\nlayouts:\n  - from: {}\n    repository: images/sample\n  - from: {}\n    repository: big/blob\n",
            show(&root.join("charts")),
            show(&root.join("deploy/chart")),
            show(&dir.join("more")),
            show(&root.join("images/sample")),
            show(&dir.join("big")),
        ),
    )
    .expect("content.yaml");
    let out = Command::new(common::chartreg_build_bin())
        .arg("image")
        .arg("--config")
        .arg(dir.join("content.yaml"))
        .arg("--assets")
        .arg(dir.join("assets"))
        .arg("--kit")
        .arg(&kit)
        .arg("--cache")
        .arg(target.join("kit-cache"))
        .arg("--out")
        .arg(dir.join("oci"))
        .arg("--tag-file")
        .arg(dir.join("tag"))
        .output()
        .expect("chartreg-build image runs");
    assert!(
        out.status.success(),
        "chartreg-build image: {}",
        common::describe(&out)
    );
    let tag = fs::read_to_string(dir.join("tag")).expect("tag file");
    Some(New {
        layout: Layout {
            dir: dir.join("oci"),
            tag: tag.trim_end().to_owned(),
        },
        big_digest,
    })
}

/// The big blob's bytes at chunk `index` (1 MiB): a 4 KiB pattern, each copy stamped with
/// its offset, so that every byte's place matters and gzip keeps the image layer small.
pub fn big_chunk(index: u64) -> Vec<u8> {
    const CHUNK: usize = 1 << 20;
    let pattern: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut chunk = Vec::with_capacity(CHUNK);
    for copy in 0..CHUNK / 4096 {
        let offset = index * CHUNK as u64 + (copy * 4096) as u64;
        chunk.extend_from_slice(&offset.to_le_bytes());
        chunk.extend_from_slice(&pattern[8..]);
    }
    chunk
}

/// Writes an OCI image layout holding one image, `v1`, whose layer is the big blob; the
/// blob's digest.
fn big_layout(dir: &Path) -> String {
    let blobs = dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).expect("layout folder");
    let partial = blobs.join("partial");
    let mut file = std::io::BufWriter::new(fs::File::create(&partial).expect("blob file"));
    let mut hash = Sha256::new();
    for index in 0..BIG >> 20 {
        let chunk = big_chunk(index);
        hash.update(&chunk);
        file.write_all(&chunk).expect("write the blob");
    }
    file.flush().expect("write the blob");
    drop(file);
    let hex = hex(&hash.finalize());
    fs::rename(&partial, blobs.join(&hex)).expect("name the blob");
    let put = |bytes: &[u8]| -> (String, usize) {
        let hex = common::sha256(bytes);
        let hex = hex.trim_start_matches("sha256:").to_owned();
        fs::write(blobs.join(&hex), bytes).expect("blob");
        (format!("sha256:{hex}"), bytes.len())
    };
    let (config, config_size) = put(b"{}");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": config_size},
        "layers": [{"mediaType": "application/octet-stream", "digest": format!("sha256:{hex}"), "size": BIG}],
    });
    let (manifest, manifest_size) = put(&serde_json::to_vec(&manifest).expect("JSON"));
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest, "size": manifest_size,
            "annotations": {"org.opencontainers.image.ref.name": "v1"},
        }],
    });
    fs::write(
        dir.join("index.json"),
        serde_json::to_vec(&index).expect("JSON"),
    )
    .expect("index");
    fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).expect("oci-layout");
    format!("sha256:{hex}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
