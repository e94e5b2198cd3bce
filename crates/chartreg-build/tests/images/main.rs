//! `chartreg-build images`, the binary, over the charts under `tests/images/charts` (copied
//! into a folder of each test's own): which images each way finds (`render` with Helm 3 and
//! Helm 4, the `annotation`s, the static `values` reading) and which each misses, what a values
//! file enables, the subchart's image, a reference pinned by digest shared by two charts; the
//! table, `--why` and the images file; bad input; Helm's message quoted with its control
//! characters written out; and pack refusing (or warning about) content that does not hold the
//! images its charts need.
//!
//! The charts, and what Helm renders from them (`helm template NAME CHART`):
//! - `platform` 1.2.0 (appVersion 2.4.1): a Deployment whose controller image has an empty tag
//!   (the appVersion), a busybox initContainer pinned by digest, and a `config-reloader`
//!   sidecar whose reference the template puts together from `sidecar.hub/name/version` (no
//!   static reading sees it); a CronJob with a plain string image; a metrics DaemonSet off by
//!   default, enabled by `values/platform-metrics.yaml`; the subchart `agent` 0.3.0 (a
//!   StatefulSet); `artifacthub.io/images` naming the controller and an operand only the
//!   operator deploys (no template names it).
//! - `web` 1.0.0: nginx (`{repository: nginx, tag: 1.25.3}`), the same pinned busybox as an
//!   initContainer (a plain string `busybox:1.36@sha256:...`), and a post-install Job (alpine).
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod closure;
#[path = "../common/mod.rs"]
mod common;
mod errors;
mod escapes;
mod output;
mod ways;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::describe;
use serde::Deserialize;

/// The digest the charts pin busybox to.
const PINNED: &str = "sha256:c30a2665796183607bbf51f29421fcc375c946cfd39b0f2eb7c66ff9a1fac143";

const BUSYBOX: &str = "docker.io/library/busybox:1.36@sha256:c30a2665796183607bbf51f29421fcc375c946cfd39b0f2eb7c66ff9a1fac143";
const CONTROLLER: &str = "quay.io/example/controller:2.4.1";
const RELOADER: &str = "quay.io/example/config-reloader:v0.9.2";
const OPERAND: &str = "quay.io/example/operand:2.4.1";
const BACKUP: &str = "registry.k8s.io/example/backup:v0.3";
const EXPORTER: &str = "ghcr.io/example/exporter:v1.0.0";
const AGENT: &str = "docker.io/example/agent:0.3.0";
const NGINX: &str = "docker.io/library/nginx:1.25.3";
const ALPINE: &str = "docker.io/library/alpine:3.20";

const PLATFORM: &str = "platform:1.2.0";
const WEB: &str = "web:1.0.0";
const SUBCHART: &str = "agent:0.3.0";

const RENDER: &str = "render";
const ANNOTATION: &str = "annotation";
const VALUES: &str = "values";

/// The values file that enables platform's metrics exporter, as content files name it.
const METRICS_VALUES: &str = "values/platform-metrics.yaml";

/// One entry of `images --json`.
#[derive(Debug, Deserialize)]
struct Listed {
    image: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
    charts: Vec<String>,
    needed: bool,
    found: Vec<Found>,
}

/// Where an image was found.
#[derive(Debug, Deserialize)]
struct Found {
    chart: String,
    subchart: Option<String>,
    from: String,
    at: String,
    /// The values files given for the render (the contract gives it for every entry; only a
    /// render's is asserted).
    #[serde(default)]
    values: Vec<String>,
}

impl Listed {
    /// Each (chart, way) that found it.
    fn ways(&self) -> BTreeSet<(String, String)> {
        self.found
            .iter()
            .map(|f| (f.chart.clone(), f.from.clone()))
            .collect()
    }

    /// The found entries of one way.
    fn found_by<'a>(&'a self, from: &'a str) -> impl Iterator<Item = &'a Found> + 'a {
        self.found.iter().filter(move |f| f.from == from)
    }

    /// The one found entry of `chart` by `from`.
    fn one(&self, chart: &str, from: &str) -> &Found {
        let found: Vec<&Found> = self
            .found
            .iter()
            .filter(|f| f.chart == chart && f.from == from)
            .collect();
        assert!(
            found.len() == 1,
            "{}: want one {from} entry for {chart}, got {found:#?}",
            self.image
        );
        found[0]
    }
}

/// What the listing must say of one image: every (chart, way) that finds it, and `needed`.
struct Want {
    image: &'static str,
    found: Vec<(&'static str, &'static str)>,
    needed: bool,
}

fn want(image: &'static str, found: &[(&'static str, &'static str)], needed: bool) -> Want {
    Want {
        image,
        found: found.to_vec(),
        needed,
    }
}

/// What every way together finds in both charts, with (`metrics`) or without platform's
/// metrics values file.
fn everything(metrics: bool) -> Vec<Want> {
    vec![
        want(
            BUSYBOX,
            &[
                (PLATFORM, RENDER),
                (PLATFORM, VALUES),
                (WEB, RENDER),
                (WEB, VALUES),
            ],
            true,
        ),
        want(
            CONTROLLER,
            &[
                (PLATFORM, RENDER),
                (PLATFORM, ANNOTATION),
                (PLATFORM, VALUES),
            ],
            true,
        ),
        want(RELOADER, &[(PLATFORM, RENDER)], true),
        want(OPERAND, &[(PLATFORM, ANNOTATION)], true),
        want(BACKUP, &[(PLATFORM, RENDER), (PLATFORM, VALUES)], true),
        if metrics {
            want(EXPORTER, &[(PLATFORM, RENDER), (PLATFORM, VALUES)], true)
        } else {
            // Listed from values.yaml, but the rendered chart does not run it.
            want(EXPORTER, &[(PLATFORM, VALUES)], false)
        },
        want(AGENT, &[(PLATFORM, RENDER), (PLATFORM, VALUES)], true),
        want(NGINX, &[(WEB, RENDER), (WEB, VALUES)], true),
        want(ALPINE, &[(WEB, RENDER), (WEB, VALUES)], true),
    ]
}

/// Keeps only the ways in `ways` of each wanted image (and the images some of them find);
/// `needed` as given.
fn only(wants: Vec<Want>, ways: &[&str], needed: impl Fn(&Want) -> bool) -> Vec<Want> {
    wants
        .into_iter()
        .filter_map(|mut w| {
            w.found.retain(|(_, from)| ways.contains(from));
            w.needed = needed(&w);
            (!w.found.is_empty()).then_some(w)
        })
        .collect()
}

/// Panics unless `listed` is exactly `wants` (the same images, each found by the same (chart,
/// way) pairs, `needed` as said; a needed image's `charts` the charts finding it), sorted by
/// image, each entry's parts its image's.
fn assert_listing(listed: &[Listed], wants: &[Want], context: &str) {
    let got: Vec<&str> = listed.iter().map(|l| l.image.as_str()).collect();
    let mut sorted = got.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        got, sorted,
        "{context}: the list is sorted by image, once each"
    );
    let want_images: BTreeSet<&str> = wants.iter().map(|w| w.image).collect();
    assert_eq!(
        got.iter().copied().collect::<BTreeSet<_>>(),
        want_images,
        "{context}: the images found"
    );
    for w in wants {
        let l = entry(listed, w.image);
        let ways: BTreeSet<(String, String)> = w
            .found
            .iter()
            .map(|(c, f)| ((*c).to_owned(), (*f).to_owned()))
            .collect();
        assert_eq!(
            l.ways(),
            ways,
            "{context}: {}: the (chart, way) pairs that find it: {l:#?}",
            w.image
        );
        assert_eq!(l.needed, w.needed, "{context}: {}: needed: {l:#?}", w.image);
        if w.needed {
            let charts: BTreeSet<String> = w.found.iter().map(|(c, _)| (*c).to_owned()).collect();
            assert_eq!(
                l.charts,
                charts.into_iter().collect::<Vec<_>>(),
                "{context}: {}: charts (sorted)",
                w.image
            );
        }
        assert_parts(l, context);
    }
}

/// `repository`, `tag` and `digest` are the parts of `image`, the repository as chartreg
/// serves it (a registry's `:PORT` written `_PORT`).
fn assert_parts(l: &Listed, context: &str) {
    let (name, digest) = match l.image.split_once('@') {
        Some((name, digest)) => (name, Some(digest.to_owned())),
        None => (l.image.as_str(), None),
    };
    let (repository, tag) = name.rsplit_once(':').expect("a normalised image has a tag");
    let (registry, path) = repository.split_once('/').expect("a registry");
    let served = format!("{}/{path}", registry.replace(':', "_"));
    assert_eq!(l.repository, served, "{context}: {} repository", l.image);
    assert_eq!(l.tag.as_deref(), Some(tag), "{context}: {} tag", l.image);
    assert_eq!(l.digest, digest, "{context}: {} digest", l.image);
}

/// The entry of `image`.
fn entry<'a>(listed: &'a [Listed], image: &str) -> &'a Listed {
    listed
        .iter()
        .find(|l| l.image == image)
        .unwrap_or_else(|| panic!("{image} is not listed: {listed:#?}"))
}

/// How the command finds Helm in a run.
#[derive(Clone)]
enum HelmFrom {
    /// `--helm BIN`.
    Flag(PathBuf),
    /// `CHARTREG_HELM=BIN`.
    Env(PathBuf),
    /// A `helm` in a folder on PATH.
    Path(PathBuf),
    /// No helm anywhere: PATH is a folder without it.
    Nowhere,
}

impl HelmFrom {
    /// `--helm` with Helm `name` (`helm3`, `helm4`); `None` (the test is skipped) when it is
    /// not installed, and under `CI=true` the test fails.
    fn flag(name: &str) -> Option<HelmFrom> {
        common::tool(name).map(HelmFrom::Flag)
    }
}

/// A folder of the test's own holding a copy of the test charts (`charts/platform`,
/// `charts/web`) and values files (`values/`), where content files are written and the
/// command runs.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/images");
        for part in ["charts", "values"] {
            copy_tree(&source.join(part), &dir.path().join(part));
        }
        std::fs::create_dir_all(dir.path().join("bin")).expect("bin folder");
        Work { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
        std::fs::write(&path, text).expect("write file");
        path
    }

    /// Replaces `from` (which must be there) by `to` in the file `name`.
    fn edit(&self, name: &str, from: &str, to: &str) {
        let path = self.path(name);
        let text = std::fs::read_to_string(&path).expect("read file");
        assert!(text.contains(from), "{name} holds no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write file");
    }

    /// `content.yaml` naming both charts, with platform's metrics values file when `metrics`.
    fn content(&self, metrics: bool) -> PathBuf {
        let values = if metrics {
            format!("images:\n  values:\n    platform: [{METRICS_VALUES}]\n")
        } else {
            String::new()
        };
        self.write(
            "content.yaml",
            &format!("charts:\n  from: [charts/platform, charts/web]\n{values}"),
        )
    }

    /// `chartreg-build SUBCOMMAND ARGS` in this folder, finding Helm as `helm` says and in no
    /// other way (PATH holds only this folder's `bin/`), with Helm's own settings isolated.
    fn run(&self, subcommand: &str, helm: &HelmFrom, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_chartreg-build"));
        let home = self.path("helm-home");
        std::fs::create_dir_all(&home).expect("helm home");
        common::isolate_helm(&mut cmd, &home);
        cmd.arg(subcommand)
            .args(args)
            .current_dir(self.dir.path())
            .env("PATH", self.path("bin"))
            .env_remove("CHARTREG_HELM");
        match helm {
            HelmFrom::Flag(bin) => {
                cmd.arg("--helm").arg(bin);
            }
            HelmFrom::Env(bin) => {
                cmd.env("CHARTREG_HELM", bin);
            }
            HelmFrom::Path(bin) => {
                let link = self.path("bin/helm");
                if !link.exists() {
                    std::os::unix::fs::symlink(bin, &link).expect("helm on PATH");
                }
            }
            HelmFrom::Nowhere => {}
        }
        common::output_of(&mut cmd, &format!("chartreg-build {subcommand}"))
    }

    /// `images ARGS`, which must succeed: its stdout and stderr.
    fn images_ok(&self, helm: &HelmFrom, args: &[&str]) -> (String, String) {
        let out = self.run("images", helm, args);
        assert!(
            out.status.success(),
            "images {} failed: {}",
            args.join(" "),
            describe(&out)
        );
        (
            String::from_utf8(out.stdout).expect("UTF-8"),
            String::from_utf8(out.stderr).expect("UTF-8"),
        )
    }

    /// `images ARGS --json`, which must succeed: the list, and stderr.
    fn listed(&self, helm: &HelmFrom, args: &[&str]) -> (Vec<Listed>, String) {
        let args = [args, &["--json"]].concat();
        let (stdout, stderr) = self.images_ok(helm, &args);
        let listed = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "images --json printed no list of images ({e}):\n{stdout}\n--- stderr ---\n{stderr}"
            )
        });
        (listed, stderr)
    }

    /// `images ARGS`, which must exit 1: its stderr.
    fn images_fails(&self, helm: &HelmFrom, args: &[&str]) -> String {
        let out = self.run("images", helm, args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "images {} should exit 1: {}",
            args.join(" "),
            describe(&out)
        );
        String::from_utf8(out.stderr).expect("UTF-8")
    }
}

/// Copies the folder `from` to `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create folder");
    for entry in std::fs::read_dir(from).expect("read folder") {
        let entry = entry.expect("folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// A path as an argument.
fn arg(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// The (chart, way) pairs of a listing, by image, for failure messages.
fn summary(listed: &[Listed]) -> BTreeMap<&str, BTreeSet<(String, String)>> {
    listed
        .iter()
        .map(|l| (l.image.as_str(), l.ways()))
        .collect()
}
