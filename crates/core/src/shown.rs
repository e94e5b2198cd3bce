//! Text from upstream (chart names and versions, Helm's messages, paths inside archives) as a
//! terminal or a page shows it: control characters escaped, so that what an operator reads
//! cannot be rewritten by what it quotes (a screen cleared, a title changed, the cursor moved
//! over an earlier line, text reordered by a bidirectional override).
//!
//! [`escaped`] keeps newlines and tabs (messages are made of lines) and writes every other
//! control character (C0, DEL, C1) and every bidirectional formatting character as Rust writes
//! it in a string literal (`\u{1b}`); text with none is borrowed as it is.
//!
//! [`escaped_json`] does the same for a JSON document printed where people read it, in JSON's
//! own escape (`\u001b`), so the document still reads as the same values: serde_json escapes
//! C0 characters in strings, but writes DEL, C1 and bidirectional formatting characters as
//! they are.

use std::borrow::Cow;

/// Whether `c` is shown escaped.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with its control and bidirectional formatting characters escaped (see the module).
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `json`, a JSON document, with every character [`escaped`] writes out as `\uXXXX` (the
/// same values: such characters occur only inside strings, where the escape means them, and
/// each is in the Basic Multilingual Plane, so one escape is the whole character).
pub fn escaped_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(hidden) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        assert!(matches!(escaped("hello 1.0.0\n\tok"), Cow::Borrowed(_)));
    }

    #[test]
    fn control_and_bidirectional_characters_are_written_out() {
        assert_eq!(escaped("ctl\u{1b}[2J\u{7}"), "ctl\\u{1b}[2J\\u{7}");
        assert_eq!(escaped("a\rb\u{7f}c\u{9b}"), "a\\u{d}b\\u{7f}c\\u{9b}");
        assert_eq!(escaped("x\u{202e}y\u{2066}"), "x\\u{202e}y\\u{2066}");
        assert_eq!(escaped("line\nnext"), "line\nnext");
    }

    #[test]
    fn json_keeps_its_values_and_escapes_what_serde_json_leaves() {
        let value = serde_json::json!({"a\u{202e}": "x\u{1b}[2J\u{7f}\u{9b}\ny"});
        let json = serde_json::to_string(&value).unwrap();
        let shown = escaped_json(&json);
        assert!(!shown.chars().any(hidden), "{shown}");
        assert_eq!(shown, r#"{"a\u202e":"x\u001b[2J\u007f\u009b\ny"}"#);
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        assert!(matches!(escaped_json("{\"a\":1}"), Cow::Borrowed(_)));
    }
}
