//! The files kept beside the layouts (`chart-images.json`, `verification.json`,
//! `origins.json`) as a registry holds them: the bytes ([`Beside`]: one binary search among
//! the files at start-up, nothing parsed), parsed once, on the first lookup, with the file's
//! own type ([`read`]). Lazily, not at start-up: only the pages, `chartreg ls` and the SBOM look
//! them up, start-up is measured (BENCHMARKS.md), and a registry that only serves pulls never
//! parses them. Each file's module owns its shape and its lookups; [`written`] is how pack
//! writes every one of them.

use std::sync::OnceLock;

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// One file's bytes, if the content holds it, and what its first lookup parsed of them.
#[derive(Debug)]
pub(super) struct Beside<P> {
    file: Option<Bytes>,
    parsed: OnceLock<P>,
}

impl<P> Default for Beside<P> {
    fn default() -> Self {
        Beside::of(None)
    }
}

impl<P> Beside<P> {
    pub(super) fn of(file: Option<Bytes>) -> Self {
        Beside {
            file,
            parsed: OnceLock::new(),
        }
    }

    /// Whether the content holds the file.
    pub(super) fn is_held(&self) -> bool {
        self.file.is_some()
    }

    /// What `parse` makes of the file's bytes (parsed on the first call only); `None` when
    /// the content holds no such file.
    pub(super) fn parsed(&self, parse: impl FnOnce(&[u8]) -> P) -> Option<&P> {
        let bytes = self.file.as_ref()?;
        Some(self.parsed.get_or_init(|| parse(bytes)))
    }
}

/// `bytes` read as the file `name`, of type `T`; `None` (logged) when they are not one.
pub(super) fn read<T: DeserializeOwned>(name: &str, bytes: &[u8]) -> Option<T> {
    // The build read the file with this type (else it refused the content) and the facts bind
    // its bytes: this fails only if they lie, and then nothing of the file is shown.
    match serde_json::from_slice(bytes) {
        Ok(file) => Some(file),
        Err(e) => {
            log::warn!("{name}: not shown: {e}");
            None
        }
    }
}

/// A file as pack writes it: sorted (its maps are ordered), indented JSON ending in a newline,
/// so that the same record gives the same bytes and `pack --check` compares them.
pub(super) fn written(file: &impl Serialize) -> Vec<u8> {
    let mut data = serde_json::to_vec_pretty(file)
        .unwrap_or_else(|_| unreachable!("names, strings, digests, lists and booleans serialise"));
    data.push(b'\n');
    data
}

/// Content for the tests of the files beside the layouts: a layout of `repository` holding
/// one image tagged `tag`, as files a binary holds, and the image's manifest digest.
#[cfg(test)]
pub(super) fn one_image(repository: &str, tag: &str) -> (Vec<super::HeldFile>, crate::oci::Digest) {
    use crate::oci::layout::ImageManifest;
    use crate::oci::media_type;
    let mut layout = crate::tree::LayoutBuilder::new(repository);
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob(
        "application/vnd.oci.image.layer.v1.tar",
        repository.as_bytes().to_vec(),
    );
    let d = layout.manifest(
        media_type::OCI_MANIFEST,
        &ImageManifest::new(config, vec![layer]),
    );
    layout.list(d.clone(), Some(tag));
    let files = layout
        .into_files()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|(path, data)| super::HeldFile::new(path, data))
        .collect();
    (files, d.digest)
}
