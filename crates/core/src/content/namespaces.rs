//! Which repository a request names, when images are kept per upstream registry.
//!
//! A repository whose first path component names a registry host
//! ([`Namespace::of_component`]) holds an image fetched from that registry:
//! `quay.io/jetstack/cert-manager-controller` is `jetstack/cert-manager-controller` in namespace
//! `quay.io`. [`Namespaces`] indexes those by their path within the namespace, once, when the
//! registry is assembled, and resolves a name as a request gives it, when it is not simply a
//! repository's full name asked without `ns` (`Registry::resolve` looks that up first):
//! - with `?ns=REGISTRY` (a node's containerd sends it to a mirror): the path in that
//!   namespace, or the full name when it starts with the namespace's component; nothing from
//!   another registry is ever served for it;
//! - without: the path when exactly one registry holds it; two or more are ambiguous, and the
//!   error names them.

use super::{Error, HashMap};
use crate::oci::{Namespace, RepositoryName};

/// The namespaced repositories of a registry, by path within their namespace.
#[derive(Debug, Default)]
pub(super) struct Namespaces {
    /// Path within the namespace -> each namespace holding it, with the full name, in namespace
    /// order.
    paths: HashMap<String, Vec<(Namespace, String)>>,
    /// Every namespace held, sorted.
    held: Vec<Namespace>,
}

impl Namespaces {
    /// The index of repositories named `names`.
    pub(super) fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut paths: HashMap<String, Vec<(Namespace, String)>> = HashMap::default();
        let mut held = Vec::new();
        for name in names {
            if let Some((namespace, path)) = Namespace::split(name) {
                held.push(namespace.clone());
                paths
                    .entry(path.to_owned())
                    .or_default()
                    .push((namespace, name.to_owned()));
            }
        }
        for holders in paths.values_mut() {
            holders.sort_unstable();
        }
        held.sort_unstable();
        held.dedup();
        Namespaces { paths, held }
    }

    /// Every namespace held, sorted.
    pub(super) fn held(&self) -> &[Namespace] {
        &self.held
    }

    /// The full name of the repository `name` means in `namespace`; `exists` says whether a
    /// full name is a repository.
    pub(super) fn within<'a>(
        &'a self,
        name: &'a RepositoryName,
        namespace: &Namespace,
        exists: impl Fn(&str) -> bool,
    ) -> Result<&'a str, Error> {
        let held = self
            .paths
            .get(name.as_str())
            .and_then(|holders| holders.iter().find(|(ns, _)| ns == namespace));
        if let Some((_, full)) = held {
            return Ok(full);
        }
        // The path form with `ns` (a mirror configured with the namespace in its path).
        if Namespace::split(name.as_str()).is_some_and(|(ns, _)| &ns == namespace)
            && exists(name.as_str())
        {
            return Ok(name.as_str());
        }
        if self.held.binary_search(namespace).is_err() {
            return Err(Error::NamespaceUnknown {
                name: name.clone(),
                namespace: namespace.clone(),
                held: self.held.clone(),
            });
        }
        Err(Error::NameUnknown(name.clone()))
    }

    /// The full name of the one repository holding path `name` in some namespace.
    pub(super) fn only(&self, name: &RepositoryName) -> Result<&str, Error> {
        match self.paths.get(name.as_str()).map(Vec::as_slice) {
            Some([(_, full)]) => Ok(full),
            Some(several) if !several.is_empty() => Err(Error::Ambiguous {
                name: name.clone(),
                candidates: several.to_vec(),
            }),
            _ => Err(Error::NameUnknown(name.clone())),
        }
    }
}

/// Namespaces as an error lists them: `docker.io, quay.io`, or `none`.
pub(super) fn listed(held: &[Namespace]) -> String {
    if held.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<&str> = held.iter().map(Namespace::as_str).collect();
    names.join(", ")
}

/// Candidates as an error lists them: `quay.io (quay.io/x), ghcr.io (ghcr.io/x)`.
pub(super) fn candidates(candidates: &[(Namespace, String)]) -> String {
    let each: Vec<String> = candidates
        .iter()
        .map(|(namespace, full)| format!("{namespace} (`{full}`)"))
        .collect();
    each.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> Namespaces {
        Namespaces::of([
            "charts/hello",
            "quay.io/jetstack/cert-manager",
            "127.0.0.1_5057/nutanix/demo-app",
            "127.0.0.1_5058/nutanix/demo-app",
        ])
    }

    fn name(s: &str) -> RepositoryName {
        s.parse().unwrap()
    }

    fn ns(s: &str) -> Namespace {
        s.parse().unwrap()
    }

    #[test]
    fn a_path_one_registry_holds_resolves_without_ns() {
        let index = index();
        assert_eq!(
            index.only(&name("jetstack/cert-manager")),
            Ok("quay.io/jetstack/cert-manager")
        );
        assert_eq!(
            index.only(&name("charts/hello")),
            Err(Error::NameUnknown(name("charts/hello")))
        );
    }

    #[test]
    fn a_path_two_registries_hold_is_ambiguous_naming_both() {
        let e = index().only(&name("nutanix/demo-app")).unwrap_err();
        assert_eq!(
            e,
            Error::Ambiguous {
                name: name("nutanix/demo-app"),
                candidates: vec![
                    (
                        ns("127.0.0.1:5057"),
                        "127.0.0.1_5057/nutanix/demo-app".into()
                    ),
                    (
                        ns("127.0.0.1:5058"),
                        "127.0.0.1_5058/nutanix/demo-app".into()
                    )
                ],
            }
        );
        let text = e.to_string();
        assert!(
            text.contains("127.0.0.1:5057") && text.contains("127.0.0.1:5058"),
            "{text}"
        );
    }

    #[test]
    fn ns_picks_the_registry_and_never_another() {
        let index = index();
        let all = |_: &str| true;
        assert_eq!(
            index.within(&name("nutanix/demo-app"), &ns("127.0.0.1:5058"), all),
            Ok("127.0.0.1_5058/nutanix/demo-app")
        );
        assert_eq!(
            index.within(
                &name("127.0.0.1_5057/nutanix/demo-app"),
                &ns("127.0.0.1:5057"),
                all
            ),
            Ok("127.0.0.1_5057/nutanix/demo-app")
        );
        // Held in another registry only.
        assert_eq!(
            index.within(&name("jetstack/cert-manager"), &ns("127.0.0.1:5057"), all),
            Err(Error::NameUnknown(name("jetstack/cert-manager")))
        );
        // The full name of another registry's repository, asked for in this one.
        assert_eq!(
            index.within(
                &name("quay.io/jetstack/cert-manager"),
                &ns("127.0.0.1:5057"),
                all
            ),
            Err(Error::NameUnknown(name("quay.io/jetstack/cert-manager")))
        );
        // The path form of a repository the registry does not hold.
        assert_eq!(
            index.within(&name("quay.io/nope"), &ns("quay.io"), |_| false),
            Err(Error::NameUnknown(name("quay.io/nope")))
        );
        // Not namespaced at all.
        assert!(matches!(
            index.within(&name("charts/hello"), &ns("docker.io"), all),
            Err(Error::NamespaceUnknown { .. })
        ));
        let e = index
            .within(&name("library/nginx"), &ns("docker.io"), all)
            .unwrap_err()
            .to_string();
        assert!(e.contains("docker.io") && e.contains("quay.io"), "{e}");
    }
}
