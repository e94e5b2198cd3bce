//! JSON exactly as Go's `encoding/json` writes it, so that chart configs (and the manifests
//! around them) match what `helm push` writes byte for byte: serde_json's compact output plus Go's HTML-safe escaping of `<`, `>`, `&` and the
//! line/paragraph separators U+2028/U+2029. (Go and serde_json already agree on `"`, `\`,
//! control characters and the short forms `\b \f \n \r \t`.)

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, Serializer};

struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            let escaped = match c {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            writer.write_all(fragment.get(start..i).unwrap_or_default().as_bytes())?;
            writer.write_all(escaped.as_bytes())?;
            start = i.saturating_add(c.len_utf8());
        }
        writer.write_all(fragment.get(start..).unwrap_or_default().as_bytes())
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        char_escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        CompactFormatter.write_char_escape(writer, char_escape)
    }
}

/// A document serde_json refuses to write: a map whose keys are not strings, or a value whose
/// `Serialize` fails. The OCI documents and chart metadata written here have neither; a type
/// that gains one is this error, never an empty document.
#[derive(Debug, thiserror::Error)]
#[error("cannot write a {document} as JSON: {source}")]
pub struct Unwritable {
    /// The Rust type that was being written.
    pub document: &'static str,
    #[source]
    pub source: serde_json::Error,
}

/// Serialises `value` as Go's `json.Marshal` would.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Unwritable> {
    let mut out = Vec::new();
    match value.serialize(&mut Serializer::with_formatter(&mut out, GoFormatter)) {
        Ok(()) => Ok(out),
        Err(source) => Err(Unwritable {
            document: std::any::type_name::<T>(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("plain", r#""plain""#)]
    #[case("a & b <c>", r#""a \u0026 b \u003cc\u003e""#)]
    #[case("line\u{2028}para\u{2029}", r#""line\u2028para\u2029""#)]
    #[case("q\"\\\n\t\r\u{8}\u{c}\u{1}", r#""q\"\\\n\t\r\b\f\u0001""#)]
    #[case("é ü 日本", "\"é ü 日本\"")]
    #[case("\u{7f}", "\"\u{7f}\"")]
    fn escapes_like_go(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(
            String::from_utf8(to_vec(&input).unwrap()).unwrap(),
            expected
        );
    }

    #[test]
    fn a_map_with_keys_other_than_strings_is_an_error() {
        let map: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let e = to_vec(&map).unwrap_err();
        assert!(e.to_string().contains("BTreeMap"), "{e}");
    }
}
