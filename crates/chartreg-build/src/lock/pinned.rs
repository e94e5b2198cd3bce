//! What pack takes from a lock ([`Lock::pack_inputs`]): each chart package and each image
//! layout it pins, checked on disk against it (a package's digest, the digest a layout tags),
//! each package with where fetch downloaded it from ([`Downloaded`]), each layout named as the
//! repository its image is served as ([`served`]), in its upstream registry's namespace.
//! Nothing here reaches the network.

use std::collections::BTreeMap;
use std::path::Path;

use chartreg_core::oci::layout::{INDEX_FILE, ImageIndex, REF_NAME};
use chartreg_core::oci::{Digest, Namespace};

use super::paths::resolved;
use super::{Error, Lock, Stale};
use crate::pack::{Downloaded, LayoutSpec};
use crate::pin::Pin;

/// The repository a locked image (`REGISTRY/PATH:TAG`, `REGISTRY/PATH@DIGEST` or
/// `REGISTRY/PATH:TAG@DIGEST`) is served as, and what it pins: the path in the registry's
/// namespace (`quay.io/jetstack/cert-manager-controller`, `127.0.0.1_5057/nutanix/demo-app`,
/// `docker.io/library/nginx`: see `Namespace::served_name`), as nodes ask for it.
pub fn served(key: &str) -> Option<(String, Pin)> {
    let (registry, rest) = key.split_once('/')?;
    let (path, pin) = crate::pin::split(rest)?;
    path.parse::<chartreg_core::oci::RepositoryName>().ok()?;
    Some((served_repository(registry, path)?, pin.ok()?))
}

/// The repository `path` of `registry` as pack serves it (see [`served`]): the name `verify`
/// patterns match, at fetch as at pack.
pub fn served_repository(registry: &str, path: &str) -> Option<String> {
    let registry = Namespace::registry(registry).ok()?;
    if path.is_empty() {
        return None;
    }
    Some(registry.served_name(path))
}

impl Lock {
    /// What pack takes from the lock at `path` (the content file's `lock:`): each chart
    /// package, with where it was downloaded from, and each image layout as a repository named
    /// by its upstream registry and path ([`served`]). Every file is
    /// checked against the lock first, so that a build serves exactly what was locked, or
    /// fails naming the entry; nothing here reaches the network.
    pub fn pack_inputs(path: &Path) -> Result<(Vec<Downloaded>, Vec<LayoutSpec>), Error> {
        let lock = Lock::read(path)?.ok_or_else(|| Error::Missing {
            path: path.to_owned(),
        })?;
        let stale = |what: &'static str, key: &str, why: Stale| Error::Stale {
            path: path.to_owned(),
            what,
            key: key.to_owned(),
            why: Box::new(why),
            names_lists: !lock.lists.is_empty(),
        };
        let mut charts = Vec::new();
        for (key, chart) in &lock.charts {
            let file = resolved(path, &chart.file);
            let data = match std::fs::read(&file) {
                Ok(data) => data,
                Err(source) => return Err(stale("chart", key, Stale::Unreadable { file, source })),
            };
            let actual = Digest::sha256_of(&data);
            if actual.encoded() != chart.sha256 {
                let pinned = chart.sha256.clone();
                return Err(stale(
                    "chart",
                    key,
                    Stale::Package {
                        file,
                        actual,
                        pinned,
                    },
                ));
            }
            charts.push(Downloaded {
                file,
                lock: path.to_owned(),
                key: key.clone(),
                digest: actual,
                url: chart.url.clone(),
            });
        }
        let mut layouts: BTreeMap<&str, String> = BTreeMap::new();
        for (key, image) in &lock.images {
            let (repository, pin) = served(key).ok_or_else(|| Error::ImageKey {
                path: path.to_owned(),
                key: key.clone(),
            })?;
            // A digest the key pins is the one the lock records.
            if let Some(pinned) = pin.digest()
                && pinned.as_str() != image.digest
            {
                return Err(Error::KeyDigest {
                    path: path.to_owned(),
                    key: key.clone(),
                    digest: image.digest.clone(),
                });
            }
            let tag = pin.served().as_str();
            let dir = resolved(path, &image.layout);
            let file = dir.join(INDEX_FILE);
            let data = match std::fs::read(&file) {
                Ok(data) => data,
                Err(source) => return Err(stale("image", key, Stale::Unreadable { file, source })),
            };
            let index: ImageIndex = match serde_json::from_slice(&data) {
                Ok(index) => index,
                Err(source) => return Err(stale("image", key, Stale::NotAnIndex { file, source })),
            };
            let tagged = index
                .manifests
                .iter()
                .find(|d| d.annotations.get(REF_NAME).map(String::as_str) == Some(tag));
            match tagged {
                Some(d) if d.digest.as_str() == image.digest => {}
                Some(d) => {
                    let why = Stale::Tagged {
                        layout: dir,
                        tagged: d.digest.clone(),
                        pinned: image.digest.clone(),
                    };
                    return Err(stale("image", key, why));
                }
                None => {
                    let why = Stale::NoTag {
                        layout: dir,
                        tag: tag.to_owned(),
                    };
                    return Err(stale("image", key, why));
                }
            }
            match layouts.insert(image.layout.as_str(), repository.clone()) {
                Some(other) if other != repository => {
                    return Err(Error::LayoutTwice {
                        path: path.to_owned(),
                        layout: image.layout.clone(),
                        first: other,
                        second: repository,
                    });
                }
                _ => {}
            }
        }
        let specs = layouts
            .into_iter()
            .map(|(layout, repository)| {
                format!("{}={repository}", resolved(path, layout).display())
                    .parse()
                    .map_err(|source| Error::Layout {
                        path: path.to_owned(),
                        layout: layout.to_owned(),
                        source,
                    })
            })
            .collect::<Result<_, Error>>()?;
        Ok((charts, specs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case("quay.io/jetstack/cert-manager-controller:v1.16.1", Some(("quay.io/jetstack/cert-manager-controller", "v1.16.1")))]
    #[case("127.0.0.1:5057/nutanix/demo-app:v1", Some(("127.0.0.1_5057/nutanix/demo-app", "v1")))]
    #[case("docker.io/nginx:1.27", Some(("docker.io/library/nginx", "1.27")))]
    #[case("docker.io/bitnami/nginx:1.27", Some(("docker.io/bitnami/nginx", "1.27")))]
    #[case("ghcr.io/nginx:1.27", Some(("ghcr.io/nginx", "1.27")))]
    #[case("index.docker.io/nginx:1.27", Some(("docker.io/library/nginx", "1.27")))]
    #[case("registry/x:v1", None)]
    #[case("quay.io/x", None)]
    #[case("quay.io/:v1", None)]
    #[case("not a host/x:v1", None)]
    #[case(
        "quay.io/a/b@sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291",
        Some(("quay.io/a/b", "digest-sha256-b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291"))
    )]
    #[case(
        "127.0.0.1:5057/b:v2@sha256:b7224a5a2e3d1c4a0f9a7e5d6c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291",
        Some(("127.0.0.1_5057/b", "v2"))
    )]
    #[case("quay.io/a/b@sha256:b722", None)]
    #[case("quay.io/a/b:sha256:b722", None)]
    fn locked_images_are_served_in_their_registrys_namespace(
        #[case] key: &str,
        #[case] want: Option<(&str, &str)>,
    ) {
        let got = served(key);
        assert_eq!(
            got.as_ref()
                .map(|(r, pin)| (r.as_str(), pin.served().as_str())),
            want
        );
    }
}
