//! The two states a content repository moves between, and the upstreams that serve them.
//!
//! | | A | B |
//! | --- | --- | --- |
//! | classic repository `main` | hello 1.0.0, motd 1.0.0 (with `.prov`) | hello 1.0.0 re-published with other bytes (the same chart, compressed again), hello 0.1.0 added, motd 1.0.0 |
//! | classic repository `second` | not listed | added: hello 0.2.0, and extra 1.0.0 (a chart made here: a new repository in `assets/`) |
//! | distribution, `images/sample` | `v1` (the committed sample, multi-platform) and `v2` (an image made here) | `v2` dropped |
//! | local chart folder `local/greet` | 0.1.0 | 0.2.0 |
//!
//! The upstreams ([`Upstreams`]) run for one test: two classic Helm repositories in this
//! process (the fetch tests' `HelmRepo`; `main` is switched between the states with
//! [`Upstreams::serve`]) and Debian's docker-registry, which holds both tags (B's list no
//! longer asks for `v2`). [`inputs`] writes a state's lists (`lists/charts.yaml`,
//! `lists/images.yaml`), its local chart and the content file, which packs the local chart
//! and what the lock pins.

use std::path::Path;

use super::common::{self, Distribution, Skopeo};
use super::sources::HelmRepo;
use super::tool::Tool;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    A,
    B,
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::A => "A",
            State::B => "B",
        })
    }
}

/// A committed sample package.
pub fn package(name: &str) -> Vec<u8> {
    common::read(&common::root().join("charts").join(name))
}

/// `package` with the same files, compressed again (other bytes), as an upstream that
/// re-publishes a version does.
fn recompressed(package: &[u8]) -> Vec<u8> {
    use std::io::{Read as _, Write as _};
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(package)
        .read_to_end(&mut tar)
        .expect("a gzip package");
    let mut gz = flate2::GzBuilder::new()
        .mtime(1_700_000_000)
        .write(Vec::new(), flate2::Compression::best());
    gz.write_all(&tar).expect("gzip in memory");
    gz.finish().expect("gzip in memory")
}

/// A chart package made here: `common::chart_folder`'s files under `NAME/`, in a gzip'd tar
/// with fixed metadata.
fn made_package(name: &str, version: &str) -> Vec<u8> {
    use std::io::Write as _;
    let folder = tempfile::tempdir().expect("temp dir");
    let chart = common::chart_folder(folder.path(), name, version);
    let mut tar = tar::Builder::new(Vec::new());
    for file in ["Chart.yaml", "values.yaml", "templates/configmap.yaml"] {
        let data = common::read(&chart.join(file));
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_size(data.len() as u64);
        header.set_cksum();
        tar.append_data(&mut header, format!("{name}/{file}"), data.as_slice())
            .expect("tar in memory");
    }
    let tar = tar.into_inner().expect("tar in memory");
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    gz.write_all(&tar).expect("gzip in memory");
    gz.finish().expect("gzip in memory")
}

fn hex_sha256(data: &[u8]) -> String {
    common::sha256(data)
        .trim_start_matches("sha256:")
        .to_owned()
}

/// The upstreams of both states (see the module doc); stopped when dropped.
pub struct Upstreams {
    main: HelmRepo,
    second: HelmRepo,
    pub registry: Distribution,
}

impl Upstreams {
    /// `None` (the test is skipped) when docker-registry or skopeo is missing; under
    /// `CI=true` the test fails instead.
    pub fn start() -> Option<Upstreams> {
        let registry = Distribution::start()?;
        let skopeo = Skopeo::new()?;
        let host = registry.host();
        let sample = common::root().join("images/sample");
        let made = common::generated_layout(
            "made",
            "v2",
            (
                "application/vnd.oci.image.config.v1+json",
                b"{\"architecture\":\"amd64\",\"os\":\"linux\"}",
            ),
            &[("application/vnd.oci.image.layer.v1.tar", b"the layer of v2")],
        );
        let folder = tempfile::tempdir().expect("temp dir");
        for file in &made.files {
            let path = folder.path().join(&*file.path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
            std::fs::write(&path, &file.data).expect("write file");
        }
        for (from, tag) in [
            (format!("oci:{}:v1", sample.display()), "v1"),
            (
                format!("oci:{}:v2", folder.path().join("made").display()),
                "v2",
            ),
        ] {
            skopeo.ok(&[
                "copy",
                "--all",
                "--preserve-digests",
                "--dest-tls-verify=false",
                &from,
                &format!("docker://{host}/images/sample:{tag}"),
            ]);
        }
        let main = HelmRepo::start();
        main.put("motd-1.0.0.tgz.prov", &package("motd-1.0.0.tgz.prov"));
        let second = HelmRepo::start();
        let hello = package("hello-0.2.0.tgz");
        let extra = made_package("extra", "1.0.0");
        second.publish(
            &[("hello-0.2.0.tgz", &hello), ("extra-1.0.0.tgz", &extra)],
            str::to_owned,
            |_, d| hex_sha256(d),
        );
        Some(Upstreams {
            main,
            second,
            registry,
        })
    }

    /// Makes `main` serve `state` (see the module doc).
    pub fn serve(&self, state: State) {
        let hello = package("hello-1.0.0.tgz");
        let republished = recompressed(&hello);
        let motd = package("motd-1.0.0.tgz");
        let old = package("hello-0.1.0.tgz");
        let packages: Vec<(&str, &[u8])> = match state {
            State::A => vec![("hello-1.0.0.tgz", &hello), ("motd-1.0.0.tgz", &motd)],
            State::B => vec![
                ("hello-1.0.0.tgz", &republished),
                ("hello-0.1.0.tgz", &old),
                ("motd-1.0.0.tgz", &motd),
            ],
        };
        self.main
            .publish(&packages, str::to_owned, |_, d| hex_sha256(d));
    }

    /// Makes `second` stop serving the package of extra 1.0.0 (its index still lists it), or
    /// serve it again.
    pub fn withhold_extra(&self, withheld: bool) {
        if withheld {
            self.second.remove("extra-1.0.0.tgz");
        } else {
            self.second
                .put("extra-1.0.0.tgz", &made_package("extra", "1.0.0"));
        }
    }

    /// The lists of `state`: `(path, text)`.
    fn lists(&self, state: State) -> [(String, String); 2] {
        let charts = match state {
            State::A => format!(
                "repositories:\n  main:\n    repoURL: {}\n    charts:\n      hello: [\"1.0.0\"]\n      motd: [\"1.0.0\"]\n",
                self.main.url("")
            ),
            State::B => format!(
                "repositories:\n  main:\n    repoURL: {}\n    charts:\n      hello: [\"1.0.0\", \"0.1.0\"]\n      motd: [\"1.0.0\"]\n  second:\n    repoURL: {}\n    charts:\n      hello: [\"0.2.0\"]\n      extra: [\"1.0.0\"]\n",
                self.main.url(""),
                self.second.url("")
            ),
        };
        let tags = match state {
            State::A => "[v1, v2]",
            State::B => "[v1]",
        };
        let images = format!(
            "\"{}\":\n  images:\n    images/sample: {tags}\n",
            self.registry.host()
        );
        [
            ("lists/charts.yaml".to_owned(), charts),
            ("lists/images.yaml".to_owned(), images),
        ]
    }

    /// Writes into `work` what a team edits for `state` (see the module doc): the lists, the
    /// local chart folder, the content file naming `tool`'s lock.
    pub fn inputs(&self, state: State, tool: &Tool, work: &Path) {
        for (path, text) in self.lists(state) {
            let path = work.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
            std::fs::write(&path, text).expect("write a list");
        }
        let local = work.join("local");
        let _ = std::fs::remove_dir_all(&local);
        std::fs::create_dir_all(&local).expect("create folder");
        let version = match state {
            State::A => "0.1.0",
            State::B => "0.2.0",
        };
        common::chart_folder(&local, "greet", version);
        std::fs::write(
            work.join("content.yaml"),
            format!("charts:\n  from: [local/greet]\nlock: {}\n", tool.lock()),
        )
        .expect("write the content file");
    }
}
