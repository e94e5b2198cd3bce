//! The content model: an immutable, in-memory registry of OCI image layouts, looked up by
//! validated names, tags and digests, and the one way content becomes one.
//!
//! How content flows through it:
//! 1. The build describes the content ([`Description::of`], module `load`): from every file as
//!    it has it ([`BuildFile`]: bytes held, or left on disk), a folder holding an `oci-layout`
//!    file is one repository, named by its path (`charts/hello/oci-layout` -> `charts/hello`);
//!    each layout's `index.json` is read, every manifest followed (indexes recursively), each
//!    referenced blob checked present with the descriptor's size and stored under its sha256,
//!    tags and referrers recorded. The files beside the layouts, [`CHART_IMAGES_FILE`]
//!    (the images each chart version needs, module `chart_images`) and [`VERIFICATION_FILE`]
//!    (what was verified at build, module `verification`), and [`ORIGINS_FILE`] (where each
//!    fetched chart was downloaded from, module `origins`) are read and checked too. A
//!    problem is a `LoadError` naming the file: such content is described as refused.
//! 2. The description is written down as facts ([`Description::facts`], module `facts`):
//!    postcard, naming each body by its file, bound to every file by path and sha256.
//! 3. [`Registry::from_facts`] builds the registry from the facts and the files a binary holds
//!    ([`HeldFile`]), after checking that the facts describe exactly those files; facts of
//!    other files, or of content the build refused, are refused, naming the file. Tests, which
//!    have only files, take the same path through [`Registry::from_files`]; `chartreg verify`
//!    describes the files again and names where the binary's facts differ
//!    ([`Description::differences`]). The registry keeps the bytes of the list of chart
//!    images, of the verification record and of the origins, if any, and reads each when first
//!    asked ([`Registry::chart_images`], [`Registry::chart_verification`],
//!    [`Registry::chart_origin`]).
//! 4. Requests look up `Registry::repository`, then `Repository::manifest` / `blob` / `tags` /
//!    `referrers`: hash-map lookups returning the stored bytes (`Bytes`, zero-copy for embedded
//!    `&'static` data). Misses are `Error::NameUnknown` / `ManifestUnknown` / `BlobUnknown`.
//!
//! The registry is two modules by job: `registry` (the whole: [`Registry`], assembled and
//! resolving a request's repository, with its [`Summary`]) and `repository` (one
//! [`Repository`] and its lookups, returning a [`Manifest`] or [`Blob`]); a lookup that finds
//! nothing is this module's [`Error`]. The rest: `input` (files as the build and a binary hold
//! them), `load` and `description` (step 1), `facts` (steps 2 and 3), `problem` (what loading
//! refuses), `document` and `kinds` (a manifest's JSON and what it is), `listing` (the paged
//! catalog and tags lists), `namespaces` (upstream registries within the names), `maps` (the
//! hash maps), `chart_images`, `verification` and `origins` (the files beside the layouts, each
//! its shape and lookups) with `beside` (how a registry holds them and pack writes them).
//!
//! No HTTP types live here; `http` maps `Error` to statuses and codes.

// Requests and content reach this module: no arithmetic that can overflow or divide by zero
// (checked, saturating or widened instead), outside tests.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod beside;
mod chart_images;
mod description;
mod document;
mod facts;
mod input;
mod kinds;
mod listing;
mod load;
mod maps;
mod namespaces;
mod origins;
mod problem;
mod registry;
mod repository;
mod verification;

use crate::oci::{Digest, Namespace, Reference, RepositoryName};

use maps::{HashMap, Sha256Map};

pub use chart_images::{
    CHART_IMAGES_FILE, ChartImage, ChartImages, ChartImagesFile, ImageEntry, VersionImages, Way,
};
pub use description::Description;
pub use document::{Document, Unreadable};
pub use facts::{FactsError, Stale, Unservable};
pub use input::{BuildBytes, BuildFile, Content, HeldFile, content_digest};
pub use kinds::{Artifact, Kind};
pub use listing::Listing;
pub use origins::{MAX_URL, ORIGINS_FILE, Origin, OriginUrl, OriginUrlError, OriginsFile};
pub use problem::{LoadError, Problem};
pub use registry::{FilesError, Registry, Summary};
pub use repository::{Blob, Manifest, Repository};
pub use verification::{
    ChartsMaterial, Evidence, Form, ImagesMaterial, KeylessMaterial, PolicyRecord, Record,
    UpstreamIndex, VERIFICATION_FILE, VerificationFile,
};

/// A lookup that found nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("repository `{0}` is not known to this registry")]
    NameUnknown(RepositoryName),
    #[error("manifest `{reference}` is not known in repository `{name}`")]
    ManifestUnknown {
        name: RepositoryName,
        reference: Reference,
    },
    #[error("blob `{digest}` is not known in repository `{name}`")]
    BlobUnknown {
        name: RepositoryName,
        digest: Digest,
    },
    /// `?ns=` named a registry this content holds no image of.
    #[error(
        "repository `{name}` is not known: this registry holds no images of registry `{namespace}` (it holds {})",
        namespaces::listed(held)
    )]
    NamespaceUnknown {
        name: RepositoryName,
        namespace: Namespace,
        held: Vec<Namespace>,
    },
    /// A path held for several registries, asked for without `?ns=`.
    #[error(
        "repository `{name}` is held for {} registries: {}; ask with `?ns=REGISTRY` or by the full name",
        candidates.len(),
        namespaces::candidates(candidates)
    )]
    Ambiguous {
        name: RepositoryName,
        /// Each namespace holding it, with the repository's full name.
        candidates: Vec<(Namespace, String)>,
    },
}
