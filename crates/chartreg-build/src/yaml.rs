//! YAML from upstream (a chart's `Chart.yaml`, `requirements.yaml` and `values.yaml`, a
//! bundle's `images.yaml`) read within bounds, so that a hostile document is refused in
//! milliseconds and megabytes, not minutes and gigabytes. Before serde_yaml_ng sees a document:
//! 1. Its size: at most [`MAX_BYTES`], 5 MiB, the most Helm loads of one file of a chart.
//! 2. Its flow nesting (`[[[...`, `{{{...`): at most [`MAX_FLOW_DEPTH`], found in one pass over
//!    the bytes (`flow`). serde_yaml_ng refuses a document nested deeper than 128
//!    anyway, but only once libyaml has scanned all of it, and libyaml's scanner spends time in
//!    proportion to the flow depth on every token: 100,000 `[` then as many `]` (200 KB) took it
//!    16 s, 30,000 took 1.1 s.
//!
//! While it parses ([`value`]):
//! 3. Its values (scalars, sequences and mappings, keys included), aliases expanded: at most
//!    one per byte of the document (64 Ki at least), and no more than a [`Budget`] shared by
//!    the documents of one chart and its subcharts holds. serde_yaml_ng stops expanding
//!    aliases only after 100 expansions per event of the document, which padding puts out of
//!    reach: a billion-laughs bomb after 20,000 plain values (40 KB) took 1.6 s and 1.4 GB before it
//!    was refused, after 200 KB 46 s and 14 GB.

mod flow;

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde_yaml_ng::mapping::Entry;
use serde_yaml_ng::value::{Tag, TaggedValue};
use serde_yaml_ng::{Mapping, Value};

/// Refuses a document whose flow collections may nest deeper than [`MAX_FLOW_DEPTH`], before
/// it is parsed (see `flow`).
pub use flow::depth as flow_depth;

/// The most of one document read: Helm's `MaxDecompressedFileSize`, the most it loads of one
/// file of a chart.
pub const MAX_BYTES: u64 = 5 << 20;

/// How deep flow collections may nest, as `flow` finds them: twice serde_yaml_ng's own
/// recursion limit (128), which refuses whatever nests deeper anyway, once libyaml has
/// scanned it; the margin is for brackets of block text the scan cannot tell from flow ones.
/// A document of 5 MiB of values nested this deep is refused in 0.6 s (serde_yaml_ng alone:
/// 0.5 s; as many values not nested: 0.6 s).
pub const MAX_FLOW_DEPTH: u32 = 256;

/// The values a document may always hold, however short: anchors and aliases used as charts
/// use them (a block of resources repeated) stay far below.
const MIN_VALUES: u64 = 64 << 10;

/// The values all the YAML of one chart and its subcharts may hold together. The largest
/// charts' values (kube-prometheus-stack's and its subcharts') hold some tens of thousands; a
/// value costs about a hundred bytes parsed, so this bounds a chart's parsed YAML to a few
/// hundred MB.
pub const MAX_TREE_VALUES: u64 = 2 << 20;

/// Why a YAML document was refused.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("is {size} bytes, more than the {} MiB Helm loads of one file", MAX_BYTES >> 20)]
    TooLarge { size: u64 },
    #[error("nests flow collections (`[`, `{{`) more than {MAX_FLOW_DEPTH} deep, at line {line}")]
    TooDeep { line: usize },
    #[error("holds more than {limit} values once its aliases are expanded (a YAML alias bomb?)")]
    TooManyValues { limit: u64 },
    #[error(
        "holds more values than the {MAX_TREE_VALUES} the YAML of one chart and its subcharts may hold together"
    )]
    OverBudget,
    #[error("{0}")]
    Invalid(#[from] serde_yaml_ng::Error),
}

/// The values the YAML documents of one chart and its subcharts may still hold.
#[derive(Debug)]
pub struct Budget {
    left: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            left: MAX_TREE_VALUES,
        }
    }
}

/// `data` parsed, within the bounds of the module doc; the values it holds are taken from
/// `budget`.
pub fn value(data: &[u8], budget: &mut Budget) -> Result<Value, YamlError> {
    let size = data.len() as u64;
    if size > MAX_BYTES {
        return Err(YamlError::TooLarge { size });
    }
    counted(data, budget)
}

/// Checks a document of any size (a file a person writes: the content file, a list, the lock,
/// read within its own size limit) against the nesting and expansion bounds [`value`] applies,
/// so that a typed decoding of it after cannot be made to take minutes or gigabytes.
pub fn check(data: &[u8]) -> Result<(), YamlError> {
    counted(data, &mut Budget { left: u64::MAX }).map(drop)
}

/// The document's value, its flow nesting checked first and its values counted against one per
/// byte (at least [`MIN_VALUES`]) and against `budget`.
fn counted(data: &[u8], budget: &mut Budget) -> Result<Value, YamlError> {
    flow_depth(data)?;
    let own = (data.len() as u64).max(MIN_VALUES);
    let limit = own.min(budget.left);
    let counter = Counter {
        left: Cell::new(limit),
        exceeded: Cell::new(false),
    };
    let parsed = Counted(&counter).deserialize(serde_yaml_ng::Deserializer::from_slice(data));
    match parsed {
        Ok(value) => {
            budget.left = budget.left.saturating_sub(limit - counter.left.get());
            Ok(value)
        }
        Err(_) if counter.exceeded.get() && limit < own => Err(YamlError::OverBudget),
        Err(_) if counter.exceeded.get() => Err(YamlError::TooManyValues { limit }),
        Err(e) => Err(YamlError::Invalid(e)),
    }
}

/// The values one parse may still make, and whether it wanted more.
struct Counter {
    left: Cell<u64>,
    exceeded: Cell<bool>,
}

/// Makes a [`Value`] as serde_yaml_ng's own `Deserialize` does, counting each value it makes.
#[derive(Clone, Copy)]
struct Counted<'a>(&'a Counter);

impl<'de> DeserializeSeed<'de> for Counted<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.0.left.get().checked_sub(1) {
            Some(left) => self.0.left.set(left),
            None => {
                self.0.exceeded.set(true);
                return Err(de::Error::custom("too many values"));
            }
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counted<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Number(i.into()))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        Ok(Value::Number(u.into()))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Number(f.into()))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut values = Vec::new();
        while let Some(value) = seq.next_element_seed(self)? {
            values.push(value);
        }
        Ok(Value::Sequence(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut mapping = Mapping::new();
        while let Some(key) = map.next_key_seed(self)? {
            match mapping.entry(key) {
                Entry::Occupied(entry) => {
                    return Err(de::Error::custom(format_args!(
                        "duplicate entry with key {:?}",
                        entry.key()
                    )));
                }
                Entry::Vacant(entry) => {
                    entry.insert(map.next_value_seed(self)?);
                }
            }
        }
        Ok(Value::Mapping(mapping))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (tag, contents) = data.variant_seed(TagSeed)?;
        let value = de::VariantAccess::newtype_variant_seed(contents, self)?;
        Ok(Value::Tagged(Box::new(TaggedValue { tag, value })))
    }
}

/// A tag's text, as serde_yaml_ng reads it.
struct TagSeed;

impl<'de> DeserializeSeed<'de> for TagSeed {
    type Value = Tag;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tag, D::Error> {
        deserializer.deserialize_string(self)
    }
}

impl Visitor<'_> for TagSeed {
    type Value = Tag;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML tag string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Tag, E> {
        if s.is_empty() {
            return Err(E::custom("empty YAML tag is not allowed"));
        }
        Ok(Tag::new(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::alias_bomb;
    use rstest::rstest;
    use std::time::{Duration, Instant};

    fn parse(text: &str) -> Result<Value, YamlError> {
        value(text.as_bytes(), &mut Budget::default())
    }

    /// How long refusing `text` takes; it must be refused as `refused` says.
    fn refusal_time(text: &str, refused: impl Fn(&YamlError) -> bool) -> Duration {
        let start = Instant::now();
        let got = parse(text);
        let took = start.elapsed();
        match got {
            Err(e) if refused(&e) => took,
            other => panic!("not refused as expected: {other:?}"),
        }
    }

    #[rstest]
    #[case::plain("a: 1\nb: [x, 'y', \"z\"]\nc: {d: ~, e: true, f: 1.5, g: -3}\n")]
    #[case::empty("")]
    #[case::null_document("~\n")]
    #[case::anchors_and_merge("base: &b {cpu: 1}\nuse: *b\nmerged: {<<: *b, mem: 2}\n")]
    #[case::tags("a: !custom {x: 1}\nb: !!str 12\nc: !t [1]\n")]
    #[case::block_scalars(
        "script: |\n  if [ -z \"$x\" ]; then\n    echo '[{'\n  fi\nfolded: >\n  text\n"
    )]
    #[case::big_numbers("a: 18446744073709551615\nb: -9223372036854775808\nc: 1e400\n")]
    fn documents_parse_as_serde_yaml_ng_parses_them(#[case] text: &str) {
        let ours = parse(text).unwrap();
        let theirs: Value = serde_yaml_ng::from_str(text).unwrap();
        assert_eq!(ours, theirs);
    }

    #[rstest]
    #[case::duplicate_key("a: 1\na: 2\n", "duplicate entry")]
    #[case::two_documents("a: 1\n---\nb: 2\n", "more than one document")]
    #[case::syntax("a: [1, 2\n", "")]
    #[case::unknown_alias("a: *nowhere\n", "unknown anchor")]
    fn invalid_documents_are_refused_as_serde_yaml_ng_refuses_them(
        #[case] text: &str,
        #[case] words: &str,
    ) {
        let theirs = serde_yaml_ng::from_str::<Value>(text).map(|_| ());
        match parse(text) {
            Err(YamlError::Invalid(e)) => {
                assert!(theirs.is_err(), "serde_yaml_ng takes {text:?}");
                assert!(e.to_string().contains(words), "{e}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn a_billion_laughs_is_refused_at_its_values() {
        // Refused after 65,536 values, in 17 ms (serde_yaml_ng alone: 16 ms, at its
        // repetition limit), measured in a release build.
        let took = refusal_time(
            &alias_bomb(),
            |e| matches!(e, YamlError::TooManyValues { limit } if *limit == MIN_VALUES),
        );
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn padding_does_not_lift_the_bound_on_aliases() {
        // 20,000 plain values before the bomb: serde_yaml_ng alone expanded aliases for 1.6 s
        // and 1.4 GB before its repetition limit (200,000: 46 s, 14 GB); refused here after
        // 64 Ki values, in 11 ms (200,000: after as many values as bytes, in 95 ms).
        let padding = format!("pad: [{}]\n", vec!["0"; 20_000].join(","));
        let text = format!("{padding}{}", alias_bomb());
        let took = refusal_time(
            &text,
            |e| matches!(e, YamlError::TooManyValues { limit } if *limit == MIN_VALUES),
        );
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        // 100,000 `[` and as many `]`: libyaml alone scanned them for 16 s; refused here in
        // 3 µs, at the first `[` past the 256th.
        let text = format!("deep: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let took = refusal_time(&text, |e| matches!(e, YamlError::TooDeep { line: 1 }));
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn a_document_past_5_mib_is_refused_unread() {
        let text = "#".repeat(5 << 20 | 1);
        assert!(matches!(
            parse(&text),
            Err(YamlError::TooLarge { size }) if size == 5 << 20 | 1
        ));
    }

    #[test]
    fn the_budget_is_shared_by_the_documents_of_a_chart() {
        let mut budget = Budget { left: 10 };
        // A mapping and its two keys and values: 5 values.
        value(b"a: 1\nb: 2\n", &mut budget).unwrap();
        assert_eq!(budget.left, 5);
        value(b"[1, 2, 3]\n", &mut budget).unwrap();
        assert_eq!(budget.left, 1);
        assert!(matches!(
            value(b"[1, 2]\n", &mut budget),
            Err(YamlError::OverBudget)
        ));
    }
}
