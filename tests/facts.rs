//! Build-time facts (what build.rs writes after describing the content, and what the binary
//! builds its registry from): a registry built from them serves what the layouts hold,
//! referrers included; they are used only for the very files they were written from (matched
//! by path, in any order), and anything else is refused, naming the file.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use bytes::Bytes;
use chartreg_core::content::{BuildFile, Content, Description, HeldFile, Registry, Unservable};
use chartreg_core::oci::layout::{Annotations, ImageIndex};
use chartreg_core::oci::{Digest, Reference, media_type};
use chartreg_core::tree::{Files, LayoutBuilder};

/// Files with their sha256, as the binary has them.
fn hashed(files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Vec<HeldFile> {
    files
        .into_iter()
        .map(|(path, data)| HeldFile::new(path, data))
        .collect()
}

/// The files as the build has them (every one held).
fn at_build(files: &[HeldFile]) -> Vec<BuildFile> {
    files.iter().map(BuildFile::from).collect()
}

fn facts_of(files: &[HeldFile]) -> Bytes {
    let description = Description::of(&at_build(files));
    assert!(description.refusal().is_none(), "valid content");
    Bytes::from(description.facts().expect("content facts can describe"))
}

/// Most of what loading meets: two repositories sharing a blob, a nested index, an untagged
/// manifest, an empty layer, a blob no manifest references, and a digest written with a JSON
/// escape (a string that lies in no file as it is kept).
fn varied() -> Files {
    let mut files = Files::new();
    for name in ["test/app", "test/copy"] {
        let mut layout = LayoutBuilder::new(name);
        let shared = common::image(&mut layout, b"shared layer");
        let shared = layout.manifest(media_type::OCI_MANIFEST, &shared);
        layout.list(shared.clone(), Some("1.0.0"));
        let amd = common::image(&mut layout, format!("{name} amd64").as_bytes());
        let amd = layout.manifest(media_type::OCI_MANIFEST, &amd);
        let index = ImageIndex {
            schema_version: 2,
            media_type: Some(media_type::OCI_INDEX.into()),
            artifact_type: None,
            manifests: vec![amd],
            subject: None,
            annotations: Annotations::new(),
        };
        let top = layout.manifest(media_type::OCI_INDEX, &index);
        layout.list(top, Some("2.0.0_build.1"));
        let untagged = common::image(&mut layout, b"");
        let untagged = layout.manifest(media_type::OCI_MANIFEST, &untagged);
        layout.list(untagged, None);
        layout.blob("text/plain", b"referenced by nothing".to_vec());
        files.extend(layout.into_files().unwrap());
    }
    let index = files.get_mut("test/copy/index.json").unwrap();
    let text = String::from_utf8(index.clone()).unwrap();
    *index = text
        .replacen("\"sha256:", "\"\\u0073ha256:", 1)
        .into_bytes();
    files
}

/// Everything a client can see of a registry, through its public API.
fn seen(registry: &Registry) -> String {
    let mut out = format!("{:?}\n", registry.summary());
    out += &String::from_utf8_lossy(&registry.catalog().page(0..registry.catalog().names().len()));
    for repository in registry.repositories() {
        let list = repository.tag_list();
        out += &format!("\n{}: ", repository.name());
        out += &String::from_utf8_lossy(&list.page(0..list.names().len()));
        for tag in repository.tags() {
            let m = repository
                .manifest(&Reference::Tag(tag.parse().unwrap()))
                .unwrap();
            out += &format!(
                "\n  {tag} {} {} {} {}",
                m.digest,
                m.media_type,
                String::from_utf8_lossy(&m.quoted_digest),
                common::sha256(&m.data)
            );
            let size = repository.pull_size(m).unwrap();
            out += &format!(" pulls {size}");
            for referrer in repository.referrers(&m.digest, None) {
                out += &format!("\n    referred to by {referrer:?}");
            }
        }
    }
    out
}

/// What the layouts in `files` say a client gets, read here from their JSON: every layout's
/// tags (the manifest's digest, media type and bytes) and the blobs of its image manifests,
/// checked against what `registry` serves.
fn serves_what_the_layouts_hold(registry: &Registry, files: &[HeldFile]) {
    let bytes = |path: &str| -> &[u8] {
        &files
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("no file {path}"))
            .data
    };
    let roots: Vec<&str> = files
        .iter()
        .filter_map(|f| f.path.strip_suffix("/oci-layout"))
        .collect();
    let mut names: Vec<&str> = registry
        .catalog()
        .names()
        .iter()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    let mut expected = roots.clone();
    expected.sort_unstable();
    assert_eq!(names, expected, "one repository per layout");
    for root in roots {
        let repository = registry.repository(&root.parse().unwrap()).unwrap();
        let index: serde_json::Value =
            serde_json::from_slice(bytes(&format!("{root}/index.json"))).unwrap();
        let mut pending: Vec<serde_json::Value> = index["manifests"].as_array().unwrap().clone();
        while let Some(d) = pending.pop() {
            let digest = d["digest"].as_str().unwrap();
            let body = bytes(&format!("{root}/blobs/sha256/{}", &digest[7..]));
            let m = repository
                .manifest(&Reference::Digest(digest.parse().unwrap()))
                .unwrap();
            assert_eq!(m.digest.as_str(), digest);
            assert_eq!(&*m.media_type, d["mediaType"].as_str().unwrap());
            assert_eq!(&m.data[..], body, "{root}: {digest}");
            assert_eq!(m.quoted_digest, format!("\"{digest}\""));
            if let Some(tag) = d["annotations"]["org.opencontainers.image.ref.name"].as_str() {
                let tagged = repository.tagged(tag).unwrap();
                assert_eq!(tagged.digest.as_str(), digest, "{root}:{tag}");
            }
            let document: serde_json::Value = serde_json::from_slice(body).unwrap();
            if let Some(children) = document["manifests"].as_array() {
                pending.extend(children.iter().cloned());
            }
            let blobs = document["layers"].as_array().into_iter().flatten();
            for blob in blobs.chain([&document["config"]]).filter(|b| b.is_object()) {
                let digest: Digest = blob["digest"].as_str().unwrap().parse().unwrap();
                let served = repository.blob(&digest).unwrap();
                let path = format!("{root}/blobs/sha256/{}", digest.encoded());
                assert_eq!(&served.data[..], bytes(&path), "{path}");
            }
        }
    }
}

#[test]
fn facts_build_the_registry_the_layouts_describe() {
    let assets = common::files_in(&common::root().join("assets"));
    for files in [assets, hashed(varied())] {
        let facts = facts_of(&files);
        let built = Registry::from_facts(&facts, &files).unwrap();
        serves_what_the_layouts_hold(&built, &files);
        // Facts hold every body, string and lookup in an order of their own: the same facts
        // again, whatever the order of the files.
        let reversed: Vec<HeldFile> = files.iter().rev().cloned().collect();
        assert_eq!(facts_of(&reversed), facts);
    }
}

#[test]
fn bodies_are_the_files_themselves_and_strings_come_with_the_facts() {
    let files = hashed(varied());
    let facts = facts_of(&files);
    let built = Registry::from_facts(&facts, &files).unwrap();
    let copy = built.repository(&"test/copy".parse().unwrap()).unwrap();
    let escaped = copy
        .manifest(&Reference::Tag("1.0.0".parse().unwrap()))
        .unwrap();
    assert_eq!(escaped.digest.to_string(), common::sha256(&escaped.data));
    assert_eq!(escaped.quoted_digest, format!("\"{}\"", escaped.digest));
    // A body is the file itself, not a copy.
    let app = built.repository(&"test/app".parse().unwrap()).unwrap();
    let m = app
        .manifest(&Reference::Tag("1.0.0".parse().unwrap()))
        .unwrap();
    let file = files
        .iter()
        .find(|f| f.path.ends_with(m.digest.encoded()) && f.path.starts_with("test/app/"))
        .unwrap();
    assert_eq!(m.data.as_ptr(), file.data.as_ptr());
}

#[test]
fn facts_are_used_only_for_the_files_they_were_written_from() {
    let files = hashed(varied());
    let facts = facts_of(&files);

    // One file changed (and its hash with it): not these files.
    let mut changed = files.clone();
    let i = changed
        .iter()
        .position(|f| f.path == "test/app/index.json")
        .unwrap();
    let mut data = changed[i].data.to_vec();
    data.push(b'\n');
    changed[i] = hashed([(changed[i].path.to_string(), data)]).remove(0);
    let e = Registry::from_facts(&facts, &changed).unwrap_err();
    assert!(e.to_string().contains("test/app/index.json"), "{e}");

    // Files in another order are the same files (matched by path); a file more or less, a
    // file under another path are not (a held file always has its hash).
    let mut reordered = files.clone();
    reordered.swap(0, 1);
    reordered.reverse();
    let built = Registry::from_facts(&facts, &reordered).unwrap();
    assert_eq!(
        seen(&built),
        seen(&Registry::from_facts(&facts, &files).unwrap())
    );
    assert!(Registry::from_facts(&facts, &files[1..]).is_err());
    let mut renamed = files.clone();
    renamed[0].path = format!("{}x", renamed[0].path).into();
    let e = Registry::from_facts(&facts, &renamed).unwrap_err();
    assert!(e.to_string().contains("is not a file they describe"), "{e}");

    // No facts, and facts cut short anywhere.
    assert!(Registry::from_facts(&Bytes::new(), &files).is_err());
    for len in (0..facts.len()).step_by(97) {
        assert!(Registry::from_facts(&facts.slice(..len), &files).is_err());
    }
    assert!(Registry::from_facts(&facts, &files).is_ok());
}

#[test]
fn facts_read_wrong_never_serve_bytes_under_another_digest() {
    // Every byte of the facts changed in turn: each result is refused, or a registry whose
    // every manifest is served under its own digest.
    let files = hashed(varied());
    let facts = facts_of(&files);
    let mut tampered = facts.to_vec();
    let mut refused = 0;
    for at in 0..tampered.len() {
        let original = tampered[at];
        tampered[at] ^= 1;
        match Registry::from_facts(&Bytes::from(tampered.clone()), &files) {
            Err(_) => refused += 1,
            Ok(registry) => {
                for repository in registry.repositories() {
                    for tag in repository.tags() {
                        let m = repository
                            .manifest(&Reference::Tag(tag.parse().unwrap()))
                            .unwrap();
                        let named = common::sha256(&m.data);
                        assert_eq!(m.digest.to_string(), named);
                    }
                }
            }
        }
        tampered[at] = original;
    }
    assert!(refused > 0);
}

#[test]
fn referrers_are_written_down_too() {
    let mut layout = LayoutBuilder::new("test/app");
    let subject = common::image(&mut layout, b"subject");
    let subject = layout.manifest(media_type::OCI_MANIFEST, &subject);
    layout.list(subject.clone(), Some("v1"));
    let mut referrer = common::image(&mut layout, b"signature");
    referrer.subject = Some(subject.clone());
    let referrer = layout.manifest(media_type::OCI_MANIFEST, &referrer);
    layout.list(referrer.clone(), None);
    let files = hashed(layout.into_files().unwrap());
    let registry = Registry::from_facts(&facts_of(&files), &files).unwrap();
    serves_what_the_layouts_hold(&registry, &files);
    let repository = registry.repository(&"test/app".parse().unwrap()).unwrap();
    let listed: Vec<&Digest> = repository
        .referrers(&subject.digest, None)
        .map(|d| &d.digest)
        .collect();
    assert_eq!(
        listed,
        [&referrer.digest],
        "content with signatures starts from facts"
    );
    assert!(
        seen(&registry).contains("referred to by"),
        "{}",
        seen(&registry)
    );
}

/// Content the build cannot serve is written down as that: start-up refuses it with the
/// build's words, naming the file.
#[test]
fn facts_of_content_that_cannot_be_served_refuse_it() {
    let mut files = varied();
    let layer = files
        .iter()
        .find(|(_, data)| data.as_slice() == b"test/app amd64")
        .map(|(path, _)| path.clone())
        .unwrap();
    files.remove(&layer);
    let files = hashed(files);
    let description = Description::of(&at_build(&files));
    let refused = description.refusal().unwrap().to_string();
    assert!(refused.starts_with(&layer), "{refused}");
    let facts = Bytes::from(description.facts().unwrap());
    let e = Registry::from_facts(&facts, &files).unwrap_err();
    assert!(matches!(e, Unservable::Refused { .. }), "{e:?}");
    assert_eq!(e.to_string(), refused);
}

/// A binary is served from its facts, or not at all: facts that are not of its files (what a
/// binary corrupted after its build holds) are refused, naming the file, never read around.
#[test]
fn a_binary_content_is_served_from_its_facts_or_refused() {
    let files = hashed(varied());
    let facts = facts_of(&files);
    let registry = Registry::from_facts(&facts, &files).unwrap();
    serves_what_the_layouts_hold(&registry, &files);

    // Stale facts: refused, naming the file.
    let mut bad = files.clone();
    let i = bad.iter().position(|f| f.path.contains("/blobs/")).unwrap();
    let path = bad[i].path.to_string();
    bad[i] = hashed([(path.clone(), b"other bytes".to_vec())]).remove(0);
    let e = Registry::from_facts(&facts, &bad).unwrap_err();
    assert!(matches!(e, Unservable::Stale(_)), "{e:?}");
    assert!(e.to_string().contains(&path), "{e}");

    // Facts of other content: refused.
    let other = hashed(
        varied()
            .into_iter()
            .filter(|(path, _)| path.starts_with("test/app/")),
    );
    let reversed: Vec<HeldFile> = files.into_iter().rev().collect();
    let e = Registry::from_facts(&facts_of(&other), &reversed).unwrap_err();
    assert!(matches!(e, Unservable::Stale(_)), "{e:?}");
}

#[test]
fn large_content_is_read_to_the_same_registry() {
    let mut layout = LayoutBuilder::new("test/many");
    for v in 0..2500 {
        let m = common::image(&mut layout, format!("layer {v}").as_bytes());
        let d = layout.manifest(media_type::OCI_MANIFEST, &m);
        layout.list(d, Some(&format!("1.0.{v}")));
    }
    let files = hashed(layout.into_files().unwrap());
    let facts = facts_of(&files);
    let built = Registry::from_facts(&facts, &files).unwrap();
    assert_eq!(built.summary().tags, 2500);
    serves_what_the_layouts_hold(&built, &files);

    // The last digest of the facts (a blob's) changed: refused.
    let mut tampered = facts.to_vec();
    let at = tampered
        .windows(8)
        .rposition(|w| w == b"\"sha256:")
        .unwrap()
        + 8;
    tampered[at] = if tampered[at] == b'0' { b'1' } else { b'0' };
    let e = Registry::from_facts(&Bytes::from(tampered), &files).unwrap_err();
    assert!(e.to_string().contains("digest"), "{e}");
}

#[test]
fn facts_whose_repositories_are_out_of_order_are_refused() {
    // Two repositories whose names are the same length: swapped where the facts name the
    // repositories (a postcard string: its length, 6, then its bytes), the catalog would list
    // `test/b` before `test/a`.
    let mut files = Files::new();
    for name in ["test/a", "test/b"] {
        let mut layout = LayoutBuilder::new(name);
        let m = common::image(&mut layout, name.as_bytes());
        let d = layout.manifest(media_type::OCI_MANIFEST, &m);
        layout.list(d, Some("v1"));
        files.extend(layout.into_files().unwrap());
    }
    let files = hashed(files);
    let facts = facts_of(&files);
    assert!(Registry::from_facts(&facts, &files).is_ok());
    let mut swapped = facts.to_vec();
    let at = |text: &[u8]| swapped.windows(text.len()).position(|w| w == text).unwrap();
    let (a, b) = (at(b"\x06test/a"), at(b"\x06test/b"));
    swapped[a + 6] = b'b';
    swapped[b + 6] = b'a';
    let e = Registry::from_facts(&Bytes::from(swapped), &files).unwrap_err();
    assert!(e.to_string().contains("not in order"), "{e}");
}

/// `chartreg verify` on valid content whose facts are those of other content (a tag more in
/// the content than in the facts, a repository in the facts only): it names the repository,
/// the tag and the file where they differ, and that start-up refuses.
#[test]
fn verify_names_where_the_facts_differ_from_the_content() {
    let good = varied();
    let mut content = good.clone();
    let mut index: serde_json::Value =
        serde_json::from_slice(&content["test/app/index.json"]).unwrap();
    let mut extra = index["manifests"][0].clone();
    extra["annotations"]["org.opencontainers.image.ref.name"] = "extra".into();
    index["manifests"].as_array_mut().unwrap().push(extra);
    content.insert(
        "test/app/index.json".into(),
        serde_json::to_vec(&index).unwrap(),
    );
    content.retain(|path, _| !path.starts_with("test/copy/"));
    let files = hashed(content);
    let facts = facts_of(&hashed(good));
    let problems = chartreg::inspect::verify(&Content {
        files: files.clone(),
        facts: facts.clone(),
    });
    for expected in [
        "test/app: tag extra is in the content but not served",
        "repository test/copy is served but not in the content",
        "file test/app/index.json is described with other bytes",
        "start-up refuses the content",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "no `{expected}` in {problems:#?}"
        );
    }
    assert!(
        chartreg::inspect::verify(&Content {
            facts: facts_of(&files),
            files,
        })
        .is_empty(),
        "the content's own facts"
    );
}

/// `chartreg verify` finds each tampering the issue names in content whose start-up check is
/// bypassed: the build's record of a file's sha256 lies (start-up then trusts the facts and
/// would serve the tampered bytes), or a file is gone. Each is reported naming its file.
#[test]
fn verify_finds_every_tampering_behind_facts_that_lie() {
    let good = varied();
    let good_files = hashed(good.clone());
    let facts = facts_of(&good_files);
    let layer = good
        .iter()
        .find(|(_, data)| data.as_slice() == b"test/app amd64")
        .map(|(path, _)| path.clone())
        .unwrap();
    let manifest_of_layer = good
        .iter()
        .find(|(path, data)| {
            path.starts_with("test/app/blobs/")
                && String::from_utf8_lossy(data).contains(layer.rsplit('/').next().unwrap())
                && String::from_utf8_lossy(data).contains("\"layers\"")
        })
        .map(|(path, _)| path.clone())
        .unwrap();
    // Each tampering: the file it is about, and the content it leaves.
    let mut tamperings: Vec<(&str, String, Vec<HeldFile>)> = Vec::new();
    // A blob whose bytes are not what it is named (and recorded) as.
    let swapped = lying(&good_files, &layer, b"test/app amd65".to_vec());
    tamperings.push(("a blob's bytes", layer.clone(), swapped));
    // A manifest that names a blob that is not there.
    let mut missing = good_files.clone();
    missing.retain(|f| f.path != layer);
    tamperings.push(("a missing blob", layer.clone(), missing));
    // An index.json that points nowhere.
    let mut index: serde_json::Value =
        serde_json::from_slice(&good["test/app/index.json"]).unwrap();
    index["manifests"][0]["digest"] = format!("sha256:{}", "1".repeat(64)).into();
    let pointing = serde_json::to_vec(&index).unwrap();
    let pointing = lying(&good_files, "test/app/index.json", pointing);
    tamperings.push((
        "an index pointing nowhere",
        "test/app/index.json".to_owned(),
        pointing,
    ));
    // Invalid JSON, in the index and in a manifest.
    let broken = lying(
        &good_files,
        "test/app/index.json",
        b"{\"schemaVersion\": 2,".to_vec(),
    );
    tamperings.push(("an invalid index", "test/app/index.json".to_owned(), broken));
    let broken = lying(
        &good_files,
        &manifest_of_layer,
        b"{\"schemaVersion\"".to_vec(),
    );
    tamperings.push(("an invalid manifest", manifest_of_layer.clone(), broken));

    for (what, path, files) in tamperings {
        // Where a file's record lies, start-up would trust the facts.
        if files.len() == good_files.len() {
            assert!(
                Registry::from_facts(&facts, &files).is_ok(),
                "{what}: the facts were meant to fool start-up"
            );
        }
        let problems = chartreg::inspect::verify(&Content {
            files,
            facts: facts.clone(),
        });
        assert!(
            problems.iter().any(|p| p.contains(&path)),
            "{what}: verify did not name {path}: {problems:#?}"
        );
    }
}

/// `files` with the file at `path` holding `data`, its recorded sha256 still the old one's (a
/// record that lies).
fn lying(files: &[HeldFile], path: &str, data: Vec<u8>) -> Vec<HeldFile> {
    files
        .iter()
        .map(|f| {
            if f.path == path {
                HeldFile::with_sha256(f.path.clone(), data.clone(), f.sha256)
            } else {
                f.clone()
            }
        })
        .collect()
}
