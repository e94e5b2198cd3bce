//! `chartreg mirror-config`: the files that make a node's container runtime pull through
//! chartreg, for every upstream registry whose images the binary holds
//! ([`Registry::namespaces`]).
//!
//! From the namespaces and a [`Request`] (the mirror's URL, its CA, whether to add `_default`,
//! whether upstream stays reachable) come [`NodeFile`]s, each with its path on the node:
//! - containerd (1.6, 1.7, 2.x; module `containerd`): `/etc/containerd/certs.d/<registry>/
//!   hosts.toml`, chartreg as the `[host]` before the registry itself as `server`, or with
//!   `no_upstream_fallback` chartreg as both, so nothing is ever asked of upstream. containerd
//!   sends `?ns=<registry>` to a host that is not the registry, which chartreg resolves in that
//!   registry's namespace. A CA is written beside each hosts.toml and named relative to it.
//!   `_default` (read by containerd 1.6.20 too) sends every other registry to chartreg.
//! - CRI-O and the other containers/image tools (module `crio`): one `registries.conf.d` drop-in, a
//!   `[[registry]]` per registry with chartreg as its mirror under the path form
//!   (`chartreg:5000/quay.io`: containers/image sends no `ns`), or as its location when
//!   upstream must not be reached; the CA in `/etc/containers/certs.d/<mirror host>/ca.crt`.
//!
//! [`write`] lays them out under a folder (`--out`), the containerd ones at its top as
//! `ctr --hosts-dir` and `config_path` read them; [`kubeadm_config_template`] (module
//! `kubeadm`) gives them as the `files:` of a Cluster API `KubeadmConfigTemplate`, which is how
//! Cluster API puts files on the nodes it creates.

mod containerd;
mod crio;
mod kubeadm;
mod url;

use std::path::{Path, PathBuf};

use chartreg_core::oci::Namespace;
use serde::Serialize;

pub use kubeadm::kubeadm_config_template;
pub use url::{MirrorUrl, MirrorUrlError};

/// Where containerd reads registry hosts on a node (its CRI plugin's `config_path`).
pub const CONTAINERD_DIR: &str = "/etc/containerd/certs.d";
/// Where CRI-O and containers/image read drop-ins.
pub const REGISTRIES_DIR: &str = "/etc/containers/registries.conf.d";
/// Where containers/image reads a registry's CA.
pub const CONTAINERS_CERTS_DIR: &str = "/etc/containers/certs.d";
/// The CA's file name beside each hosts.toml.
const CA_FILE: &str = "chartreg-ca.crt";
/// The CRI-O drop-in's file name.
const DROP_IN: &str = "50-chartreg.conf";

/// What the command is asked for.
#[derive(Debug, Clone)]
pub struct Request {
    pub mirror: MirrorUrl,
    /// The PEM of the CA that signed chartreg's certificate, when nodes do not trust it already.
    pub ca: Option<Vec<u8>>,
    /// Also a `_default` entry: every registry without its own folder asks chartreg first.
    pub default: bool,
    /// Pulls never reach upstream: chartreg is each registry's only host.
    pub no_upstream_fallback: bool,
}

/// A file for the nodes: its absolute path on a node, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFile {
    pub path: String,
    pub content: Vec<u8>,
}

/// Why there are no files to write.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error(
        "this binary holds no images kept per upstream registry (images fetched by `chartreg-build fetch`, or layouts with `namespace:`); add --default to send every registry to chartreg"
    )]
    NothingToMirror,
    #[error("{}: {source}", path.display())]
    ReadCa {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no PEM certificate in it (`-----BEGIN CERTIFICATE-----`)", path.display())]
    NotACertificate { path: PathBuf },
    #[error("{}: not a PEM text file (it holds bytes that are not UTF-8)", path.display())]
    NotText { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {what}: {source}")]
    Toml {
        what: String,
        source: toml::ser::Error,
    },
    #[error("cannot write the KubeadmConfigTemplate: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
}

/// The CA file at `path`, checked to hold a PEM certificate.
pub fn read_ca(path: &Path) -> Result<Vec<u8>, MirrorError> {
    let pem = std::fs::read(path).map_err(|source| MirrorError::ReadCa {
        path: path.to_owned(),
        source,
    })?;
    let holds_certificate = pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----");
    if !holds_certificate {
        return Err(MirrorError::NotACertificate {
            path: path.to_owned(),
        });
    }
    // Written as text into the KubeadmConfigTemplate: no byte may be lost there.
    if std::str::from_utf8(&pem).is_err() {
        return Err(MirrorError::NotText {
            path: path.to_owned(),
        });
    }
    Ok(pem)
}

fn toml_text(what: &str, value: &impl Serialize) -> Result<String, MirrorError> {
    toml::to_string(value).map_err(|source| MirrorError::Toml {
        what: what.to_owned(),
        source,
    })
}

/// Every file a node needs to pull the images of `namespaces` through the mirror.
pub fn node_files(
    namespaces: &[Namespace],
    request: &Request,
) -> Result<Vec<NodeFile>, MirrorError> {
    if namespaces.is_empty() && !request.default {
        return Err(MirrorError::NothingToMirror);
    }
    let mut files = Vec::new();
    let mut containerd = |folder: &str, upstream: Option<String>| -> Result<(), MirrorError> {
        let text = containerd::hosts_toml(folder, upstream, request)?;
        files.push(NodeFile {
            path: format!("{CONTAINERD_DIR}/{folder}/hosts.toml"),
            content: text.into_bytes(),
        });
        if let Some(ca) = &request.ca {
            files.push(NodeFile {
                path: format!("{CONTAINERD_DIR}/{folder}/{CA_FILE}"),
                content: ca.clone(),
            });
        }
        Ok(())
    };
    for namespace in namespaces {
        containerd(
            namespace.as_str(),
            Some(containerd::upstream(namespace.as_str())),
        )?;
    }
    if request.default {
        containerd("_default", None)?;
    }
    if !namespaces.is_empty() {
        files.push(NodeFile {
            path: format!("{REGISTRIES_DIR}/{DROP_IN}"),
            content: crio::registries_conf(namespaces, request)?.into_bytes(),
        });
        if let Some(ca) = &request.ca {
            files.push(NodeFile {
                path: format!("{CONTAINERS_CERTS_DIR}/{}/ca.crt", request.mirror.authority),
                content: ca.clone(),
            });
        }
    }
    Ok(files)
}

/// Where `write` puts a node file under `out`: the containerd files at the top (as
/// `--hosts-dir` reads them, and as they go into `/etc/containerd/certs.d`), the CRI-O ones
/// under `containers/` as they go into `/etc/containers` (`containers/registries.conf.d/...`,
/// `containers/certs.d/HOST/ca.crt`). containerd never reads a folder named `containers`:
/// it is no registry host.
pub fn local_path(out: &Path, node_path: &str) -> PathBuf {
    match node_path.strip_prefix(CONTAINERD_DIR) {
        Some(rest) => out.join(rest.trim_start_matches('/')),
        None => out.join(node_path.trim_start_matches("/etc/")),
    }
}

/// Writes `files` under `out` ([`local_path`]).
pub fn write(out: &Path, files: &[NodeFile]) -> Result<Vec<PathBuf>, MirrorError> {
    let mut written = Vec::with_capacity(files.len());
    for file in files {
        let path = local_path(out, &file.path);
        let failed = |source| MirrorError::Write {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        std::fs::write(&path, &file.content).map_err(failed)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(url: &str, ca: bool, default: bool, no_fallback: bool) -> Request {
        Request {
            mirror: url.parse().unwrap(),
            ca: ca.then(|| b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n".to_vec()),
            default,
            no_upstream_fallback: no_fallback,
        }
    }

    fn namespaces(names: &[&str]) -> Vec<Namespace> {
        names.iter().map(|n| n.parse().unwrap()).collect()
    }

    fn text_of<'a>(files: &'a [NodeFile], path: &str) -> &'a str {
        let file = files.iter().find(|f| f.path == path).unwrap_or_else(|| {
            panic!(
                "{path} in {:?}",
                files.iter().map(|f| &f.path).collect::<Vec<_>>()
            )
        });
        std::str::from_utf8(&file.content).unwrap()
    }

    #[test]
    fn each_registry_asks_chartreg_first_then_itself() {
        let files = node_files(
            &namespaces(&["127.0.0.1:5057", "docker.io", "quay.io"]),
            &request("https://chartreg.ns.svc:5000", true, false, false),
        )
        .unwrap();
        let quay = text_of(&files, "/etc/containerd/certs.d/quay.io/hosts.toml");
        let parsed: toml::Table = toml::from_str(quay).unwrap();
        assert_eq!(parsed["server"].as_str(), Some("https://quay.io"));
        let host = &parsed["host"]["https://chartreg.ns.svc:5000"];
        assert_eq!(
            host["capabilities"],
            toml::Value::from(vec!["pull", "resolve"])
        );
        assert_eq!(host["ca"].as_str(), Some("chartreg-ca.crt"));
        let hub = text_of(&files, "/etc/containerd/certs.d/docker.io/hosts.toml");
        assert!(
            hub.contains("server = \"https://registry-1.docker.io\""),
            "{hub}"
        );
        text_of(&files, "/etc/containerd/certs.d/127.0.0.1:5057/hosts.toml");
        text_of(
            &files,
            "/etc/containerd/certs.d/127.0.0.1:5057/chartreg-ca.crt",
        );
        text_of(
            &files,
            "/etc/containers/certs.d/chartreg.ns.svc:5000/ca.crt",
        );

        let crio: toml::Table = toml::from_str(text_of(
            &files,
            "/etc/containers/registries.conf.d/50-chartreg.conf",
        ))
        .unwrap();
        let first = &crio["registry"][0];
        assert_eq!(first["prefix"].as_str(), Some("127.0.0.1:5057"));
        assert_eq!(first["location"].as_str(), Some("127.0.0.1:5057"));
        assert_eq!(
            first["mirror"][0]["location"].as_str(),
            Some("chartreg.ns.svc:5000/127.0.0.1_5057")
        );
        assert!(first["mirror"][0].get("insecure").is_none());
    }

    #[test]
    fn without_fallback_chartreg_is_the_only_host() {
        let files = node_files(
            &namespaces(&["quay.io"]),
            &request("http://10.0.0.5:5000", false, true, true),
        )
        .unwrap();
        let quay: toml::Table = toml::from_str(text_of(
            &files,
            "/etc/containerd/certs.d/quay.io/hosts.toml",
        ))
        .unwrap();
        assert_eq!(quay["server"].as_str(), Some("http://10.0.0.5:5000"));
        let hosts = quay["host"].as_table().unwrap();
        assert_eq!(
            hosts.keys().collect::<Vec<_>>(),
            ["http://10.0.0.5:5000"],
            "chartreg is the only host: {quay}"
        );
        assert!(quay.get("ca").is_none(), "{quay}");
        let default: toml::Table = toml::from_str(text_of(
            &files,
            "/etc/containerd/certs.d/_default/hosts.toml",
        ))
        .unwrap();
        assert_eq!(default["server"].as_str(), Some("http://10.0.0.5:5000"));
        let crio: toml::Table = toml::from_str(text_of(
            &files,
            "/etc/containers/registries.conf.d/50-chartreg.conf",
        ))
        .unwrap();
        assert_eq!(
            crio["registry"][0]["location"].as_str(),
            Some("10.0.0.5:5000/quay.io")
        );
        assert_eq!(crio["registry"][0]["insecure"].as_bool(), Some(true));
    }

    #[test]
    fn default_with_fallback_names_no_server() {
        let files = node_files(&[], &request("https://c", false, true, false)).unwrap();
        assert_eq!(
            files.len(),
            1,
            "no registry: only _default, no CRI-O drop-in"
        );
        let default: toml::Table = toml::from_str(text_of(
            &files,
            "/etc/containerd/certs.d/_default/hosts.toml",
        ))
        .unwrap();
        assert!(default.get("server").is_none(), "{default}");
        assert!(default["host"].get("https://c").is_some(), "{default}");
    }

    #[test]
    fn nothing_to_mirror_is_an_error_that_says_what_to_do() {
        let e = node_files(&[], &request("https://c", false, false, false)).unwrap_err();
        assert!(e.to_string().contains("--default"), "{e}");
    }

    #[test]
    fn a_ca_file_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let e = read_ca(&path).unwrap_err().to_string();
        assert!(
            e.contains("ca.pem") && e.contains("no PEM certificate"),
            "{e}"
        );
        let e = read_ca(&dir.path().join("none")).unwrap_err().to_string();
        assert!(e.contains("none"), "{e}");
        let mut binary = b"-----BEGIN CERTIFICATE-----\n".to_vec();
        binary.extend([0xff, 0xfe, b'\n']);
        std::fs::write(&path, &binary).unwrap();
        let e = read_ca(&path).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn files_are_laid_out_as_hosts_dir_reads_them_and_as_kubeadm_takes_them() {
        let files = node_files(
            &namespaces(&["quay.io"]),
            &request("https://c:5000", true, false, false),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = write(dir.path(), &files).unwrap();
        for (node, local) in [
            (
                "/etc/containerd/certs.d/quay.io/hosts.toml",
                "quay.io/hosts.toml",
            ),
            (
                "/etc/containers/registries.conf.d/50-chartreg.conf",
                "containers/registries.conf.d/50-chartreg.conf",
            ),
            (
                "/etc/containers/certs.d/c:5000/ca.crt",
                "containers/certs.d/c:5000/ca.crt",
            ),
        ] {
            assert_eq!(local_path(dir.path(), node), dir.path().join(local));
            assert!(written.contains(&dir.path().join(local)), "{local}");
        }
        let yaml = kubeadm_config_template(&files, "workers", Some("default")).unwrap();
        let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(doc["kind"].as_str(), Some("KubeadmConfigTemplate"));
        let listed = doc["spec"]["template"]["spec"]["files"]
            .as_sequence()
            .unwrap();
        assert_eq!(listed.len(), files.len());
        assert_eq!(
            listed[0]["content"].as_str().map(str::as_bytes),
            Some(&files[0].content[..])
        );
        assert_eq!(listed[0]["path"].as_str(), Some(files[0].path.as_str()));
    }
}
