//! Name lists (a repository's tags, the catalog) kept as the distribution API's JSON, made once,
//! from which any page is cut without serialising again: the whole list is shared as it is, a
//! page is one copy of its part of the document. (Keeping cut pages for clients that ask again
//! was measured and did not pay: within 1.5% either way.)

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};

use super::Manifest;

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
            crate::json::push_string(&mut json, name);
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
        let name = crate::json::string(repository);
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
    /// form of a `v` tag that names a chart, and is one, is listed too (and names the same
    /// manifest), unless a tag of that name exists. Every other tag (an image's, a
    /// signature's) is listed as it is, and nothing beside it: an image's tags list is
    /// upstream's. `sorted` is every tag, in byte order.
    pub(super) fn finish_tags(&mut self, mut sorted: Vec<String>) {
        self.unprefixed = sorted
            .iter()
            .filter_map(|tag| {
                let unprefixed = tag.strip_prefix('v')?;
                if self.tags.contains_key(unprefixed)
                    || semver::Version::parse(&unprefixed.replace('_', "+")).is_err()
                {
                    return None;
                }
                let hash = self.tags.get(tag.as_str())?;
                let chart = self.manifests.get(hash).is_some_and(Manifest::is_chart);
                chart.then(|| (unprefixed.to_owned(), *hash))
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
    use crate::content::{BuildFile, Description, HeldFile, Registry};
    use crate::oci::layout::ImageManifest;
    use crate::oci::{Reference, media_type};
    use crate::tree::LayoutBuilder;
    use rstest::rstest;

    /// The layout of `repository` with one manifest (a chart's, or an image's) tagged `tags`,
    /// its files hashed as the binary's are.
    fn layout(repository: &str, chart: bool, tags: &[&str]) -> Vec<HeldFile> {
        let mut layout = LayoutBuilder::new(repository);
        let (config, layer) = if chart {
            (media_type::HELM_CONFIG, media_type::HELM_CHART)
        } else {
            (
                "application/vnd.oci.image.config.v1+json",
                "application/vnd.oci.image.layer.v1.tar+gzip",
            )
        };
        let config = layout.blob(config, br#"{"name":"x","version":"1.0.0"}"#.to_vec());
        let layer = layout.blob(layer, b"layer".to_vec());
        let manifest = ImageManifest::new(config, vec![layer]);
        let descriptor = layout.manifest(media_type::OCI_MANIFEST, &manifest);
        for tag in tags {
            layout.list(descriptor.clone(), Some(tag));
        }
        layout
            .into_files()
            .unwrap()
            .into_iter()
            .map(|(path, data)| HeldFile::new(path, data))
            .collect()
    }

    /// The tags list of `repository`, from the files, and from the facts written of them as a
    /// binary builds it at start-up: `from_files` takes that same path, so the two agree.
    fn listed(files: Vec<HeldFile>, repository: &str) -> serde_json::Value {
        let registry = Registry::from_files(files.clone()).unwrap();
        let built: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
        let facts = Bytes::from(Description::of(&built).facts().unwrap());
        let from_facts = Registry::from_facts(&facts, &files).unwrap();
        let name = repository.parse().unwrap();
        let page = |r: &Registry| {
            let list = r.repository(&name).unwrap().tag_list();
            list.page(0..list.names().len())
        };
        assert_eq!(page(&registry), page(&from_facts), "from the facts");
        serde_json::from_slice(&page(&registry)).unwrap()
    }

    #[rstest]
    #[case::chart_v_tag(true, &["v0.14.5"], &["0.14.5", "v0.14.5"])]
    #[case::chart_v_tag_with_build(true, &["v1.2.3_build.7"], &["1.2.3_build.7", "v1.2.3_build.7"])]
    #[case::chart_v_prerelease(true, &["v2.0.0-rc.1"], &["2.0.0-rc.1", "v2.0.0-rc.1"])]
    #[case::chart_both_forms(true, &["2.0.0", "v2.0.0"], &["2.0.0", "v2.0.0"])]
    #[case::chart_not_strict(true, &["v1.2"], &["v1.2"])]
    #[case::chart_plain(true, &["1.0.0"], &["1.0.0"])]
    #[case::image_v_tags(false, &["v1", "v1.0.0", "v2.1.0-rc.1"], &["v1", "v1.0.0", "v2.1.0-rc.1"])]
    #[case::image_plain(false, &["1.0.0", "latest"], &["1.0.0", "latest"])]
    fn unprefixed_forms_are_listed_for_charts_only(
        #[case] chart: bool,
        #[case] tags: &[&str],
        #[case] want: &[&str],
    ) {
        let repository = if chart { "charts/x" } else { "images/x" };
        let list = listed(layout(repository, chart, tags), repository);
        assert_eq!(
            list,
            serde_json::json!({"name": repository, "tags": want}),
            "{tags:?}"
        );
    }

    /// Listing aside, an image's `v` tag is still found by its unprefixed form.
    #[test]
    fn an_images_v_tag_is_still_found_unprefixed() {
        let files = layout("images/x", false, &["v1.0.0"]);
        let registry = Registry::from_files(files).unwrap();
        let repository = registry.repository(&"images/x".parse().unwrap()).unwrap();
        let by = |tag: &str| {
            repository
                .manifest(&Reference::Tag(tag.parse().unwrap()))
                .map(|m| m.digest.clone())
        };
        assert_eq!(by("1.0.0"), by("v1.0.0"));
        assert!(by("1.0.0").is_ok());
    }

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
