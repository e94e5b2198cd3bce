//! Content on disk for the tests: the files of a folder as the binary embeds them, the
//! committed `assets/` as a registry, the names in a folder, sha256 digests, a chart folder,
//! a content repository whose charts need images it holds and does not hold, content with a
//! hand-written record of what was verified at build.
//!
//! Shared by the server's tests (`tests/common`) and the build tool's (`crates/chartreg-build/tests/common`,
//! which includes this file by path); `super::root()` is the repository root on both sides, and
//! `super::generated_layout` (`clients.rs`) is there on both.

use std::path::{Path, PathBuf};

use chartreg_core::content::{HeldFile, Registry};

use super::root;

/// The files under `dir`, as the binary would embed them.
pub fn files_in(dir: &Path) -> Vec<HeldFile> {
    chartreg_core::tree::read_dir(dir, dir)
        .expect("content folder is readable")
        .into_iter()
        .map(|(path, data)| HeldFile::new(path, data))
        .collect()
}

/// The content a binary built from `dir` embeds: its files, and the facts the build works out
/// of them (the content must be servable).
pub fn embedded(dir: &Path) -> chartreg_core::content::Content {
    use chartreg_core::content::{BuildFile, Description};
    let files = files_in(dir);
    let at_build: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
    let description = Description::of(&at_build);
    assert!(
        description.refusal().is_none(),
        "{:?}",
        description.refusal()
    );
    chartreg_core::content::Content {
        facts: description.facts().expect("facts").into(),
        files,
    }
}

/// The committed `assets/` as a registry: the same content the binary embeds.
pub fn assets_registry() -> Registry {
    Registry::from_files(files_in(&root().join("assets"))).expect("assets/ is valid content")
}

/// The names of the files in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// sha256 of bytes, as `sha256:<hex>`.
pub fn sha256(data: &[u8]) -> String {
    chartreg_core::oci::Digest::sha256_of(data).to_string()
}

/// A minimal chart folder `<dir>/<name>`: Chart.yaml with `version`, values and a template.
pub fn chart_folder(dir: &Path, name: &str, version: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(folder.join("templates")).expect("chart folder");
    let write = |path: &str, text: &str| {
        std::fs::write(folder.join(path), text).expect("chart file");
    };
    write(
        "Chart.yaml",
        &format!(
            "apiVersion: v2\nname: {name}\nversion: {version}\nappVersion: \"{version}\"\ndescription: {name} for the tests\n"
        ),
    );
    write("values.yaml", "greeting: hello\n");
    write(
        "templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  version: {{ .Chart.Version | quote }}\n",
    );
    folder
}

/// What [`images_content`] wrote.
pub struct ImagesContent {
    /// The content file.
    pub config: PathBuf,
    /// The digest of the image the content holds, which the chart also pins.
    pub agent_digest: String,
}

/// A content folder whose `content.yaml` has an `images:` section (`images`: its value, such
/// as `{}` or `{closure: warn}`): the chart `app` 1.0.0 (`charts/app/`), whose values and
/// Deployment name three images: `quay.io/example/agent:v1`, which the content holds (the
/// layout `images/agent`, served as `quay.io/example/agent`); the same image pinned by its
/// digest under a tag the content does not hold (held: a node pulls it by the digest); and
/// `busybox:1.36` (`docker.io/library/busybox:1.36`), which the content does not hold.
pub fn images_content(dir: &Path, images: &str) -> ImagesContent {
    let agent = super::generated_layout(
        "agent",
        "v1",
        ("application/vnd.oci.image.config.v1+json", b"{}"),
        &[("application/vnd.oci.image.layer.v1.tar", b"agent")],
    );
    for file in &agent.files {
        let path = dir.join("images").join(file.path.as_ref());
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("layout folder");
        std::fs::write(path, &file.data).expect("layout file");
    }
    let chart = chart_folder(&dir.join("charts"), "app", "1.0.0");
    let digest = &agent.manifest_digest;
    std::fs::write(
        chart.join("values.yaml"),
        format!(
            "image:\n  registry: quay.io\n  repository: example/agent\n  tag: v1\nsidecar:\n  image: busybox:1.36\npinned:\n  image: quay.io/example/agent:v0@{digest}\ngreeting: hello\n"
        ),
    )
    .expect("values");
    std::fs::write(
        chart.join("templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    matchLabels: {app: agent}\n  template:\n    metadata:\n      labels: {app: agent}\n    spec:\n      initContainers:\n        - name: pinned\n          image: {{ .Values.pinned.image }}\n      containers:\n        - name: agent\n          image: \"{{ .Values.image.registry }}/{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n        - name: sidecar\n          image: {{ .Values.sidecar.image }}\n",
    )
    .expect("template");
    let config = dir.join("content.yaml");
    std::fs::write(
        &config,
        format!(
            "charts:\n  from: [charts]\nlayouts:\n  - from: images/agent\n    repository: example/agent\n    namespace: quay.io\nimages: {images}\n"
        ),
    )
    .expect("content file");
    ImagesContent {
        config,
        agent_digest: agent.manifest_digest,
    }
}

/// What [`verified_content`] made.
pub struct VerifiedContent {
    /// The layouts, without the record.
    pub files: Vec<HeldFile>,
    /// `verification.json`, written here by hand: what pack would write had it verified these.
    pub record: String,
}

impl VerifiedContent {
    /// The layouts and the record, as a registry.
    pub fn registry(&self) -> Registry {
        let mut files = self.files.clone();
        files.push(HeldFile::new(
            chartreg_core::content::VERIFICATION_FILE,
            self.record.clone().into_bytes(),
        ));
        Registry::from_files(files).expect("the verified content loads")
    }
}

/// The OpenPGP fingerprint the record says signed `charts/one` 1.0.0.
pub const PROV_KEY: &str = "4A1F2C6B8D0E3F5A7C9B1D2E4F6A8B0C2D4E6F80";
/// The keyless identity and issuer the record says signed `images/signed:v1`.
pub const IDENTITY: &str =
    "https://github.com/example/signed/.github/workflows/release.yaml@refs/tags/v1";
pub const ISSUER: &str = "https://token.actions.githubusercontent.com";
/// The warning the record gives `charts/one` 3.0.0+build.1 (`mode: warn`).
pub const WARNING: &str =
    "charts/one 3.0.0+build.1: no signature (.prov), and rule charts.require * names it";

/// Content whose record of verification covers every case a page shows: the chart
/// `charts/one` 1.0.0, verified by a key (`.prov`), 2.0.0 with no record, 3.0.0+build.1
/// (tagged `3.0.0_build.1`) whose missing signature was let through with a warning; the image
/// `images/signed:v1`, verified by a keyless identity (bundle), and `:v2`, whose record is of
/// another digest (so says nothing of it); `images/plain:v1`, with no record.
pub fn verified_content() -> VerifiedContent {
    use chartreg_core::oci::layout::ImageManifest;
    use chartreg_core::oci::media_type::{HELM_CHART, HELM_CONFIG, OCI_MANIFEST};
    use chartreg_core::tree::LayoutBuilder;

    let mut files = Vec::new();
    let mut packages = Vec::new();
    let mut chart = LayoutBuilder::new("charts/one");
    for (version, tag) in [
        ("1.0.0", "1.0.0"),
        ("2.0.0", "2.0.0"),
        ("3.0.0+build.1", "3.0.0_build.1"),
    ] {
        let config = chart.blob(
            HELM_CONFIG,
            format!(r#"{{"apiVersion":"v2","name":"one","version":"{version}"}}"#).into_bytes(),
        );
        let package = chart.blob(HELM_CHART, format!("one {version}").into_bytes());
        packages.push(package.digest.to_string());
        let d = chart.manifest(OCI_MANIFEST, &ImageManifest::new(config, vec![package]));
        chart.list(d, Some(tag));
    }
    files.extend(chart.into_files().expect("a chart layout"));
    let mut image = |repository: &str, tags: &[&str]| -> Vec<String> {
        let mut layout = LayoutBuilder::new(repository);
        let mut digests = Vec::new();
        for tag in tags {
            let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
            let layer = layout.blob(
                "application/vnd.oci.image.layer.v1.tar",
                format!("{repository}:{tag}").into_bytes(),
            );
            let d = layout.manifest(OCI_MANIFEST, &ImageManifest::new(config, vec![layer]));
            digests.push(d.digest.to_string());
            layout.list(d, Some(tag));
        }
        files.extend(layout.into_files().expect("an image layout"));
        digests
    };
    let signed = image("images/signed", &["v1", "v2"]);
    image("images/plain", &["v1"]);
    let files = files
        .into_iter()
        .map(|(path, data)| HeldFile::new(path, data))
        .collect();
    let other = sha256(b"another manifest");
    let record = format!(
        r#"{{
  "policy": {{
    "mode": "warn",
    "charts": {{"keyring": "99", "require": ["*"]}},
    "images": {{
      "keyless": [{{"identity": "{IDENTITY}", "issuer": "{ISSUER}", "trustedRoot": "{{}}"}}],
      "require": ["images/*"]
    }}
  }},
  "charts": {{
    "charts/one": {{
      "1.0.0": {{"digest": "{p1}", "verified": [{{"by": "key", "key": "{PROV_KEY}", "form": "prov"}}]}},
      "3.0.0+build.1": {{"digest": "{p3}", "warning": "{WARNING}"}}
    }}
  }},
  "images": {{
    "images/signed": {{
      "v1": {{"digest": "{v1}", "verified": [{{"by": "identity", "identity": "{IDENTITY}", "issuer": "{ISSUER}", "form": "bundle"}}]}},
      "v2": {{"digest": "{other}", "verified": [{{"by": "identity", "identity": "{IDENTITY}", "issuer": "{ISSUER}", "form": "bundle"}}]}}
    }}
  }}
}}
"#,
        p1 = packages[0],
        p3 = packages[2],
        v1 = signed[0],
    );
    VerifiedContent { files, record }
}
