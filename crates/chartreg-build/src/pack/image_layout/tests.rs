//! `image_layout`'s tests: layouts written in temporary folders, taken or refused.

use super::*;
use rstest::rstest;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";

#[rstest]
#[case("v1.2.3", Some("v1.2.3"))]
#[case("latest", Some("latest"))]
#[case("docker.io/library/alpine:3.20", Some("3.20"))]
#[case("127.0.0.1:5000/app:v1", Some("v1"))]
#[case("127.0.0.1:5000/app", None)]
#[case("app@sha256:0000", None)]
fn ref_names_give_tags(#[case] ref_name: &str, #[case] tag: Option<&str>) {
    assert_eq!(tag_of(ref_name).as_deref(), tag);
}

/// A layout being written in a temporary folder.
struct Layout {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("layout");
        fs::create_dir_all(path.join("blobs/sha256")).unwrap();
        fs::write(path.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        Layout { _dir: dir, path }
    }

    /// Stores `data`; its descriptor's JSON.
    fn put(&self, media_type: &str, data: &[u8]) -> String {
        let digest = Digest::sha256_of(data);
        fs::write(self.path.join("blobs/sha256").join(digest.encoded()), data).unwrap();
        descriptor(media_type, digest.as_str(), data.len())
    }

    /// An image manifest of an empty config and layer, with `extra` fields; its
    /// descriptor.
    fn image(&self, extra: &str) -> String {
        let config = self.put("application/vnd.oci.image.config.v1+json", b"{}");
        let layer = self.put("application/vnd.oci.image.layer.v1.tar", b"");
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST}","config":{config},"layers":[{layer}]{extra}}}"#
        );
        self.put(MANIFEST, manifest.as_bytes())
    }

    fn index_json(&self, entries: &[String]) {
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{}]}}"#,
            entries.join(",")
        );
        fs::write(self.path.join("index.json"), index).unwrap();
    }

    fn read(&self) -> Result<ImageLayout, PackError> {
        ImageLayout::read(
            &format!("{}=images/app", self.path.display())
                .parse()
                .unwrap(),
        )
    }
}

fn descriptor(media_type: &str, digest: &str, size: usize) -> String {
    format!(r#"{{"mediaType":"{media_type}","digest":"{digest}","size":{size}}}"#)
}

fn tagged(descriptor: &str, tag: &str) -> String {
    format!(
        r#"{},"annotations":{{"org.opencontainers.image.ref.name":"{tag}"}}}}"#,
        descriptor.trim_end_matches('}')
    )
}

/// An index listing `child`, nested `levels` deep; the outermost's descriptor.
fn nested(layout: &Layout, child: String, levels: usize) -> String {
    (0..levels).fold(child, |child, _| {
        let index = format!(r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[{child}]}}"#);
        layout.put(INDEX, index.as_bytes())
    })
}

#[rstest]
#[case::at_the_limit(MAX_NESTING, true)]
#[case::past_the_limit(MAX_NESTING + 1, false)]
fn indexes_nest_at_most_8_deep(#[case] levels: usize, #[case] taken: bool) {
    let layout = Layout::new();
    let top = nested(&layout, layout.image(""), levels);
    layout.index_json(&[tagged(&top, "v1")]);
    match layout.read() {
        Ok(read) => assert!(taken && read.manifests == levels + 1),
        Err(e) => assert!(
            !taken && e.to_string().contains("indexes nest deeper than 8 levels"),
            "{e}"
        ),
    }
}

#[test]
fn an_index_naming_itself_is_refused_at_its_digest() {
    // An index that lists its own digest cannot have it: its bytes would have to hash to
    // a digest they hold. Stored under that digest anyway, it is refused there.
    let layout = Layout::new();
    let digest = Digest::sha256_of(b"the digest it claims");
    let itself = descriptor(INDEX, digest.as_str(), 400);
    let index = format!(r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[{itself}]}}"#);
    let path = layout.path.join("blobs/sha256").join(digest.encoded());
    fs::write(&path, format!("{index:<400}")).unwrap();
    layout.index_json(&[tagged(&itself, "v1")]);
    let e = layout.read().unwrap_err();
    assert_eq!(e.path, path);
    assert!(matches!(*e.problem, Problem::LayoutDigest { .. }), "{e}");
}

#[rstest]
#[case::in_index_json(true)]
#[case::in_a_manifest(false)]
fn a_digest_that_is_a_path_is_refused_as_json(#[case] in_index: bool) {
    let layout = Layout::new();
    let traversal = descriptor(MANIFEST, "sha256:../../../../etc/shadow", 10);
    let named = if in_index {
        layout.index_json(&[tagged(&traversal, "v1")]);
        layout.path.join("index.json")
    } else {
        let config = layout.put("application/vnd.oci.image.config.v1+json", b"{}");
        let manifest = format!(
            r#"{{"schemaVersion":2,"config":{config},"layers":[{}]}}"#,
            traversal.replace(MANIFEST, "application/vnd.oci.image.layer.v1.tar")
        );
        let d = layout.put(MANIFEST, manifest.as_bytes());
        layout.index_json(&[tagged(&d, "v1")]);
        let digest = Digest::sha256_of(manifest.as_bytes());
        layout.path.join("blobs/sha256").join(digest.encoded())
    };
    let e = layout.read().unwrap_err();
    assert_eq!(e.path, named);
    assert!(
        matches!(&*e.problem, Problem::Json(m) if m.to_string().contains("invalid encoded part")),
        "{e}"
    );
}

#[test]
fn a_manifest_named_by_many_entries_is_read_once() {
    // 10,000 untagged entries naming one manifest of 1 MiB: read for each entry's subject, it
    // was read, hashed and parsed 10,000 times (6.7 s in a release build); read once, 2 ms.
    let layout = Layout::new();
    let big = format!(r#","annotations":{{"pad":"{}"}}"#, "x".repeat(1 << 20));
    let image = layout.image(&big);
    let mut entries = vec![tagged(&layout.image(""), "v1")];
    entries.extend(std::iter::repeat_n(image, 10_000));
    layout.index_json(&entries);
    let start = Instant::now();
    let read = layout.read().unwrap();
    let took = start.elapsed();
    assert_eq!(read.manifests, 1);
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn a_chain_of_referrers_is_taken_round_by_round() {
    // Each referrer's subject is the one before: 10,000 rounds, each looking at the subjects
    // the round before took. Looking at every subject each round took 14.7 s in a release
    // build; 0.5 s.
    let layout = Layout::new();
    let first = layout.image("");
    let mut entries = vec![tagged(&first, "v1")];
    let mut subject = first;
    for _ in 0..10_000 {
        subject = layout.image(&format!(r#","subject":{subject}"#));
        entries.push(subject.clone());
    }
    layout.index_json(&entries);
    let start = Instant::now();
    let read = layout.read().unwrap();
    let took = start.elapsed();
    assert_eq!(read.manifests, 10_001);
    assert!(took < Duration::from_secs(4), "{took:?}");
}

/// One image of a layout, as `--layout DIR=REPOSITORY[:TAG][@DIGEST]` chooses it: what is
/// served under which tag, or why nothing is.
#[rstest]
// A tag names its entry.
#[case("v1", Ok(("a", "v1")))]
// A digest alone: its entry, tagged or not, served under the digest's name.
#[case("@B", Ok(("b", "digest-sha256-B")))]
#[case("@A", Ok(("a", "digest-sha256-A")))]
// A tag pinned to a digest: the digest's entry, under the tag...
#[case("v2@B", Ok(("b", "v2")))]
#[case("v1@A", Ok(("a", "v1")))]
// ...unless the layout tags it another digest.
#[case("v1@B", Err("tags `v1` as sha256:A"))]
#[case("@C", Err("names no manifest sha256:C"))]
#[case("v9", Err("names no manifest `v9`"))]
fn one_image_is_chosen_by_tag_digest_or_both(
    #[case] pin: &str,
    #[case] expected: Result<(&str, &str), &str>,
) {
    let hex = |c: char| c.to_string().repeat(64);
    let digest = |c: char| format!("sha256:{}", hex(c).to_lowercase());
    let at = |text: &str| {
        ['A', 'B', 'C'].iter().fold(text.to_owned(), |t, c| {
            t.replace(&format!("sha256:{c}"), &digest(c.to_ascii_lowercase()))
        })
    };
    let pin = if let Some(d) = pin.strip_prefix('@') {
        format!(
            "sha256:{}",
            hex(d.chars().next().unwrap().to_ascii_lowercase())
        )
    } else if let Some((tag, d)) = pin.split_once('@') {
        format!(
            "{tag}@sha256:{}",
            hex(d.chars().next().unwrap().to_ascii_lowercase())
        )
    } else {
        pin.to_owned()
    };
    let pin: Pin = pin.parse().unwrap();
    let entry = |c: char, tag: Option<&str>| Entry {
        descriptor: Descriptor::new(MANIFEST, digest(c).parse().unwrap(), 2),
        tag: tag.map(str::to_owned),
    };
    let entries = [entry('a', Some("v1")), entry('b', None)];
    let chosen = choose(Path::new("index.json"), &entries, Some(&pin));
    match (chosen, expected) {
        (Ok(chosen), Ok((which, served))) => {
            let [(e, tag)] = chosen.as_slice() else {
                panic!("one image: {}", chosen.len());
            };
            let which = which.chars().next().unwrap();
            assert_eq!(e.descriptor.digest.as_str(), digest(which));
            assert_eq!(*tag, served.replace('B', &hex('b')).replace('A', &hex('a')));
        }
        (Err(e), Err(says)) => {
            let e = e.to_string();
            assert!(e.contains(&at(says)), "{e}");
        }
        (got, want) => panic!("{pin}: got {:?}, want {want:?}", got.map(|c| c.len())),
    }
}
