//! The images a chart's values name, read without rendering ("found statically"): the values
//! Helm would give the templates (the chart's `values.yaml` with the team's values files laid
//! over it; each subchart's own `values.yaml` with the parent's section for it and the parent's
//! `global` laid over), then every value under a key `image`, a key ending in `Image` or
//! `image`, or a key under `images`, in the shapes real charts use:
//! - a reference: `image: quay.io/x/y:v1`;
//! - a mapping: `image: {registry, repository, tag, digest, useDigest}`, where
//!   `global.imageRegistry` (Bitnami's) replaces the registry, an empty or missing tag is the
//!   chart's `appVersion` (the `default .Chart.AppVersion` in the template), and the digest is
//!   kept unless `useDigest: false` (Cilium's).
//!
//! A template can build a reference from any values in any way, or only use an image when a
//! part is enabled: this reading finds what the values hold, not what is deployed.

use serde_yaml_ng::{Mapping, Value};

use super::reference::ImageRef;
use super::tree::ChartTree;

/// One image the values name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Valued {
    pub image: ImageRef,
    /// The subchart whose values it is (`NAME:VERSION`), if not the chart itself.
    pub subchart: Option<String>,
    /// `values.yaml controller.image`, the path from the chart's own values
    /// (`values.yaml agent.image` for subchart `agent`).
    pub at: String,
    /// The path alone (`controller.image`).
    pub path: String,
}

/// Whether `values` sets anything at `path` (`a.b.c`; at a list, `a.b[0].c`, whether it sets
/// the list).
pub fn sets(values: &Value, path: &str) -> bool {
    let mut here = values;
    for part in path.split('.') {
        let (key, in_list) = match part.split_once('[') {
            Some((key, _)) => (key, true),
            None => (part, false),
        };
        match here.get(key) {
            Some(next) if in_list => return !next.is_null(),
            Some(next) => here = next,
            None => return false,
        }
    }
    !here.is_null()
}

/// Lays `over` onto `base` as Helm coalesces values: mappings merge key by key, a null removes
/// the key, anything else replaces.
pub fn overlay(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Mapping(base), Value::Mapping(over)) => {
            for (key, value) in over {
                match (base.get_mut(key), value) {
                    (_, Value::Null) => {
                        base.remove(key);
                    }
                    (Some(existing @ Value::Mapping(_)), Value::Mapping(_)) => {
                        overlay(existing, value);
                    }
                    _ => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

/// Every image the values of `tree` (with `given` laid over its own, in order) and its
/// subcharts name.
pub fn find(tree: &ChartTree, given: &[Value]) -> Vec<Valued> {
    let mut values = tree.values.clone();
    for v in given {
        overlay(&mut values, v);
    }
    let mut found = Vec::new();
    walk_chart(tree, &values, "", None, &mut found);
    found
}

fn walk_chart(
    chart: &ChartTree,
    values: &Value,
    prefix: &str,
    subchart: Option<String>,
    found: &mut Vec<Valued>,
) {
    let registry = values
        .get("global")
        .and_then(|g| g.get("imageRegistry"))
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    let reading = Reading {
        app_version: &chart.app_version,
        registry: registry.as_deref(),
        subchart: &subchart,
    };
    // `global` and the subcharts' sections are read with the subchart's values, below.
    if let Value::Mapping(map) = values {
        for (key, v) in map {
            let Some(key) = key.as_str() else { continue };
            if key == "global" || chart.subcharts.iter().any(|(k, _)| k == key) {
                continue;
            }
            reading.walk(v, &format!("{prefix}{key}"), is_image_key(key), found);
        }
    }
    for (key, sub) in &chart.subcharts {
        let mut sub_values = sub.values.clone();
        if let Some(section) = values.get(key.as_str()) {
            overlay(&mut sub_values, section);
        }
        if let Some(global) = values.get("global") {
            let mut over = Mapping::new();
            over.insert("global".into(), global.clone());
            overlay(&mut sub_values, &Value::Mapping(over));
        }
        walk_chart(
            sub,
            &sub_values,
            &format!("{prefix}{key}."),
            Some(sub.id()),
            found,
        );
    }
}

struct Reading<'a> {
    app_version: &'a str,
    registry: Option<&'a str>,
    subchart: &'a Option<String>,
}

impl Reading<'_> {
    fn walk(&self, value: &Value, path: &str, image_key: bool, found: &mut Vec<Valued>) {
        if image_key && let Some(image) = self.image(value) {
            found.push(Valued {
                image,
                subchart: self.subchart.clone(),
                at: format!("values.yaml {path}"),
                path: path.to_owned(),
            });
            return;
        }
        match value {
            Value::Mapping(map) => {
                let under_images = path.rsplit('.').next() == Some("images");
                for (key, v) in map {
                    let Some(key) = key.as_str() else { continue };
                    let child = format!("{path}.{key}");
                    self.walk(v, &child, is_image_key(key) || under_images, found);
                }
            }
            Value::Sequence(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.walk(v, &format!("{path}[{i}]"), image_key, found);
                }
            }
            _ => {}
        }
    }

    /// The reference an image value holds, in the shapes the module's documentation lists.
    fn image(&self, value: &Value) -> Option<ImageRef> {
        match value {
            Value::String(s) => ImageRef::parse(s.trim()).ok(),
            Value::Mapping(map) => {
                let repository = text(map.get("repository")?)?;
                if repository.is_empty() {
                    return None;
                }
                let registry = self
                    .registry
                    .map(str::to_owned)
                    .or_else(|| map.get("registry").and_then(text))
                    .filter(|r| !r.is_empty());
                let tag = map
                    .get("tag")
                    .and_then(text)
                    .filter(|t| !t.is_empty())
                    .or_else(|| {
                        (!self.app_version.is_empty()).then(|| self.app_version.to_owned())
                    });
                let use_digest = map.get("useDigest").and_then(Value::as_bool) != Some(false);
                let digest = map
                    .get("digest")
                    .and_then(text)
                    .filter(|d| use_digest && !d.is_empty());
                let mut reference = match registry {
                    Some(registry) => format!("{registry}/{repository}"),
                    None => repository,
                };
                if let Some(tag) = tag {
                    reference = format!("{reference}:{tag}");
                }
                if let Some(digest) = digest {
                    reference = format!("{reference}@{digest}");
                }
                ImageRef::parse(&reference).ok()
            }
            _ => None,
        }
    }
}

/// `image`, `initImage`, `sidecar_image`: a key whose value is read as an image.
fn is_image_key(key: &str) -> bool {
    key == "image" || key.ends_with("Image") || key.ends_with("image")
}

/// A scalar as the template prints it (`tag: 1.25` is `1.25`).
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const HEX: &str = "9cfd6a0a5e1f2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4";

    fn chart(name: &str, app_version: &str, values: &str) -> ChartTree {
        ChartTree {
            name: name.into(),
            version: "1.0.0".into(),
            app_version: app_version.into(),
            annotations: BTreeMap::new(),
            values: serde_yaml_ng::from_str(values).unwrap(),
            subcharts: Vec::new(),
        }
    }

    fn found(tree: &ChartTree, given: &[&str]) -> Vec<(String, Option<String>, String)> {
        let given: Vec<Value> = given
            .iter()
            .map(|v| serde_yaml_ng::from_str(v).unwrap())
            .collect();
        find(tree, &given)
            .into_iter()
            .map(|v| (v.image.to_string(), v.subchart, v.at))
            .collect()
    }

    fn one(s: &str, sub: Option<&str>, at: &str) -> (String, Option<String>, String) {
        (s.to_owned(), sub.map(str::to_owned), at.to_owned())
    }

    #[test]
    fn the_shapes_real_charts_use() {
        let tree = chart(
            "platform",
            "2.4.1",
            &format!(
                r#"
controller:
  image: {{registry: quay.io, repository: example/controller, tag: ""}}
migrate:
  image: {{registry: docker.io, repository: library/busybox, tag: "1.36", digest: "sha256:{HEX}"}}
cilium:
  image: {{repository: quay.io/cilium/cilium, tag: v1.15.0, digest: "sha256:{HEX}", useDigest: false}}
backup:
  image: registry.k8s.io/example/backup:v0.3
  initImage: busybox
exporter:
  images:
    main: {{repository: example/exporter, tag: 1.5}}
imagePullPolicy: IfNotPresent
name: image
"#
            ),
        );
        assert_eq!(
            found(&tree, &[]),
            [
                one(
                    "quay.io/example/controller:2.4.1",
                    None,
                    "values.yaml controller.image"
                ),
                one(
                    &format!("docker.io/library/busybox:1.36@sha256:{HEX}"),
                    None,
                    "values.yaml migrate.image"
                ),
                one(
                    "quay.io/cilium/cilium:v1.15.0",
                    None,
                    "values.yaml cilium.image"
                ),
                one(
                    "registry.k8s.io/example/backup:v0.3",
                    None,
                    "values.yaml backup.image"
                ),
                one(
                    "docker.io/library/busybox:latest",
                    None,
                    "values.yaml backup.initImage"
                ),
                one(
                    "docker.io/example/exporter:1.5",
                    None,
                    "values.yaml exporter.images.main"
                ),
            ]
        );
    }

    #[test]
    fn values_files_global_registry_and_subcharts() {
        let mut tree = chart(
            "platform",
            "2.4.1",
            "global: {imageRegistry: \"\"}\nagent: {image: {tag: \"0.4\"}}\nmetrics: {enabled: false}\n",
        );
        tree.subcharts.push((
            "agent".into(),
            chart(
                "agent",
                "0.3.0",
                "image: {registry: docker.io, repository: example/agent}\n",
            ),
        ));
        assert_eq!(
            found(&tree, &[]),
            [one(
                "docker.io/example/agent:0.4",
                Some("agent:1.0.0"),
                "values.yaml agent.image"
            )]
        );
        assert_eq!(
            found(
                &tree,
                &[
                    "global: {imageRegistry: mirror.example.com}\n",
                    "metrics: {image: {repository: example/exporter, tag: v1}}\nagent: {image: {tag: null}}\n"
                ]
            ),
            [
                one(
                    "mirror.example.com/example/exporter:v1",
                    None,
                    "values.yaml metrics.image"
                ),
                one(
                    "mirror.example.com/example/agent:0.3.0",
                    Some("agent:1.0.0"),
                    "values.yaml agent.image"
                ),
            ]
        );
    }

    #[test]
    fn a_file_sets_a_path_or_not() {
        let file: Value =
            serde_yaml_ng::from_str("web: {image: nginx}\nlist: [{image: a}]\n").unwrap();
        assert!(sets(&file, "web.image"));
        assert!(sets(&file, "web"));
        assert!(sets(&file, "list[0].image"));
        assert!(!sets(&file, "web.image.tag"));
        assert!(!sets(&file, "other.image"));
    }

    #[test]
    fn overlay_merges_mappings_and_a_null_removes() {
        let mut base: Value = serde_yaml_ng::from_str("a: {b: 1, c: 2}\nd: [1]\n").unwrap();
        let over: Value = serde_yaml_ng::from_str("a: {c: 3, e: 4}\nd: null\n").unwrap();
        overlay(&mut base, &over);
        let want: Value = serde_yaml_ng::from_str("a: {b: 1, c: 3, e: 4}\n").unwrap();
        assert_eq!(base, want);
    }
}
