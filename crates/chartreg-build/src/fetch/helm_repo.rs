//! Classic Helm repositories (`index.yaml` plus packages) and chart URLs: the index read once
//! per repository, a version found in it (exactly, else as a semver constraint, as mindthegap
//! looks it up), its URL resolved against the repository (relative or absolute, http or https
//! only), the package downloaded and checked against the digest the index lists, and the
//! `.prov` beside it taken when the repository has one. Credentials go only to the repository's
//! own scheme and host. Every download is bounded (`transport::Bounded`): the index at
//! 256 MiB, a package at 101 MiB, a `.prov` at 1 MiB. The index is YAML, which the parser holds
//! whole as events and reads in a time that grows with the square of how deep it nests: one of
//! more than [`INDEX_NODES`] nodes, or nested deeper than charts' YAML may, is refused unread,
//! and one not read within [`INDEX_READ_TIME`] is refused.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::problem::UrlOf;
use super::problem::{Failure, Problem};
use super::transport::{
    Bounded, Partial, check_length, classify_http, read_bounded, status_failure, with_retries,
};

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

    /// `url` resolved against the repository: relative URLs are relative to its folder. Only
    /// http and https URLs are taken (an index that lists `file:///etc/shadow` lists nothing
    /// fetch reads).
    pub fn resolve(&self, url: &str) -> Result<reqwest::Url, Problem> {
        let mut base = self.url.clone();
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let resolved = base.join(url).map_err(|source| Problem::BadUrl {
            of: UrlOf::Chart,
            url: url.to_owned(),
            source,
        })?;
        if !matches!(resolved.scheme(), "http" | "https") {
            return Err(Problem::UrlScheme {
                url: resolved.to_string(),
            });
        }
        Ok(resolved)
    }

    /// GETs `url` whole, at most `bound`'s bytes of it (with retries).
    pub async fn bytes(&self, url: &reqwest::Url, bound: Bounded) -> Result<Vec<u8>, Problem> {
        with_retries(|| async {
            let response = self.get(url).send().await.map_err(classify_http)?;
            let status = response.status().as_u16();
            if status != 200 {
                return Err(status_failure(status, format!("GET {url}")));
            }
            read_bounded(response, bound, url.as_str()).await
        })
        .await
    }

    /// Downloads `url` (what `bound` says it is) into a temporary file beside `target`, checks
    /// it against `expected`, and renames it into place (with retries, each starting afresh).
    pub async fn download(
        &self,
        url: &reqwest::Url,
        target: &std::path::Path,
        bound: Bounded,
        expected: Option<[u8; 32]>,
    ) -> Result<(u64, [u8; 32]), Problem> {
        with_retries(|| async {
            let mut response = self.get(url).send().await.map_err(classify_http)?;
            let status = response.status().as_u16();
            if status != 200 {
                return Err(status_failure(status, format!("GET {url}")));
            }
            check_length(&response, bound, url.as_str()).map_err(Failure::Final)?;
            let mut partial =
                Partial::create(target, bound, url.as_str()).map_err(Failure::Final)?;
            while let Some(chunk) = response.chunk().await.map_err(classify_http)? {
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

    /// The repository's index (see [`read_index`]).
    pub async fn index(&self) -> Result<Index, Problem> {
        let url = self.resolve("index.yaml")?;
        let data = self.bytes(&url, Bounded::Index).await?;
        read_index(data, url.as_str(), INDEX_READ_TIME).await
    }
}

/// The most nodes (lines, flow items and collections, block entries: see [`nodes`]) an index
/// may have: the YAML parser holds an event per node in memory, about 130 bytes each, so a
/// 256 MiB index of one-character items would take it some 16 GiB. Real indexes have a line a
/// node, and at most a few million lines.
pub const INDEX_NODES: usize = 8 << 20;

/// How long reading an index may take: the YAML parser's work per token grows with how deep
/// flow collections nest (`[[[...]]]` 100,000 deep, 200 KB, takes it 16 s; a million deep,
/// hours), and a real index of 256 MiB is read in well under a minute.
pub const INDEX_READ_TIME: std::time::Duration = std::time::Duration::from_secs(60);

/// How many nodes YAML text `data` can have, at most: each takes a line, a `,` between flow
/// items, a `[` or `{` that opens a collection, or a `- ` or `? ` that starts a block entry
/// on a line.
fn nodes(data: &[u8]) -> usize {
    let mut count = 0;
    let mut previous = b'\n';
    for &byte in data {
        count += match (previous, byte) {
            (_, b'\n' | b',' | b'[' | b'{') | (b'-' | b'?', b' ') => 1,
            _ => 0,
        };
        previous = byte;
    }
    count
}

/// The index `data` (from `url`) read, refused when it has more than [`INDEX_NODES`] nodes,
/// nests flow collections deeper than charts' YAML may (`yaml::flow_depth`),
/// or is not read `within` anyway (the parse goes on in a thread of its own, which the
/// process's end stops).
async fn read_index(
    data: Vec<u8>,
    url: &str,
    within: std::time::Duration,
) -> Result<Index, Problem> {
    let found = nodes(&data);
    if found > INDEX_NODES {
        return Err(Problem::IndexTooLarge {
            url: url.to_owned(),
            nodes: found,
            most: INDEX_NODES,
        });
    }
    crate::yaml::flow_depth(&data).map_err(|source| Problem::IndexYaml {
        url: url.to_owned(),
        source: std::sync::Arc::new(source),
    })?;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("index.yaml".into())
        .spawn(move || {
            let _ = sender.send(serde_yaml_ng::from_slice::<Index>(&data));
        })
        .map_err(|e| Problem::Thread(std::sync::Arc::new(e)))?;
    let deadline = std::time::Instant::now() + within;
    loop {
        match receiver.try_recv() {
            Ok(read) => {
                return read.map_err(|e| Problem::NotAnIndex {
                    url: url.to_owned(),
                    source: std::sync::Arc::new(e),
                });
            }
            Err(std::sync::mpsc::TryRecvError::Empty) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(_) => {
                return Err(Problem::IndexTooSlow {
                    url: url.to_owned(),
                    within,
                });
            }
        }
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

    #[test]
    fn an_index_listing_urls_that_are_not_http_is_refused() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let repo = Repository {
            url: "https://charts.test/stable".parse().unwrap(),
            client: reqwest::Client::new(),
            username: None,
            password: None,
        };
        for url in ["file:///etc/shadow", "ftp://charts.test/x.tgz", "data:,x"] {
            let e = repo.resolve(url).unwrap_err();
            assert!(matches!(e, Problem::UrlScheme { .. }), "{url}: {e}");
            assert!(
                e.to_string()
                    .ends_with(": only http and https URLs are fetched"),
                "{e}"
            );
        }
    }

    fn read(text: String, within: std::time::Duration) -> Result<Index, Problem> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(read_index(
                text.into_bytes(),
                "http://r.test/index.yaml",
                within,
            ))
    }

    #[test]
    fn an_index_that_is_an_alias_bomb_is_refused_quickly() {
        let mut bomb = String::from("apiVersion: v1\na0: &a0 [x,x,x,x,x,x,x,x,x]\n");
        for i in 1..10 {
            let p = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
            ));
        }
        bomb.push_str("entries:\n  app: *a9\n");
        let started = std::time::Instant::now();
        let e = read(bomb, INDEX_READ_TIME).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("http://r.test/index.yaml is not a Helm repository index: "),
            "{e}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn an_index_that_nests_deep_is_refused_unread() {
        let deep = format!(
            "apiVersion: v1\nentries: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let started = std::time::Instant::now();
        let e = read(deep, INDEX_READ_TIME).unwrap_err();
        assert!(matches!(e, Problem::IndexYaml { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("http://r.test/index.yaml: nests flow collections"),
            "{e}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn an_index_not_read_in_time_is_refused() {
        // Some 4 MB of entries: a tenth of a second's parse, at least, against 5 ms.
        let mut index = String::from("apiVersion: v1\nentries:\n  app:\n");
        for i in 0..60_000 {
            index.push_str(&format!(
                "  - version: 1.0.{i}\n    urls: [app-1.0.{i}.tgz]\n    digest: {}\n",
                "0".repeat(40)
            ));
        }
        let e = read(index, std::time::Duration::from_millis(5)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "http://r.test/index.yaml: not read within 5ms, the most fetch gives the YAML \
             parser for an index"
        );
    }

    #[test]
    fn an_index_of_more_nodes_than_a_parser_holds_is_refused_unread() {
        let flood = format!("apiVersion: v1\nx: [{}a]\n", "a,".repeat(INDEX_NODES));
        let e = read(flood, INDEX_READ_TIME).unwrap_err();
        assert!(matches!(e, Problem::IndexTooLarge { .. }), "{e}");
        assert_eq!(nodes(b"a: b\nc:\n- d\n- [e, {f: g}]\n"), 9);
        let index = read(
            "apiVersion: v1\nentries:\n  app:\n  - version: 1.0.0\n    urls: [app-1.0.0.tgz]\n"
                .into(),
            INDEX_READ_TIME,
        )
        .unwrap();
        assert_eq!(index.entries["app"][0].version, "1.0.0");
    }
}
