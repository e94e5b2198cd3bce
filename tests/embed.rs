//! Binaries built with other content through the build-time switch `CHARTREG_ASSETS=DIR`:
//! files added to or removed from the folder are picked up by the next build; a binary whose
//! content is served from what the build found it to be (build-time facts); a binary whose
//! embedded content is corrupt refuses to start, naming the file (and `chartreg verify` names
//! it); files of 1 MiB and more are
//! linked in as objects (in `.lrodata`) and served byte for byte; and a large download in flight
//! survives a graceful shutdown.
//!
//! Builds go to their own target folder (`target/embed-test`), one at a time, and each binary
//! is copied out before use, so that they never disturb the binary the other tests run or each
//! other.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::oci::media_type;
use chartreg_core::tree::{Files, LayoutBuilder};

fn layout(name: &str, payload: &[u8]) -> Files {
    let mut layout = LayoutBuilder::new(name);
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/octet-stream", payload.to_vec());
    let manifest = ImageManifest::new(config, vec![layer]);
    let d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
    layout.list(d, Some("v1"));
    layout.into_files().unwrap()
}

fn write(dir: &Path, files: &Files) {
    for (path, data) in files {
        let file = dir.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, data).unwrap();
    }
}

static BUILDS: Mutex<()> = Mutex::new(());

/// Builds the binary embedding `assets`; returns the path of a copy of it beside `assets`.
fn build_with(assets: &Path) -> PathBuf {
    build_with_env(assets, &[])
}

fn build_with_env(assets: &Path, env: &[(&str, &str)]) -> PathBuf {
    let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    build_now(assets, env)
}

/// Builds now: the caller holds `BUILDS`.
fn build_now(assets: &Path, env: &[(&str, &str)]) -> PathBuf {
    let target = common::root().join("target/embed-test");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "--locked",
            "--quiet",
            "--bin",
            "chartreg",
            "--target-dir",
        ])
        .arg(&target)
        .env("CHARTREG_ASSETS", assets)
        .env_remove("CHARTREG_LINK_THRESHOLD")
        .envs(env.iter().copied())
        .current_dir(common::root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let name = assets.file_name().unwrap().to_string_lossy();
    let copy = assets.with_file_name(format!("chartreg-{name}"));
    fs::copy(target.join("debug/chartreg"), &copy).unwrap();
    copy
}

fn listed(bin: &Path) -> Vec<String> {
    let out = Command::new(bin).args(["ls", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["repository"].as_str().unwrap(),
                r["tag"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn other_content_is_embedded_at_build_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("assets");
    let dir = dir.as_path();
    let one = layout("demo/one", b"first payload");
    write(dir, &one);

    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1"]);

    // Served from the binary, byte for byte, from what the build found the content to be.
    let server = common::Process::start_with(&bin, &[]);
    assert_checked_at_build(&server);
    let (blob_path, blob) = one
        .iter()
        .find(|(_, b)| b.as_slice() == b"first payload")
        .unwrap();
    let digest = format!("sha256:{}", blob_path.rsplit('/').next().unwrap());
    let out = Command::new("curl")
        .args([
            "-sS",
            "--fail",
            &format!("{}/v2/demo/one/blobs/{digest}", server.url()),
        ])
        .output()
        .unwrap();
    assert_eq!(&out.stdout, blob);
    drop(server);

    // A folder added: the next build embeds it.
    write(dir, &layout("demo/two", b"second payload"));
    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1", "demo/two:v1"]);

    // A folder removed: the next build drops it.
    fs::remove_dir_all(dir.join("demo/two")).unwrap();
    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1"]);

    // A blob whose bytes no longer match its name: the binary refuses to start.
    let tampered = dir.join(blob_path);
    fs::write(&tampered, b"first pay1oad").unwrap();
    refuses_to_start(&build_with(dir), blob_path);
}

/// The server built its registry from the build's facts (none were stale).
fn assert_checked_at_build(server: &common::Process) {
    let log = server.log();
    assert!(log.contains("content checked at build time"), "{log}");
    assert!(!log.contains("build-time facts"), "{log}");
}

/// `bin` will not serve: it exits 1 naming `path`, whose content does not match its name.
fn refuses_to_start(bin: &Path, path: &str) {
    let out = Command::new(bin)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(path) && stderr.contains("content has digest"),
        "{stderr}"
    );
    // `chartreg verify` names the file too.
    let out = Command::new(bin).arg("verify").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "verify: {stderr}");
    assert!(
        stderr.contains(path) && stderr.contains("not the digest it is stored under"),
        "verify: {stderr}"
    );
}

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
    let build = common::root().join("target/embed-test/debug/build");
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

/// GETs `path` and reads the response slowly (`chunk` bytes, then `pause`), returning the
/// status line and the body.
fn slow_get(
    addr: std::net::SocketAddr,
    path: &str,
    chunk: usize,
    pause: Duration,
) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    let mut buf = vec![0; chunk];
    loop {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        response.extend_from_slice(&buf[..n]);
        std::thread::sleep(pause);
    }
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    (head, response[split + 4..].to_vec())
}

fn status_of(addr: std::net::SocketAddr, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.lines().next().map(str::to_owned)
}

#[test]
fn sigterm_drains_a_large_download_and_exits_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    let payload: Vec<u8> = (0..64u32 * 1024 * 1024)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let files = layout("demo/big", &payload);
    write(&dir, &files);
    let bin = build_with(&dir);
    let digest = common::sha256(&payload);

    let mut server = common::Process::start_args(
        &bin,
        &["--shutdown-delay", "1s", "--shutdown-timeout", "30s"],
        &[],
    );
    let addr = server.addr;
    assert_eq!(
        status_of(addr, "/readyz").as_deref(),
        Some("HTTP/1.1 200 OK")
    );

    // A download read at about 20 MiB/s: in flight for about 3 s.
    let path = format!("/v2/demo/big/blobs/{digest}");
    let download =
        std::thread::spawn(move || slow_get(addr, &path, 256 * 1024, Duration::from_millis(12)));
    std::thread::sleep(Duration::from_millis(300));

    let signalled = Instant::now();
    server.signal("TERM");
    // Not ready at once, but still serving during the delay.
    let mut readyz = None;
    for _ in 0..50 {
        readyz = status_of(addr, "/readyz");
        if readyz.as_deref() == Some("HTTP/1.1 503 Service Unavailable") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        readyz.as_deref(),
        Some("HTTP/1.1 503 Service Unavailable"),
        "{}",
        server.log()
    );
    assert!(signalled.elapsed() < Duration::from_millis(900));
    assert_eq!(
        status_of(addr, "/v2/").as_deref(),
        Some("HTTP/1.1 200 OK"),
        "serving during the delay"
    );

    // After the delay the listener closes while the download goes on.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        TcpStream::connect(addr).is_err(),
        "no new connections after the delay"
    );
    if download.is_finished() {
        let (head, body) = download.join().unwrap();
        panic!("download ended early: {head} {} bytes", body.len());
    }

    let (head, body) = download.join().unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body.len(), payload.len(), "the whole blob arrived");
    assert_eq!(common::sha256(&body), digest, "intact");

    let status = server.wait();
    assert_eq!(status.code(), Some(0), "{}", server.log());
    assert!(signalled.elapsed() >= Duration::from_secs(1));
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens afterwards"
    );
    let log = server.log();
    assert!(log.contains("SIGTERM: not ready"), "{log}");
    assert!(log.contains("stopped"), "{log}");
}
