//! The mapping file of `addons-config --mapping`: a YAML map of data key to chart name
//! (`nfd: node-feature-discovery`, one `KEY: CHART` a line, `#` comments, keys and charts
//! quoted or not), read by serde_yaml_ng.
//!
//! The file is read whole and deserialized by [`Entries`], which takes each key and chart as a
//! string (so `1.0` or `true` stay as written) and refuses an empty one, or a key given twice,
//! while serde_yaml_ng still knows where it is. Every error names the file and the line, with
//! the line's text: the line of the position serde_yaml_ng gives, or, when that line holds no
//! entry (the end of the file, a blank line, a comment), the last line before it that does.

use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Unexpected, Visitor};

/// Data key -> chart name, as the mapping file gives them.
pub type Mapping = std::collections::BTreeMap<String, String>;

/// Why the mapping file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MappingError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: line {number}: expected `KEY: CHART`, not `{line}` ({reason})", path.display())]
    Line {
        path: PathBuf,
        number: usize,
        line: String,
        reason: serde_yaml_ng::Error,
    },
    #[error("{}: line {number}: `{key}` is mapped twice", path.display())]
    Twice {
        path: PathBuf,
        number: usize,
        key: String,
    },
    /// A problem serde_yaml_ng gives no position for (more than one document).
    #[error("{}: {reason}", path.display())]
    Whole {
        path: PathBuf,
        reason: serde_yaml_ng::Error,
    },
}

/// Reads the mapping file at `path`.
pub fn read_mapping(path: &Path) -> Result<Mapping, MappingError> {
    let text = std::fs::read_to_string(path).map_err(|source| MappingError::Read {
        path: path.to_owned(),
        source,
    })?;
    let twice = RefCell::new(None);
    let entries = Entries { twice: &twice };
    entries
        .deserialize(serde_yaml_ng::Deserializer::from_str(&text))
        .map_err(|reason| {
            let Some(location) = reason.location() else {
                return MappingError::Whole {
                    path: path.to_owned(),
                    reason,
                };
            };
            let (number, line) = entry_line(&text, location.line());
            match twice.take() {
                Some(key) => MappingError::Twice {
                    path: path.to_owned(),
                    number,
                    key,
                },
                None => MappingError::Line {
                    path: path.to_owned(),
                    number,
                    line: line.to_owned(),
                    reason,
                },
            }
        })
}

/// The line (1-based) to name for a problem serde_yaml_ng found at line `at`, and its text
/// (see the module doc).
fn entry_line(text: &str, at: usize) -> (usize, &str) {
    let holds_entry = |line: &&str| !line.is_empty() && !line.starts_with('#');
    let lines = || text.lines().map(str::trim);
    match lines().nth(at.saturating_sub(1)).filter(holds_entry) {
        Some(line) => (at, line),
        None => lines()
            .zip(1..)
            .take(at.saturating_sub(1))
            .filter(|(line, _)| holds_entry(line))
            .last()
            .map_or((at, ""), |(line, n)| (n, line)),
    }
}

/// The whole file: a map (or nothing at all), each key and chart through [`Name`].
struct Entries<'a> {
    /// The key given twice, when that is why the file was refused.
    twice: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = Mapping;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Mapping, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = Mapping;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`KEY: CHART` lines")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Mapping, A::Error> {
        let mut mapping = Mapping::new();
        while let Some(key) = map.next_key_seed(Name::Key {
            seen: &mapping,
            twice: self.twice,
        })? {
            let chart = map.next_value_seed(Name::Chart)?;
            mapping.insert(key, chart);
        }
        Ok(mapping)
    }

    /// An empty file, or one of comments only.
    fn visit_unit<E>(self) -> Result<Mapping, E> {
        Ok(Mapping::new())
    }
}

/// A key or a chart: a string that is not empty (and, for a key, not seen before). Checked in
/// the visitor, so that serde_yaml_ng gives the error the scalar's position.
enum Name<'a> {
    Key {
        seen: &'a Mapping,
        twice: &'a RefCell<Option<String>>,
    },
    Chart,
}

impl<'de> DeserializeSeed<'de> for Name<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Name::Key { .. } => "a data key",
            Name::Chart => "a chart name",
        })
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<String, E> {
        if value.trim().is_empty() {
            return Err(E::invalid_value(Unexpected::Str(value), &self));
        }
        match self {
            Name::Key { seen, twice } if seen.contains_key(value) => {
                twice.replace(Some(value.to_owned()));
                Err(E::custom(format_args!("`{value}` is mapped twice")))
            }
            _ => Ok(value.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("greeter: hello # the greeter\n\"nfd\": 'node-feature-discovery'\n", Ok(&[("greeter", "hello"), ("nfd", "node-feature-discovery")][..]))]
    #[case("# only comments\n\n# here\n", Ok(&[][..]))]
    #[case("", Ok(&[][..]))]
    #[case("v: 1.0\nflag: true\n", Ok(&[("flag", "true"), ("v", "1.0")][..]))]
    #[case(
        "# only a comment\n\nok: chart\nno colon here\n",
        Err("line 4: expected `KEY: CHART`, not `no colon here`")
    )]
    #[case(
        "ok: chart\nno colon here\n# a comment\n\n",
        Err("line 2: expected `KEY: CHART`, not `no colon here`")
    )]
    #[case(": chart\n", Err("line 1: expected `KEY: CHART`, not `: chart`"))]
    #[case(
        "ok: chart\n'': chart\n",
        Err("line 2: expected `KEY: CHART`, not `'': chart`")
    )]
    #[case(
        "ok: chart\nempty:\nnext: chart\n",
        Err("line 2: expected `KEY: CHART`, not `empty:`")
    )]
    #[case(
        "ok: chart\nlist: [a, b]\n",
        Err("line 2: expected `KEY: CHART`, not `list: [a, b]`")
    )]
    #[case(
        "ok: chart\n  indented: chart\n",
        Err("line 2: expected `KEY: CHART`, not `indented: chart`")
    )]
    #[case("- chart\n", Err("line 1: expected `KEY: CHART`, not `- chart`"))]
    #[case(
        "nfd: node-feature-discovery\n\"nfd\": other # again\n",
        Err("line 2: `nfd` is mapped twice")
    )]
    fn mapping_files(#[case] text: &str, #[case] expected: Result<&[(&str, &str)], &str>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapping.yaml");
        std::fs::write(&path, text).unwrap();
        match (read_mapping(&path), expected) {
            (Ok(mapping), Ok(pairs)) => {
                let pairs: Vec<(String, String)> = pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect();
                assert_eq!(mapping.into_iter().collect::<Vec<_>>(), pairs);
            }
            (Err(e @ MappingError::Line { .. }), Err(message)) => {
                // Then serde_yaml_ng's reason, in parentheses.
                let message = format!("{}: {message} (", path.display());
                assert!(e.to_string().starts_with(&message), "{e}\nnot {message}");
            }
            (Err(e @ MappingError::Twice { .. }), Err(message)) => {
                assert_eq!(e.to_string(), format!("{}: {message}", path.display()));
            }
            (got, _) => panic!("{got:?}"),
        }
    }

    #[test]
    fn more_than_one_document_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapping.yaml");
        std::fs::write(&path, "a: b\n---\nc: d\n").unwrap();
        let e = read_mapping(&path).unwrap_err();
        assert!(matches!(e, MappingError::Whole { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with(&format!("{}: ", path.display())),
            "{e}"
        );
    }

    #[test]
    fn a_missing_mapping_file_is_named() {
        let path = Path::new("/nonexistent/mapping.yaml");
        let e = read_mapping(path).unwrap_err();
        assert!(
            matches!(&e, MappingError::Read { path: p, .. } if p == path),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with("/nonexistent/mapping.yaml: "),
            "{e}"
        );
    }
}
