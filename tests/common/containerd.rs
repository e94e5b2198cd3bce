//! A cluster node's image puller for the tests: a real containerd of the test's own
//! ([`Containerd`], `scripts/containerd.sh` in a temporary folder, driven with `ctr`), and a
//! [`Recorder`], a listener that never answers and counts who connected to it.
//!
//! Flow of a test: `Containerd::start()` runs the script as a child process and polls until
//! `ctr version` answers on its socket; the test writes a hosts folder
//! (`DIR/<registry>/hosts.toml`, as a node's `/etc/containerd/certs.d`) and calls
//! [`Containerd::pull`], which runs `ctr images pull --hosts-dir DIR --snapshotter native` with a
//! deadline; then [`Containerd::image_digest`] reads what ctr resolved (`ctr images ls`) and
//! [`Containerd::unpacked`] whether the image was unpacked on the native snapshotter (`ctr images
//! check`). A Recorder named as a registry (or as a hosts.toml host) tells afterwards how many
//! connections were made to it: 0 proves no request left for that upstream.
//!
//! ctr does the registry requests itself (the resolver and fetcher run in the ctr process;
//! containerd stores and unpacks), so every connection a Recorder sees comes from ctr.
//! Each Containerd has its own folder, socket and mount namespace: tests run several at once,
//! sharing nothing with each other or with a containerd of the host.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use super::{describe, root, tool};

/// How long a pull may take before ctr gives up (`ctr --timeout`): far beyond a pull of test
/// content, short enough that a wrong configuration fails the test instead of hanging it.
pub const PULL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long after its own `--timeout` a ctr is waited for before the harness kills it.
const CTR_GRACE: Duration = Duration::from_secs(15);

/// How long containerd may take to answer `ctr version` after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// containerd (`scripts/containerd.sh`) as a child process with everything it keeps in a
/// temporary folder; killed on drop, its folder removed, with its log printed if the test
/// failed.
pub struct Containerd {
    child: Child,
    ctr: PathBuf,
    /// The script's DIR: config, root, state, sockets.
    state: PathBuf,
    /// Holds `state` and the log (beside it, so that a failure to remove `state` leaves the
    /// log readable).
    dir: Option<tempfile::TempDir>,
}

impl Containerd {
    /// Starts containerd and waits until it answers. `None` (the test is skipped) when
    /// containerd, ctr or unshare is missing, or when not run as root (containerd needs it);
    /// under `CI=true` each of these fails the test instead, saying what to do.
    pub fn start() -> Option<Containerd> {
        let _ = tool("containerd")?;
        let ctr = tool("ctr")?;
        let _ = tool("unshare")?;
        if !is_root() {
            let why = "containerd needs root: run the mirror tests as root";
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{why} (CI=true)");
            }
            eprintln!("SKIPPED: {why}");
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let state = dir.path().join("containerd");
        let log = std::fs::File::create(dir.path().join("containerd.log")).expect("log file");
        let child = Command::new("bash")
            .arg(root().join("scripts").join("containerd.sh"))
            .arg(&state)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start scripts/containerd.sh");
        let mut containerd = Containerd {
            child,
            ctr,
            state,
            dir: Some(dir),
        };
        containerd.wait_ready();
        Some(containerd)
    }

    /// Polls until `ctr version` answers on the socket; fails the test when containerd exits or
    /// does not answer in time (the drop prints its log).
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        let mut last = String::from("its socket never appeared");
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("poll containerd") {
                panic!("containerd exited ({status}) before it answered");
            }
            // ctr waits up to its connect timeout for a socket that is not there yet; poll the
            // file first, then ask with a short connect timeout.
            if self.socket().exists() {
                let out = self
                    .ctr(&["--connect-timeout", "1s", "version"])
                    .stdin(Stdio::null())
                    .output()
                    .expect("ctr runs");
                if out.status.success() {
                    return;
                }
                last = describe(&out);
            }
            thread::sleep(Duration::from_millis(25));
        }
        panic!("containerd did not answer within {START_TIMEOUT:?}; last `ctr version`: {last}");
    }

    /// The gRPC socket ctr talks to.
    pub fn socket(&self) -> PathBuf {
        self.state.join("containerd.sock")
    }

    /// `ctr --address SOCKET ARGS` (global options such as `--timeout` may lead `args`), with
    /// none of the caller's ctr settings or proxies.
    pub fn ctr(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.ctr);
        cmd.arg("--address").arg(self.socket()).args(args);
        for var in [
            "CONTAINERD_ADDRESS",
            "CONTAINERD_NAMESPACE",
            "CONTAINERD_SNAPSHOTTER",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "http_proxy",
            "https_proxy",
            "no_proxy",
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// `ctr ARGS`, which must succeed; its stdout.
    pub fn ctr_ok(&self, args: &[&str]) -> String {
        let out = self
            .ctr(args)
            .stdin(Stdio::null())
            .output()
            .expect("ctr runs");
        assert!(
            out.status.success(),
            "ctr {} failed: {}",
            args.join(" "),
            describe(&out)
        );
        String::from_utf8(out.stdout).expect("ctr prints UTF-8")
    }

    /// `ctr images pull --hosts-dir HOSTS_DIR --snapshotter native EXTRA REFERENCE`, given
    /// [`PULL_TIMEOUT`]; its output, whether it succeeded or not.
    pub fn pull(&self, reference: &str, hosts_dir: &Path, extra: &[&str]) -> Output {
        self.pull_within(reference, hosts_dir, extra, PULL_TIMEOUT)
    }

    /// [`Containerd::pull`] that must succeed; fails the test with the end of ctr's output.
    pub fn pull_ok(&self, reference: &str, hosts_dir: &Path, extra: &[&str]) -> Output {
        let out = self.pull(reference, hosts_dir, extra);
        assert!(
            out.status.success(),
            "ctr images pull {} {reference} failed: {}",
            extra.join(" "),
            describe_pull(&out)
        );
        out
    }

    /// [`Containerd::pull`] with its own deadline: ctr's `--timeout` (the whole pull: resolve,
    /// fetch, unpack), and a kill by the harness [`CTR_GRACE`] later should ctr not stop.
    pub fn pull_within(
        &self,
        reference: &str,
        hosts_dir: &Path,
        extra: &[&str],
        timeout: Duration,
    ) -> Output {
        let timeout_arg = format!("{}ms", timeout.as_millis());
        let hosts = hosts_dir.to_str().expect("UTF-8 hosts folder");
        let mut args = vec![
            "--timeout",
            &timeout_arg,
            "images",
            "pull",
            "--hosts-dir",
            hosts,
            "--snapshotter",
            "native",
        ];
        args.extend_from_slice(extra);
        args.push(reference);
        self.run_until(&args, timeout + CTR_GRACE)
    }

    /// Runs `ctr ARGS`, its output in files (no pipe to fill), polling for its end; kills it
    /// and fails the test when it runs past `deadline`.
    fn run_until(&self, args: &[&str], deadline: Duration) -> Output {
        let out_dir = tempfile::tempdir().expect("temp dir");
        let (stdout, stderr) = (out_dir.path().join("stdout"), out_dir.path().join("stderr"));
        let mut child = self
            .ctr(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("ctr runs");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("poll ctr") {
                break status;
            }
            if started.elapsed() > deadline {
                let _ = child.kill();
                let status = child.wait().expect("wait for ctr");
                let out = read_output(status, &stdout, &stderr);
                panic!(
                    "ctr {} still ran after {deadline:?} (its own --timeout did not stop it): {}",
                    args.join(" "),
                    describe_pull(&out)
                );
            }
            thread::sleep(Duration::from_millis(25));
        };
        read_output(status, &stdout, &stderr)
    }

    /// The digest ctr resolved `reference` to and stores the image under (`ctr images ls`; an
    /// index's digest for a multi-platform image), if it holds that image.
    pub fn image_digest(&self, reference: &str) -> Option<String> {
        let table = self.ctr_ok(&["images", "ls"]);
        // REF TYPE DIGEST SIZE PLATFORMS LABELS; no reference holds a space.
        row(&table, reference)?
            .split_whitespace()
            .find(|field| field.starts_with("sha256:"))
            .map(str::to_owned)
    }

    /// Whether the image `reference` is complete and unpacked on the native snapshotter (`ctr
    /// images check --snapshotter native`; for a multi-platform image, this machine's platform).
    pub fn unpacked(&self, reference: &str) -> bool {
        let table = self.ctr_ok(&["images", "check", "--snapshotter", "native"]);
        // REF TYPE DIGEST STATUS SIZE UNPACKED: STATUS (`complete (2/2)`) and SIZE hold spaces,
        // UNPACKED is last.
        row(&table, reference).is_some_and(|line| {
            line.contains(" complete (") && line.split_whitespace().last() == Some("true")
        })
    }

    /// The keys of the native snapshotter's snapshots (`ctr snapshots ls`): a committed one per
    /// unpacked layer chain.
    pub fn native_snapshots(&self) -> Vec<String> {
        self.first_column(&["snapshots", "--snapshotter", "native", "ls"])
    }

    /// The digests of every blob in the content store (`ctr content ls`): which manifests,
    /// configs and layers a pull fetched.
    pub fn content_digests(&self) -> Vec<String> {
        self.first_column(&["content", "ls"])
    }

    /// The first column of the table `ctr ARGS` prints, below its heading.
    fn first_column(&self, args: &[&str]) -> Vec<String> {
        self.ctr_ok(args)
            .lines()
            .skip(1)
            .filter_map(|line| line.split_whitespace().next())
            .map(str::to_owned)
            .collect()
    }

    /// What containerd logged so far.
    pub fn log(&self) -> String {
        self.dir
            .as_ref()
            .map(|dir| std::fs::read_to_string(dir.path().join("containerd.log")))
            .and_then(Result::ok)
            .unwrap_or_default()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        // The script exec's unshare, which exec's containerd: this PID is containerd's own. Its
        // mounts were in its own namespace and went with it.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- containerd log ---\n{}", self.log());
        }
        let Some(dir) = self.dir.take() else { return };
        let path = dir.path().to_owned();
        if let Err(first) = dir.close() {
            // Images' folders may be read-only (0555): a non-root remover needs write access.
            make_writable(&path);
            if let Err(e) = std::fs::remove_dir_all(&path) {
                let why = format!(
                    "containerd's folder {} was not removed: {first}; then {e}",
                    path.display()
                );
                if thread::panicking() {
                    eprintln!("{why}");
                } else {
                    panic!("{why}");
                }
            }
        }
    }
}

/// The line of a ctr table whose first column is `reference`.
fn row<'t>(table: &'t str, reference: &str) -> Option<&'t str> {
    table
        .lines()
        .skip(1)
        .find(|line| line.split_whitespace().next() == Some(reference))
}

/// A pull's output for a failure message: ctr redraws its progress every 100 ms on stdout, so
/// only the last lines of it, and all of stderr.
pub fn describe_pull(out: &Output) -> String {
    const LINES: usize = 20;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let tail = lines[lines.len().saturating_sub(LINES)..].join("\n");
    format!(
        "{}\n--- stdout (last {LINES} lines) ---\n{tail}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read_output(status: ExitStatus, stdout: &Path, stderr: &Path) -> Output {
    Output {
        status,
        stdout: std::fs::read(stdout).expect("read ctr's stdout"),
        stderr: std::fs::read(stderr).expect("read ctr's stderr"),
    }
}

/// Whether this process runs as root (effective uid 0, from `/proc/self/status`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// Adds owner write and execute permission to every folder under `path` (not following links).
fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mode = meta.permissions().mode() | 0o700;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        make_writable(&entry.path());
    }
}

/// A TCP listener on 127.0.0.1 that never answers: connections complete (the kernel accepts
/// them into its queue) and then wait until the client gives up. [`Recorder::connections`]
/// counts them after the fact. Name it as a registry, or as a hosts.toml host, to learn whether
/// anything tried to reach it.
pub struct Recorder {
    listener: TcpListener,
    /// Connections taken from the queue so far, held open so that none is ever answered, not
    /// even with a close.
    accepted: Mutex<Vec<TcpStream>>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        Recorder {
            listener,
            accepted: Mutex::new(Vec::new()),
        }
    }

    /// `127.0.0.1:PORT`, as a registry host in a reference or a hosts.toml URL.
    pub fn host(&self) -> String {
        self.listener
            .local_addr()
            .expect("bound address")
            .to_string()
    }

    /// How many connections were made to it so far (including ones the client has closed).
    pub fn connections(&self) -> usize {
        let mut accepted = self.accepted.lock().expect("recorder lock");
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => accepted.push(stream),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => panic!("recorder {}: accept failed: {e}", self.host()),
            }
        }
        accepted.len()
    }
}
