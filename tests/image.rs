//! What the container image needs, checked without a container engine: the release binary in a
//! root holding nothing but itself and the shared libraries it links (what distroless `cc`
//! provides), read-only, run as uid 65532, serves its charts. (That it links no OpenSSL is
//! checked in tls.rs.)

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The shared libraries `ldd` says `bin` loads, with the dynamic loader.
fn linked_libraries(bin: &Path) -> Vec<String> {
    let out = Command::new("ldd").arg(bin).output().expect("ldd runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with('/'))
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn serves_from_a_bare_read_only_root_as_nonroot() {
    if common::tool("chroot").is_none() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let bin = common::chartreg_bin();
    fs::copy(&bin, root.path().join("chartreg")).unwrap();
    for lib in linked_libraries(&bin) {
        let target = root.path().join(lib.trim_start_matches('/'));
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(&lib, &target).unwrap();
    }
    // Nothing in it is writable, by anyone.
    for entry in walk(root.path()) {
        let mode = if entry.is_dir()
            || entry.ends_with("chartreg")
            || entry.to_string_lossy().contains(".so")
        {
            0o555
        } else {
            0o444
        };
        fs::set_permissions(&entry, fs::Permissions::from_mode(mode)).unwrap();
    }
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o555)).unwrap();

    let mut child = Command::new("chroot")
        .args(["--userspec=65532:65532"])
        .arg(root.path())
        .args(["/chartreg", "serve", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut log = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.split(" on http://").nth(1) {
                let _ = tx.send(Ok(addr.split_whitespace().next().unwrap().to_owned()));
            }
            log.push_str(&line);
            log.push('\n');
        }
        let _ = tx.send(Err(log));
    });
    let addr = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(addr)) => addr,
        other => {
            let _ = child.kill();
            panic!("chartreg did not start in the bare root: {other:?}");
        }
    };
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "GET /v2/_catalog HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).unwrap();
    for entry in walk(root.path()) {
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with(r#"{"repositories":["charts/hello","charts/motd"]}"#),
        "{answer}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}
