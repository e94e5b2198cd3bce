//! `storage`'s tests: entry names classified, bundles made in temporary folders refused.

use super::*;
use rstest::rstest;

const HEX: &str = "0b9c4c34b963724ec546df5c5232aac2809aedb11fa0bbb025ddd1f958b3075d";

fn digest() -> Digest {
    format!("sha256:{HEX}").parse().unwrap()
}

#[rstest]
#[case::blob(format!("docker/registry/v2/blobs/sha256/0b/{HEX}/data"), Part::Blob(digest()))]
#[case::dot_slash(format!("./docker/registry/v2/blobs/sha256/0b/{HEX}/data"), Part::Blob(digest()))]
#[case::tag(
    "docker/registry/v2/repositories/charts/podinfo/_manifests/tags/6.2.0/current/link".into(),
    Part::Tag { repository: "charts/podinfo".into(), tag: "6.2.0".into() }
)]
#[case::revision(
    format!("docker/registry/v2/repositories/a/_manifests/revisions/sha256/{HEX}/link"),
    Part::Revision { repository: "a".into(), digest: digest() }
)]
#[case::history(
    format!("docker/registry/v2/repositories/a/_manifests/tags/1/index/sha256/{HEX}/link"),
    Part::Skipped
)]
#[case::layer(format!("docker/registry/v2/repositories/a/b/_layers/sha256/{HEX}/link"), Part::Skipped)]
#[case::upload("docker/registry/v2/repositories/a/_uploads/x/data".into(), Part::Skipped)]
#[case::charts("charts.yaml".into(), Part::Skipped)]
#[case::images("./images.yaml".into(), Part::ImagesList)]
fn storage_files_are_classified(#[case] name: String, #[case] want: Part) {
    assert_eq!(classify(&name).ok(), Some(want));
}

#[rstest]
#[case::outside("README.md", "not part of a mindthegap bundle")]
#[case::traversal("docker/registry/v2/../../etc/passwd", "plain relative path")]
#[case::absolute("/docker/registry/v2/blobs", "plain relative path")]
#[case::bad_hex("docker/registry/v2/blobs/sha256/zz/zz/data", "names no sha256 digest")]
#[case::wrong_folder(
    "docker/registry/v2/blobs/sha256/ff/0b9c4c34b963724ec546df5c5232aac2809aedb11fa0bbb025ddd1f958b3075d/data",
    "not stored under 0b"
)]
#[case::no_repository(
    "docker/registry/v2/repositories/_manifests/tags/1/current/link",
    "names no repository"
)]
#[case::unknown("docker/registry/v2/repositories/a/_manifests/other", "reader knows")]
#[case::not_in_repo("docker/registry/v2/repositories/a/b/c", "`_manifests`")]
fn other_files_are_refused_saying_why(#[case] name: &str, #[case] why: &str) {
    let e = classify(name).unwrap_err().to_string();
    assert!(e.contains(why), "{name}: {e}");
}

#[test]
fn a_link_is_a_digest_and_nothing_else() {
    assert_eq!(
        link(&mut format!("sha256:{HEX}").as_bytes()).ok(),
        Some(digest())
    );
    assert!(link(&mut "sha256:abc".as_bytes()).is_err());
    assert!(link(&mut "not a link".as_bytes()).is_err());
}

/// A bundle file in `dir` holding `entries` (name, type flag, link target, bytes), raw.
fn bundle(dir: &Path, entries: &[(&str, u8, &str, &[u8])]) -> PathBuf {
    let mut tar: Vec<u8> = entries
        .iter()
        .flat_map(|(name, kind, link, data)| crate::samples::raw_entry(name, *kind, link, data))
        .collect();
    tar.extend_from_slice(&[0; 1024]);
    let path = dir.join("bundle.tar");
    fs::write(&path, tar).unwrap();
    path
}

fn refusal(entries: &[(&str, u8, &str, &[u8])]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = bundle(dir.path(), entries);
    let mut staging = Staging::new(dir.path().join("staging")).unwrap();
    read(&path, &mut staging).unwrap_err().to_string()
}

#[rstest]
#[case::symlink("docker/registry/v2/blobs", b'2', "/etc", "is a Symlink entry")]
#[case::hard_link("docker/registry/v2/x", b'1', "/etc/shadow", "is a Link entry")]
#[case::fifo("docker/registry/v2/x", b'6', "", "is a Fifo entry")]
#[case::parent("docker/registry/v2/../../x", b'0', "", "is not a plain relative path")]
#[case::absolute("/docker/registry/v2/x", b'0', "", "is not a plain relative path")]
#[case::control_characters("\u{1b}[2J", b'0', "", "entry `\\u{1b}[2J` is not part")]
fn entries_that_are_not_plain_files_are_refused_by_name(
    #[case] name: &str,
    #[case] kind: u8,
    #[case] link: &str,
    #[case] words: &str,
) {
    let e = refusal(&[(name, kind, link, b"")]);
    assert!(e.contains(words), "{e}");
}

#[test]
fn an_images_file_past_5_mib_is_refused_not_cut() {
    let big = vec![b'#'; (5 << 20) + 1];
    let e = refusal(&[("images.yaml", b'0', "", &big)]);
    assert!(e.contains("entry `images.yaml` is more than 5 MiB"), "{e}");
}

#[test]
fn a_staged_blob_larger_than_a_manifest_is_read_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut staging = Staging::new(dir.path().join("staging")).unwrap();
    let path = staging.dir.join("big");
    fs::File::create(&path)
        .and_then(|f| f.set_len(MAX_MANIFEST + 1))
        .unwrap();
    staging.blobs.insert(
        digest(),
        BlobFile {
            path,
            size: MAX_MANIFEST + 1,
            digest: digest(),
        },
    );
    assert_eq!(staging.read(&digest()).unwrap(), None);
}
