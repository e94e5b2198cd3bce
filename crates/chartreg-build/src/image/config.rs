//! The image config (`application/vnd.oci.image.config.v1+json`): the serde types of the OCI
//! image spec's config, and the one chartreg's image gets, matching the Containerfile:
//!
//! - runs `/chartreg serve` as 65532:65532, port 5000/tcp exposed;
//! - labels: `org.opencontainers.image.{title, description, licenses, version, created}`,
//!   `io.chartreg.content.digest`, then the extra labels asked for;
//! - `created` (the config's and the label) the image's time, never a clock;
//! - on a base: the base config is read into these types (fields chartreg does not know kept
//!   as they are), chartreg's fields set over it (its Env, WorkingDir, labels and the rest
//!   kept), its `rootfs.diff_ids` and `history` kept with this layer's appended.
//!
//! Maps are `BTreeMap`s and fields are declared in the spec's order, so the same inputs give
//! the same bytes.

use std::collections::BTreeMap;

use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::Platform;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::layer::ENTRY;

pub const TITLE: &str = "org.opencontainers.image.title";
pub const DESCRIPTION: &str = "org.opencontainers.image.description";
pub const LICENSES: &str = "org.opencontainers.image.licenses";
pub const VERSION: &str = "org.opencontainers.image.version";
pub const CREATED: &str = "org.opencontainers.image.created";
pub const CONTENT_DIGEST: &str = "io.chartreg.content.digest";

/// The user the server runs as (distroless's `nonroot`; numeric, since scratch has no
/// `/etc/passwd`).
const USER: &str = "65532:65532";
const PORT: &str = "5000/tcp";
const DESCRIPTION_TEXT: &str =
    "A read-only OCI registry serving the Helm charts and images built into it";
const LICENSE: &str = "Apache-2.0";

/// An image config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub os: String,
    #[serde(
        rename = "os.version",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub os_version: Option<String>,
    #[serde(
        rename = "os.features",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub os_features: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default)]
    pub config: RunConfig,
    #[serde(default)]
    pub rootfs: RootFs,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<History>,
    /// Fields this type does not name (a base's `container_config`, `docker_version`...).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// How a container of the image runs (the config's `config`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RunConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exposed_ports: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub volumes: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_signal: Option<String>,
    /// Fields this type does not name (`Healthcheck`, `Shell`, ...).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The layers' uncompressed digests, bottom first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootFs {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub diff_ids: Vec<Digest>,
}

impl Default for RootFs {
    fn default() -> Self {
        RootFs {
            kind: "layers".to_owned(),
            diff_ids: Vec::new(),
        }
    }
}

/// How a layer (or a config change) came to be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_layer: Option<bool>,
}

/// What chartreg's part of one platform's config is made of.
#[derive(Debug, Clone)]
pub struct Settings<'a> {
    pub platform: &'a Platform,
    /// RFC 3339, UTC.
    pub created: &'a str,
    /// The image's tag: its version label.
    pub tag: &'a str,
    /// chartreg's version, named in the history entry.
    pub version: &'a str,
    pub content_digest: &'a Digest,
    /// Set last, over every other label.
    pub labels: &'a BTreeMap<String, String>,
    pub diff_id: Digest,
    /// The content listing's layer, below the binary's, when the image carries one.
    pub listing_diff_id: Option<Digest>,
}

/// The config of chartreg's image on `base` (scratch when `None`).
pub fn build(base: Option<ImageConfig>, settings: Settings<'_>) -> ImageConfig {
    let mut config = base.unwrap_or_default();
    config.created = Some(settings.created.to_owned());
    config
        .architecture
        .clone_from(&settings.platform.architecture);
    config.os.clone_from(&settings.platform.os);
    config.variant.clone_from(&settings.platform.variant);
    if config.rootfs.kind.is_empty() {
        config.rootfs.kind = "layers".to_owned();
    }
    if let Some(diff_id) = settings.listing_diff_id {
        config.rootfs.diff_ids.push(diff_id);
        config.history.push(History {
            created: Some(settings.created.to_owned()),
            created_by: Some(format!("chartreg-build image: /{}", super::listing::FILE)),
            author: None,
            comment: Some("what the server serves: chartreg ls --json, as data".to_owned()),
            empty_layer: None,
        });
    }
    config.rootfs.diff_ids.push(settings.diff_id);
    config.history.push(History {
        created: Some(settings.created.to_owned()),
        created_by: Some(format!("chartreg-build image: /{ENTRY}")),
        author: None,
        comment: Some(format!(
            "chartreg {}, content {}",
            settings.version, settings.content_digest
        )),
        empty_layer: None,
    });

    let run = &mut config.config;
    run.user = Some(USER.to_owned());
    run.exposed_ports
        .insert(PORT.to_owned(), Value::Object(serde_json::Map::new()));
    run.entrypoint = Some(vec![format!("/{ENTRY}")]);
    run.cmd = Some(vec!["serve".to_owned()]);
    let labels = [
        (TITLE, "chartreg"),
        (DESCRIPTION, DESCRIPTION_TEXT),
        (LICENSES, LICENSE),
        (VERSION, settings.tag),
        (CREATED, settings.created),
        (CONTENT_DIGEST, settings.content_digest.as_str()),
    ];
    for (key, value) in labels {
        run.labels.insert(key.to_owned(), value.to_owned());
    }
    for (key, value) in settings.labels {
        run.labels.insert(key.clone(), value.clone());
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings<'a>(
        platform: &'a Platform,
        digest: &'a Digest,
        labels: &'a BTreeMap<String, String>,
    ) -> Settings<'a> {
        Settings {
            platform,
            created: "1970-01-01T00:00:00Z",
            tag: "0.1.0-abc",
            version: "0.1.0",
            content_digest: digest,
            labels,
            diff_id: Digest::sha256_of(b"tar"),
            listing_diff_id: None,
        }
    }

    #[test]
    fn on_scratch_exactly_the_containerfile_config() {
        let platform = super::super::binary::parse_platform("linux/arm64/v8").unwrap();
        let digest = Digest::sha256_of(b"content");
        let labels = BTreeMap::from([("org.opencontainers.image.revision".into(), "abc".into())]);
        let config = build(None, settings(&platform, &digest, &labels));
        let json: Value = serde_json::to_value(&config).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "created": "1970-01-01T00:00:00Z",
                "architecture": "arm64",
                "os": "linux",
                "variant": "v8",
                "config": {
                    "User": "65532:65532",
                    "ExposedPorts": {"5000/tcp": {}},
                    "Entrypoint": ["/chartreg"],
                    "Cmd": ["serve"],
                    "Labels": {
                        "io.chartreg.content.digest": digest.as_str(),
                        "org.opencontainers.image.created": "1970-01-01T00:00:00Z",
                        "org.opencontainers.image.description": DESCRIPTION_TEXT,
                        "org.opencontainers.image.licenses": "Apache-2.0",
                        "org.opencontainers.image.revision": "abc",
                        "org.opencontainers.image.title": "chartreg",
                        "org.opencontainers.image.version": "0.1.0-abc",
                    },
                },
                "rootfs": {"type": "layers", "diff_ids": [Digest::sha256_of(b"tar").as_str()]},
                "history": [{
                    "created": "1970-01-01T00:00:00Z",
                    "created_by": "chartreg-build image: /chartreg",
                    "comment": format!("chartreg 0.1.0, content {digest}"),
                }],
            })
        );
    }

    #[test]
    fn on_a_base_its_fields_are_kept_and_ours_set_over_them() {
        let base: ImageConfig = serde_json::from_value(serde_json::json!({
            "created": "2024-01-01T00:00:00Z",
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "User": "0",
                "Env": ["PATH=/usr/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
                "WorkingDir": "/home/nonroot",
                "ExposedPorts": {"8080/tcp": {}},
                "Labels": {"base": "distroless", "org.opencontainers.image.title": "base"},
                "Healthcheck": {"Test": ["NONE"]},
            },
            "rootfs": {"type": "layers", "diff_ids": [Digest::sha256_of(b"base").as_str()]},
            "history": [{"created_by": "bazel build ..."}],
            "docker_version": "24",
        }))
        .unwrap();
        let platform = super::super::binary::parse_platform("linux/amd64").unwrap();
        let digest = Digest::sha256_of(b"content");
        let labels = BTreeMap::new();
        let config = build(Some(base), settings(&platform, &digest, &labels));
        let run = &config.config;
        assert_eq!(run.user.as_deref(), Some("65532:65532"));
        assert_eq!(run.env.len(), 2);
        assert_eq!(run.working_dir.as_deref(), Some("/home/nonroot"));
        assert_eq!(
            run.exposed_ports.keys().collect::<Vec<_>>(),
            ["5000/tcp", "8080/tcp"]
        );
        assert_eq!(run.labels["base"], "distroless");
        assert_eq!(run.labels[TITLE], "chartreg");
        assert!(run.other.contains_key("Healthcheck"));
        assert_eq!(config.created.as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(
            config.rootfs.diff_ids,
            [Digest::sha256_of(b"base"), Digest::sha256_of(b"tar")]
        );
        assert_eq!(config.history.len(), 2);
        assert_eq!(config.other["docker_version"], "24");
    }
}
