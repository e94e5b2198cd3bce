//! The classic Helm repository: `/<prefix>/index.yaml` and the packages beside it, from the
//! same charts the OCI API serves.
//!
//! One repository per prefix: the chart repositories `<prefix>/<chart>` make
//! `/<prefix>/index.yaml` (two prefixes may hold the same chart name, so one index at `/`
//! would collide). Each index is what `helm repo index` writes for those packages: `apiVersion:
//! v1`, each chart's versions newest first, every entry Chart.yaml's metadata with `urls` (the
//! package's file name, relative, so it works behind any host name), `created` (the package's,
//! as pushed) and `digest` (the package's sha256); `generated` is the newest `created`, never
//! a clock, so every replica serves the same bytes and ETag. Packages are the chart layers'
//! bytes at `/<prefix>/<name>-<version>.tgz`, with `.tgz.prov` where the chart is signed.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use serde::Serialize;

use chartreg_core::content::{Kind, Registry};
use chartreg_core::oci::Digest;

use super::WebError;
use super::model::chart_parts;
use crate::versions::newest_first;

/// When the content says nothing about time (no entry has `created`).
const EPOCH: &str = "1970-01-01T00:00:00Z";

/// A file of a classic repository.
#[derive(Debug, Clone)]
pub struct ClassicFile {
    pub data: Bytes,
    pub content_type: &'static str,
    /// The quoted sha256 of `data`: its entity tag.
    pub etag: String,
}

impl ClassicFile {
    fn new(data: Bytes, content_type: &'static str) -> Self {
        let etag = format!("\"{}\"", Digest::sha256_of(&data));
        ClassicFile {
            data,
            content_type,
            etag,
        }
    }
}

/// Every classic repository's files, by path (`<prefix>/index.yaml`, `<prefix>/<file>`).
#[derive(Debug, Default)]
pub struct Classic {
    files: HashMap<String, ClassicFile>,
    /// The prefixes that have an index, in order.
    pub prefixes: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    api_version: &'static str,
    entries: BTreeMap<String, Vec<serde_json::Value>>,
    generated: String,
}

impl Classic {
    pub fn of(registry: &Registry) -> Result<Classic, WebError> {
        // prefix -> chart name -> (tag, entry)
        let mut charts: BTreeMap<String, BTreeMap<String, Vec<(String, serde_json::Value)>>> =
            BTreeMap::new();
        let mut classic = Classic::default();
        for repository in registry.repositories() {
            let Some((prefix, _)) = repository.name().rsplit_once('/') else {
                continue;
            };
            for tag in repository.tags() {
                // Each tag listed names a stored manifest.
                let Some(manifest) = repository.tagged(tag) else {
                    continue;
                };
                if repository.artifact(manifest, Some(tag))?.kind != Kind::Chart {
                    continue;
                }
                // A chart without metadata `helm repo index` could list (a JSON object with a
                // name and a version) is left out of the index, as Helm leaves it out; the OCI
                // API serves it the same.
                let Some(parts) = chart_parts(repository, manifest)? else {
                    continue;
                };
                let serde_json::Value::Object(mut entry) = parts.metadata else {
                    continue;
                };
                let (Some(name), Some(version)) = (
                    entry
                        .get("name")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned),
                    entry
                        .get("version")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned),
                ) else {
                    continue;
                };
                let file = format!("{name}-{version}.tgz");
                entry.insert("urls".into(), serde_json::json!([file]));
                entry.insert(
                    "created".into(),
                    parts.created.clone().unwrap_or_else(|| EPOCH.into()).into(),
                );
                entry.insert("digest".into(), parts.package.digest.encoded().into());
                classic.files.insert(
                    format!("{prefix}/{file}"),
                    ClassicFile::new(parts.package.data.clone(), "application/gzip"),
                );
                if let Some(prov) = parts.provenance {
                    classic.files.insert(
                        format!("{prefix}/{file}.prov"),
                        ClassicFile::new(prov.data.clone(), "application/pgp-signature"),
                    );
                }
                charts
                    .entry(prefix.to_owned())
                    .or_default()
                    .entry(name)
                    .or_default()
                    .push((tag.to_owned(), serde_json::Value::Object(entry)));
            }
        }
        for (prefix, by_name) in charts {
            let mut generated = EPOCH.to_owned();
            let mut entries = BTreeMap::new();
            for (name, mut versions) in by_name {
                versions.sort_by(|a, b| newest_first(&a.0, &b.0));
                for (_, entry) in &versions {
                    if let Some(created) = entry["created"].as_str()
                        && created > generated.as_str()
                    {
                        generated = created.to_owned();
                    }
                }
                entries.insert(name, versions.into_iter().map(|(_, e)| e).collect());
            }
            let index = Index {
                api_version: "v1",
                entries,
                generated,
            };
            let path = format!("{prefix}/index.yaml");
            let yaml = match serde_yaml_ng::to_string(&index) {
                Ok(yaml) => yaml,
                Err(source) => return Err(WebError::Yaml { path, source }),
            };
            classic.files.insert(
                path,
                ClassicFile::new(Bytes::from(yaml), "application/yaml"),
            );
            classic.prefixes.push(prefix);
        }
        Ok(classic)
    }

    /// The file at `path` (without the leading `/`).
    pub fn file(&self, path: &str) -> Option<&ClassicFile> {
        self.files.get(path)
    }
}
