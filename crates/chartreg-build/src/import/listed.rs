//! The registry each image of a bundle came from. A mindthegap bundle stores an image under its
//! path alone (`jetstack/cert-manager-controller`); the `images.yaml` at its top, the images
//! file it was made from, says which registry asked for that path (`quay.io`). Import names
//! each listed repository in its registry's namespace, as `fetch` and `pack` do
//! (`quay.io/jetstack/cert-manager-controller`; see `Namespace::served_name`), so nodes pull it through
//! `chartreg mirror-config`'s files. Charts and paths the file does not list keep their names.

use std::collections::BTreeMap;

use chartreg_core::oci::Namespace;
use serde::Deserialize;

use crate::yaml::{self, YamlError};

/// `images.yaml`: registry -> the image paths asked of it (mindthegap's images file; its other
/// keys, `tlsVerify` and `credentials`, are not needed here).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Listed(BTreeMap<String, ListedRegistry>);

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
struct ListedRegistry {
    #[serde(default)]
    images: BTreeMap<String, serde_yaml_ng::Value>,
}

/// What a stored path is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Naming {
    /// Listed under one registry: the full name it is served as.
    Namespaced(String),
    /// Not listed (a chart, or a bundle without `images.yaml`): its stored path.
    Unlisted,
    /// Listed under several registries: the bundle's one copy cannot say which it is.
    Several(Vec<String>),
}

impl Listed {
    /// `images.yaml`'s bytes, read within the bounds of upstream YAML (`tree::yaml`: a bundle
    /// is upstream's too).
    pub fn parse(data: &[u8]) -> Result<Listed, YamlError> {
        let value = yaml::value(data, &mut yaml::Budget::default())?;
        Ok(serde_yaml_ng::from_value(value)?)
    }

    /// The name the repository stored at `path` is served as.
    pub fn naming(&self, path: &str) -> Naming {
        let mut names: Vec<String> = self
            .0
            .iter()
            .filter_map(|(registry, listed)| {
                let registry = Namespace::registry(registry).ok()?;
                let served = registry.served_name(path);
                listed
                    .images
                    .keys()
                    .any(|image| registry.served_name(image) == served)
                    .then_some(served)
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        match names.len() {
            0 => Naming::Unlisted,
            1 => Naming::Namespaced(names.remove(0)),
            _ => Naming::Several(names),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const FILE: &str = "\
quay.io:
  tlsVerify: true
  images:
    jetstack/cert-manager-controller: [v1.16.1]
docker.io:
  images:
    nginx: [\"1.27\"]
127.0.0.1:5057:
  credentials: {username: u, password: p}
  images:
    nutanix/demo-app: [v1]
ghcr.io:
  images:
    nutanix/demo-app: [v2]
";

    #[rstest]
    #[case("jetstack/cert-manager-controller", Naming::Namespaced("quay.io/jetstack/cert-manager-controller".into()))]
    #[case("library/nginx", Naming::Namespaced("docker.io/library/nginx".into()))]
    #[case("nginx", Naming::Namespaced("docker.io/library/nginx".into()))]
    #[case("charts/hello", Naming::Unlisted)]
    #[case("nutanix/demo-app", Naming::Several(vec!["127.0.0.1_5057/nutanix/demo-app".into(), "ghcr.io/nutanix/demo-app".into()]))]
    fn stored_paths_are_named_by_the_registry_that_listed_them(
        #[case] path: &str,
        #[case] naming: Naming,
    ) {
        let listed = Listed::parse(FILE.as_bytes()).unwrap();
        assert_eq!(listed.naming(path), naming);
    }

    #[test]
    fn an_unreadable_list_is_an_error() {
        assert!(Listed::parse(b"quay.io: [not, a, map]").is_err());
        assert_eq!(Listed::parse(b"{}").unwrap().naming("x"), Naming::Unlisted);
    }

    #[rstest]
    #[case::deep(format!("quay.io: {}{}", "[".repeat(100_000), "]".repeat(100_000)), "256 deep")]
    #[case::alias_bomb(
        (1..10).fold("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n".to_owned(), |text, i| {
            let p = i - 1;
            format!("{text}a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n")
        }),
        "alias bomb"
    )]
    fn yaml_bombs_are_refused(#[case] text: String, #[case] words: &str) {
        // Refused in milliseconds (libyaml alone scanned the deep one for 16 s).
        let e = Listed::parse(text.as_bytes()).unwrap_err().to_string();
        assert!(e.contains(words), "{e}");
    }
}
