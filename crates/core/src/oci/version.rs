//! Chart versions in the order Helm orders them (Masterminds semver: a `v` prefix and missing
//! parts allowed): the server's add-ons ConfigMap and pages, and the build tool's choice of a
//! source's versions.

use std::cmp::Ordering;

/// A version as Helm orders it, or `None` when Helm would not take it as one.
pub fn order(version: &str) -> Option<semver::Version> {
    let unprefixed = version.strip_prefix('v').unwrap_or(version);
    let end = unprefixed.find(['-', '+']).unwrap_or(unprefixed.len());
    let (numbers, rest) = unprefixed.split_at(end);
    let mut parts: Vec<&str> = numbers.split('.').collect();
    while parts.len() < 3 {
        parts.push("0");
    }
    let numbers: Vec<String> = parts
        .iter()
        .map(|p| p.parse::<u64>().map(|n| n.to_string()))
        .collect::<Result<_, _>>()
        .ok()?;
    semver::Version::parse(&format!("{}{rest}", numbers.join("."))).ok()
}

/// Newest first: versions by Helm's order, then anything else by name.
pub fn newest_first(a: &str, b: &str) -> Ordering {
    // A tag writes a version's `+` as `_`.
    let key = |s: &str| order(&s.replace('_', "+"));
    match (key(a), key(b)) {
        (Some(x), Some(y)) => y.cmp(&x).then_with(|| b.cmp(a)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_versions_come_first_and_other_tags_last() {
        let mut tags = vec![
            "0.2.0",
            "latest",
            "1.0.1_build.7",
            "v1.1.0",
            "1.1.0-rc.1",
            "1.0.0",
        ];
        tags.sort_by(|a, b| newest_first(a, b));
        assert_eq!(
            tags,
            [
                "v1.1.0",
                "1.1.0-rc.1",
                "1.0.1_build.7",
                "1.0.0",
                "0.2.0",
                "latest"
            ]
        );
    }
}
