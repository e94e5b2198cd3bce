//! Content on disk for the tests: the files of a folder as the binary embeds them, the
//! committed `assets/` as a registry, the names in a folder, sha256 digests, a chart folder.
//!
//! Shared by the server's tests (`tests/common`) and the build tool's (`crates/chartreg-build/tests/common`,
//! which includes this file by path); `super::root()` is the repository root on both sides.

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
