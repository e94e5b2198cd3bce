//! What the server shows people and older tools, from the same content as the OCI API:
//!
//! - [`model`]: every repository and version, with chart metadata and what is attached, worked
//!   out from the registry.
//! - [`page`]: the HTML of `/` and `/ui/<repository>` (maud), cut where the request's host goes
//!   ([`pieces`]).
//! - [`classic`]: the classic Helm repository, `/<prefix>/index.yaml` and its packages.
//! - [`sbom`]: the SBOM of the binary, `/sbom.spdx.json` and `/sbom.cdx.json` (and `chartreg
//!   ls --sbom`): what it serves, from the model, and what it is made of, from
//!   [`crate::this_build`].
//!
//! All of it is made once, on the first request that needs it ([`Lazy`]), never at start-up
//! (which stays as fast with 10,000 versions) and never per request: a request joins
//! pre-rendered pieces with its host, or answers with bytes made beforehand. What cannot be
//! made ([`WebError`]) is kept as made, and every request for a page answers it (a 500).

pub mod classic;
pub mod model;
pub mod page;
pub mod pieces;
pub mod sbom;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use chartreg_core::content::{Registry, Unreadable};

pub use classic::{Classic, ClassicFile};
pub use page::STYLE;
pub use pieces::{Origin, Pieces};

/// One page, as HTML pieces and as JSON.
#[derive(Debug, Clone)]
pub struct Page {
    pub html: Pieces,
    pub json: Bytes,
}

/// Everything the pages and the classic repository answer with.
#[derive(Debug)]
pub struct Web {
    pub overview: Page,
    repositories: HashMap<String, Page>,
    pub classic: Classic,
    /// The SBOM as SPDX 2.3 JSON.
    pub sbom: Bytes,
    /// The SBOM as CycloneDX 1.5 JSON.
    pub cyclonedx: Bytes,
}

/// Why the pages cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    #[error("cannot write the JSON of {page}: {source}")]
    Json {
        /// `/`, or the repository's page `/ui/<name>`.
        page: String,
        source: serde_json::Error,
    },
    #[error("cannot write the SBOM: {0}")]
    Sbom(#[from] sbom::SbomError),
    #[error("cannot write /{path}: {source}")]
    Yaml {
        path: String,
        source: serde_yaml_ng::Error,
    },
}

impl Web {
    pub fn of(registry: &Registry) -> Result<Web, WebError> {
        let overview = model::Overview::of(registry)?;
        let classic = Classic::of(registry)?;
        let mut repositories = HashMap::with_capacity(overview.repositories.len());
        for r in &overview.repositories {
            let page = Page {
                html: page::repository(r),
                json: json(&format!("/ui/{}", r.name), r)?,
            };
            repositories.insert(r.name.clone(), page);
        }
        let build = crate::this_build::get();
        let sbom = sbom::document(registry, &overview, build, sbom::Format::Spdx)?;
        let cyclonedx = sbom::document(registry, &overview, build, sbom::Format::CycloneDx)?;
        Ok(Web {
            overview: Page {
                html: page::overview(&overview, &classic.prefixes),
                json: json("/", &overview)?,
            },
            repositories,
            classic,
            sbom: Bytes::from(sbom),
            cyclonedx: Bytes::from(cyclonedx),
        })
    }

    /// The page of the repository `name`.
    pub fn repository(&self, name: &str) -> Option<&Page> {
        self.repositories.get(name)
    }
}

/// The JSON of the page at `page`.
fn json(page: &str, value: &impl serde::Serialize) -> Result<Bytes, WebError> {
    match serde_json::to_vec(value) {
        Ok(json) => Ok(Bytes::from(json)),
        Err(source) => Err(WebError::Json {
            page: page.to_owned(),
            source,
        }),
    }
}

/// [`Web`], made on first use (or why it cannot be, shared by every request that asks).
#[derive(Debug, Default)]
pub struct Lazy(OnceLock<Result<Web, Arc<WebError>>>);

impl Lazy {
    pub fn get(&self, registry: &Registry) -> Result<&Web, Arc<WebError>> {
        let made = self.0.get_or_init(|| {
            Web::of(registry).map_err(|e| {
                log::error!("the pages cannot be made: {e}");
                Arc::new(e)
            })
        });
        match made {
            Ok(web) => Ok(web),
            Err(e) => Err(Arc::clone(e)),
        }
    }
}
