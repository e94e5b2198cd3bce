//! The images each chart version needs, and whether this registry holds each.
//!
//! 1. `chartreg-build pack` finds them (when the content file has an `images:` section) and
//!    writes them beside the repositories as [`CHART_IMAGES_FILE`], in the shape of
//!    [`ChartImagesFile`]: per chart repository (`charts/platform`) and chart version, each
//!    image's normalised reference, the repository chartreg serves it as, its tag and digest,
//!    and the ways it was found; and whether Helm rendered the chart.
//! 2. The loader (`Description::of`) reads the file with that same type when the content
//!    holds it: a file it cannot read is content that cannot be served, naming the file.
//! 3. A [`Registry`] keeps the file's bytes and parses them on the first
//!    [`Registry::chart_images`] call (module `beside`), resolving each image against itself
//!    once ([`ChartImage::held`]): a chart's images cost nothing to a registry that only
//!    serves pulls.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{Registry, beside};
use crate::oci::{Digest, Reference, RepositoryName, Tag};

/// The file's path in the content: at the top of the folder, beside the repositories (a file
/// there belongs to no layout, so it never collides with one).
pub const CHART_IMAGES_FILE: &str = "chart-images.json";

/// What the file holds (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartImagesFile {
    /// By chart repository, then by chart version (as `Chart.yaml` has it).
    pub charts: BTreeMap<RepositoryName, BTreeMap<String, VersionImages>>,
}

impl ChartImagesFile {
    /// The file as it is written: sorted, indented JSON, ending in a newline (the same images
    /// give the same bytes, so a check compares them).
    pub fn to_bytes(&self) -> Vec<u8> {
        beside::written(self)
    }
}

/// One chart version's images.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionImages {
    /// Whether Helm rendered the chart (else its images were found statically only).
    pub rendered: bool,
    /// In reference order.
    pub images: Vec<ImageEntry>,
}

/// One image a chart version needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageEntry {
    /// The reference, normalised as containerd reads it (`docker.io/library/nginx:1.25`).
    pub image: String,
    /// The repository chartreg serves it as (`docker.io/library/nginx`).
    pub repository: RepositoryName,
    pub tag: Option<Tag>,
    /// A digest pin: the node pulls by it.
    pub digest: Option<Digest>,
    /// The ways it was found, in order.
    pub from: Vec<Way>,
}

/// A way an image was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// In the pod specs Helm rendered.
    Render,
    /// In the chart's image annotations.
    Annotation,
    /// In its values, read statically.
    Values,
}

impl Way {
    pub fn as_str(self) -> &'static str {
        match self {
            Way::Render => "render",
            Way::Annotation => "annotation",
            Way::Values => "values",
        }
    }
}

/// A chart version's images, each marked held or not.
#[derive(Debug, Clone)]
pub struct ChartImages {
    pub rendered: bool,
    pub images: Vec<ChartImage>,
}

#[derive(Debug, Clone)]
pub struct ChartImage {
    pub entry: ImageEntry,
    /// Whether this registry answers a node's pull of it: its repository (as
    /// [`Registry::resolve`] finds it without `?ns=`) holds the manifest the digest names, or
    /// else the tag.
    pub held: bool,
}

/// By chart repository, then version.
pub(super) type Parsed = HashMap<String, HashMap<String, ChartImages>>;

impl Registry {
    /// Whether the content holds a list of the images its charts need.
    pub fn has_chart_images(&self) -> bool {
        self.chart_images.is_held()
    }

    /// The images the chart `version` in `repository` needs, each marked held or not; `None`
    /// when the content lists none for it (no list at all, or not this version).
    pub fn chart_images(&self, repository: &str, version: &str) -> Option<&ChartImages> {
        let parsed = self
            .chart_images
            .parsed(|bytes| self.parse_chart_images(bytes))?;
        parsed.get(repository)?.get(version)
    }

    fn parse_chart_images(&self, bytes: &[u8]) -> Parsed {
        let Some(file) = beside::read::<ChartImagesFile>(CHART_IMAGES_FILE, bytes) else {
            return Parsed::default();
        };
        file.charts
            .into_iter()
            .map(|(repository, versions)| {
                let versions = versions
                    .into_iter()
                    .map(|(version, found)| {
                        let images = found
                            .images
                            .into_iter()
                            .map(|entry| ChartImage {
                                held: self.holds(&entry),
                                entry,
                            })
                            .collect();
                        let images = ChartImages {
                            rendered: found.rendered,
                            images,
                        };
                        (version, images)
                    })
                    .collect();
                (repository.as_str().to_owned(), versions)
            })
            .collect()
    }

    /// Whether a node asking for `entry` gets it from here.
    fn holds(&self, entry: &ImageEntry) -> bool {
        let reference = match (&entry.digest, &entry.tag) {
            (Some(digest), _) => Reference::Digest(digest.clone()),
            (None, Some(tag)) => Reference::Tag(tag.clone()),
            (None, None) => return false,
        };
        self.resolve(&entry.repository, None)
            .is_ok_and(|repository| repository.manifest(&reference).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::beside::one_image;
    use crate::content::{BuildFile, Description, HeldFile};

    fn entry(
        image: &str,
        repository: &str,
        tag: Option<&str>,
        digest: Option<&Digest>,
    ) -> ImageEntry {
        ImageEntry {
            image: image.to_owned(),
            repository: repository.parse().unwrap(),
            tag: tag.map(|t| t.parse().unwrap()),
            digest: digest.cloned(),
            from: vec![Way::Values],
        }
    }

    fn file_of(images: Vec<ImageEntry>) -> ChartImagesFile {
        let mut file = ChartImagesFile::default();
        file.charts
            .entry("charts/app".parse().unwrap())
            .or_default()
            .insert(
                "1.0.0+build.1".to_owned(),
                VersionImages {
                    rendered: false,
                    images,
                },
            );
        file
    }

    #[test]
    fn each_image_is_held_when_the_registry_answers_its_tag_or_its_digest() {
        let (mut files, digest) = one_image("quay.io/x/agent", "v1");
        let other = format!("sha256:{}", "0".repeat(64))
            .parse::<Digest>()
            .unwrap();
        let listed = file_of(vec![
            entry("quay.io/x/agent:v1", "quay.io/x/agent", Some("v1"), None),
            entry("quay.io/x/agent:v2", "quay.io/x/agent", Some("v2"), None),
            // Pinned: the digest decides, whatever the tag.
            entry(
                "quay.io/x/agent:v9@…",
                "quay.io/x/agent",
                Some("v9"),
                Some(&digest),
            ),
            entry(
                "quay.io/x/agent:v1@…",
                "quay.io/x/agent",
                Some("v1"),
                Some(&other),
            ),
            entry(
                "docker.io/library/nginx:1",
                "docker.io/library/nginx",
                Some("1"),
                None,
            ),
        ]);
        files.push(HeldFile::new(CHART_IMAGES_FILE, listed.to_bytes()));
        let registry = Registry::from_files(files).unwrap();
        assert!(registry.has_chart_images());
        let found = registry
            .chart_images("charts/app", "1.0.0+build.1")
            .unwrap();
        let held: Vec<(&str, bool)> = found
            .images
            .iter()
            .map(|i| (i.entry.image.as_str(), i.held))
            .collect();
        assert_eq!(
            held,
            [
                ("quay.io/x/agent:v1", true),
                ("quay.io/x/agent:v2", false),
                ("quay.io/x/agent:v9@…", true),
                ("quay.io/x/agent:v1@…", false),
                ("docker.io/library/nginx:1", false),
            ]
        );
        assert!(!found.rendered);
        assert!(registry.chart_images("charts/app", "1.0.0").is_none());
        assert!(
            registry
                .chart_images("charts/other", "1.0.0+build.1")
                .is_none()
        );
    }

    #[test]
    fn content_without_the_file_lists_nothing() {
        let (files, _) = one_image("images/x", "v1");
        let registry = Registry::from_files(files).unwrap();
        assert!(!registry.has_chart_images());
        assert!(registry.chart_images("images/x", "v1").is_none());
    }

    #[test]
    fn the_file_reads_back_as_written() {
        let file = file_of(vec![entry("a.io/b:c", "a.io/b", Some("c"), None)]);
        let bytes = file.to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.ends_with("}\n") && text.contains(r#""from": ["#),
            "{text}"
        );
        assert_eq!(
            serde_json::from_slice::<ChartImagesFile>(&bytes).unwrap(),
            file
        );
    }

    /// A file the build cannot read is content that cannot be served, naming the file; so is
    /// one whose names or ways are not valid.
    #[test]
    fn a_file_the_loader_cannot_read_refuses_the_content_naming_it() {
        for bad in [
            "not json",
            r#"{"charts":{"Charts/x":{}}}"#,
            r#"{"charts":{"charts/x":{"1.0.0":{"rendered":true,"images":[{"image":"a","repository":"a","tag":null,"digest":null,"from":["guess"]}]}}}}"#,
            r#"{"charts":{},"other":1}"#,
        ] {
            let (mut files, _) = one_image("images/x", "v1");
            files.push(HeldFile::new(CHART_IMAGES_FILE, bad.as_bytes().to_vec()));
            let built: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
            let refused = Description::of(&built).refusal().map(ToString::to_string);
            let refused = refused.unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(refused.starts_with(CHART_IMAGES_FILE), "{bad}: {refused}");
        }
    }
}
