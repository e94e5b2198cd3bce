//! Namespaces: the upstream registry an image was fetched from (`quay.io`, `docker.io`,
//! `127.0.0.1:5057`), as a node names it when it asks a mirror (`?ns=quay.io`, the distribution
//! spec's "Registry Proxying"), and as the content names it in a repository's first path
//! component (`quay.io/jetstack/cert-manager-controller`).
//!
//! A path component cannot hold `:`, so a port is written `_PORT` there (`127.0.0.1_5057`):
//! a host name never holds `_`, so the two forms map one to one. A first component is a
//! namespace when it names a registry host the way image references do (Docker's rule: it has a
//! `.` or a port, or is `localhost`); `charts/hello` has none.

use std::fmt;
use std::str::FromStr;

/// A registry host, with its port when it has one, lowercase: what `?ns=` names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace(String);

/// The longest host name DNS allows, plus a port.
const MAX_LEN: usize = 253 + ":65535".len();

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NamespaceError {
    #[error("a registry namespace cannot be empty")]
    Empty,
    #[error("`{0}` is not a registry host: expected HOST or HOST:PORT (letters, digits, `.`, `-`)")]
    NotAHost(String),
    #[error("`{0}` has a port that is not a number from 1 to 65535")]
    Port(String),
    #[error(
        "`{0}` is not read as a registry host in an image reference: a registry host has a `.` or a port, or is `localhost`"
    )]
    NotARegistry(String),
}

/// The names Docker Hub goes by (`docker.io` is the one nodes use).
const DOCKER_HUB: [&str; 3] = ["docker.io", "index.docker.io", "registry-1.docker.io"];

impl Namespace {
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The namespace as one path component of a repository name (`127.0.0.1:5057` ->
    /// `127.0.0.1_5057`).
    pub fn component(&self) -> String {
        self.0.replace(':', "_")
    }

    /// The namespace a repository name's first path component names, if it names one (see
    /// the module's documentation).
    pub fn of_component(component: &str) -> Option<Namespace> {
        let spelled = match component.rsplit_once('_') {
            Some((host, port)) => format!("{host}:{port}"),
            None => component.to_owned(),
        };
        let namespace: Namespace = spelled.parse().ok()?;
        let names_a_host =
            namespace.0.contains('.') || namespace.0.contains(':') || namespace.0 == "localhost";
        names_a_host.then_some(namespace)
    }

    /// The registry an images file or a content file names (`quay.io`, `127.0.0.1:5057`),
    /// as nodes name it: Docker Hub's other names are `docker.io`, and a name that an image
    /// reference would not read as a registry host (`registry`, without a `.` or a port) is
    /// refused.
    pub fn registry(s: &str) -> Result<Namespace, NamespaceError> {
        let namespace: Namespace = s.parse()?;
        if DOCKER_HUB.contains(&namespace.as_str()) {
            return Ok(Namespace("docker.io".to_owned()));
        }
        if Namespace::of_component(&namespace.component()).is_none() {
            return Err(NamespaceError::NotARegistry(s.to_owned()));
        }
        Ok(namespace)
    }

    /// The repository an image at `path` in this registry is served as, the name nodes ask
    /// for: `<component>/<path>`, Docker Hub's one-part paths with `library/`
    /// (`docker.io/nginx` is `docker.io/library/nginx`).
    pub fn served_name(&self, path: &str) -> String {
        if self.0 == "docker.io" && !path.contains('/') {
            return format!("docker.io/library/{path}");
        }
        format!("{}/{path}", self.component())
    }

    /// A repository name split into its namespace and the path within it, when its first
    /// component names one and a path follows.
    pub fn split(name: &str) -> Option<(Namespace, &str)> {
        let (first, path) = name.split_once('/')?;
        Some((Namespace::of_component(first)?, path))
    }
}

impl FromStr for Namespace {
    type Err = NamespaceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Err(NamespaceError::Empty);
        }
        let not_a_host = || NamespaceError::NotAHost(s.to_owned());
        if s.len() > MAX_LEN {
            return Err(not_a_host());
        }
        let (host, port) = match s.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (s, None),
        };
        let label_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        };
        if !host.split('.').all(label_ok) {
            return Err(not_a_host());
        }
        if let Some(port) = port {
            let valid = port.len() <= 5
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u16>().is_ok_and(|p| p > 0);
            if !valid {
                return Err(NamespaceError::Port(s.to_owned()));
            }
        }
        Ok(Namespace(s.to_ascii_lowercase()))
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("quay.io", "quay.io", "quay.io")]
    #[case("docker.io", "docker.io", "docker.io")]
    #[case("127.0.0.1:5057", "127.0.0.1:5057", "127.0.0.1_5057")]
    #[case("localhost:5000", "localhost:5000", "localhost_5000")]
    #[case("Registry.K8s.IO", "registry.k8s.io", "registry.k8s.io")]
    #[case("registry", "registry", "registry")]
    fn hosts(#[case] given: &str, #[case] canonical: &str, #[case] component: &str) {
        let ns: Namespace = given.parse().unwrap();
        assert_eq!(ns.as_str(), canonical);
        assert_eq!(ns.component(), component);
    }

    #[rstest]
    #[case("", NamespaceError::Empty)]
    #[case("quay.io/x", NamespaceError::NotAHost("quay.io/x".into()))]
    #[case("a..b", NamespaceError::NotAHost("a..b".into()))]
    #[case("-a.b", NamespaceError::NotAHost("-a.b".into()))]
    #[case("a_b.io", NamespaceError::NotAHost("a_b.io".into()))]
    #[case("[::1]:5000", NamespaceError::NotAHost("[::1]:5000".into()))]
    #[case("a.io:", NamespaceError::Port("a.io:".into()))]
    #[case("a.io:0", NamespaceError::Port("a.io:0".into()))]
    #[case("a.io:65536", NamespaceError::Port("a.io:65536".into()))]
    #[case("a.io:+80", NamespaceError::Port("a.io:+80".into()))]
    fn refused(#[case] given: &str, #[case] error: NamespaceError) {
        assert_eq!(given.parse::<Namespace>(), Err(error));
    }

    #[rstest]
    #[case("quay.io", Ok("quay.io"))]
    #[case("127.0.0.1:5057", Ok("127.0.0.1:5057"))]
    #[case("localhost", Ok("localhost"))]
    #[case("registry:5000", Ok("registry:5000"))]
    #[case("index.docker.io", Ok("docker.io"))]
    #[case("registry-1.docker.io", Ok("docker.io"))]
    #[case("Docker.IO", Ok("docker.io"))]
    #[case("registry", Err(NamespaceError::NotARegistry("registry".into())))]
    #[case("a..b", Err(NamespaceError::NotAHost("a..b".into())))]
    fn registries(#[case] given: &str, #[case] want: Result<&str, NamespaceError>) {
        let got = Namespace::registry(given);
        assert_eq!(
            got.as_ref().map(Namespace::as_str),
            want.as_ref().map(|s| *s)
        );
    }

    #[rstest]
    #[case("quay.io", "jetstack/cert-manager", "quay.io/jetstack/cert-manager")]
    #[case("docker.io", "nginx", "docker.io/library/nginx")]
    #[case("docker.io", "library/nginx", "docker.io/library/nginx")]
    #[case("docker.io", "bitnami/nginx", "docker.io/bitnami/nginx")]
    #[case("127.0.0.1:5057", "nginx", "127.0.0.1_5057/nginx")]
    fn served_names(#[case] registry: &str, #[case] path: &str, #[case] name: &str) {
        let registry = Namespace::registry(registry).unwrap();
        assert_eq!(registry.served_name(path), name);
        // And the name reads back as that registry's.
        let (ns, _) = Namespace::split(name).unwrap();
        assert_eq!(ns, registry);
    }

    #[rstest]
    #[case("quay.io/jetstack/cert-manager", Some(("quay.io", "jetstack/cert-manager")))]
    #[case("127.0.0.1_5057/nutanix/demo-app", Some(("127.0.0.1:5057", "nutanix/demo-app")))]
    #[case("localhost/x", Some(("localhost", "x")))]
    #[case("registry_5000/x", Some(("registry:5000", "x")))]
    #[case("charts/hello", None)]
    #[case("images/sample", None)]
    #[case("quay.io", None)]
    #[case("my_chart/x", None)]
    #[case("a__5000/x", None)]
    fn names_split(#[case] name: &str, #[case] split: Option<(&str, &str)>) {
        let got = Namespace::split(name);
        let got = got.as_ref().map(|(ns, path)| (ns.as_str(), *path));
        assert_eq!(got, split);
    }
}
