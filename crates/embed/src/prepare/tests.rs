//! Tests of `prepare`: the mirror, aliases, objects kept and removed, and facts.

use super::*;
use chartreg_core::content::{HeldFile, Registry, Unservable};
use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::oci::media_type;
use chartreg_core::tree::LayoutBuilder;

/// A layout `name` whose one layer is `layer`, written under `folder`.
fn layout(folder: &Path, name: &str, layer: &[u8]) {
    let mut builder = LayoutBuilder::new(name);
    let config = builder.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = builder.blob("application/octet-stream", layer.to_vec());
    let d = builder.manifest(
        media_type::OCI_MANIFEST,
        &ImageManifest::new(config, vec![layer]),
    );
    builder.list(d, Some("v1"));
    for (path, data) in builder.into_files().unwrap() {
        let file = folder.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, data).unwrap();
    }
}

/// A temporary folder with the content folder and the output folder in it.
fn folders() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (folder, out) = (dir.path().join("content"), dir.path().join("out"));
    (dir, folder, out)
}

fn options(folder: &Path, out: &Path, threshold: u64) -> Options {
    Options {
        folder: folder.to_owned(),
        out_dir: out.to_owned(),
        link: Some(Link {
            threshold,
            machine: object::Machine::X86_64,
        }),
    }
}

fn layer(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_add(seed).wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

/// The registry start-up builds from the prepared files and facts, or why it refuses: large
/// files as the binary would hold them (here read back from their sources).
fn start_up(folder: &Path, out: &Path) -> Result<Registry, Unservable> {
    let mut files = Vec::new();
    walk(folder, &mut files).unwrap();
    let files: Vec<HeldFile> = files
        .iter()
        .map(|f| HeldFile::new(relative(folder, f).unwrap(), fs::read(f).unwrap()))
        .collect();
    let facts = fs::read(out.join("facts.bin")).unwrap().into();
    Registry::from_facts(&facts, &files)
}

/// The registry start-up builds from the prepared files and facts.
fn served(folder: &Path, out: &Path) -> Registry {
    start_up(folder, out).expect("the facts describe them")
}

#[test]
fn large_files_become_objects_once_and_are_kept_for_the_next_build() {
    let (_dir, folder, out) = folders();
    let big = layer(5000, 1);
    layout(&folder, "demo/a", &big);
    layout(&folder, "demo/b", &big);
    layout(&folder, "demo/c", b"small");
    let prepared = run(&options(&folder, &out, 4096)).unwrap();
    assert!(prepared.warnings.is_empty(), "{:?}", prepared.warnings);
    assert_eq!((prepared.objects.len(), prepared.written), (1, 1));
    assert_eq!(prepared.hashed, 2, "two files with the same bytes");
    let linked = fs::read_to_string(out.join("linked.rs")).unwrap();
    let hex = oci::Digest::sha256_of(&big).encoded().to_owned();
    assert_eq!(linked.matches(&object::symbol(&hex)).count(), 2, "{linked}");
    assert!(linked.contains(&format!("demo/a/blobs/sha256/{hex}")));
    // b's small files are a's (marker, index, config, manifest), c's marker and config
    // too: embedded once.
    let aliases = fs::read_to_string(out.join("aliases.rs")).unwrap();
    assert_eq!(aliases.lines().count(), 2 + 6, "{aliases}");
    assert!(!prepared.mirror.join("demo/b/oci-layout").exists());
    assert!(prepared.mirror.join("demo/c/index.json").exists());
    assert!(
        !prepared
            .mirror
            .join(format!("demo/a/blobs/sha256/{hex}"))
            .exists()
    );
    assert_eq!(served(&folder, &out).summary().repositories, 3);

    // Again, with one more small repository: nothing hashed or written again.
    let object = &prepared.objects[0];
    let before = fs::metadata(object).unwrap().modified().unwrap();
    layout(&folder, "demo/d", b"another");
    let again = run(&options(&folder, &out, 4096)).unwrap();
    assert_eq!((again.hashed, again.written), (0, 0));
    assert_eq!(&again.objects, &prepared.objects);
    assert_eq!(fs::metadata(object).unwrap().modified().unwrap(), before);
    assert_eq!(served(&folder, &out).summary().repositories, 4);

    // The large layer gone, another in its place: the old object goes, a new one comes.
    fs::remove_dir_all(folder.join("demo/a")).unwrap();
    fs::remove_dir_all(folder.join("demo/b")).unwrap();
    layout(&folder, "demo/a", &layer(6000, 2));
    let changed = run(&options(&folder, &out, 4096)).unwrap();
    assert_eq!((changed.hashed, changed.written), (1, 1));
    assert!(!object.exists());
    assert_eq!(fs::read_dir(out.join("objects")).unwrap().count(), 1);
}

#[test]
fn manifests_in_large_files_are_read_when_loading_needs_them() {
    let (_dir, folder, out) = folders();
    layout(&folder, "demo/a", b"layer");
    // Every file of 100 bytes and more is left on disk, the manifest among them.
    let prepared = run(&options(&folder, &out, 100)).unwrap();
    assert!(prepared.warnings.is_empty(), "{:?}", prepared.warnings);
    assert!(!prepared.objects.is_empty());
    assert_eq!(served(&folder, &out).summary().manifests, 1);
}

#[test]
fn content_that_cannot_be_served_is_a_warning_naming_the_file() {
    let (_dir, folder, out) = folders();
    let big = layer(5000, 3);
    layout(&folder, "demo/a", &big);
    let path = format!(
        "demo/a/blobs/sha256/{}",
        oci::Digest::sha256_of(&big).encoded()
    );
    let mut tampered = big.clone();
    tampered[4000] ^= 1;
    fs::write(folder.join(&path), tampered).unwrap();
    let prepared = run(&options(&folder, &out, 4096)).unwrap();
    assert_eq!(prepared.warnings.len(), 1);
    assert!(
        prepared.warnings[0].contains(&path),
        "{:?}",
        prepared.warnings
    );
    // The facts say so: start-up refuses with the same words.
    match start_up(&folder, &out) {
        Err(refused @ Unservable::Refused { .. }) => {
            assert_eq!(
                refused.to_string(),
                prepared.warnings[0].replace("the content cannot be served: ", "")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_linking_every_file_is_embedded() {
    let (_dir, folder, out) = folders();
    layout(&folder, "demo/a", &layer(5000, 4));
    let mut options = options(&folder, &out, 0);
    options.link = None;
    let prepared = run(&options).unwrap();
    assert!(prepared.objects.is_empty());
    assert_eq!(fs::read_to_string(out.join("linked.rs")).unwrap(), "&[\n]");
    assert!(link_args(&prepared.objects, object::Machine::X86_64).is_empty());
}

#[cfg(unix)]
#[test]
fn a_link_back_up_the_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("content");
    fs::create_dir_all(folder.join("demo")).unwrap();
    std::os::unix::fs::symlink(&folder, folder.join("demo/loop")).unwrap();
    let e = run(&options(&folder, &dir.path().join("out"), 4096)).unwrap_err();
    assert!(matches!(e, Error::Loop(_)), "{e}");
}
