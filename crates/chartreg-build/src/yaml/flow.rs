//! Flow nesting found before libyaml scans a document, in one pass over its bytes: libyaml's
//! scanner spends time in proportion to the flow depth on every token, so a document nested
//! 100,000 deep takes it 16 s, and serde_yaml_ng's own recursion limit is checked only after.

use super::{MAX_FLOW_DEPTH, YamlError};

/// Refuses `data` when a reading of it nests flow collections deeper than
/// [`MAX_FLOW_DEPTH`].
///
/// Inside flow collections the scan follows libyaml's scanner: quoted scalars, plain scalars,
/// comments, anchors and tags, where a bracket is text. Outside them it does not follow the
/// block context (indentation, block scalars): any `[` or `{` there may open a flow collection,
/// and is read both ways. Each lexer state keeps the deepest nesting any reading can be at in
/// it, so the depth found is never less than libyaml's. It is more by the brackets a reading
/// of block text as flow text leaves open, until what libyaml would stop at ends that reading:
/// a `- ` item, a block scalar's `|` or `>`, a document marker.
pub fn depth(data: &[u8]) -> Result<(), YamlError> {
    let mut readings = Readings::default();
    let mut line = 1;
    for (i, &c) in data.iter().enumerate() {
        let at_line_start = i == 0 || data.get(i - 1) == Some(&b'\n');
        if at_line_start && document_marker(data.get(i..)) {
            // `---` or `...`: libyaml stops in a flow collection, and goes on outside one.
            readings = Readings::default();
        }
        readings = readings.step(c, data.get(i + 1).copied());
        if c == b'\n' {
            line += 1;
        }
        if readings.deepest() > MAX_FLOW_DEPTH {
            return Err(YamlError::TooDeep { line });
        }
    }
    Ok(())
}

/// For each lexer state inside a flow collection, the deepest nesting a reading of the bytes
/// so far can be at in that state; 0 when no reading is in it.
#[derive(Debug, Clone, Copy, Default)]
struct Readings {
    /// Between tokens (where a token may start).
    token: u32,
    /// In a plain scalar.
    plain: u32,
    /// After blanks or a line break in a plain scalar.
    blank: u32,
    /// In a single-quoted scalar.
    single: u32,
    /// On the second `'` of a `''` in a single-quoted scalar.
    single_pair: u32,
    /// In a double-quoted scalar.
    double: u32,
    /// After a `\` in a double-quoted scalar.
    escape: u32,
    /// In a comment.
    comment: u32,
    /// In an anchor or an alias.
    anchor: u32,
    /// In a tag.
    tag: u32,
}

fn up(slot: &mut u32, depth: u32) {
    *slot = (*slot).max(depth);
}

/// Whether `rest` starts with a document marker, `---` or `...` before a blank or the end.
fn document_marker(rest: Option<&[u8]>) -> bool {
    match rest {
        Some([b'-', b'-', b'-', after @ ..]) | Some([b'.', b'.', b'.', after @ ..]) => {
            blank_or_end(after.first().copied())
        }
        _ => false,
    }
}

/// libyaml's `IS_BLANKZ`: a blank, a line break or the end.
fn blank_or_end(c: Option<u8>) -> bool {
    matches!(c, None | Some(b' ' | b'\t' | b'\r' | b'\n'))
}

impl Readings {
    fn deepest(&self) -> u32 {
        [
            self.token,
            self.plain,
            self.blank,
            self.single,
            self.single_pair,
            self.double,
            self.escape,
            self.comment,
            self.anchor,
            self.tag,
        ]
        .into_iter()
        .max()
        .unwrap_or_default()
    }

    /// The readings after `c` (followed by `next`).
    fn step(&self, c: u8, next: Option<u8>) -> Readings {
        let mut n = Readings::default();
        // The block context, always a reading, at depth 0.
        if matches!(c, b'[' | b'{') {
            up(&mut n.token, 1);
        }
        if self.token > 0 {
            n.between(c, next, self.token);
        }
        if self.plain > 0 {
            n.in_plain(c, next, self.plain);
        }
        if self.blank > 0 {
            // After blanks, `#` starts a comment; right after text it is text.
            match c {
                b'#' => up(&mut n.comment, self.blank),
                _ => n.in_plain(c, next, self.blank),
            }
        }
        if self.single > 0 {
            match (c, next) {
                (b'\'', Some(b'\'')) => up(&mut n.single_pair, self.single),
                (b'\'', _) => up(&mut n.token, self.single),
                _ => up(&mut n.single, self.single),
            }
        }
        up(&mut n.single, self.single_pair);
        if self.double > 0 {
            match c {
                b'\\' => up(&mut n.escape, self.double),
                b'"' => up(&mut n.token, self.double),
                _ => up(&mut n.double, self.double),
            }
        }
        up(&mut n.double, self.escape);
        if self.comment > 0 {
            match c {
                b'\r' | b'\n' => up(&mut n.token, self.comment),
                _ => up(&mut n.comment, self.comment),
            }
        }
        if self.anchor > 0 {
            // Letters, digits, `_` and `-`; what ends the name is read as itself.
            match c {
                b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' | b'_' | b'-' => {
                    up(&mut n.anchor, self.anchor);
                }
                _ => n.between(c, next, self.anchor),
            }
        }
        if self.tag > 0 {
            // A tag ends at a blank, or at a `,` in a flow collection (which a verbatim tag,
            // `!<...>`, may also hold); any other end is an error that stops the scanner.
            match c {
                b' ' | b'\t' | b'\r' | b'\n' => up(&mut n.token, self.tag),
                b',' => {
                    up(&mut n.token, self.tag);
                    up(&mut n.tag, self.tag);
                }
                _ => up(&mut n.tag, self.tag),
            }
        }
        n
    }

    /// A reading at `depth` in a plain scalar at `c`: in a flow collection, it ends at a flow
    /// indicator, or at a `:` before a blank; a line break does not end it.
    fn in_plain(&mut self, c: u8, next: Option<u8>, depth: u32) {
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => up(&mut self.blank, depth),
            b',' | b'[' | b']' | b'{' | b'}' => self.between(c, next, depth),
            b':' if blank_or_end(next) => self.between(c, next, depth),
            // libyaml stops at "found unexpected ':'".
            b':' if matches!(next, Some(b',' | b'?' | b'[' | b']' | b'{' | b'}')) => {}
            _ => up(&mut self.plain, depth),
        }
    }

    /// A reading at `depth` where a token may start at `c`.
    fn between(&mut self, c: u8, next: Option<u8>, depth: u32) {
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | b',' | b'?' | b':' => up(&mut self.token, depth),
            b'-' if !blank_or_end(next) => up(&mut self.plain, depth),
            b'#' => up(&mut self.comment, depth),
            b'[' | b'{' => up(&mut self.token, depth.saturating_add(1)),
            // Back in the block context at 0, which is always a reading.
            b']' | b'}' => up(&mut self.token, depth.saturating_sub(1)),
            b'\'' => up(&mut self.single, depth),
            b'"' => up(&mut self.double, depth),
            b'&' | b'*' => up(&mut self.anchor, depth),
            b'!' => up(&mut self.tag, depth),
            // libyaml stops: these start no token in a flow collection, and a `- ` entry is
            // one of a block sequence. So ends a reading of block text as flow text.
            b'-' | b'|' | b'>' | b'%' | b'@' | b'`' => {}
            _ => up(&mut self.plain, depth),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::sequences("[".repeat(257))]
    #[case::mappings("{a: ".repeat(257))]
    #[case::mixed("[{a: ".repeat(129))]
    // A quoted `]` between the opening brackets closes nothing.
    #[case::quoted_closers("[\"]\", ".repeat(257))]
    #[case::single_quoted_closers("['it''s ]', ".repeat(257))]
    #[case::commented_closers("[ #]]]]\n".repeat(257))]
    #[case::tagged_closers("[!<]> ".repeat(257))]
    // An apostrophe in a block scalar or plain text opens no quote that hides what follows.
    #[case::after_apostrophe(format!("a: it's\nb: |\n  don't\nc: {}", "[".repeat(257)))]
    #[case::after_plain_quote(format!("[a 'b, {}", "[".repeat(256)))]
    #[case::after_a_dash_in_a_plain_scalar(format!("[a -b, {}", "[".repeat(256)))]
    fn a_reading_deeper_than_the_limit_is_refused(#[case] text: String) {
        assert!(
            matches!(depth(text.as_bytes()), Err(YamlError::TooDeep { .. })),
            "{text:?}"
        );
    }

    #[rstest]
    #[case::at_the_limit(format!("{}{}", "[".repeat(256), "]".repeat(256)))]
    #[case::many_shallow("a: [1, [2]]\n".repeat(10_000))]
    #[case::brackets_in_text("a: \"[[x]] {{ .x }}\"\nb: '{{ .Values.x }}'\nc: x[0]\n# [see] {{x\n".repeat(1_000))]
    #[case::json_in_a_block_scalar(format!("d: |\n  {}\n", "{\"a\": [1, {\"b\": \"]\"}]}".repeat(1_000)))]
    #[case::regexes("r: '^[a-z]+(\\[[0-9]\\])?$'\n".repeat(1_000))]
    #[case::unbalanced_in_strings("p: \"^[^\\\\[]+$\"\nq: '[x'\n# see [1\n".repeat(1_000))]
    // A list item or a block scalar's header ends a reading of block text as flow text.
    #[case::lists_in_block_scalars(format!("notes: |\n{}", "  - it's [a list, or {a map: it's}\n".repeat(1_000)))]
    #[case::block_scalars(format!("{}", "a: |\n  [x {y\n".repeat(1_000)))]
    #[case::documents("[[[[\n---\n".repeat(1_000))]
    fn usual_documents_pass_the_scan(#[case] text: String) {
        depth(text.as_bytes()).unwrap();
    }
}
