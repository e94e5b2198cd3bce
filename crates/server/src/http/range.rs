//! `Range` request headers (RFC 9110 §14) for blob downloads: one byte range is served as a
//! 206; anything this module does not understand (other units, several ranges, bad syntax)
//! is ignored and the whole blob is sent, as the RFC allows.

/// A syntactically valid single byte-range spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeSpec {
    /// `bytes=first-last`
    Bounded { first: u64, last: u64 },
    /// `bytes=first-`
    From { first: u64 },
    /// `bytes=-length`: the last `length` bytes.
    Suffix { length: u64 },
}

/// What to send for a blob of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// The whole blob (no range, or one that is ignored).
    Full,
    /// Bytes `start..=end`.
    Partial { start: u64, end: u64 },
    /// No byte of the range exists: 416.
    Unsatisfiable,
}

impl RangeSpec {
    /// Parses a `Range` header; `None` means "ignore it".
    pub fn parse(header: &str) -> Option<RangeSpec> {
        let (unit, set) = header.trim().split_once('=')?;
        if !unit.trim().eq_ignore_ascii_case("bytes") || set.contains(',') {
            return None;
        }
        let (first, last) = set.trim().split_once('-')?;
        let number = |s: &str| -> Option<u64> {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        };
        match (first.trim(), last.trim()) {
            ("", "") => None,
            ("", length) => Some(RangeSpec::Suffix {
                length: number(length)?,
            }),
            (first, "") => Some(RangeSpec::From {
                first: number(first)?,
            }),
            (first, last) => Some(RangeSpec::Bounded {
                first: number(first)?,
                last: number(last)?,
            }),
        }
    }

    /// The bytes this range selects in a blob of `size` bytes.
    pub fn select(self, size: u64) -> Selection {
        let (start, end) = match self {
            RangeSpec::Bounded { first, last } if first <= last => {
                (first, last.min(size.saturating_sub(1)))
            }
            RangeSpec::Bounded { .. } => return Selection::Unsatisfiable,
            RangeSpec::From { first } => (first, size.saturating_sub(1)),
            RangeSpec::Suffix { length } if length > 0 => {
                (size.saturating_sub(length), size.saturating_sub(1))
            }
            RangeSpec::Suffix { .. } => return Selection::Unsatisfiable,
        };
        if size == 0 || start >= size {
            return Selection::Unsatisfiable;
        }
        Selection::Partial { start, end }
    }
}

/// The selection for an optional `Range` header.
pub fn select(header: Option<&str>, size: u64) -> Selection {
    header
        .and_then(RangeSpec::parse)
        .map_or(Selection::Full, |spec| spec.select(size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::bounded("bytes=500-1499", Selection::Partial { start: 500, end: 1499 })]
    #[case::open_end("bytes=500-", Selection::Partial { start: 500, end: 2047 })]
    #[case::suffix("bytes=-500", Selection::Partial { start: 1548, end: 2047 })]
    #[case::suffix_longer_than_blob("bytes=-5000", Selection::Partial { start: 0, end: 2047 })]
    #[case::clamped("bytes=2000-5000", Selection::Partial { start: 2000, end: 2047 })]
    #[case::first_byte("bytes=0-0", Selection::Partial { start: 0, end: 0 })]
    #[case::last_byte("bytes=2047-2047", Selection::Partial { start: 2047, end: 2047 })]
    #[case::whole("bytes=0-", Selection::Partial { start: 0, end: 2047 })]
    #[case::spaces(" bytes = 1 - 2 ", Selection::Partial { start: 1, end: 2 })]
    #[case::unit_case("Bytes=1-2", Selection::Partial { start: 1, end: 2 })]
    #[case::past_end("bytes=5000-10000", Selection::Unsatisfiable)]
    #[case::at_end("bytes=2048-", Selection::Unsatisfiable)]
    #[case::reversed("bytes=500-0", Selection::Unsatisfiable)]
    #[case::empty_suffix("bytes=-0", Selection::Unsatisfiable)]
    #[case::other_unit("items=0-1", Selection::Full)]
    #[case::several("bytes=0-1,5-6", Selection::Full)]
    #[case::no_numbers("bytes=-", Selection::Full)]
    #[case::garbage("bytes=a-b", Selection::Full)]
    #[case::negative("bytes=--1", Selection::Full)]
    #[case::no_equals("bytes", Selection::Full)]
    #[case::overflow("bytes=99999999999999999999999-", Selection::Full)]
    fn ranges_of_a_2048_byte_blob(#[case] header: &str, #[case] expected: Selection) {
        assert_eq!(select(Some(header), 2048), expected);
    }

    #[test]
    fn no_header_and_empty_blob() {
        assert_eq!(select(None, 10), Selection::Full);
        assert_eq!(select(Some("bytes=0-"), 0), Selection::Unsatisfiable);
        assert_eq!(select(Some("bytes=-1"), 0), Selection::Unsatisfiable);
    }
}
