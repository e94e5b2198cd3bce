//! The hostile corpus's chart packages (`corpus::packages()`) through `fetch`, from real
//! upstreams on 127.0.0.1: a classic Helm repository whose `index.yaml` lists each package under
//! the name and version its case gives (one repository folder per case), and CNCF distribution
//! holding each as an OCI chart (pushed with raw distribution API calls, as `helm push` would
//! refuse most, under a repository of its own). Every case is fetched once from each, and the
//! cases only a render refuses once more with `--with-chart-images` and Helm 4.
//!
//! For every run:
//! - a refused case fails (exit 1) naming the chart (its source's URL), and leaves nothing of it:
//!   no package, `.prov` or staged file in `charts/`, no lock, nothing staged beside `images/`;
//! - a case taken is fetched: its bytes in `charts/`, as `<name>-<version>.tgz`, and a lock;
//! - no control character reaches the terminal (no ESC or BEL byte on stdout or stderr), and
//!   no line a name holds passes for one of the tool's own;
//! - the run ends within its bound ([`RUN_BOUND`]; renders are given 10 s and 512 MiB).
//!
//! The runs share nothing but the sources, and go on a few threads at once. The table of cases
//! and what each run got is printed (`--nocapture`) and written to `hostile-fetch.txt` in
//! cargo's test folder.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chartreg_core::oci::media_type;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::{Client, Reference};

use super::common::{self, Distribution};
use super::corpus::{self, Case, Expect, Got, Input, RENDER_LIMITS, RUN_BOUND};
use super::sources::HelmRepo;

/// When a run still going is stopped (so that a run past its bound fails the test, not hangs it).
const KILL_AFTER: Duration = Duration::from_secs(150);

/// Runs at once.
const THREADS: usize = 3;

/// A package case, as its sources serve it.
struct Package<'c> {
    case: &'c Case,
    bytes: &'c [u8],
    /// The name and version the classic index lists it as.
    listed: (&'c str, &'c str),
}

/// Where a run takes its case from.
#[derive(Clone)]
enum Source {
    /// The classic repository at this URL (its folder for the case).
    Classic { url: String },
    /// `oci://HOST/REPOSITORY:TAG`.
    Oci { reference: String },
}

/// One run of `fetch` on a case.
struct Run<'c> {
    package: &'c Package<'c>,
    /// `classic`, `oci`, `classic --with-chart-images helm4`.
    label: String,
    source: Source,
    /// `--with-chart-images` with this Helm.
    render_with: Option<PathBuf>,
}

/// A case's name as a repository path component and a folder name: lowercase letters, digits
/// and single dashes.
fn component(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    mapped
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// Serves `package` from `repo` under `<component>/`: the package, and an `index.yaml` listing
/// it (names and versions quoted, as they may be anything); the repository's URL.
fn publish_classic(repo: &HelmRepo, package: &Package<'_>) -> String {
    let folder = component(&package.case.name);
    let file = format!("{folder}.tgz");
    let (name, version) = package.listed;
    let quoted = corpus::archive::yaml_string;
    let index = format!(
        "apiVersion: v1\nentries:\n  {}:\n  - apiVersion: v2\n    name: {}\n    version: {}\n    digest: {}\n    urls:\n    - {file}\ngenerated: \"2026-01-01T00:00:00Z\"\n",
        quoted(name),
        quoted(name),
        quoted(version),
        super::hex_sha256(package.bytes),
    );
    repo.put(&format!("{folder}/index.yaml"), index.as_bytes());
    repo.put(&format!("{folder}/{file}"), package.bytes);
    repo.url(&format!("{folder}/"))
}

/// Pushes every package to the registry at `host` as an OCI chart (Helm's config and chart
/// layer media types), each under `charts/<component>` with its listed version as the tag
/// (`1.0.0` where that is no tag): the `oci://` reference of each, in order.
fn push_oci(host: &str, packages: &[Package<'_>]) -> Vec<String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        });
        let mut references = Vec::new();
        for package in packages {
            let repository = format!("charts/{}", component(&package.case.name));
            let tag = package.listed.1.replace('+', "_");
            let tag = if tag.parse::<chartreg_core::oci::Tag>().is_ok() {
                tag
            } else {
                "1.0.0".to_owned()
            };
            let reference: Reference = format!("{host}/{repository}:{tag}")
                .parse()
                .expect("a reference");
            let config = serde_json::to_vec(&serde_json::json!({
                "name": package.listed.0,
                "version": package.listed.1,
                "apiVersion": "v2",
            }))
            .expect("config");
            let mut descriptors = Vec::new();
            for (kind, data) in [
                (media_type::HELM_CONFIG, config),
                (media_type::HELM_CHART, package.bytes.to_vec()),
            ] {
                let digest = common::sha256(&data);
                let size = data.len();
                client
                    .push_blob(&reference, data, &digest)
                    .await
                    .unwrap_or_else(|e| panic!("push a blob of {}: {e}", package.case.name));
                descriptors.push(serde_json::json!({
                    "mediaType": kind, "digest": digest, "size": size,
                }));
            }
            let manifest = serde_json::json!({
                "schemaVersion": 2,
                "mediaType": media_type::OCI_MANIFEST,
                "config": descriptors[0],
                "layers": [descriptors[1]],
            });
            client
                .push_manifest_raw(
                    &reference,
                    serde_json::to_vec(&manifest).expect("manifest"),
                    media_type::OCI_MANIFEST.parse().expect("media type"),
                )
                .await
                .unwrap_or_else(|e| panic!("push the manifest of {}: {e}", package.case.name));
            references.push(format!("oci://{host}/{repository}:{tag}"));
        }
        references
    })
}

/// A work folder of one run: its HOME and TMPDIR, the charts file, and where its output goes.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        let dir = tempfile::tempdir().expect("temp dir");
        for folder in ["home", "tmp"] {
            std::fs::create_dir_all(dir.path().join(folder)).expect("work folder");
        }
        Work { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Every file under `charts/`, hidden and staged ones too.
    fn charts(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path("fetched/charts"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// What the run wrote at the top of its folder, besides what the test put there.
    fn written(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .expect("work folder")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !["home", "tmp", "charts.yaml", "stdout", "stderr"].contains(&n.as_str()))
            .collect();
        names.sort();
        names
    }
}

/// `chartreg-build fetch ARGS` in `work`, its environment only PATH, HOME and TMPDIR, stopped
/// after [`KILL_AFTER`]: its exit code (none if stopped), stdout, stderr, and how long it took.
fn fetch(work: &Work, args: &[String]) -> (Option<i32>, Vec<u8>, Vec<u8>, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .arg("fetch")
        .args(args)
        .current_dir(work.dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", work.path("home"))
        .env("TMPDIR", work.path("tmp"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(work.path("stdout")).expect("stdout file"))
        .stderr(std::fs::File::create(work.path("stderr")).expect("stderr file"))
        .spawn()
        .expect("run chartreg-build fetch");
    let code = loop {
        if let Some(status) = child.try_wait().expect("poll fetch") {
            break status.code();
        }
        if started.elapsed() > KILL_AFTER {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let read = |name: &str| std::fs::read(work.path(name)).unwrap_or_default();
    (code, read("stdout"), read("stderr"), took)
}

/// Runs `run` in a fresh folder and judges it against its case and the rules for every run.
fn judge(run: &Run<'_>) -> Got {
    let work = Work::new();
    let (name, version) = run.package.listed;
    let charts_file = match &run.source {
        Source::Classic { url } => format!(
            "repositories:\n  hostile:\n    repoURL: {url}\n    charts:\n      {}: [{}]\n",
            corpus::archive::yaml_string(name),
            corpus::archive::yaml_string(version),
        ),
        Source::Oci { reference } => format!("chartURLs:\n  - {reference}\n"),
    };
    std::fs::write(work.path("charts.yaml"), charts_file).expect("charts file");
    let mut args: Vec<String> = [
        "--helm-charts-file",
        "charts.yaml",
        "--lock",
        "fetched/chartreg.lock",
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(helm) = &run.render_with {
        args.extend(["--with-chart-images".into(), "--helm".into()]);
        args.push(helm.display().to_string());
        args.extend(RENDER_LIMITS.map(str::to_owned));
    }
    let (code, stdout, stderr, took) = fetch(&work, &args);
    let text = String::from_utf8_lossy(&stderr);
    let mut problems = Vec::new();
    let refused = run
        .package
        .case
        .expect
        .refusal(run.render_with.is_some())
        .is_some();
    let named = match &run.source {
        Source::Classic { url } => url.clone(),
        Source::Oci { reference } => reference.clone(),
    };
    let describe = || {
        format!(
            "exit {code:?}\n--- stdout ---\n{}\n--- stderr ---\n{text}",
            String::from_utf8_lossy(&stdout)
        )
    };
    if refused {
        if code != Some(1) {
            problems.push(format!("should be refused (exit 1): {}", describe()));
        } else if !text.contains(&named) {
            problems.push(format!("the refusal does not name {named}: {text}"));
        }
        let left = work.charts();
        if !left.is_empty() {
            problems.push(format!("left in charts/: {left:?}"));
        }
        let written = work.written();
        if written.iter().any(|n| n != "charts") {
            problems.push(format!(
                "wrote {written:?} (a lock, a staging folder?) though refused"
            ));
        }
    } else if code != Some(0) {
        problems.push(format!("should be fetched: {}", describe()));
    } else {
        let taken = work.charts();
        let bytes = std::fs::read(
            work.path("fetched/charts")
                .join(taken.first().map_or("", |n| n)),
        );
        let right = taken.len() == 1
            && taken
                .first()
                .is_some_and(|n| n.ends_with(".tgz") && !n.starts_with('.'))
            && bytes.as_deref().ok() == Some(run.package.bytes);
        if !right {
            problems.push(format!(
                "charts/ holds {taken:?}, not the package alone, as upstream serves it"
            ));
        }
        if let Source::Classic { .. } = run.source
            && taken != [format!("{name}-{version}.tgz")]
        {
            problems.push(format!("charts/ holds {taken:?}, not {name}-{version}.tgz"));
        }
        if !work.path("fetched/chartreg.lock").is_file() {
            problems.push("no lock written".to_owned());
        }
    }
    problems.extend(corpus::terminal_problems(&stdout, &stderr));
    if took > RUN_BOUND {
        problems.push(format!("took {took:?}, past {RUN_BOUND:?}"));
    }
    // The failed entry's line (`chart ... : why`), else the tool's first.
    let said = text
        .lines()
        .rfind(|l| l.starts_with("chart "))
        .or_else(|| text.lines().find(|l| l.starts_with("chartreg-build: ")))
        .unwrap_or_default();
    let outcome = match code {
        Some(0) => "fetched".to_owned(),
        Some(c) => format!(
            "refused ({c}): {}",
            said.trim().chars().take(160).collect::<String>()
        ),
        None => "stopped".to_owned(),
    };
    Got {
        label: run.label.clone(),
        outcome: format!("{outcome} ({:.1} s)", took.as_secs_f64()),
        problems,
    }
}

#[test]
fn every_hostile_package_is_refused_or_fetched_safely_from_each_kind_of_upstream() {
    let cases = corpus::packages();
    assert!(cases.len() >= 40, "the corpus has {} packages", cases.len());
    let packages: Vec<Package<'_>> = cases
        .iter()
        .map(|case| {
            let Input::Package { bytes, listed, .. } = &case.input else {
                unreachable!("corpus::packages() gives packages")
            };
            Package {
                case,
                bytes,
                listed: (listed.0.as_str(), listed.1.as_str()),
            }
        })
        .collect();
    let mut components: Vec<String> = cases.iter().map(|c| component(&c.name)).collect();
    components.sort();
    components.dedup();
    assert_eq!(components.len(), cases.len(), "one folder per case");

    let repo = HelmRepo::start();
    let registry = Distribution::start();
    let oci = registry
        .as_ref()
        .map(|r| push_oci(&r.host(), &packages))
        .unwrap_or_default();
    let helm4 = common::tool("helm4");

    let mut runs: Vec<Run<'_>> = Vec::new();
    for (i, package) in packages.iter().enumerate() {
        let classic = Source::Classic {
            url: publish_classic(&repo, package),
        };
        runs.push(Run {
            package,
            label: "classic".into(),
            source: classic.clone(),
            render_with: None,
        });
        if let Some(reference) = oci.get(i) {
            runs.push(Run {
                package,
                label: "oci".into(),
                source: Source::Oci {
                    reference: reference.clone(),
                },
                render_with: None,
            });
        }
        if let (Expect::RenderRefused(_), Some(helm)) = (&package.case.expect, &helm4) {
            runs.push(Run {
                package,
                label: "classic --with-chart-images helm4".into(),
                source: classic,
                render_with: Some(helm.clone()),
            });
        }
    }
    let renders = runs.iter().filter(|r| r.render_with.is_some()).count();
    assert!(
        helm4.is_none() || renders >= 3,
        "only {renders} cases only a render refuses"
    );

    let started = Instant::now();
    let results = corpus::in_parallel(runs.iter().collect(), THREADS, judge);

    let mut report = String::new();
    let mut failures = Vec::new();
    let mut last_case = "";
    for (run, got) in runs.iter().zip(&results) {
        let package = run.package;
        if package.case.name != last_case {
            last_case = &package.case.name;
            let _ = writeln!(
                report,
                "{} — attacks {}",
                package.case.name, package.case.attacks
            );
        }
        let _ = writeln!(report, "    {:<34} {}", got.label, got.outcome);
        for p in &got.problems {
            failures.push(format!("{} / {}: {p}", package.case.name, got.label));
        }
    }
    let _ = writeln!(
        report,
        "{} cases, {} runs ({} with --with-chart-images), {:.0} s",
        packages.len(),
        results.len(),
        renders,
        started.elapsed().as_secs_f64()
    );
    println!("{report}");
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-fetch.txt");
    std::fs::write(&file, &report).expect("report");
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
