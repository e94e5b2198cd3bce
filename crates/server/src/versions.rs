//! Chart versions as Helm takes them: the order (the core's, `chartreg_core::oci::version`),
//! for the add-ons ConfigMap and the pages; and the tag Helm pulls when no version is asked
//! for ([`helm_latest`]).

use std::cmp::Ordering;

pub use chartreg_core::oci::version::{newest_first, order};

/// The tag `helm pull oci://HOST/REPOSITORY` without `--version` pulls, given the repository's
/// tags list in the order the registry lists it (Helm 3.17 and 4.3 alike, seen against
/// chartreg in tests/embed/addons.rs):
///
/// 1. Helm keeps the tags that are strict semantic versions once `_` reads `+`
///    (Masterminds' `StrictNewVersion`: no `v` prefix, three numbers, no leading zeros), so
///    `v0.14.5` is not one, and its unprefixed form `0.14.5`, which chartreg lists beside it,
///    is;
/// 2. sorts them highest first by precedence, build metadata ignored, with Go's unstable
///    `sort.Sort` ([`crate::go_sort`]: which of `1.0.0` and `1.0.0+build.1` comes first
///    depends on the whole list);
/// 3. takes the first that its constraint `*` accepts: the first without a prerelease part.
///
/// `None` when there is none (only prereleases, or no strict version): Helm then fails
/// without `--version`.
pub fn helm_latest<'a>(tags: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut versions: Vec<(semver::Version, &str)> = tags
        .into_iter()
        .filter_map(|tag| Some((semver::Version::parse(&tag.replace('_', "+")).ok()?, tag)))
        .collect();
    crate::go_sort::sort(&mut versions, |a, b| {
        b.0.cmp_precedence(&a.0) == Ordering::Less
    });
    versions
        .into_iter()
        .find(|(version, _)| version.pre.is_empty())
        .map(|(_, tag)| tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_v_tag_is_found_by_its_unprefixed_form(&["0.14.5", "v0.14.5"], Some("0.14.5"))]
    #[case::both_forms_listed_once(&["0.14.5", "0.15.0-rc.1", "v0.14.5"], Some("0.14.5"))]
    #[case::prereleases_are_passed_over(&["1.0.0", "1.1.0-rc.1"], Some("1.0.0"))]
    #[case::only_prereleases(&["1.0.0-rc.1"], None)]
    #[case::versions_that_are_not_strict_are_ignored(&["1.1.0", "1.2", "v1.3.0"], Some("1.1.0"))]
    #[case::build_metadata_from_the_underscore(&["1.0.0", "1.0.1_build.7"], Some("1.0.1_build.7"))]
    #[case::numbers_not_bytes(&["0.10.0", "0.9.0"], Some("0.10.0"))]
    #[case::equal_precedence_in_a_short_list_keeps_the_listed_order(&["1.0.0", "1.0.0_build.1"], Some("1.0.0"))]
    #[case::leading_zeros_are_not_strict(&["01.0.0", "0.1.0"], Some("0.1.0"))]
    #[case::nothing_listed(&[], None)]
    fn helm_latest_is_the_tag_helm_pulls(#[case] tags: &[&str], #[case] want: Option<&str>) {
        assert_eq!(helm_latest(tags.iter().copied()), want);
    }
}
