//! Classic Helm repositories (`index.yaml` plus packages) and chart URLs: the index read once
//! per repository, a version found in it (exactly, else as a semver constraint, as mindthegap
//! looks it up), its URL resolved against the repository (relative or absolute), the package
//! downloaded and checked against the digest the index lists, and the `.prov` beside it taken
//! when the repository has one. Credentials go only to the repository's own scheme and host.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::transport::{Partial, classify_http, status_failure, with_retries};
use super::{Failure, Problem};

/// The part of `index.yaml` fetch reads.
#[derive(Debug, Deserialize)]
pub struct Index {
    #[serde(default)]
    pub entries: BTreeMap<String, Vec<Entry>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub version: String,
    #[serde(default)]
    pub urls: Vec<String>,
    #[serde(default)]
    pub digest: Option<String>,
}

/// A repository as fetch talks to it.
pub struct Repository {
    pub url: reqwest::Url,
    pub client: reqwest::Client,
    pub username: Option<String>,
    pub password: Option<String>,
}

impl Repository {
    /// A request for `url`, with the repository's credentials when `url` is on its own scheme,
    /// host and port.
    fn get(&self, url: &reqwest::Url) -> reqwest::RequestBuilder {
        let request = self.client.get(url.clone());
        let same = url.scheme() == self.url.scheme()
            && url.host_str() == self.url.host_str()
            && url.port_or_known_default() == self.url.port_or_known_default();
        match (&self.username, same) {
            (Some(user), true) => request.basic_auth(user, self.password.as_deref()),
            _ => request,
        }
    }

    /// `url` resolved against the repository: relative URLs are relative to its folder.
    pub fn resolve(&self, url: &str) -> Result<reqwest::Url, Problem> {
        let mut base = self.url.clone();
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        base.join(url)
            .map_err(|e| Problem::Invalid(format!("chart URL `{url}`: {e}")))
    }

    /// GETs `url` whole (with retries).
    pub async fn bytes(&self, url: &reqwest::Url) -> Result<Vec<u8>, Problem> {
        with_retries(|| async {
            let response = self.get(url).send().await.map_err(|e| classify_http(&e))?;
            let status = response.status().as_u16();
            if status != 200 {
                return Err(status_failure(status, format!("GET {url}")));
            }
            let body = response.bytes().await.map_err(|e| classify_http(&e))?;
            Ok(body.to_vec())
        })
        .await
    }

    /// Downloads `url` into a temporary file beside `target`, checks it against `expected`,
    /// and renames it into place (with retries, each starting afresh).
    pub async fn download(
        &self,
        url: &reqwest::Url,
        target: &std::path::Path,
        expected: Option<[u8; 32]>,
    ) -> Result<(u64, [u8; 32]), Problem> {
        with_retries(|| async {
            let mut response = self.get(url).send().await.map_err(|e| classify_http(&e))?;
            let status = response.status().as_u16();
            if status != 200 {
                return Err(status_failure(status, format!("GET {url}")));
            }
            let mut partial = Partial::create(target).map_err(Failure::Final)?;
            while let Some(chunk) = response.chunk().await.map_err(|e| classify_http(&e))? {
                partial.write(&chunk).map_err(Failure::Final)?;
            }
            partial.finish(expected).map_err(|problem| match problem {
                // A wrong digest after a whole download is the source's answer: final.
                Problem::DigestMismatch { .. } => Failure::Final(problem),
                other => Failure::Final(other),
            })
        })
        .await
    }

    /// The repository's index.
    pub async fn index(&self) -> Result<Index, Problem> {
        let url = self.resolve("index.yaml")?;
        let data = self.bytes(&url).await?;
        serde_yaml_ng::from_slice(&data)
            .map_err(|e| Problem::Invalid(format!("{url} is not a Helm repository index: {e}")))
    }
}

/// The entry of `index` for `chart` at `version` (exact, or a range: see `versions`).
pub fn find<'i>(index: &'i Index, chart: &str, version: &str) -> Result<&'i Entry, Problem> {
    let Some(entries) = index.entries.get(chart) else {
        return Err(Problem::NoSuchChart);
    };
    let found = super::versions::find(version, entries.iter().map(|e| e.version.as_str()))
        .map_err(|nearest| Problem::NoSuchVersion {
            asked: version.to_owned(),
            nearest,
        })?;
    entries
        .iter()
        .find(|e| e.version == found)
        .ok_or(Problem::NoSuchChart)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> Index {
        serde_yaml_ng::from_str(
            "apiVersion: v1\nentries:\n  app:\n  - version: 1.2.0\n    urls: [app-1.2.0.tgz]\n  - version: 1.10.0\n    urls: [https://cdn.test/app-1.10.0.tgz]\n  - version: 2.0.0\n    urls: [app-2.0.0.tgz]\n",
        )
        .unwrap()
    }

    #[test]
    fn versions_are_found_exactly_or_by_constraint() {
        let i = index();
        assert_eq!(find(&i, "app", "1.2.0").unwrap().version, "1.2.0");
        assert_eq!(find(&i, "app", "^1").unwrap().version, "1.10.0");
        assert_eq!(
            find(&i, "app", "1.3.0").unwrap_err().to_string(),
            "the source has no version 1.3.0 (nearest it has: 1.2.0, 1.10.0, 2.0.0)"
        );
        assert!(matches!(
            find(&i, "other", "1.0.0"),
            Err(Problem::NoSuchChart)
        ));
    }

    #[test]
    fn urls_resolve_against_the_repository_and_credentials_stay_on_its_host() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let repo = Repository {
            url: "https://charts.test/stable".parse().unwrap(),
            client: reqwest::Client::new(),
            username: Some("u".into()),
            password: Some("p".into()),
        };
        assert_eq!(
            repo.resolve("app-1.2.0.tgz").unwrap().as_str(),
            "https://charts.test/stable/app-1.2.0.tgz"
        );
        assert_eq!(
            repo.resolve("https://cdn.test/x.tgz").unwrap().as_str(),
            "https://cdn.test/x.tgz"
        );
        let own = repo.get(&repo.resolve("x.tgz").unwrap()).build().unwrap();
        assert!(own.headers().contains_key("authorization"));
        let other = repo
            .get(&"https://cdn.test/x.tgz".parse().unwrap())
            .build()
            .unwrap();
        assert!(!other.headers().contains_key("authorization"));
    }
}
