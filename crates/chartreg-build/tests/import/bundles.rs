//! The bundles the tests import, made as mindthegap makes them: charts pushed with `helm
//! push` (and the sample image with `skopeo copy`) into Debian's docker-registry, whose storage
//! root is tarred with `charts.yaml` beside it. Made once per test run and shared.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::common::{self, Distribution, Helm, describe, root};

/// Two releases' bundles, made once for every test here.
pub struct Releases {
    pub dir: PathBuf,
    /// `release-1.tar` (entries `./docker/...`) and `release-2.tar` (`docker/...`).
    pub first: PathBuf,
    pub second: PathBuf,
    /// What each source registry tagged: `repository:tag` -> manifest digest.
    pub first_tags: BTreeMap<String, String>,
    pub second_tags: BTreeMap<String, String>,
    /// Chart packages by file name.
    pub packages: BTreeMap<String, Vec<u8>>,
}

pub fn releases() -> &'static Releases {
    static RELEASES: OnceLock<Releases> = OnceLock::new();
    RELEASES.get_or_init(make_releases)
}

pub fn str_path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn make_releases() -> Releases {
    let helm = Helm::new("helm4").expect("helm4 (run scripts/install-tools.sh)");
    // Kept for the whole test run: the bundles are shared fixtures.
    let dir = tempfile::tempdir().expect("temp dir").keep();
    let mut packages = BTreeMap::new();
    for (name, version) in [("hello", "1.0.0"), ("shared", "2.0.0"), ("world", "3.0.0")] {
        packages.insert(
            format!("{name}-{version}.tgz"),
            package(&helm, &dir, name, version, "hello"),
        );
    }
    let release = |n: usize, charts: &[&str], image: bool, dot: bool| {
        let registry =
            Distribution::start().expect("docker-registry (run scripts/install-tools.sh)");
        for chart in charts {
            let file = dir.join(chart);
            std::fs::write(&file, &packages[*chart]).expect("write package");
            helm.ok(&[
                "push",
                str_path(&file),
                &format!("oci://{}/charts", registry.host()),
                "--plain-http",
            ]);
        }
        if image {
            skopeo_copy_sample(&registry.host());
        }
        let bundle = dir.join(format!("release-{n}.tar"));
        tar_bundle(&registry, charts, &bundle, dot);
        (bundle, stored_tags(&registry.storage()))
    };
    let (first, first_tags) = release(1, &["hello-1.0.0.tgz", "shared-2.0.0.tgz"], false, true);
    // Helm stamps `created` to the second: the second release's push of shared 2.0.0 must
    // make another manifest, as it does between real releases. Its pushes start once the
    // clock is past the second the first release's pushes ended in.
    let pushed = unix_second();
    while unix_second() <= pushed {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (second, second_tags) = release(2, &["shared-2.0.0.tgz", "world-3.0.0.tgz"], true, false);
    Releases {
        dir,
        first,
        second,
        first_tags,
        second_tags,
        packages,
    }
}

/// The wall clock's seconds since the Unix epoch.
fn unix_second() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs()
}

/// `helm package` of a test chart `name` at `version` (its values greeting `greeting`).
pub fn package(helm: &Helm, dir: &Path, name: &str, version: &str, greeting: &str) -> Vec<u8> {
    let sources = tempfile::tempdir().expect("temp dir");
    let folder = common::chart_folder(sources.path(), name, version);
    std::fs::write(
        folder.join("values.yaml"),
        format!("greeting: {greeting}\n"),
    )
    .expect("values");
    let into = tempfile::tempdir_in(dir).expect("temp dir");
    helm.ok(&["package", str_path(&folder), "-d", str_path(into.path())]);
    common::read(&into.path().join(format!("{name}-{version}.tgz")))
}

fn skopeo_copy_sample(host: &str) {
    let skopeo = common::tool("skopeo").expect("skopeo (run scripts/install-tools.sh)");
    let out = common::output_of(
        Command::new(skopeo)
            .args([
                "copy",
                "--all",
                "--preserve-digests",
                "--dest-tls-verify=false",
            ])
            .arg(format!("oci:{}:v1", root().join("images/sample").display()))
            .arg(format!("docker://{host}/images/sample:v1")),
        "skopeo copy",
    );
    assert!(out.status.success(), "skopeo copy: {}", describe(&out));
}

/// The storage root tarred as mindthegap does (plain tar, `charts.yaml` at the top); `dot`
/// makes entries start with `./`, as `tar -C root .` writes them.
pub fn tar_bundle(registry: &Distribution, charts: &[&str], bundle: &Path, dot: bool) {
    let storage = registry.storage();
    let mut listed = String::from("repositories:\n  local:\n    charts:\n");
    for chart in charts {
        let (name, version) = chart
            .trim_end_matches(".tgz")
            .split_once('-')
            .expect("name-version");
        listed.push_str(&format!("      {name}:\n        - {version}\n"));
    }
    std::fs::write(storage.join("charts.yaml"), listed).expect("write charts.yaml");
    // The image, as if the bundle had been made from quay.io's (mindthegap stores it by its
    // path; its images file names the registry).
    let image = storage.join("docker/registry/v2/repositories/images/sample");
    let mut files = vec!["docker", "charts.yaml"];
    if image.exists() {
        std::fs::write(
            storage.join("images.yaml"),
            "quay.io:\n  tlsVerify: true\n  images:\n    images/sample: [v1]\n",
        )
        .expect("write images.yaml");
        files.push("images.yaml");
    }
    let mut tar = Command::new("tar");
    tar.arg("-C").arg(&storage).arg("-cf").arg(bundle);
    if dot {
        tar.arg(".");
    } else {
        tar.args(files);
    }
    let out = common::output_of(&mut tar, "tar");
    assert!(out.status.success(), "tar: {}", describe(&out));
}

/// Every tag a distribution storage root holds: `repository:tag` -> digest.
fn stored_tags(storage: &Path) -> BTreeMap<String, String> {
    let base = storage.join("docker/registry/v2/repositories");
    let mut found = BTreeMap::new();
    let mut pending = vec![base.clone()];
    while let Some(dir) = pending.pop() {
        let tags = dir.join("_manifests/tags");
        if let Ok(entries) = std::fs::read_dir(&tags) {
            let repository = dir
                .strip_prefix(&base)
                .expect("below")
                .to_string_lossy()
                .into_owned();
            for tag in entries.flatten() {
                let link = tag.path().join("current/link");
                let digest = std::fs::read_to_string(&link).expect("tag link");
                found.insert(
                    format!("{repository}:{}", tag.file_name().to_string_lossy()),
                    digest,
                );
            }
        }
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if entry.path().is_dir() && !name.to_string_lossy().starts_with('_') {
                pending.push(entry.path());
            }
        }
    }
    found
}

/// Copies the tar `from` to `to`, letting `edit` change each file's bytes.
pub fn rewrite_tar(from: &Path, to: &Path, mut edit: impl FnMut(&str, &mut Vec<u8>)) {
    let mut archive = tar::Archive::new(std::fs::File::open(from).expect("open tar"));
    let mut builder = tar::Builder::new(std::fs::File::create(to).expect("create tar"));
    let mut edited = false;
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        let mut header = entry.header().clone();
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).expect("read entry");
        if !edited && header.entry_type().is_file() {
            let before = data.clone();
            edit(&name, &mut data);
            edited = data != before;
        }
        header.set_size(data.len() as u64);
        // append_data writes long names as GNU tar does (the header alone holds 100 bytes).
        builder
            .append_data(&mut header, &name, data.as_slice())
            .expect("append");
    }
    builder.finish().expect("finish tar");
    assert!(edited, "nothing was edited");
}
