//! Files of 1 MiB and more, linked in as objects: where they lie in the binary, the objects
//! kept by digest between builds, and the bytes served from them.

use super::*;

/// The ELF sections of `bin` (name, address, size), from readelf.
fn sections(bin: &Path) -> Vec<(String, u64, u64)> {
    let out = Command::new("readelf")
        .args(["-SW"])
        .arg(bin)
        .output()
        .expect("readelf (binutils) runs");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(['[', ']']).nth(2)?.split_whitespace().collect();
            let hex = |i: usize| u64::from_str_radix(fields.get(i)?, 16).ok();
            Some((fields.first()?.to_string(), hex(2)?, hex(4)?))
        })
        .collect()
}

/// Size of the ELF section `name` in `bin`.
fn section_size(bin: &Path, name: &str) -> Option<u64> {
    sections(bin)
        .into_iter()
        .find_map(|(section, _, size)| (section == name).then_some(size))
}

fn curl_bytes(url: &str, extra: &[&str]) -> Vec<u8> {
    let out = Command::new("curl")
        .args(["-sS", "--fail"])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn large_files_are_linked_in_and_served_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("large");
    let big: Vec<u8> = (0..3u32 * 1024 * 1024 + 17)
        .map(|i| (i.wrapping_mul(2246822519) >> 11) as u8)
        .collect();
    write(&dir, &layout("demo/big", &big));
    // The same layer in a second repository (a base layer of two images): stored once.
    write(&dir, &layout("demo/also", &big));
    write(&dir, &layout("demo/small", b"small payload"));
    let digest = common::sha256(&big);

    // Default threshold (1 MiB): the 3 MiB layer is linked in, the rest goes through rust-embed.
    // Built again with one more small repository, the layer's object is kept as it was (the
    // builds share their build folder: no other test's build between them).
    let bin = {
        let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
        build_now(&dir, &[]);
        let object = object_of(&digest);
        let written = fs::metadata(&object).unwrap().modified().unwrap();
        write(&dir, &layout("demo/small2", b"another small payload"));
        let bin = build_now(&dir, &[]);
        assert_eq!(fs::metadata(&object).unwrap().modified().unwrap(), written);
        bin
    };
    // Linked objects, shared blobs and small files embedded once all count, by path.
    let content_digest = common::content_digest_of(&bin);
    assert_eq!(content_digest, common::folder_content_digest(&dir));
    let linked = section_size(&bin, ".lrodata").expect("a .lrodata section");
    assert!(
        linked >= big.len() as u64 && linked < 2 * big.len() as u64,
        "the shared layer is linked once: {linked}"
    );
    assert_eq!(
        listed(&bin),
        [
            "demo/also:v1",
            "demo/big:v1",
            "demo/small:v1",
            "demo/small2:v1"
        ]
    );
    let server = common::Process::start_with(&bin, &[]);
    assert_checked_at_build(&server);
    let url = format!("{}/v2/demo/big/blobs/{digest}", server.url());
    assert!(curl_bytes(&url, &[]) == big, "the linked blob differs");
    let also = format!("{}/v2/demo/also/blobs/{digest}", server.url());
    assert!(
        curl_bytes(&also, &[]) == big,
        "the shared blob differs in its second repository"
    );
    let middle = curl_bytes(&url, &["-H", "Range: bytes=1048570-2097160"]);
    assert!(middle == big[1048570..=2097160], "the range differs");
    let small = curl_bytes(
        &format!("{}/v2/demo/small/manifests/v1", server.url()),
        &["-H", "Accept: application/vnd.oci.image.manifest.v1+json"],
    );
    assert!(small.starts_with(b"{"));
    drop(server);
    assert_large_data_at_the_end(&bin);

    // A threshold above every file: nothing is linked, and the same content is served.
    let bin = build_with_env(&dir, &[("CHARTREG_LINK_THRESHOLD", "1000000000")]);
    assert_eq!(section_size(&bin, ".lrodata"), None);
    assert_eq!(
        common::content_digest_of(&bin),
        content_digest,
        "the same content embedded otherwise, the same digest"
    );
    let server = common::Process::start_with(&bin, &[]);
    assert_checked_at_build(&server);
    let url = format!("{}/v2/demo/big/blobs/{digest}", server.url());
    assert!(curl_bytes(&url, &[]) == big, "the rust-embed blob differs");
    drop(server);

    // A linked file whose bytes no longer match its name: the binary refuses to start.
    let (path, _) = layout("demo/big", &big)
        .into_iter()
        .find(|(_, data)| data.len() == big.len())
        .unwrap();
    let mut tampered = big.clone();
    tampered[2 * 1024 * 1024] ^= 1;
    fs::write(dir.join(&path), &tampered).unwrap();
    refuses_to_start(&build_with(&dir), &path);
}

/// The object the build wrote for the file whose digest is `digest` (`sha256:<hex>`).
fn object_of(digest: &str) -> PathBuf {
    let name = format!("{}.o", digest.trim_start_matches("sha256:"));
    let (build_dir, profile) = super::build_folder();
    let build = build_dir.join(profile).join("build");
    fs::read_dir(&build)
        .unwrap()
        .flatten()
        .map(|entry| entry.path().join("out/objects").join(&name))
        .find(|object| object.exists())
        .unwrap_or_else(|| panic!("no object {name} under {}", build.display()))
}

/// The ELF symbol `name`'s address in `bin`, from nm.
fn symbol_address(bin: &Path, name: &str) -> Option<u64> {
    let out = Command::new("nm")
        .arg(bin)
        .output()
        .expect("nm (binutils) runs");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let address = fields.next()?;
            (fields.nth(1) == Some(name))
                .then(|| u64::from_str_radix(address, 16).ok())
                .flatten()
        })
}

/// Linked files lie after every other section of the image, `_end` at their page-aligned
/// start: what keeps GiBs of them out of reach of 32-bit references (see chartreg_embed).
fn assert_large_data_at_the_end(bin: &Path) {
    // Allocated sections (address, name) in address order.
    let mut allocated: Vec<(u64, String)> = sections(bin)
        .into_iter()
        .filter(|(_, address, _)| *address != 0)
        .map(|(name, address, _)| (address, name))
        .collect();
    allocated.sort();
    let (start, last) = allocated.last().unwrap();
    assert_eq!(last, ".lrodata", "{allocated:?}");
    assert_eq!(start % 4096, 0, "page-aligned");
    assert_eq!(
        symbol_address(bin, "_end"),
        Some(*start),
        "_end at their start"
    );
}
