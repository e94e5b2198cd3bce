//! The CRI-O drop-in (`registries.conf` v2, as containers/image reads it for CRI-O, podman and
//! skopeo): a `[[registry]]` per upstream registry, chartreg as its mirror under the path form
//! (`chartreg:5000/quay.io`: containers/image sends no `ns`), or as its location when upstream
//! must not be reached.

use chartreg_core::oci::Namespace;
use serde::Serialize;

use super::{DROP_IN, MirrorError, Request, toml_text};

/// registries.conf (v2), as containers/image reads it.
#[derive(Serialize)]
struct RegistriesConf {
    registry: Vec<RegistryEntry>,
}

#[derive(Serialize)]
struct RegistryEntry {
    prefix: String,
    location: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    insecure: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mirror: Vec<MirrorEntry>,
}

#[derive(Serialize)]
struct MirrorEntry {
    location: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    insecure: bool,
}

pub(super) fn registries_conf(
    namespaces: &[Namespace],
    request: &Request,
) -> Result<String, MirrorError> {
    let mirror = &request.mirror;
    let registry = namespaces
        .iter()
        .map(|ns| {
            // The path form: containers/image names the repository after the location.
            let served = format!("{}/{}", mirror.authority, ns.component());
            if request.no_upstream_fallback {
                RegistryEntry {
                    prefix: ns.to_string(),
                    location: served,
                    insecure: mirror.plain_http,
                    mirror: Vec::new(),
                }
            } else {
                RegistryEntry {
                    prefix: ns.to_string(),
                    location: ns.to_string(),
                    insecure: false,
                    mirror: vec![MirrorEntry {
                        location: served,
                        insecure: mirror.plain_http,
                    }],
                }
            }
        })
        .collect();
    let mut text = String::from(
        "# Written by `chartreg mirror-config`: CRI-O, podman and skopeo pull these registries' images from chartreg.\n",
    );
    text.push_str(&toml_text(DROP_IN, &RegistriesConf { registry })?);
    Ok(text)
}
