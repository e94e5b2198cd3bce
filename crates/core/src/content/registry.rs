//! The whole registry ([`Registry`]): its repositories by name, the catalog, the upstream
//! registries it holds images of, the counts ([`Summary`]), and the chart images, the
//! verification record and the origins beside them. It is assembled from repositories the facts describe
//! (module `facts`), or from files through a description ([`Registry::from_files`]), and then
//! resolves the repository a request names (exactly, or within an upstream registry's
//! namespace).

use bytes::Bytes;

use crate::oci::{Namespace, RepositoryName};

use super::beside::Beside;
use super::maps::{HashMap, Sha256Map};
use super::namespaces::Namespaces;
use super::{
    BuildFile, Description, Error, FactsError, HeldFile, Listing, LoadError, Repository,
    Unservable, chart_images, facts, origins, verification,
};

/// Why files do not make a registry ([`Registry::from_files`]).
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Facts(#[from] FactsError),
    #[error(transparent)]
    Unservable(#[from] Unservable),
}

/// Counts for the start-up log line and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub repositories: usize,
    pub tags: usize,
    pub manifests: usize,
    pub blobs: usize,
    /// Bytes of distinct manifests and blobs.
    pub bytes: u64,
}

/// The whole registry: immutable once built.
#[derive(Debug, Default)]
pub struct Registry {
    pub(super) repositories: HashMap<String, Repository>,
    /// Repository names, sorted by byte order, as the catalog (`{"repositories":[…]}`) lists
    /// them.
    pub(super) catalog: Listing,
    /// The namespaced repositories by their path within the namespace.
    pub(super) namespaces: Namespaces,
    pub(super) summary: Summary,
    /// The images each chart version needs, when the content lists them (module
    /// `chart_images`).
    pub(super) chart_images: Beside<chart_images::Parsed>,
    /// What was verified at build, when the content records it (module `verification`).
    pub(super) verification: Beside<verification::Parsed>,
    /// Where fetched charts were downloaded from, when the content records it (module
    /// `origins`).
    pub(super) origins: Beside<origins::Parsed>,
}

impl Registry {
    /// The registry of `repositories`, with its catalog and summary.
    pub(super) fn assemble(repositories: Vec<Repository>) -> Self {
        let mut summary = Summary {
            repositories: repositories.len(),
            ..Summary::default()
        };
        // Bytes of distinct content: a blob may be in several repositories.
        let mut distinct: Sha256Map<u64> = Sha256Map::default();
        let several = repositories.len() > 1;
        let mut names = Vec::with_capacity(repositories.len());
        let mut by_name = HashMap::with_capacity_and_hasher(repositories.len(), Default::default());
        for repository in repositories {
            summary.tags = summary.tags.saturating_add(repository.tags.len());
            summary.manifests = summary.manifests.saturating_add(repository.manifests.len());
            summary.blobs = summary.blobs.saturating_add(repository.blobs.len());
            for (hash, size) in repository.distinct_content() {
                if several {
                    distinct.insert(*hash, size);
                } else {
                    summary.bytes = summary.bytes.saturating_add(size);
                }
            }
            names.push(repository.name().to_owned());
            by_name.insert(repository.name().to_owned(), repository);
        }
        if several {
            summary.bytes = distinct
                .values()
                .fold(0, |sum, size| sum.saturating_add(*size));
        }
        names.sort_unstable();
        Registry {
            repositories: by_name,
            namespaces: Namespaces::of(names.iter().map(String::as_str)),
            catalog: Listing::catalog(names),
            summary,
            chart_images: Beside::default(),
            verification: Beside::default(),
            origins: Beside::default(),
        }
    }

    /// The registry a binary serves: built from the facts its build wrote and the files it
    /// holds, which the facts must describe exactly (see module `facts`).
    pub fn from_facts(facts: &Bytes, files: &[HeldFile]) -> Result<Self, Unservable> {
        facts::read(facts, files)
    }

    /// The registry of `files`, the way a binary gets it: described (checking everything),
    /// written down as facts, and built from those facts and the files.
    pub fn from_files(files: impl IntoIterator<Item = HeldFile>) -> Result<Self, FilesError> {
        let files: Vec<HeldFile> = files.into_iter().collect();
        let built: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
        let description = Description::of(&built);
        let facts = description.facts()?;
        if let Err(refused) = description.found {
            return Err(FilesError::Load(refused));
        }
        Ok(Self::from_facts(&Bytes::from(facts), &files)?)
    }

    /// The repository named `name` exactly.
    #[inline]
    pub fn repository(&self, name: &RepositoryName) -> Result<&Repository, Error> {
        self.repositories
            .get(name.as_str())
            .ok_or_else(|| Error::NameUnknown(name.clone()))
    }

    /// The repository a request names: `name` in the upstream registry `namespace` (`?ns=`),
    /// or without one `name` exactly, else the one registry's repository whose path it is
    /// (see module `namespaces`).
    #[inline]
    pub fn resolve(
        &self,
        name: &RepositoryName,
        namespace: Option<&Namespace>,
    ) -> Result<&Repository, Error> {
        if namespace.is_none()
            && let Some(exact) = self.repositories.get(name.as_str())
        {
            return Ok(exact);
        }
        self.resolve_in_namespaces(name, namespace)
    }

    /// [`Registry::resolve`] when the name is not a repository's, or `?ns=` was given (a
    /// node's containerd through a mirror). Out of line: a name asked without `ns` (Helm,
    /// skopeo, the path form) stays one inlined lookup, 118 instructions a request fewer by
    /// callgrind (bench/results/issue27-ab.txt); with `ns` it costs one call more.
    #[inline(never)]
    fn resolve_in_namespaces(
        &self,
        name: &RepositoryName,
        namespace: Option<&Namespace>,
    ) -> Result<&Repository, Error> {
        let full = match namespace {
            None => self.namespaces.only(name)?,
            Some(namespace) => self
                .namespaces
                .within(name, namespace, |full| self.repositories.contains_key(full))?,
        };
        self.repositories
            .get(full)
            .ok_or_else(|| Error::NameUnknown(name.clone()))
    }

    /// The upstream registries whose images this content holds, sorted.
    pub fn namespaces(&self) -> &[Namespace] {
        self.namespaces.held()
    }

    /// Every repository name, sorted by byte order, ready to be paged.
    #[inline]
    pub fn catalog(&self) -> &Listing {
        &self.catalog
    }

    /// Repositories in catalog order.
    pub fn repositories(&self) -> impl Iterator<Item = &Repository> {
        self.catalog
            .names()
            .iter()
            .filter_map(|n| self.repositories.get(n))
    }

    pub fn summary(&self) -> Summary {
        self.summary
    }
}
