//! containerd's `hosts.toml` (its `remotes/docker/config`; containerd 1.6, 1.7 and 2.x read the
//! same shape): chartreg as a `[host]` before the registry's own `server`, or as both when
//! upstream must not be reached. containerd 1.6 ignores a file without a `[host]` table, so
//! every file has one.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{CA_FILE, MirrorError, Request, toml_text};

/// hosts.toml, as containerd's `remotes/docker/config` reads it.
#[derive(Serialize)]
struct HostsToml<'a> {
    /// Left out for `_default` with upstream: the registry asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<[&'static str; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ca: Option<&'static str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    host: BTreeMap<&'a str, HostEntry>,
}

#[derive(Serialize)]
struct HostEntry {
    capabilities: [&'static str; 2],
    #[serde(skip_serializing_if = "Option::is_none")]
    ca: Option<&'static str>,
}

const PULL: [&str; 2] = ["pull", "resolve"];

/// Where a registry is reached when chartreg does not hold an image: Docker Hub's API host for
/// `docker.io`, else the registry itself.
pub(super) fn upstream(namespace: &str) -> String {
    match namespace {
        "docker.io" => "https://registry-1.docker.io".to_owned(),
        other => format!("https://{other}"),
    }
}

/// The hosts.toml of `folder` (a registry, or `_default` with `upstream` none: the registry
/// asked for).
pub(super) fn hosts_toml(
    folder: &str,
    upstream: Option<String>,
    request: &Request,
) -> Result<String, MirrorError> {
    let ca = request.ca.as_ref().map(|_| CA_FILE);
    let mirror = request.mirror.url.as_str();
    let (comment, hosts) = if request.no_upstream_fallback {
        // containerd 1.6 ignores a hosts.toml without a `[host]` table ("invalid `host`
        // tree") and pulls from upstream: chartreg is also the one host.
        let hosts = HostsToml {
            server: Some(mirror.to_owned()),
            capabilities: Some(PULL),
            ca,
            host: BTreeMap::from([(
                mirror,
                HostEntry {
                    capabilities: PULL,
                    ca,
                },
            )]),
        };
        ("only from chartreg: upstream is never asked", hosts)
    } else {
        let hosts = HostsToml {
            server: upstream,
            capabilities: None,
            ca: None,
            host: BTreeMap::from([(
                mirror,
                HostEntry {
                    capabilities: PULL,
                    ca,
                },
            )]),
        };
        ("from chartreg first, then from the registry", hosts)
    };
    let mut text =
        format!("# Written by `chartreg mirror-config`: {folder} images are pulled {comment}.\n");
    text.push_str(&toml_text(folder, &hosts)?);
    Ok(text)
}
