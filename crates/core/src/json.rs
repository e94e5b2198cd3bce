//! JSON strings written by functions that cannot fail: text goes in, a quoted JSON string comes
//! out, escaped as serde_json escapes it (`"`, `\`, the short forms `\b \f \n \r \t`, other
//! control characters as `\u00XX`). For documents made of strings (error envelopes, name lists,
//! YAML double-quoted scalars) where a serialiser's `Result` would only ever be `Ok`.

/// Appends `text` to `out` as a JSON string, quotes included.
pub fn push_string(out: &mut String, text: &str) {
    out.reserve(text.len().saturating_add(2));
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => {
                // Below U+0020: two hex digits, each below 16.
                let code = u32::from(c);
                out.push_str("\\u00");
                for digit in [code >> 4, code & 0xf] {
                    out.push(char::from_digit(digit, 16).unwrap_or('0'));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `text` as a JSON string, quotes included.
pub fn string(text: &str) -> String {
    let mut out = String::new();
    push_string(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("plain", r#""plain""#)]
    #[case("", r#""""#)]
    #[case("q\"\\/", r#""q\"\\/""#)]
    #[case("\n\t\r\u{8}\u{c}", r#""\n\t\r\b\f""#)]
    #[case("\u{0}\u{1}\u{1f}\u{7f}", "\"\\u0000\\u0001\\u001f\u{7f}\"")]
    #[case("<a & b> é 日本 \u{2028}", "\"<a & b> é 日本 \u{2028}\"")]
    fn quotes_strings(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(string(text), expected);
    }

    #[test]
    fn agrees_with_serde_json_on_every_ascii_character() {
        for byte in 0u8..=0x7f {
            let text = format!("a{}b", char::from(byte));
            assert_eq!(string(&text), serde_json::to_string(&text).unwrap());
        }
    }
}
