//! The layout builder: one OCI image layout as a [`Tree`], its blobs under `blobs/sha256/`, its
//! manifests listed (and tagged) in `index.json`, all JSON as Go writes it. The build tool lays
//! out its inputs with it; tests build arbitrary content with it.

use serde::Serialize;

use super::{BlobFile, Entry, Tree};
use crate::oci::gojson::{self, Unwritable};
use crate::oci::layout::{
    Annotations, Descriptor, INDEX_FILE, ImageIndex, LAYOUT_VERSION, OCI_LAYOUT_FILE, OciLayout,
    REF_NAME, blob_path,
};
use crate::oci::{Digest, media_type};

/// One layout being built: documents in memory, blobs in memory or by reference.
#[derive(Debug)]
pub struct LayoutBuilder {
    root: String,
    tree: Tree,
    index: ImageIndex,
    /// The first document that could not be written: [`LayoutBuilder::finish`] fails with it.
    unwritable: Option<Unwritable>,
}

impl LayoutBuilder {
    /// A layout in the folder `root` (the repository name it will be served as).
    pub fn new(root: &str) -> Self {
        LayoutBuilder {
            root: root.to_owned(),
            tree: Tree::new(),
            index: ImageIndex {
                schema_version: 2,
                media_type: Some(media_type::OCI_INDEX.to_owned()),
                artifact_type: None,
                manifests: Vec::new(),
                subject: None,
                annotations: Annotations::new(),
            },
            unwritable: None,
        }
    }

    /// Stores a blob held in memory; returns its descriptor.
    pub fn blob(&mut self, media_type: &str, data: Vec<u8>) -> Descriptor {
        let descriptor = Descriptor::new(media_type, Digest::sha256_of(&data), data.len() as u64);
        self.insert(&descriptor.digest, Entry::Bytes(data));
        descriptor
    }

    /// Stores a blob by reference to the file holding it (copied when the tree is written);
    /// returns its descriptor.
    pub fn blob_file(&mut self, media_type: &str, file: BlobFile) -> Descriptor {
        let descriptor = Descriptor::new(media_type, file.digest.clone(), file.size);
        self.insert(&descriptor.digest, Entry::File(file));
        descriptor
    }

    fn insert(&mut self, digest: &Digest, entry: Entry) {
        let path = format!("{}/{}", self.root, blob_path(digest));
        self.tree.insert(path, entry);
    }

    /// Stores a manifest (or index) document as a blob; returns its descriptor. A document that
    /// cannot be written as JSON is stored as nothing, and [`LayoutBuilder::finish`] fails
    /// naming it (so building stays one call per document, and nothing is ever written of it).
    pub fn manifest<T: Serialize>(&mut self, media_type: &str, document: &T) -> Descriptor {
        match gojson::to_vec(document) {
            Ok(data) => self.blob(media_type, data),
            Err(e) => {
                self.unwritable.get_or_insert(e);
                Descriptor::new(media_type, Digest::sha256_of(&[]), 0)
            }
        }
    }

    /// Lists a manifest in `index.json`, tagged when `tag` is given.
    pub fn list(&mut self, mut descriptor: Descriptor, tag: Option<&str>) {
        if let Some(tag) = tag {
            descriptor
                .annotations
                .insert(REF_NAME.to_owned(), tag.to_owned());
        }
        self.index.manifests.push(descriptor);
    }

    /// The layout's files: blobs, `oci-layout` and `index.json`; or the first document that
    /// could not be written.
    pub fn finish(mut self) -> Result<Tree, Unwritable> {
        if let Some(e) = self.unwritable {
            return Err(e);
        }
        let marker = OciLayout {
            image_layout_version: LAYOUT_VERSION.to_owned(),
        };
        let root = &self.root;
        self.tree.insert(
            format!("{root}/{OCI_LAYOUT_FILE}"),
            Entry::Bytes(gojson::to_vec(&marker)?),
        );
        self.tree.insert(
            format!("{root}/{INDEX_FILE}"),
            Entry::Bytes(gojson::to_vec(&self.index)?),
        );
        Ok(self.tree)
    }

    /// The layout's files in memory (blob files read); for tests and in-process content.
    pub fn into_files(self) -> std::io::Result<super::Files> {
        super::load(self.finish().map_err(std::io::Error::other)?)
    }
}
