//! `.helmignore` rules, evaluated exactly as Helm's `pkg/ignore` evaluates them (its quirks
//! included, since the point is to package what `helm package` packages):
//!
//! - one rule per line, trimmed; blank lines and `#` comments skipped; `**` is an error;
//! - `!rule` negates; a trailing `/` makes a rule match folders only; a leading `/` or any `/`
//!   inside matches the whole path, otherwise only the last path component is matched;
//! - patterns are Go's `filepath.Match`: `*` (no `/`), `?`, `[...]` classes (`^` negates),
//!   `\` escapes;
//! - rules are tried in order and the first that decides wins. A negated rule decides "ignore"
//!   for every path it does *not* match (and for every file, when it is for folders), which is
//!   what Helm does;
//! - `templates/.?*` (hidden files in `templates/`) is always added after the file's rules.

/// The rules of one `.helmignore`, plus Helm's default.
#[derive(Debug, Clone)]
pub(super) struct Rules {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    glob: String,
    negate: bool,
    dir_only: bool,
    /// Matched against the whole path, not just its last component.
    whole_path: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules::parse("").unwrap_or(Rules {
            patterns: Vec::new(),
        })
    }
}

impl Rules {
    /// The rules of a `.helmignore` file; an error gives the line number and what is wrong.
    pub(super) fn parse(text: &str) -> Result<Rules, (usize, String)> {
        let mut patterns = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if let Some(pattern) = Pattern::parse(line).map_err(|e| (number + 1, e))? {
                patterns.push(pattern);
            }
        }
        if let Some(default) = Pattern::parse("templates/.?*").ok().flatten() {
            patterns.push(default);
        }
        Ok(Rules { patterns })
    }

    /// Whether `path` (relative to the chart, `/`-separated) is left out.
    pub(super) fn ignores(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." {
            return false;
        }
        for p in &self.patterns {
            if p.negate {
                if p.dir_only && !is_dir {
                    return true;
                }
                if !p.matches(path) {
                    return true;
                }
                continue;
            }
            if p.dir_only && !is_dir {
                continue;
            }
            if p.matches(path) {
                return true;
            }
        }
        false
    }
}

impl Pattern {
    fn parse(line: &str) -> Result<Option<Pattern>, String> {
        let rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(None);
        }
        if rule.contains("**") {
            return Err("double-star (**) syntax is not supported".into());
        }
        if glob_match(rule, "abc").is_none() {
            return Err(format!("`{rule}` is not a valid pattern"));
        }
        let (negate, rule) = match rule.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, rule),
        };
        let (dir_only, rule) = match rule.strip_suffix('/') {
            Some(rest) => (true, rest),
            None => (false, rule),
        };
        let (whole_path, glob) = match rule.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (rule.contains('/'), rule),
        };
        Ok(Some(Pattern {
            glob: glob.to_owned(),
            negate,
            dir_only,
            whole_path,
        }))
    }

    fn matches(&self, path: &str) -> bool {
        let name = if self.whole_path {
            path
        } else {
            path.rsplit('/').next().unwrap_or(path)
        };
        glob_match(&self.glob, name).unwrap_or(false)
    }
}

/// Go's `filepath.Match(pattern, name)` on `/`-separated paths: `Some(matched)`, or `None`
/// for a malformed pattern.
fn glob_match(pattern: &str, name: &str) -> Option<bool> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> Option<bool> {
    let Some((&first, rest)) = p.split_first() else {
        return Some(n.is_empty());
    };
    match first {
        '*' => {
            // `*` takes any run of non-separators; try every length, shortest first. A
            // malformed pattern after it is an error whatever the name.
            let mut matched = false;
            for len in 0..=n.len() {
                let (taken, tail) = n.split_at(len);
                if taken.last() == Some(&'/') {
                    break;
                }
                if match_from(rest, tail)? {
                    matched = true;
                    break;
                }
            }
            if !matched {
                // Check the rest of the pattern is well formed (Go reports it even on no match).
                match_from(rest, &[])?;
            }
            Some(matched)
        }
        '?' => match n.split_first() {
            Some((&c, n_rest)) if c != '/' => match_from(rest, n_rest),
            _ => well_formed(rest).map(|()| false),
        },
        '[' => {
            let (class_len, matches) = class(rest, n.first().copied())?;
            let after = rest.get(class_len..)?;
            match n.split_first() {
                Some((_, n_rest)) if matches => match_from(after, n_rest),
                _ => well_formed(after).map(|()| false),
            }
        }
        '\\' => {
            let (&escaped, rest) = rest.split_first()?;
            match n.split_first() {
                Some((&c, n_rest)) if c == escaped => match_from(rest, n_rest),
                _ => well_formed(rest).map(|()| false),
            }
        }
        literal => match n.split_first() {
            Some((&c, n_rest)) if c == literal => match_from(rest, n_rest),
            _ => well_formed(rest).map(|()| false),
        },
    }
}

/// `Some(())` when the pattern is well formed.
fn well_formed(p: &[char]) -> Option<()> {
    match_from(p, &[]).map(|_| ())
}

/// A character class after its `[`, as Go reads one: its length up to and including `]`, and
/// whether `c` (when there is one) is in it.
fn class(p: &[char], c: Option<char>) -> Option<(usize, bool)> {
    let negated = p.first() == Some(&'^');
    let mut i = usize::from(negated);
    let mut matched = false;
    let mut ranges = 0;
    loop {
        if p.get(i) == Some(&']') && ranges > 0 {
            i += 1;
            break;
        }
        let (low, next) = class_char(p, i)?;
        let (high, next) = if p.get(next) == Some(&'-') {
            class_char(p, next + 1)?
        } else {
            (low, next)
        };
        if c.is_some_and(|c| low <= c && c <= high) {
            matched = true;
        }
        ranges += 1;
        i = next;
    }
    Some((i, matched != negated))
}

/// One possibly escaped character of a class at `i` (Go's `getEsc`), and where the next one
/// starts: a bare `-` or `]`, or a class that ends there, is malformed.
fn class_char(p: &[char], i: usize) -> Option<(char, usize)> {
    let (c, next) = match *p.get(i)? {
        '-' | ']' => return None,
        '\\' => (*p.get(i + 1)?, i + 2),
        c => (c, i + 1),
    };
    (next < p.len()).then_some((c, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("*.txt", "a.txt", Some(true))]
    #[case("*.txt", "a/b.txt", Some(false))]
    #[case("a*", "abc", Some(true))]
    #[case("a?c", "abc", Some(true))]
    #[case("a?c", "a/c", Some(false))]
    #[case("[a-c]x", "bx", Some(true))]
    #[case("[^a-c]x", "bx", Some(false))]
    #[case("[^a-c]x", "dx", Some(true))]
    #[case("\\*", "*", Some(true))]
    #[case("\\*", "a", Some(false))]
    #[case("[", "a", None)]
    #[case("a[", "b", None)]
    #[case("[]a]", "a", None)]
    #[case("templates/.?*", "templates/.hidden", Some(true))]
    #[case("templates/.?*", "templates/.", Some(false))]
    #[case("templates/.?*", "templates/x/.y", Some(false))]
    fn globs_match_as_go_does(
        #[case] pattern: &str,
        #[case] name: &str,
        #[case] expected: Option<bool>,
    ) {
        assert_eq!(glob_match(pattern, name), expected, "{pattern} ~ {name}");
    }

    #[test]
    fn rules_decide_as_helm_does() {
        let rules = Rules::parse("# comment\n\n*.tmp\nsecrets/\n/top.txt\ndocs/*.md\n").unwrap();
        for (path, dir, ignored) in [
            ("a.tmp", false, true),
            ("x/a.tmp", false, true),
            ("secrets", true, true),
            ("secrets", false, false),
            ("top.txt", false, true),
            ("x/top.txt", false, false),
            ("docs/a.md", false, true),
            ("docs/x/a.md", false, false),
            ("templates/.keep", false, true),
            ("templates/cm.yaml", false, false),
            ("values.yaml", false, false),
        ] {
            assert_eq!(rules.ignores(path, dir), ignored, "{path}");
        }
        // Helm's negation: a negated rule ignores whatever it does not match.
        let rules = Rules::parse("!keep.txt\n").unwrap();
        assert!(!rules.ignores("keep.txt", false));
        assert!(rules.ignores("values.yaml", false));
        assert_eq!(
            Rules::parse("ok\nbad/**/x\n").unwrap_err().0,
            2,
            "the line is named"
        );
        assert!(Rules::parse("[").is_err());
    }
}
