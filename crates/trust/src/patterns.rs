//! Name patterns a policy names what must be signed with: `*` matches any run of characters
//! (`/` included: `quay.io/*`), `?` one character, anything else itself.

/// The first of `patterns` that `name` matches.
pub fn first_match<'p>(patterns: &'p [String], name: &str) -> Option<&'p str> {
    patterns
        .iter()
        .find(|p| matches(p, name))
        .map(String::as_str)
}

/// Whether `name` matches `pattern`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The classic two-pointer glob match, backtracking to the last `*`.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(&at) = n.get(j) {
        match p.get(i) {
            Some('*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(&c) if c == '?' || c == at => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    i = si + 1;
                    j = sj + 1;
                    star = Some((si, sj + 1));
                }
                None => return false,
            },
        }
    }
    p.iter().skip(i).all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case("*", "cilium", true)]
    #[case("*", "", true)]
    #[case("cilium", "cilium", true)]
    #[case("cilium", "cilium-x", false)]
    #[case("cert-*", "cert-manager", true)]
    #[case("quay.io/*", "quay.io/cilium/cilium", true)]
    #[case("quay.io/*", "ghcr.io/quay.io/x", false)]
    #[case("*@refs/tags/*", "https://x/y.yaml@refs/tags/v1", true)]
    #[case("*@refs/tags/*", "https://x/y.yaml@refs/heads/main", false)]
    #[case("v?", "v1", true)]
    #[case("v?", "v12", false)]
    #[case("a*b*c", "aXbYbZc", true)]
    fn patterns(#[case] pattern: &str, #[case] name: &str, #[case] want: bool) {
        assert_eq!(matches(pattern, name), want, "{pattern} ~ {name}");
    }
}
