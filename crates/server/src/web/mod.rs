//! What the server shows people and older tools, from the same content as the OCI API:
//!
//! - [`model`]: every repository and version, with chart metadata and what is attached, worked
//!   out from the registry.
//! - [`page`]: the HTML of `/` and `/ui/<repository>` (maud), cut where the request's host goes.
//! - [`classic`]: the classic Helm repository, `/<prefix>/index.yaml` and its packages.
//!
//! All of it is made once, on the first request that needs it ([`Lazy`]), never at start-up
//! (which stays as fast with 10,000 versions) and never per request: a request joins
//! pre-rendered pieces with its host, or answers with bytes made beforehand.

pub mod classic;
pub mod model;
pub mod page;

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;

use chartreg_core::content::Registry;

pub use classic::{Classic, ClassicFile};
pub use page::{Origin, Pieces, STYLE};

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
}

impl Web {
    pub fn of(registry: &Registry) -> Web {
        let overview = model::Overview::of(registry);
        let classic = Classic::of(registry);
        let repositories = overview
            .repositories
            .iter()
            .map(|r| {
                let page = Page {
                    html: page::repository(r),
                    json: json(r),
                };
                (r.name.clone(), page)
            })
            .collect();
        Web {
            overview: Page {
                html: page::overview(&overview, &classic.prefixes),
                json: json(&overview),
            },
            repositories,
            classic,
        }
    }

    /// The page of the repository `name`.
    pub fn repository(&self, name: &str) -> Option<&Page> {
        self.repositories.get(name)
    }
}

fn json(value: &impl serde::Serialize) -> Bytes {
    // Serialising the views (strings, numbers, lists) cannot fail.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

/// [`Web`], made on first use.
#[derive(Debug, Default)]
pub struct Lazy(OnceLock<Web>);

impl Lazy {
    pub fn get(&self, registry: &Registry) -> &Web {
        self.0.get_or_init(|| Web::of(registry))
    }
}
