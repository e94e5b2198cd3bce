//! What the diff tests share: running `chartreg-build diff` (within a time bound), the rows and
//! listings of made-up content, OLD as a script answering as a server does, image layouts made
//! by hand (a listing layer, a `/chartreg` layer, any of them hostile), and images written by
//! `chartreg-build image` from a static binary with `--listing`, signed or not.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use chartreg_core::oci::Digest;
use serde_json::{Value, json};

pub const VERSION: &str = "0.1.0";

pub fn tool() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chartreg-build"));
    command.env_remove("SOURCE_DATE_EPOCH");
    command
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `chartreg-build diff ARGS`, stopped (and the test failed) if it runs past `bound`; its
/// output and how long it took.
pub fn diff_within(args: &[&str], env: &[(&str, &Path)], bound: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let mut command = tool();
    command.arg("diff").args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Polled: a hang is the failure this bound catches.
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > bound {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "diff {args:?} still running after {bound:?}: stopped\n{}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), started.elapsed())
}

/// `chartreg-build diff ARGS` within a minute.
pub fn diff(args: &[&str]) -> Output {
    diff_within(args, &[], Duration::from_secs(60)).0
}

/// A content digest made of `seed`.
pub fn content(seed: &str) -> String {
    Digest::sha256_of(seed.as_bytes()).to_string()
}

/// `ls --json` rows: a chart version per `(name, version)`, digests made of both.
pub fn rows(charts: &[(&str, &str)]) -> Value {
    Value::Array(
        charts
            .iter()
            .map(|(name, version)| {
                json!({
                    "repository": format!("charts/{name}"), "tag": version,
                    "digest": content(&format!("{name}-{version}")), "size": 1024,
                    "kind": "chart", "verified": null,
                })
            })
            .collect(),
    )
}

/// A listing as an image carries it.
pub fn listing(version: &str, content: &str, rows: &Value) -> Value {
    json!({"schemaVersion": 1, "version": version, "contentDigest": content, "rows": rows})
}

/// A shell script answering `--version`, `ls --content-digest` and `ls --json` as a server
/// with `listing` does; `marker`, when given, is touched first (the script is then hostile).
pub fn server_script(listing: &Value, marker: Option<&Path>, dir: &Path) -> Vec<u8> {
    let rows = dir.join(format!("rows-{}.json", content(&listing.to_string())));
    fs::write(&rows, listing["rows"].to_string()).unwrap();
    let touch = marker.map_or(String::new(), |m| format!("touch '{}'\n", m.display()));
    format!(
        "#!/bin/sh\n{touch}case \"$*\" in\n  --version) echo 'chartreg {}' ;;\n  'ls --content-digest') echo '{}' ;;\n  'ls --json') cat '{}' ;;\n  *) exit 2 ;;\nesac\n",
        listing["version"].as_str().unwrap(),
        listing["contentDigest"].as_str().unwrap(),
        rows.display()
    )
    .into_bytes()
}

/// `data` written as the executable `path` by `install`, not by this process (a file this
/// process held open for writing would make its exec fail with ETXTBSY in a child another
/// test thread forks meanwhile).
pub fn install(path: &Path, data: &[u8]) -> PathBuf {
    let staged = tempfile::NamedTempFile::new().unwrap();
    fs::write(staged.path(), data).unwrap();
    let out = Command::new("install")
        .args(["-m", "0755"])
        .arg(staged.path())
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "install: {}", text(&out.stderr));
    path.to_owned()
}

/// A tar of `(path, mode, bytes)` files.
pub fn tar(files: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (path, mode, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(*mode);
        tar.append_data(&mut header, path, *data).unwrap();
    }
    tar.into_inner().unwrap()
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// What a hand-made image holds: its listing layer's bytes (gzipped tar), its `/chartreg`
/// layer's, and the content digest its config labels.
pub struct Parts {
    pub listing: Option<Vec<u8>>,
    pub server: Vec<u8>,
    pub label: String,
}

/// The blobs of a hand-made layout, by what they are.
pub struct Made {
    pub dir: PathBuf,
    pub manifest: PathBuf,
    pub listing: Option<PathBuf>,
}

impl Parts {
    /// An image carrying `listing`, its `/chartreg` the script `server`.
    pub fn carrying(listing: &Value, server: Vec<u8>) -> Parts {
        let file = format!("{}\n", serde_json::to_string_pretty(listing).unwrap());
        Parts {
            listing: Some(gzip(&tar(&[(
                "chartreg.listing.json",
                0o644,
                file.as_bytes(),
            )]))),
            server,
            label: listing["contentDigest"].as_str().unwrap().to_owned(),
        }
    }

    /// The layout `dir`, tagged `tag`, as `chartreg-build image` lays it out (the listing's
    /// layer annotated, below the binary's).
    pub fn write(&self, dir: &Path, tag: &str) -> Made {
        fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
        fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        let blob = |data: &[u8]| -> (Value, PathBuf) {
            let digest = Digest::sha256_of(data);
            let path = dir.join("blobs/sha256").join(digest.encoded());
            fs::write(&path, data).unwrap();
            (json!({"digest": digest.as_str(), "size": data.len()}), path)
        };
        let gz = "application/vnd.oci.image.layer.v1.tar+gzip";
        let mut layers = Vec::new();
        let mut listing = None;
        if let Some(data) = &self.listing {
            let (mut d, path) = blob(data);
            d["mediaType"] = gz.into();
            d["annotations"] = json!({"io.chartreg.listing": "chartreg.listing.json"});
            layers.push(d);
            listing = Some(path);
        }
        let (mut d, _) = blob(&gzip(&tar(&[("chartreg", 0o755, &self.server)])));
        d["mediaType"] = gz.into();
        layers.push(d);
        let config = json!({
            "architecture": "amd64", "os": "linux",
            "config": {"Entrypoint": ["/chartreg"], "Cmd": ["serve"],
                       "Labels": {"io.chartreg.content.digest": self.label}},
            "rootfs": {"type": "layers", "diff_ids": []},
        });
        let (mut config, _) = blob(config.to_string().as_bytes());
        config["mediaType"] = "application/vnd.oci.image.config.v1+json".into();
        let manifest = json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": config, "layers": layers,
        });
        let (mut entry, manifest) = blob(manifest.to_string().as_bytes());
        entry["mediaType"] = "application/vnd.oci.image.manifest.v1+json".into();
        entry["annotations"] = json!({"org.opencontainers.image.ref.name": tag});
        let index = json!({"schemaVersion": 2, "manifests": [entry]});
        fs::write(dir.join("index.json"), index.to_string()).unwrap();
        Made {
            dir: dir.to_owned(),
            manifest,
            listing,
        }
    }
}

/// A cosign key pair (`cosign.key`, password `pw`, and `cosign.pub`) in `dir`, made by
/// tests/fixtures/signing/cosign.py; `None` (skipped) without PyNaCl, a failure under CI.
pub fn cosign_key(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let root = crate::common::root();
    fs::create_dir_all(dir).unwrap();
    let made = Command::new("python3")
        .env("PYTHONPATH", root.join(".tools/python"))
        .arg(root.join("tests/fixtures/signing/cosign.py"))
        .arg("key")
        .arg(dir)
        .arg("pw")
        .output()
        .unwrap();
    if !made.status.success() {
        assert!(
            !crate::common::ci(),
            "cosign.py key failed (CI=true: scripts/install-tools.sh installs PyNaCl): {}",
            text(&made.stderr)
        );
        eprintln!("SKIPPED: signing (PyNaCl is missing)");
        return None;
    }
    Some((dir.join("cosign.key"), dir.join("cosign.pub")))
}

/// An image written by `chartreg-build image` into `out`, tagged `tag`: a static binary that
/// prints nothing useful, the listing `listing` given, signed by `key` when given.
pub fn image(out: &Path, tag: &str, listing: &Value, key: Option<&Path>) {
    image_for(out, tag, listing, key, &[]);
}

/// [`image`] with the binary given for `platforms` too (several make an image index).
pub fn image_for(out: &Path, tag: &str, listing: &Value, key: Option<&Path>, platforms: &[&str]) {
    let dir = out.with_extension("inputs");
    fs::create_dir_all(&dir).unwrap();
    let binary = crate::image_support::write_binary(&dir.join("chartreg"), b"not a server\n");
    let file = dir.join("listing.json");
    fs::write(&file, listing.to_string()).unwrap();
    let mut command = tool();
    command
        .arg("image")
        .args(["--binary", s(&binary), "--out", s(out), "--tag", tag])
        .args([
            "--content-digest",
            listing["contentDigest"].as_str().unwrap(),
        ])
        .args(["--listing", s(&file), "--no-sbom"]);
    for platform in platforms {
        command
            .arg("--binary")
            .arg(format!("{platform}={}", s(&binary)));
    }
    if let Some(key) = key {
        command
            .arg("--sign-key")
            .arg(key)
            .args(["--repository", "registry.example/team/chartreg"])
            .env("COSIGN_PASSWORD", "pw");
    }
    let made = command.output().unwrap();
    assert!(made.status.success(), "image: {}", text(&made.stderr));
}

/// The digest `index.json` of `layout` lists under `tag`.
pub fn tagged(layout: &Path, tag: &str) -> String {
    let index: Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `skopeo copy --all` of `layout:tag` to `docker://to` (every platform of an index), and of
/// its cosign signature when it has one (cosign's `sha256-<hex>.sig` tag, beside it).
pub fn push(skopeo: &Path, layout: &Path, tag: &str, to: &str) {
    let copy = |from_tag: &str, to_tag: &str| {
        let out = Command::new(skopeo)
            .args(["copy", "--all", "--quiet", "--dest-tls-verify=false"])
            .arg(format!("oci:{}:{from_tag}", s(layout)))
            .arg(format!("docker://{to}:{to_tag}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "skopeo: {}", text(&out.stderr));
    };
    copy(tag, tag);
    let sig = format!("{}.sig", tagged(layout, tag).replace(':', "-"));
    let index = fs::read_to_string(layout.join("index.json")).unwrap();
    if index.contains(&sig) {
        copy(&sig, &sig);
    }
}
