//! The fuzz targets: each takes arbitrary bytes and drives one parser or loader of chartreg.
//! None may panic; where a target can check more (a loaded registry serves only bytes that
//! hash to their digests) it does, and panics if that fails, so the fuzzer reports it.
//!
//! `fuzz/` (cargo-fuzz, run on the stable toolchain with `-s none`; `make fuzz`) calls these
//! from libFuzzer; `tests/replay.rs` runs every committed corpus file through them in `cargo
//! test`, so that what the fuzzer found stays tested. [`seeds`] gives each target's starting
//! corpus.
//!
//! Targets: `route` (method and path -> the typed route), `parsers` (names, tags, digests,
//! references, Range, pagination queries), `registry` (a small content set with one file
//! replaced: `Registry::from_files`), `facts` (mutated start-up facts over that content:
//! `Registry::from_facts`),
//! `chart_package` (`pack`'s reading of a `.tgz`), `chart_folder` (a chart folder whose
//! Chart.yaml, values and template are the input), `image_layout` (an OCI layout with one file
//! replaced, read as `pack --layout` reads it).
#![allow(
    clippy::panic,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a target reports what it finds by panicking: the fuzzer records the input"
)]

use std::collections::BTreeMap;

use bytes::Bytes;
use chartreg_core::content::{BuildFile, Description, HeldFile, Registry};
use chartreg_core::oci::layout::{Descriptor, ImageIndex, ImageManifest, Platform};
use chartreg_core::oci::{Digest, Namespace, Reference, RepositoryName, Tag, media_type};
use chartreg_core::tree::{Files, LayoutBuilder};

/// A fuzz target: arbitrary bytes in, a panic if anything is wrong.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: [(&str, Target); 7] = [
    ("route", route),
    ("parsers", parsers),
    ("registry", registry),
    ("facts", facts),
    ("chart_package", chart_package),
    ("chart_folder", chart_folder),
    ("image_layout", image_layout),
];

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// The first byte picks the method; the rest is the path, and after a `?` the query.
pub fn route(data: &[u8]) {
    use actix_web::http::Method;
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let methods = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
    ];
    let method = &methods[usize::from(first) % methods.len()];
    let target = text(rest);
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let routed = chartreg::http::route(method, path, query);
    let _ = format!("{routed:?}");
}

/// The input as every small parser takes it.
pub fn parsers(data: &[u8]) {
    let s = text(data);
    if let Ok(name) = s.parse::<RepositoryName>() {
        assert_eq!(
            name.as_str().parse::<RepositoryName>().as_ref(),
            Ok(&name),
            "names round-trip"
        );
    }
    if let Ok(namespace) = s.parse::<Namespace>() {
        assert_eq!(
            Namespace::of_component(&namespace.component()).as_ref(),
            (namespace.as_str().contains(['.', ':']) || namespace.as_str() == "localhost")
                .then_some(&namespace),
            "a namespace's path component names it"
        );
    }
    if let Ok(tag) = s.parse::<Tag>() {
        assert!(tag.as_str().len() <= 128, "a tag is at most 128 characters");
    }
    if let Ok(digest) = s.parse::<Digest>() {
        assert_eq!(digest.as_str(), s, "a digest keeps its text");
        if let Some(hash) = digest.sha256() {
            assert_eq!(
                Digest::from_sha256(hash),
                digest,
                "a sha256 digest round-trips"
            );
        }
    }
    let _ = s.parse::<Reference>();
    if let Ok(image) = chartreg_build::chart_images::ImageRef::parse(&s) {
        let again = chartreg_build::chart_images::ImageRef::parse(&image.to_string());
        assert_eq!(
            again.as_ref().ok(),
            Some(&image),
            "a normal reference is its own"
        );
        assert!(
            chartreg_core::oci::Namespace::split(&image.repository()).is_some(),
            "an image is served in its registry's namespace"
        );
    }
    let _ = chartreg_build::chart_images::rendered::find(&s);
    if let Some(spec) = chartreg::http::RangeSpec::parse(&s) {
        for size in [0, 1, 580, u64::MAX] {
            if let chartreg::http::Selection::Partial { start, end } = spec.select(size) {
                assert!(start <= end && end < size, "{start}-{end} of {size}");
            }
        }
    }
    if let Ok(page) = chartreg::http::PageQuery::parse(&s) {
        let items: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let (range, _) = page.apply(&items);
        assert!(
            range.start <= range.end && range.end <= items.len(),
            "{range:?}"
        );
    }
}

/// A small content set: a chart-like image manifest, a two-platform index, and a referrer.
pub fn base_files() -> Files {
    let mut layout = LayoutBuilder::new("fuzz/app");
    let config = layout.blob(
        "application/vnd.oci.image.config.v1+json",
        br#"{"os":"linux","architecture":"amd64"}"#.to_vec(),
    );
    let layer = layout.blob(
        "application/vnd.oci.image.layer.v1.tar",
        b"layer bytes".to_vec(),
    );
    let image = ImageManifest::new(config.clone(), vec![layer.clone()]);
    let image_d = layout.manifest(media_type::OCI_MANIFEST, &image);
    layout.list(image_d.clone(), Some("1.0.0"));
    let mut platformed = image_d.clone();
    platformed.platform = Some(Platform {
        architecture: "amd64".into(),
        os: "linux".into(),
        variant: None,
    });
    let index = ImageIndex {
        schema_version: 2,
        media_type: Some(media_type::OCI_INDEX.into()),
        artifact_type: None,
        manifests: vec![platformed],
        subject: None,
        annotations: Default::default(),
    };
    let index_d = layout.manifest(media_type::OCI_INDEX, &index);
    layout.list(index_d, Some("v2"));
    let mut signature = ImageManifest::new(config, vec![layer]);
    signature.artifact_type = Some("application/vnd.dev.cosign.artifact.sig.v1+json".into());
    signature.subject = Some(Descriptor::new(
        media_type::OCI_MANIFEST,
        image_d.digest.clone(),
        image_d.size,
    ));
    let sig_d = layout.manifest(media_type::OCI_MANIFEST, &signature);
    layout.list(sig_d, None);
    layout.into_files().unwrap_or_default()
}

fn content_files(files: &Files) -> Vec<HeldFile> {
    files
        .iter()
        .map(|(path, data)| HeldFile::new(path.clone(), data.clone()))
        .collect()
}

/// Every manifest and blob `registry` serves has the bytes its digest names.
fn serves_only_right_bytes(registry: &Registry) {
    for repository in registry.repositories() {
        for tag in repository.tags() {
            let Some(digest) = repository.tag_digest(tag) else {
                panic!("{}:{tag} has no digest", repository.name());
            };
            let Ok(manifest) = repository.manifest(&Reference::Digest(digest.clone())) else {
                panic!(
                    "{}:{tag} names a manifest it does not hold",
                    repository.name()
                );
            };
            assert_eq!(
                Digest::sha256_of(&manifest.data),
                manifest.digest,
                "manifest bytes"
            );
            if let Ok(m) = serde_json::from_slice::<ImageManifest>(&manifest.data) {
                for d in std::iter::once(&m.config).chain(&m.layers) {
                    if let Ok(blob) = repository.blob(&d.digest) {
                        assert_eq!(Digest::sha256_of(&blob.data), blob.digest, "blob bytes");
                    }
                }
            }
        }
    }
}

/// The first byte picks a file of [`base_files`]; the rest replaces its bytes.
pub fn registry(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let mut files = base_files();
    let Some(path) = files
        .keys()
        .nth(usize::from(first) % files.len().max(1))
        .cloned()
    else {
        return;
    };
    files.insert(path, rest.to_vec());
    if let Ok(registry) = Registry::from_files(content_files(&files)) {
        serves_only_right_bytes(&registry);
    }
}

/// The input as the start-up facts of [`base_files`].
pub fn facts(data: &[u8]) {
    let files = content_files(&base_files());
    if let Ok(registry) = Registry::from_facts(&Bytes::copy_from_slice(data), &files) {
        serves_only_right_bytes(&registry);
    }
}

/// The input as a chart package.
pub fn chart_package(data: &[u8]) {
    if let Ok(chart) = chartreg_build::pack::read_chart(data) {
        assert!(!chart.name().is_empty() && !chart.version().is_empty());
    }
    if let Ok(tree) = chartreg_build::chart_images::ChartTree::read(data) {
        let mut warnings = Vec::new();
        let _ = chartreg_build::chart_images::annotations::find(&tree, &mut warnings);
        let _ = chartreg_build::chart_images::values::find(&tree, &[]);
    }
}

/// The input split at NUL bytes into Chart.yaml, values.yaml and a template of a chart folder.
pub fn chart_folder(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let folder = dir.path().join("chart");
    let mut parts = data.splitn(3, |b| *b == 0);
    let files = [
        ("Chart.yaml", parts.next().unwrap_or_default()),
        ("values.yaml", parts.next().unwrap_or_default()),
        ("templates/t.yaml", parts.next().unwrap_or_default()),
    ];
    for (name, bytes) in files {
        let path = folder.join(name);
        if let Some(parent) = path.parent()
            && std::fs::create_dir_all(parent).is_err()
        {
            return;
        }
        if std::fs::write(&path, bytes).is_err() {
            return;
        }
    }
    if let Ok(package) = chartreg_build::pack::ChartPackage::from_folder(&folder, None) {
        let again = chartreg_build::pack::ChartPackage::from_folder(&folder, None)
            .map(|p| p.layer.digest().clone())
            .ok();
        assert_eq!(
            again.as_ref(),
            Some(package.layer.digest()),
            "packaging is deterministic"
        );
    }
}

/// The first byte picks a file of [`base_files`]' layout; the rest replaces it; the layout is
/// read as `pack --layout` reads one.
pub fn image_layout(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let mut files: BTreeMap<String, Vec<u8>> = base_files();
    if let Some(path) = files
        .keys()
        .nth(usize::from(first) % files.len().max(1))
        .cloned()
    {
        files.insert(path, rest.to_vec());
    }
    for (path, bytes) in &files {
        let file = dir.path().join(path);
        if let Some(parent) = file.parent()
            && std::fs::create_dir_all(parent).is_err()
        {
            return;
        }
        if std::fs::write(&file, bytes).is_err() {
            return;
        }
    }
    let spec = format!("{}=fuzz/app", dir.path().join("fuzz/app").display());
    if let Ok(spec) = spec.parse::<chartreg_build::pack::LayoutSpec>() {
        let _ = chartreg_build::pack::ImageLayout::read(&spec);
    }
}

/// Each target's starting corpus: valid inputs of its kind.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let prefixed = |files: &Files| -> Vec<Vec<u8>> {
        files
            .values()
            .enumerate()
            .map(|(i, data)| [vec![u8::try_from(i).unwrap_or(0)], data.clone()].concat())
            .collect()
    };
    match target {
        "route" => [
            "/v2/",
            "/v2/_catalog?n=1",
            "/v2/charts/hello/tags/list",
            "/v2/charts/hello/manifests/1.0.0",
            "/v2/a/b/blobs/sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "/v2/a/referrers/sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "/",
            "/ui/charts/hello",
            "/charts/index.yaml",
            "/charts/hello-1.0.0.tgz.prov",
            "/healthz",
        ]
        .iter()
        .map(|p| [&[0u8][..], p.as_bytes()].concat())
        .collect(),
        "parsers" => [
            "charts/hello",
            "1.0.1_build.7",
            "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "bytes=0-9",
            "bytes=-5",
            "n=10&last=b",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect(),
        "registry" | "image_layout" => prefixed(&base_files()),
        "facts" => {
            let files: Vec<BuildFile> = content_files(&base_files())
                .iter()
                .map(BuildFile::from)
                .collect();
            Description::of(&files).facts().into_iter().collect()
        }
        "chart_package" => {
            let charts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts");
            let mut found: Vec<Vec<u8>> = std::fs::read_dir(charts)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".tgz"))
                .filter_map(|e| std::fs::read(e.path()).ok())
                .collect();
            found.sort();
            found
        }
        "chart_folder" => vec![
            b"apiVersion: v2\nname: seed\nversion: 1.0.0\n\0greeting: hi\n\0kind: ConfigMap\n".to_vec(),
        ],
        _ => Vec::new(),
    }
}
