//! How a message shows a source's own words (an error body, a registry's message, a TLS or
//! network error naming a server's certificate): [`quoted`], bounded and on one line, and an
//! error with its causes as one line ([`error_chain`]).

/// How many characters of a source's own words (an error body, a registry's message) a
/// message quotes.
pub const QUOTED: usize = 512;

/// `text`, a source's own words, as a message quotes them: its first [`QUOTED`] characters,
/// trimmed, on one line (line breaks as spaces), ` [...]` where it was cut. (Control characters
/// are escaped where messages are printed.)
pub fn quoted(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text
        .chars()
        .take(QUOTED)
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if text.chars().nth(QUOTED).is_some() {
        out.push_str(" [...]");
    }
    out
}

/// An error with its causes, as one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sources_words_are_quoted_on_one_line_and_bounded() {
        assert_eq!(quoted("  not found\r\n"), "not found");
        assert_eq!(quoted("a\nb"), "a b");
        let long = "é".repeat(QUOTED + 1);
        let shown = quoted(&long);
        assert_eq!(shown.chars().count(), QUOTED + " [...]".len());
        assert!(shown.ends_with(" [...]"));
    }
}
