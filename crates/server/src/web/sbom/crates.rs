//! The crates linked into the binary, as the SBOM lists them, from the list the build script
//! wrote (`crates.json`: one `cargo tree` resolve of the normal, non-proc-macro dependencies
//! for the target, the same list the binary's `.dep-v0` carries): every crate but the root
//! (`chartreg-bin`, which is chartreg itself), each with
//! - its licence as an SPDX expression, parsed by the `spdx` crate (cargo's old `MIT/Apache-2.0`
//!   read as `MIT OR Apache-2.0`); a licence that does not parse is no assertion, its text kept;
//! - where crates.io serves it (for crates from crates.io) and its purl (module `purl`);
//! - the crates it depends on: the edges of the resolve, the root's being chartreg's.

use serde::Deserialize;

use super::{Item, Role, SbomError, purl};
use crate::this_build::ThisBuild;

/// A crate as the build script listed it.
#[derive(Debug, Deserialize)]
struct Crate {
    name: String,
    version: String,
    license: Option<String>,
    /// `crates.io`, `local`, `git` or `registry` (cargo-auditable's names).
    source: String,
    /// A git URL and commit, a registry's name, a local crate's folder.
    location: Option<String>,
    #[serde(default)]
    root: bool,
    /// Indices into the list.
    dependencies: Vec<usize>,
}

/// The crates of a build: each an item (the root none), and the edges between them.
pub(super) struct Listed {
    /// The list's crates, `None` for the root.
    pub items: Vec<Option<Item>>,
    /// (from, to), as indices into `items`.
    pub edges: Vec<(usize, usize)>,
}

/// The crates `build` lists.
pub(super) fn listed(build: &ThisBuild) -> Result<Listed, SbomError> {
    let crates: Vec<Crate> = serde_json::from_slice(build.crates).map_err(SbomError::Crates)?;
    let count = crates.len();
    let mut edges = Vec::new();
    for (from, c) in crates.iter().enumerate() {
        for &to in &c.dependencies {
            if to >= count {
                return Err(SbomError::Edge(c.name.clone(), to));
            }
            edges.push((from, to));
        }
    }
    let items = crates
        .into_iter()
        .map(|c| (!c.root).then(|| item(c)))
        .collect();
    Ok(Listed { items, edges })
}

fn item(c: Crate) -> Item {
    let mut item = Item::new(Role::Crate, c.name, Some(c.version));
    let (name, version) = (&item.name, item.version.as_deref().unwrap_or_default());
    let location = c.location.as_deref();
    match (c.source.as_str(), location) {
        ("crates.io", _) => {
            item.download = Some(format!(
                "https://crates.io/api/v1/crates/{name}/{version}/download"
            ));
            item.purl = Some(purl::crates_io(name, version));
            item.source = Some("crates.io".to_owned());
        }
        ("registry", Some(registry)) => {
            item.purl = Some(purl::registry(name, version, registry));
            item.source = Some(format!("the registry {registry}"));
        }
        ("git", Some(vcs)) => {
            item.purl = Some(purl::git(name, version, vcs));
            item.source = Some(format!("git {vcs}"));
        }
        ("local", Some(folder)) => item.source = Some(format!("chartreg's own crate {folder}")),
        (source, _) => item.source = Some(source.to_owned()),
    }
    match c.license.as_deref().map(expression) {
        Some(Some(expression)) => item.license = Some(expression),
        Some(None) => item.declared = c.license,
        None => {}
    }
    item
}

/// A crate's declared licence as a valid SPDX expression (canonical: `MIT/Apache-2.0` is
/// `MIT OR Apache-2.0`); `None` when it is none, or names licences by reference only
/// (`LicenseRef-`, which the document would have to define).
fn expression(declared: &str) -> Option<String> {
    let canonical = match spdx::Expression::canonicalize(declared) {
        Ok(Some(canonical)) => canonical,
        Ok(None) => declared.to_owned(),
        Err(_) => return None,
    };
    let parsed = spdx::Expression::parse(&canonical).ok()?;
    let by_reference = parsed
        .requirements()
        .any(|r| !matches!(r.req.license, spdx::LicenseItem::Spdx { .. }));
    (!by_reference).then_some(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("MIT OR Apache-2.0", Some("MIT OR Apache-2.0"))]
    #[case("MIT/Apache-2.0", Some("MIT OR Apache-2.0"))]
    #[case("Apache-2.0 / MIT", Some("Apache-2.0 OR MIT"))]
    #[case(
        "(MIT OR Apache-2.0) AND Unicode-3.0",
        Some("(MIT OR Apache-2.0) AND Unicode-3.0")
    )]
    #[case(
        "Apache-2.0 WITH LLVM-exception",
        Some("Apache-2.0 WITH LLVM-exception")
    )]
    #[case("MIT OR", None)]
    #[case("MIT, Apache", None)]
    #[case("Apache-2.0 AND (", None)]
    #[case("LicenseRef-Mine", None)]
    #[case("", None)]
    fn licence_expressions(#[case] declared: &str, #[case] want: Option<&str>) {
        assert_eq!(expression(declared).as_deref(), want);
    }

    #[test]
    fn crates_have_purls_by_source_edges_and_no_root() {
        let listed = br#"[
            {"name":"chartreg-bin","version":"0.1.0","license":"Apache-2.0","source":"local","root":true,"dependencies":[1,2]},
            {"name":"serde","version":"1.0.0","license":"MIT/Apache-2.0","source":"crates.io","dependencies":[3]},
            {"name":"local","version":"0.1.0","license":"MIT OR","source":"local","location":"crates/local","dependencies":[]},
            {"name":"toml","version":"0.9.12+spec-1.1.0","license":null,"source":"crates.io","dependencies":[]}
        ]"#;
        let build = ThisBuild {
            crates: listed,
            ..ThisBuild::UNRECORDED
        };
        let Listed { items, edges } = listed_crates(&build);
        assert!(items[0].is_none(), "the root is chartreg itself");
        let serde = items[1].as_ref().unwrap();
        assert_eq!(
            serde.download.as_deref(),
            Some("https://crates.io/api/v1/crates/serde/1.0.0/download")
        );
        assert_eq!(serde.purl.as_deref(), Some("pkg:cargo/serde@1.0.0"));
        assert_eq!(serde.license.as_deref(), Some("MIT OR Apache-2.0"));
        let local = items[2].as_ref().unwrap();
        assert!(local.download.is_none() && local.purl.is_none());
        assert!(local.license.is_none());
        assert_eq!(local.declared.as_deref(), Some("MIT OR"));
        let toml = items[3].as_ref().unwrap();
        assert_eq!(
            toml.purl.as_deref(),
            Some("pkg:cargo/toml@0.9.12%2Bspec-1.1.0")
        );
        assert_eq!(edges, vec![(0, 1), (0, 2), (1, 3)]);
    }

    #[test]
    fn an_edge_to_no_crate_is_refused() {
        let build = ThisBuild {
            crates: br#"[{"name":"a","version":"1.0.0","license":null,"source":"crates.io","dependencies":[7]}]"#,
            ..ThisBuild::UNRECORDED
        };
        assert!(matches!(listed(&build), Err(SbomError::Edge(_, 7))));
    }

    fn listed_crates(build: &ThisBuild) -> Listed {
        listed(build).unwrap()
    }
}
