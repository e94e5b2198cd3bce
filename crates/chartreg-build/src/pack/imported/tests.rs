//! `imported`'s tests: layout folders and staged blobs, read within bounds.

use super::*;

/// A layout folder holding `data` as a blob; its digest.
fn stored(dir: &Path, data: &[u8]) -> Digest {
    let digest = Digest::sha256_of(data);
    let path = dir.join(blob_path(&digest));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
    digest
}

#[test]
fn a_layout_folder_takes_only_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let data = br#"{"schemaVersion":2,"manifests":[]}"#;
    let digest = stored(dir.path(), data);
    assert!(LayoutFolder(dir.path()).blob(&digest).is_some());
    // The same bytes through a link that leaves the folder: not taken.
    let linked = stored(outside.path(), data);
    let path = dir.path().join(blob_path(&linked));
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(outside.path().join(blob_path(&linked)), &path).unwrap();
    assert!(LayoutFolder(dir.path()).blob(&linked).is_none());
    assert!(matches!(
        LayoutFolder(dir.path()).read(&linked),
        Err(Error::Missing(_))
    ));
    // A FIFO is never opened.
    std::fs::remove_file(&path).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    assert!(LayoutFolder(dir.path()).blob(&linked).is_none());
}

#[test]
fn manifests_past_4_mib_are_not_read() {
    let digest = Digest::sha256_of(b"a manifest");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    std::fs::File::create(&path)
        .and_then(|f| f.set_len(2 << 30))
        .unwrap();
    let staged = BTreeMap::from([(
        digest.clone(),
        BlobFile {
            path,
            size: 2 << 30,
            digest: digest.clone(),
        },
    )]);
    let e = walk(&staged, &digest, &mut BTreeMap::new()).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { size, .. } if size == 2 << 30),
        "{e}"
    );
    assert!(e.to_string().contains("more than the 4 MiB"), "{e}");
}
