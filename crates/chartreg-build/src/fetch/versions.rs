//! Which of a source's versions a list's version string asks for, as Helm and mindthegap read it,
//! and, when none does, the source's versions nearest to it (for the error message).
//!
//! A version string is exact (`1.15.0`, `v0.14.5`: the version equal to it as semantic
//! versions, so a `v` prefix on either side does not matter; else the string itself) unless it
//! holds a range operator (`^1.15`, `~1.2`, `>=1.0, <2`, `1.x`, `*`): then the newest version
//! that meets it. A bare version is never read as a range (the semver crate would read `1.2.0`
//! as `^1.2.0`; Helm's semver reads it as `=1.2.0`).

/// Whether `version` is a chart version Helm accepts and pack can serve (Helm's semver reads
/// it, and it is an OCI tag once `+` is written `_`): so no `/`, no leading `.` or `-`, nothing
/// a file name or a command line would read otherwise.
pub fn helm_accepts(version: &str) -> bool {
    chartreg_core::oci::version::order(version).is_some()
        && version
            .replace('+', "_")
            .parse::<chartreg_core::oci::Tag>()
            .is_ok()
}

/// A version string read: exact, or a range.
enum Asked {
    Exact(Option<semver::Version>),
    Range(semver::VersionReq),
}

/// A version as Helm's semver reads it (`chartreg_core::oci::version::order`), `_` (how OCI
/// tags write `+`) read as `+`.
fn parse(version: &str) -> Option<semver::Version> {
    chartreg_core::oci::version::order(&version.replace('_', "+"))
}

fn read(asked: &str) -> Asked {
    let version = parse(asked);
    if version.is_some() {
        return Asked::Exact(version);
    }
    let ranged = asked
        .chars()
        .any(|c| matches!(c, '^' | '~' | '>' | '<' | '=' | '*' | 'x' | 'X' | ','));
    match semver::VersionReq::parse(asked) {
        Ok(range) if ranged => Asked::Range(range),
        _ => Asked::Exact(None),
    }
}

/// The one of `available` that `asked` names; `Err` with the nearest ones when none does.
pub fn find<'a>(
    asked: &str,
    available: impl IntoIterator<Item = &'a str> + Clone,
) -> Result<&'a str, Vec<String>> {
    let found = match read(asked) {
        Asked::Exact(version) => {
            available
                .clone()
                .into_iter()
                .find(|v| *v == asked)
                .or_else(|| {
                    let version = version.as_ref()?;
                    available
                        .clone()
                        .into_iter()
                        .find(|v| parse(v).as_ref() == Some(version))
                })
        }
        Asked::Range(range) => available
            .clone()
            .into_iter()
            .filter_map(|v| Some((parse(v)?, v)))
            .filter(|(parsed, _)| range.matches(parsed))
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, v)| v),
    };
    found.ok_or_else(|| nearest(asked, available))
}

/// How many versions an error lists.
const NEAREST: usize = 5;

/// The longest version an error lists (the longest OCI tag).
const NEAREST_LEN: usize = 128;

/// The versions of `available` nearest to `asked`: around where it would sort when it is a
/// version, else the newest; in version order. What is longer than a tag may be (an index's
/// megabyte of text) is no neighbour: messages quote these.
pub fn nearest<'a>(asked: &str, available: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let available: Vec<&str> = available
        .into_iter()
        .filter(|v| v.len() <= NEAREST_LEN)
        .collect();
    let mut versions: Vec<(semver::Version, &str)> = available
        .iter()
        .filter_map(|v| Some((parse(v)?, *v)))
        .collect();
    if versions.is_empty() {
        // No versions among them (tags such as `latest`, `stable`): the first few by name.
        let mut names = available;
        names.sort_unstable();
        names.dedup();
        return names.into_iter().take(NEAREST).map(str::to_owned).collect();
    }
    versions.sort();
    versions.dedup_by(|a, b| a.1 == b.1);
    let end = match read(asked) {
        Asked::Exact(Some(version)) => {
            let at = versions.partition_point(|(v, _)| *v < version);
            (at + NEAREST / 2 + 1).clamp(NEAREST.min(versions.len()), versions.len())
        }
        Asked::Exact(None) | Asked::Range(_) => versions.len(),
    };
    let start = end.saturating_sub(NEAREST);
    versions
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|(_, v)| (*v).to_owned())
        .collect()
}

/// "(it has 1.2.0, 1.3.0)" for an error message; empty when there are none.
pub fn listed(nearest: &[String]) -> String {
    if nearest.is_empty() {
        String::new()
    } else {
        format!(" (nearest it has: {})", nearest.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const AVAILABLE: [&str; 9] = [
        "1.2.0",
        "1.10.0",
        "2.0.0",
        "v0.14.5",
        "1.15.0",
        "1.15.1",
        "1.16.0",
        "1.17.0",
        "3.0.0_b.1",
    ];

    #[rstest]
    #[case::exact("1.2.0", Ok("1.2.0"))]
    #[case::v_prefix_on_the_source("0.14.5", Ok("v0.14.5"))]
    #[case::v_prefix_in_the_list("v1.15.0", Ok("1.15.0"))]
    #[case::build_metadata_as_a_tag_writes_it("3.0.0+b.1", Ok("3.0.0_b.1"))]
    #[case::caret("^1", Ok("1.17.0"))]
    #[case::tilde("~1.15", Ok("1.15.1"))]
    #[case::comparators(">=1.0, <1.16", Ok("1.15.1"))]
    #[case::wildcard("1.15.x", Ok("1.15.1"))]
    #[case::a_bare_version_is_not_a_range("1.3.0", Err(vec!["v0.14.5", "1.2.0", "1.10.0", "1.15.0", "1.15.1"]))]
    #[case::nearest_around("1.15.9", Err(vec!["1.15.0", "1.15.1", "1.16.0", "1.17.0", "2.0.0"]))]
    #[case::nearest_below_all("0.0.1", Err(vec!["v0.14.5", "1.2.0", "1.10.0", "1.15.0", "1.15.1"]))]
    #[case::nearest_above_all("9.0.0", Err(vec!["1.15.1", "1.16.0", "1.17.0", "2.0.0", "3.0.0_b.1"]))]
    #[case::unmet_range_lists_the_newest("^4", Err(vec!["1.15.1", "1.16.0", "1.17.0", "2.0.0", "3.0.0_b.1"]))]
    #[case::not_a_version("latest", Err(vec!["1.15.1", "1.16.0", "1.17.0", "2.0.0", "3.0.0_b.1"]))]
    #[case::a_short_version_as_helm_reads_it("v1.15", Ok("1.15.0"))]
    fn versions_are_found_or_the_nearest_listed(
        #[case] asked: &str,
        #[case] want: Result<&str, Vec<&str>>,
    ) {
        let want = want.map_err(|v| v.into_iter().map(str::to_owned).collect::<Vec<_>>());
        assert_eq!(find(asked, AVAILABLE), want, "{asked}");
    }

    #[test]
    fn versions_longer_than_a_tag_are_never_listed() {
        let long = format!("1.0.0-{}", "a".repeat(200));
        assert_eq!(nearest("1.0.0", ["0.9.0", long.as_str()]), ["0.9.0"]);
    }

    #[test]
    fn few_versions_are_all_listed_and_tags_that_are_none_by_name() {
        assert_eq!(nearest("5.0.0", ["1.0.0", "2.0.0"]), ["1.0.0", "2.0.0"]);
        assert_eq!(nearest("v2", ["v1", "latest", "v3.1"]), ["v1", "v3.1"]);
        assert_eq!(nearest("x", ["stable", "latest"]), ["latest", "stable"]);
        assert_eq!(listed(&nearest("5.0.0", [])), "");
        assert_eq!(listed(&["1.0.0".to_owned()]), " (nearest it has: 1.0.0)");
    }

    #[rstest]
    #[case("1.2.3")]
    #[case("v1.16.1")]
    #[case("1.2")]
    #[case("1")]
    #[case("01.002.3")]
    #[case("1.0.0-rc.1")]
    #[case("1.0.0+build.7")]
    fn versions_helm_accepts_are_taken(#[case] version: &str) {
        assert!(helm_accepts(version), "{version}");
    }

    #[rstest]
    #[case::traversal("../../x")]
    #[case::slash("1.0.0/../../x")]
    #[case::flag("--output-dir=written-by-helm")]
    #[case::values_flag("--values=/etc/shadow")]
    #[case::empty("")]
    #[case::four_numbers("1.2.3.4")]
    #[case::leading_zero_prerelease("1.0.0-01")]
    #[case::space("1.0.0 ")]
    #[case::escape("1.0.0-\u{1b}[2J")]
    #[case::too_long_for_a_tag(
        "1.0.0-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    )]
    fn versions_helm_refuses_or_no_tag_holds_are_refused(#[case] version: &str) {
        assert!(!helm_accepts(version), "{version}");
    }
}
