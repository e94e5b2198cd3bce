//! Chart versions as Helm accepts them: Masterminds semver's `NewVersion`, which Helm checks a
//! chart's `version` with. It is looser than semantic versioning 2.0: a `v` prefix, one to three
//! numeric parts (`1`, `1.2`, `1.2.3`, leading zeros allowed), then an optional `-prerelease`
//! and `+build`, each of dot-separated identifiers of ASCII letters, digits and `-` (numeric
//! prerelease identifiers without leading zeros), every number within 64 bits.
//!
//! `helm push` tags a chart with its version as written, `+` as `_`; so does `pack`.

/// Why a version is not one Helm accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("expected up to three numbers separated by `.` (e.g. 1.2.3, v1.2.3, 1.2)")]
    Numbers,
    #[error("`{0}` is too large for a version number")]
    TooLarge(String),
    #[error("invalid {0}: identifiers are letters, digits and `-`, separated by single dots")]
    Identifiers(&'static str),
    #[error("the prerelease identifier `{0}` is a number with a leading zero")]
    LeadingZero(String),
}

/// Whether `version` is one Helm accepts for a chart.
pub fn check(version: &str) -> Result<(), VersionError> {
    let unprefixed = version.strip_prefix('v').unwrap_or(version);
    let (rest, build) = match unprefixed.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (unprefixed, None),
    };
    let (numbers, prerelease) = match rest.split_once('-') {
        Some((numbers, prerelease)) => (numbers, Some(prerelease)),
        None => (rest, None),
    };
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(VersionError::Numbers);
    }
    if let Some(big) = parts.iter().find(|p| p.parse::<u64>().is_err()) {
        return Err(VersionError::TooLarge((*big).to_owned()));
    }
    if let Some(prerelease) = prerelease {
        let ids = identifiers(prerelease).ok_or(VersionError::Identifiers("prerelease"))?;
        if let Some(id) = ids.iter().find(|id| {
            id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit())
        }) {
            return Err(VersionError::LeadingZero((*id).to_owned()));
        }
    }
    if let Some(build) = build {
        identifiers(build).ok_or(VersionError::Identifiers("build metadata"))?;
    }
    Ok(())
}

/// The dot-separated identifiers of `s`, if each is non-empty and of allowed characters.
fn identifiers(s: &str) -> Option<Vec<&str>> {
    let ids: Vec<&str> = s.split('.').collect();
    ids.iter()
        .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .then_some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("1.2.3")]
    #[case("v1.16.1")]
    #[case("v3.26.4")]
    #[case("1.2")]
    #[case("1")]
    #[case("01.002.3")]
    #[case("1.0.0-rc.1")]
    #[case("1.0.0-0.3.7")]
    #[case("1.0.0-x-y.7")]
    #[case("1.0.1+build.7")]
    #[case("v0.14.5-alpha+sha.5114f85")]
    #[case("1.2-beta")]
    fn helm_accepts(#[case] version: &str) {
        assert_eq!(check(version), Ok(()), "{version}");
    }

    #[rstest]
    #[case("", VersionError::Numbers)]
    #[case("v", VersionError::Numbers)]
    #[case("1.2.3.4", VersionError::Numbers)]
    #[case("1..2", VersionError::Numbers)]
    #[case("V1.2.3", VersionError::Numbers)]
    #[case("vv1.2.3", VersionError::Numbers)]
    #[case("1.2.x", VersionError::Numbers)]
    #[case(" 1.2.3", VersionError::Numbers)]
    #[case("latest", VersionError::Numbers)]
    #[case("18446744073709551616.0.0", VersionError::TooLarge("18446744073709551616".into()))]
    #[case("1.0.0-", VersionError::Identifiers("prerelease"))]
    #[case("1.0.0-a..b", VersionError::Identifiers("prerelease"))]
    #[case("1.0.0-a_b", VersionError::Identifiers("prerelease"))]
    #[case("1.0.0-01", VersionError::LeadingZero("01".into()))]
    #[case("1.0.0+", VersionError::Identifiers("build metadata"))]
    #[case("1.0.0+a+b", VersionError::Identifiers("build metadata"))]
    fn helm_refuses(#[case] version: &str, #[case] expected: VersionError) {
        assert_eq!(check(version), Err(expected), "{version}");
    }
}
