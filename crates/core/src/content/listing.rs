//! Name lists (a repository's tags, the catalog) kept as the distribution API's JSON, made once,
//! from which any page is cut without serialising again: the whole list is shared as it is, a
//! page is one copy of its part of the document. (Keeping cut pages for clients that ask again
//! was measured and did not pay: within 1.5% either way.)

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};

/// `<head>["a","b",…]}`: the whole document, and where each name's JSON sits in it.
#[derive(Debug, Default)]
pub struct Listing {
    names: Vec<String>,
    json: Bytes,
    /// Bytes before the first name: `{"repositories":[`, `{"name":"x","tags":[`.
    head: usize,
    /// Where each name's JSON string starts and ends in `json`.
    spans: Vec<Range<usize>>,
}

impl Listing {
    /// A listing of `names` (sorted by the caller) whose document starts with `head`, the JSON
    /// up to and including the list's `[`.
    pub fn new(head: &str, names: Vec<String>) -> Self {
        // Each name quoted, with a comma; `]}` after the last.
        let capacity = names.iter().fold(head.len().saturating_add(2), |size, n| {
            size.saturating_add(n.len()).saturating_add(3)
        });
        let mut json = String::with_capacity(capacity);
        json.push_str(head);
        let mut spans = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            let start = json.len();
            // Serialising a string cannot fail.
            json.push_str(&serde_json::to_string(name).unwrap_or_default());
            spans.push(start..json.len());
        }
        json.push_str("]}");
        Listing {
            names,
            json: Bytes::from(json),
            head: head.len(),
            spans,
        }
    }

    /// The catalog: every repository name (sorted by the caller).
    pub fn catalog(names: Vec<String>) -> Self {
        Listing::new(r#"{"repositories":["#, names)
    }

    /// The tags list of `repository`: its tags (sorted by the caller).
    pub fn tags(repository: &str, tags: Vec<String>) -> Self {
        // Serialising a string cannot fail.
        let name = serde_json::to_string(repository).unwrap_or_default();
        Listing::new(&format!(r#"{{"name":{name},"tags":["#), tags)
    }

    /// The names, in order.
    #[inline]
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The document listing the names in `range` (the whole one is shared, not copied).
    #[inline]
    pub fn page(&self, range: Range<usize>) -> Bytes {
        if range == (0..self.names.len()) {
            return self.json.clone();
        }
        self.cut(range)
    }

    fn cut(&self, range: Range<usize>) -> Bytes {
        let body = match (
            self.spans.get(range.start),
            range.end.checked_sub(1).and_then(|e| self.spans.get(e)),
        ) {
            (Some(first), Some(last)) if range.start < range.end => {
                self.json.get(first.start..last.end).unwrap_or_default()
            }
            _ => &b""[..],
        };
        let head = self.json.get(..self.head).unwrap_or_default();
        let mut out =
            BytesMut::with_capacity(head.len().saturating_add(body.len()).saturating_add(2));
        out.put_slice(head);
        out.put_slice(body);
        out.put_slice(b"]}");
        out.freeze()
    }
}

impl super::Repository {
    /// Makes the tags list from the tags. Helm resolves version ranges and "latest" only
    /// against tags that are strict semantic versions (`v1.2.3` is not), so the unprefixed
    /// form of a `v` tag that is one is listed too (and names the same manifest), unless a tag
    /// of that name exists. `sorted` is every tag, in byte order.
    pub(super) fn finish_tags(&mut self, mut sorted: Vec<String>) {
        self.unprefixed = sorted
            .iter()
            .filter_map(|tag| {
                let unprefixed = tag.strip_prefix('v')?;
                let strict = semver::Version::parse(&unprefixed.replace('_', "+")).is_ok();
                let hash = self.tags.get(tag.as_str())?;
                (strict && !self.tags.contains_key(unprefixed))
                    .then(|| (unprefixed.to_owned(), *hash))
            })
            .collect();
        if !self.unprefixed.is_empty() {
            sorted.extend(self.unprefixed.keys().cloned());
            sorted.sort_unstable();
        }
        self.tag_list = Listing::tags(self.name.as_str(), sorted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing() -> Listing {
        Listing::new(
            r#"{"name":"x\"y","tags":["#,
            ["a", "b\"c", "d"].map(String::from).to_vec(),
        )
    }

    #[test]
    fn pages_are_valid_json_of_the_names_in_range() {
        let l = listing();
        for start in 0..=3 {
            for end in start..=3 {
                let page: serde_json::Value = serde_json::from_slice(&l.page(start..end)).unwrap();
                let expected: Vec<&str> =
                    l.names()[start..end].iter().map(String::as_str).collect();
                assert_eq!(
                    page,
                    serde_json::json!({"name": "x\"y", "tags": expected}),
                    "{start}..{end}"
                );
            }
        }
    }

    #[test]
    fn the_whole_list_is_shared_and_pages_are_cut() {
        let names: Vec<String> = (0..100).map(|i| format!("n{i:03}")).collect();
        let l = Listing::new(r#"{"repositories":["#, names);
        assert_eq!(
            l.page(0..100).as_ptr(),
            l.page(0..100).as_ptr(),
            "not copied"
        );
        assert_eq!(l.page(0..10), l.cut(0..10));
    }

    #[test]
    fn empty_listing() {
        let l = Listing::new(r#"{"repositories":["#, Vec::new());
        assert_eq!(&l.page(0..0)[..], br#"{"repositories":[]}"#);
    }
}
