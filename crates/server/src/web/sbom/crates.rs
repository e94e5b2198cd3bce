//! The crates compiled into the binary, as the SBOM lists them: from the list the build script
//! wrote (`crates.json`: `cargo metadata` of the normal dependencies for the target), each with
//! its licence as the crate declares it (`MIT/Apache-2.0`, cargo's old form, written as the
//! expression `MIT OR Apache-2.0`; anything that is not an expression is no assertion), where
//! crates.io serves it, and its purl (`pkg:cargo/NAME@VERSION`) when it comes from a registry.

use serde::Deserialize;

use super::{Item, Role, SbomError};
use crate::this_build::ThisBuild;

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

/// A crate as the build script listed it.
#[derive(Debug, Deserialize)]
struct Crate {
    name: String,
    version: String,
    license: Option<String>,
    source: Option<String>,
}

/// The crates `build` lists, each an item.
pub(super) fn listed(build: &ThisBuild) -> Result<Vec<Item>, SbomError> {
    let crates: Vec<Crate> = serde_json::from_slice(build.crates).map_err(SbomError::Crates)?;
    Ok(crates.into_iter().map(item).collect())
}

fn item(c: Crate) -> Item {
    let mut item = Item::new(Role::Crate, c.name, Some(c.version));
    let version = item.version.as_deref().unwrap_or_default();
    if c.source.as_deref() == Some(CRATES_IO) {
        item.download = Some(format!(
            "https://crates.io/api/v1/crates/{}/{version}/download",
            item.name
        ));
    }
    if c.source
        .as_deref()
        .is_some_and(|s| s.starts_with("registry+"))
    {
        item.purl = Some(format!("pkg:cargo/{}@{version}", item.name));
    }
    item.source = c.source.map(|s| format!("cargo source {s}"));
    item.license = c.license.as_deref().and_then(expression);
    item
}

/// A crate's declared licence as an SPDX expression: `A/B` is `A OR B`; `None` for anything
/// with characters no expression has.
fn expression(declared: &str) -> Option<String> {
    let joined = declared
        .split('/')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" OR ");
    let valid = !joined.is_empty()
        && joined.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b' ' | b'.' | b'-' | b'+' | b'(' | b')' | b':')
        });
    valid.then_some(joined)
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
    #[case("MIT, Apache", None)]
    #[case("", None)]
    fn licence_expressions(#[case] declared: &str, #[case] want: Option<&str>) {
        assert_eq!(expression(declared).as_deref(), want);
    }

    #[test]
    fn a_crate_from_crates_io_has_its_download_and_purl_and_a_path_crate_neither() {
        let listed = br#"[
            {"name":"serde","version":"1.0.0","license":"MIT/Apache-2.0","source":"registry+https://github.com/rust-lang/crates.io-index"},
            {"name":"local","version":"0.1.0","license":null,"source":null}
        ]"#;
        let build = ThisBuild {
            crates: listed,
            ..ThisBuild::UNRECORDED
        };
        let items = listed_items(&build);
        assert_eq!(
            items[0].download.as_deref(),
            Some("https://crates.io/api/v1/crates/serde/1.0.0/download")
        );
        assert_eq!(items[0].purl.as_deref(), Some("pkg:cargo/serde@1.0.0"));
        assert_eq!(items[0].license.as_deref(), Some("MIT OR Apache-2.0"));
        assert!(items[1].download.is_none() && items[1].purl.is_none());
        assert!(items[1].license.is_none() && items[1].source.is_none());
    }

    fn listed_items(build: &ThisBuild) -> Vec<Item> {
        listed(build).unwrap()
    }
}
