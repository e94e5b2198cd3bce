//! Text from upstream (chart names and versions, Helm's messages, paths inside archives) as a
//! terminal or a page shows it: control characters escaped, so that what an operator reads
//! cannot be rewritten by what it quotes (a screen cleared, a title changed, the cursor moved
//! over an earlier line, text reordered by a bidirectional override).
//!
//! [`escaped`] keeps newlines and tabs (messages are made of lines) and writes every other
//! control character (C0, DEL, C1) and every bidirectional formatting character as Rust writes
//! it in a string literal (`\u{1b}`); text with none is borrowed as it is.

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
}
