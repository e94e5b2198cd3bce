//! Failures without a kill: each run fails, says "nothing was changed", and leaves the work
//! folder byte for byte as it was (nothing staged left beside it either); then the same run,
//! once the cause is gone, succeeds.
//!
//! - An entry missing upstream: a chart the index lists and the repository no longer serves
//!   (after other downloads succeeded), an image tag the registry does not have.
//! - The registry killed in the middle of a large blob: a 50 MB layer from Debian's
//!   docker-registry, killed once the download has written its first megabyte; the registry
//!   is then started again on its storage and port, and the run re-run.
//! - A full disk: the work folder on a 2 MiB tmpfs, filled but for 8 KiB, under fetch and
//!   under pack (mounting needs root: skipped without it, failed under `CI=true`).
//! - SIGINT and SIGTERM in the middle of a run: fetch waiting on a download that a repository
//!   here holds back ([`Gated`]), pack copying a 50 MB blob; they exit 130 and 143.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use futures_util::StreamExt as _;
use rustix::process::Signal;

use super::checks;
use super::common::{self, Distribution, Skopeo};
use super::states::{State, Upstreams, package};
use super::tool::{LIMIT, Ran, Running, Tool, run};
use super::tree::{Snapshot, describe};

/// A work folder and a scratch folder beside it, removed when dropped.
struct Folders {
    _root: tempfile::TempDir,
    work: PathBuf,
    scratch: PathBuf,
}

impl Folders {
    fn new() -> Folders {
        Folders::under(None)
    }

    /// The work folder under `root` (a mount), the scratch folder in a temporary folder.
    fn under(root: Option<&Path>) -> Folders {
        let temp = tempfile::tempdir().expect("temp dir");
        let work = root.unwrap_or(temp.path()).join("work");
        let scratch = temp.path().join("scratch");
        fs::create_dir_all(&work).expect("create folder");
        fs::create_dir_all(&scratch).expect("create folder");
        Folders {
            _root: temp,
            work,
            scratch,
        }
    }
}

/// The run failed, said "nothing was changed", and left `work` as `before`.
fn changed_nothing(what: &str, ran: &Ran, work: &Path, before: &Snapshot) {
    assert!(!ran.ok(), "{what} should have failed: {}", ran.describe());
    let differences = Snapshot::of(work).differences(before);
    assert!(
        differences.is_empty(),
        "{what} changed the folder: {}\n{}",
        describe(&differences),
        ran.describe()
    );
    assert!(
        ran.stderr.contains("nothing was changed"),
        "{what}: stderr does not say nothing was changed: {}",
        ran.describe()
    );
}

/// Runs `invocation` in `folders`, which must succeed.
fn ok(folders: &Folders, invocation: &super::tool::Invocation) -> Ran {
    let ran = run(invocation.command(&folders.work), &folders.scratch);
    assert!(ran.ok(), "{}: {}", invocation.describe(), ran.describe());
    ran
}

/// A repository fetched at A, with B's lists and chart: upstream serves B.
fn fetched_at_a(upstreams: &Upstreams, tool: &Tool) -> Folders {
    let folders = Folders::new();
    upstreams.serve(State::A);
    upstreams.inputs(State::A, tool, &folders.work);
    ok(&folders, &tool.fetch());
    ok(&folders, &tool.pack());
    upstreams.inputs(State::B, tool, &folders.work);
    upstreams.serve(State::B);
    folders
}

#[test]
fn an_entry_missing_upstream_changes_nothing() {
    let Some(upstreams) = Upstreams::start() else {
        return;
    };
    let tool = Tool::under_test();
    let folders = fetched_at_a(&upstreams, &tool);
    let before = Snapshot::of(&folders.work);
    let fetch = tool.fetch();

    // A chart the index lists, gone from the repository: the others are downloaded first.
    upstreams.withhold_extra(true);
    let ran = run(fetch.command(&folders.work), &folders.scratch);
    assert!(
        ran.stderr.contains("chart extra 1.0.0"),
        "{}",
        ran.describe()
    );
    changed_nothing("fetch with a chart missing", &ran, &folders.work, &before);
    upstreams.withhold_extra(false);

    // An image tag the registry does not have.
    let images = folders.work.join("lists/images.yaml");
    let listed = fs::read_to_string(&images).expect("read the images list");
    fs::write(&images, listed.replace("[v1]", "[v1, zz-missing]")).expect("write the list");
    let with_tag = Snapshot::of(&folders.work);
    let ran = run(fetch.command(&folders.work), &folders.scratch);
    assert!(ran.stderr.contains("zz-missing"), "{}", ran.describe());
    changed_nothing("fetch with a tag missing", &ran, &folders.work, &with_tag);

    // Listed as it should be: the run succeeds.
    fs::write(&images, listed).expect("write the list");
    ok(&folders, &fetch);
    checks::lock_holds(&folders.work, tool.lock()).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        before != Snapshot::of(&folders.work),
        "the run changed nothing"
    );
}

/// `len` bytes no compression shrinks (xorshift64*), the same every time.
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut data = Vec::with_capacity(len + 8);
    while data.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        data.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    data.truncate(len);
    data
}

const LARGE: usize = 50 * 1024 * 1024;

/// An image layout `dir/large` tagged `v1`, whose one layer is [`LARGE`] bytes of noise.
fn large_layout(dir: &Path) -> PathBuf {
    let layer = noise(LARGE);
    let layout = common::generated_layout(
        "large",
        "v1",
        (
            "application/vnd.oci.image.config.v1+json",
            b"{\"architecture\":\"amd64\",\"os\":\"linux\"}",
        ),
        &[("application/vnd.oci.image.layer.v1.tar", &layer)],
    );
    for file in &layout.files {
        let path = dir.join(&*file.path);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
        fs::write(&path, &file.data).expect("write file");
    }
    dir.join("large")
}

/// Polls until a file of at least 1 MiB that `before` does not hold appears under `work`
/// (what a run is writing); `false` if the run ends first.
fn writing_large_file(running: &mut Running, work: &Path, before: &Snapshot) -> bool {
    let deadline = Instant::now() + LIMIT;
    while Instant::now() < deadline {
        if running.ended() {
            return false;
        }
        if large_new_file(work, work, before) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no large file appeared within {LIMIT:?}");
}

fn large_new_file(dir: &Path, work: &Path, before: &Snapshot) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => large_new_file(&path, work, before),
            Ok(meta) => {
                meta.len() >= 1 << 20
                    && path
                        .strip_prefix(work)
                        .is_ok_and(|p| !before.contains(&p.to_string_lossy()))
            }
            Err(_) => false,
        }
    })
}

/// Debian's docker-registry started again on the storage and address of one that was
/// stopped; killed when dropped.
struct Restarted {
    _running: Running,
}

impl Restarted {
    fn on(stopped: &Distribution, scratch: &Path) -> Restarted {
        let mut command = Command::new("bash");
        command
            .arg(common::root().join("scripts/run-distribution.sh"))
            .arg(stopped.storage().parent().expect("the registry's root"))
            .arg(stopped.host());
        let running = Running::spawn(command, scratch);
        let curl = common::tool("curl").expect("curl");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let answer = common::try_curl(&curl, "GET", &format!("{}/v2/", stopped.url()), &[]);
            if answer.is_ok_and(|r| r.status == 200) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the registry did not start again"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Restarted { _running: running }
    }
}

#[test]
fn the_registry_killed_mid_blob_changes_nothing() {
    let Some(upstreams) = Upstreams::start() else {
        return;
    };
    let (Some(mut large), Some(skopeo)) = (Distribution::start(), Skopeo::new()) else {
        return;
    };
    let tool = Tool::under_test();
    let folders = fetched_at_a(&upstreams, &tool);
    let layout = large_layout(&folders.scratch);
    skopeo.ok(&[
        "copy",
        "--dest-tls-verify=false",
        &format!("oci:{}:v1", layout.display()),
        &format!("docker://{}/large/image:v1", large.host()),
    ]);
    fs::remove_dir_all(&layout).expect("remove the layout");
    let images = folders.work.join("lists/images.yaml");
    let mut listed = fs::read_to_string(&images).expect("read the images list");
    listed.push_str(&format!(
        "\"{}\":\n  images:\n    large/image: [v1]\n",
        large.host()
    ));
    fs::write(&images, listed).expect("write the list");
    let before = Snapshot::of(&folders.work);

    let fetch = tool.fetch();
    let mut running = Running::spawn(fetch.command(&folders.work), &folders.scratch);
    assert!(
        writing_large_file(&mut running, &folders.work, &before),
        "the fetch ended before the layer was being downloaded: {}",
        running.wait(LIMIT).describe()
    );
    large.stop();
    let ran = running.wait(LIMIT);
    changed_nothing(
        "fetch with its registry killed",
        &ran,
        &folders.work,
        &before,
    );

    let _again = Restarted::on(&large, &folders.scratch);
    ok(&folders, &fetch);
    checks::lock_holds(&folders.work, tool.lock()).unwrap_or_else(|e| panic!("{e}"));
}

/// A 2 MiB tmpfs, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (the test is skipped) when it cannot be mounted; under `CI=true` the test fails.
    fn mount() -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(dir.path())
            .output();
        let why = match out {
            Ok(out) if out.status.success() => return Some(Tmpfs { dir }),
            Ok(out) => String::from_utf8_lossy(&out.stderr).into_owned(),
            Err(e) => e.to_string(),
        };
        assert!(
            !common::ci(),
            "a tmpfs cannot be mounted (CI=true; the full-disk tests need root): {why}"
        );
        eprintln!("SKIPPED: a tmpfs cannot be mounted (it needs root): {why}");
        None
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system but for `free` bytes, with the file `filler` beside the work
    /// folder.
    fn fill(&self, free: u64) -> PathBuf {
        let filler = self.path().join("filler");
        let mut file = fs::File::create(&filler).expect("create the filler");
        let chunk = vec![0u8; 64 * 1024];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => panic!("fill the tmpfs: {e}"),
            }
        }
        let full = file.metadata().expect("stat the filler").len();
        file.set_len(full.saturating_sub(free))
            .expect("truncate the filler");
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).output();
    }
}

#[test]
fn a_full_disk_fails_fetch_and_pack_changing_nothing() {
    let Some(upstreams) = Upstreams::start() else {
        return;
    };
    let Some(tmpfs) = Tmpfs::mount() else {
        return;
    };
    let tool = Tool::under_test();
    // The references: the same runs on a disk with room.
    let roomy = fetched_at_a(&upstreams, &tool);
    let before_fetch = Snapshot::of(&roomy.work);
    ok(&roomy, &tool.fetch());
    let before_pack = Snapshot::of(&roomy.work);
    ok(&roomy, &tool.pack());
    let reference = Snapshot::of(&roomy.work);

    let full = Folders::under(Some(tmpfs.path()));
    for (invocation, before, after) in [
        (tool.fetch(), &before_fetch, &before_pack),
        (tool.pack(), &before_pack, &reference),
    ] {
        if Snapshot::of(&full.work) != *before {
            let _ = fs::remove_dir_all(&full.work);
            before.restore(&full.work);
        }
        let filler = tmpfs.fill(8 * 1024);
        let ran = run(invocation.command(&full.work), &full.scratch);
        let what = format!("{} on a full disk", invocation.describe());
        assert!(
            ran.stderr.contains("No space left on device"),
            "{what}: {}",
            ran.describe()
        );
        changed_nothing(&what, &ran, &full.work, before);
        fs::remove_file(&filler).expect("remove the filler");
        ok(&full, &invocation);
        let differences = Snapshot::of(&full.work).differences(after);
        assert!(
            differences.is_empty(),
            "{} once there is room: {}",
            invocation.describe(),
            describe(&differences)
        );
    }
}

/// A classic Helm repository in this process serving `hello` 0.1.0 and `motd` 1.0.0, whose
/// `hello` package is held back half-way until it is opened ([`Gated::open`]); stopped when
/// dropped.
struct Gated {
    addr: std::net::SocketAddr,
    state: Arc<Gate>,
    _server: common::Background,
}

struct Gate {
    files: BTreeMap<String, Vec<u8>>,
    open: AtomicBool,
    opened: tokio::sync::Notify,
    /// Requests for the held-back package.
    asked: AtomicUsize,
}

const HELD_BACK: &str = "hello-0.1.0.tgz";

impl Gate {
    async fn opened(&self) {
        loop {
            let notified = self.opened.notified();
            tokio::pin!(notified);
            // Registered before the flag is read: an opening in between still wakes it.
            notified.as_mut().enable();
            if self.open.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

async fn gated_answer(req: HttpRequest, gate: web::Data<Arc<Gate>>) -> HttpResponse {
    let path = req.path().trim_start_matches('/');
    let Some(data) = gate.files.get(path).cloned() else {
        return HttpResponse::NotFound().body("not found");
    };
    if path != HELD_BACK || gate.open.load(Ordering::SeqCst) {
        return HttpResponse::Ok().body(data);
    }
    gate.asked.fetch_add(1, Ordering::SeqCst);
    let gate = Arc::clone(&gate);
    let half = data.len() / 2;
    let first = bytes::Bytes::from(data[..half].to_vec());
    let rest = bytes::Bytes::from(data[half..].to_vec());
    let body = futures_util::stream::iter([Ok::<_, std::io::Error>(first)]).chain(
        futures_util::stream::once(async move {
            gate.opened().await;
            Ok(rest)
        }),
    );
    HttpResponse::Ok()
        .no_chunking(data.len() as u64)
        .streaming(body)
}

impl Gated {
    fn start() -> Gated {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("bound address");
        let hello = package(HELD_BACK);
        let motd = package("motd-1.0.0.tgz");
        let entry = |name: &str, version: &str, data: &[u8]| {
            format!(
                "  {name}:\n  - apiVersion: v2\n    name: {name}\n    version: {version}\n    digest: {}\n    urls:\n    - {name}-{version}.tgz\n",
                common::sha256(data).trim_start_matches("sha256:")
            )
        };
        let index = format!(
            "apiVersion: v1\nentries:\n{}{}generated: \"2026-01-01T00:00:00Z\"\n",
            entry("hello", "0.1.0", &hello),
            entry("motd", "1.0.0", &motd)
        );
        let state = Arc::new(Gate {
            files: BTreeMap::from([
                ("index.yaml".to_owned(), index.into_bytes()),
                (HELD_BACK.to_owned(), hello),
                ("motd-1.0.0.tgz".to_owned(), motd),
            ]),
            open: AtomicBool::new(false),
            opened: tokio::sync::Notify::new(),
            asked: AtomicUsize::new(0),
        });
        let data = web::Data::new(Arc::clone(&state));
        let server = common::Background::spawn(move || {
            HttpServer::new(move || {
                App::new()
                    .app_data(data.clone())
                    .default_service(web::to(gated_answer))
            })
            .workers(1)
            .listen(listener)
            .expect("listen on the bound socket")
            .run()
        });
        Gated {
            addr,
            state,
            _server: server,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn asked(&self) -> usize {
        self.state.asked.load(Ordering::SeqCst)
    }

    fn open(&self) {
        self.state.open.store(true, Ordering::SeqCst);
        self.state.opened.notify_waiters();
    }
}

/// Sends `signal` to the run once `started` says it is in the middle of its work; the run
/// must exit `code`, say nothing was changed, and leave `work` as `before`.
fn stopped_by(
    signal: Signal,
    code: i32,
    mut running: Running,
    started: impl Fn(&mut Running) -> bool,
    work: &Path,
    before: &Snapshot,
) {
    assert!(
        started(&mut running),
        "the run ended before it was signalled: {}",
        running.wait(LIMIT).describe()
    );
    running.signal(signal);
    let ran = running.wait(LIMIT);
    let what = format!("a run stopped by signal {}", signal.as_raw());
    assert_eq!(ran.status.code(), Some(code), "{what}: {}", ran.describe());
    changed_nothing(&what, &ran, work, before);
}

#[test]
fn sigint_and_sigterm_stop_fetch_and_pack_changing_nothing() {
    let tool = Tool::under_test();
    let gated = Gated::start();
    let folders = Folders::new();
    let list = |charts: &str| {
        fs::create_dir_all(folders.work.join("lists")).expect("create folder");
        fs::write(
            folders.work.join("lists/charts.yaml"),
            format!(
                "repositories:\n  gated:\n    repoURL: {}\n    charts:\n{charts}",
                gated.url()
            ),
        )
        .expect("write the list");
        fs::write(folders.work.join("lists/images.yaml"), "{}\n").expect("write the list");
    };
    list("      motd: [\"1.0.0\"]\n");
    let fetch = tool.fetch();
    ok(&folders, &fetch);
    list("      motd: [\"1.0.0\"]\n      hello: [\"0.1.0\"]\n");
    let before = Snapshot::of(&folders.work);
    for (signal, code) in [(Signal::INT, 130), (Signal::TERM, 143)] {
        let asked = gated.asked();
        let running = Running::spawn(fetch.command(&folders.work), &folders.scratch);
        let started = |running: &mut Running| {
            let deadline = Instant::now() + LIMIT;
            while gated.asked() == asked {
                if running.ended() || Instant::now() > deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            true
        };
        stopped_by(signal, code, running, started, &folders.work, &before);
    }
    gated.open();
    ok(&folders, &fetch);
    checks::lock_holds(&folders.work, tool.lock()).unwrap_or_else(|e| panic!("{e}"));

    // pack, copying a large layer into its new folder.
    common::chart_folder(&folders.work.join("local"), "greet", "0.1.0");
    let content = folders.work.join("content.yaml");
    fs::write(&content, "charts:\n  from: [local/greet]\n").expect("write the content file");
    let pack = tool.pack();
    ok(&folders, &pack);
    large_layout(&folders.work);
    fs::write(
        &content,
        "charts:\n  from: [local/greet]\nlayouts:\n  - from: large\n    repository: large/image\n",
    )
    .expect("write the content file");
    let before = Snapshot::of(&folders.work);
    for (signal, code) in [(Signal::INT, 130), (Signal::TERM, 143)] {
        let running = Running::spawn(pack.command(&folders.work), &folders.scratch);
        let work = folders.work.clone();
        let started = |running: &mut Running| writing_large_file(running, &work, &before);
        stopped_by(signal, code, running, started, &folders.work, &before);
    }
    ok(&folders, &pack);
    checks::layouts_hold(&folders.work.join("assets")).unwrap_or_else(|e| panic!("{e}"));
}
