//! A node that runs containers: a containerd of the test's own (`common::containerd`) with
//! images imported from OCI image layouts, and [`Container`]s run by `ctr run` with what the
//! deploy chart sets ([`Pod`]): the image's user, a read-only root, every capability dropped,
//! no new privileges, containerd's default seccomp profile, the chart's memory limit, and the
//! certificate secret mounted read-only where the chart mounts it.
//!
//! A container is `ctr run --rm` in the foreground, its output in a file (a log sink that is
//! read), so that its exit status is ctr's. It is stopped as the kubelet stops it: SIGTERM by
//! `ctr task kill`, then waited for. The host's network is shared (`--net-host`): each
//! container listens on a port of its own on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::common;
use super::common::Containerd;
use super::pod::Pod;

/// Every Linux capability's name (`ctr run --cap-drop` takes names, not `ALL`).
const CAPABILITIES: [&str; 41] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
];

/// How long a container may take to answer its readiness probe after `ctr run`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// containerd with the images a test runs.
pub struct Node {
    pub containerd: Containerd,
    /// Container IDs started here, stopped when the node goes.
    started: std::sync::Mutex<Vec<String>>,
}

/// A name for an image imported from a layout.
pub struct Image {
    pub reference: String,
    pub entrypoint: Vec<String>,
    pub user: String,
}

impl Node {
    /// `None` (skipped) without containerd, ctr, unshare or root; fails under CI=true.
    pub fn start() -> Option<Node> {
        Some(Node {
            containerd: Containerd::start()?,
            started: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Imports the image tagged `tag` in the OCI image layout `layout` (`ctr images import`
    /// of the layout as a tar, unpacked on the native snapshotter) as `chartreg:TAG`.
    pub fn import(&self, layout: &Path, tag: &str) -> Image {
        let dir = tempfile::tempdir().expect("temp dir");
        let archive = dir.path().join("image.tar");
        let tar = Command::new("tar")
            .arg("-cf")
            .arg(&archive)
            .arg("-C")
            .arg(layout)
            .arg(".")
            .status()
            .expect("tar runs");
        assert!(tar.success(), "tar of {}", layout.display());
        let archive = archive.to_str().expect("UTF-8 path");
        self.containerd.ctr_ok(&[
            "images",
            "import",
            "--snapshotter",
            "native",
            "--base-name",
            "chartreg",
            archive,
        ]);
        let reference = format!("chartreg:{tag}");
        assert!(
            self.containerd.unpacked(&reference),
            "{reference} imported and unpacked"
        );
        let (entrypoint, user) = entrypoint_and_user(layout, tag);
        Image {
            reference,
            entrypoint,
            user,
        }
    }

    /// Runs `image` as the chart's pod, listening on `listen`, the secret's files from
    /// `certs`; waits until its readiness probe answers 200 (`probe`).
    pub fn run(
        &self,
        image: &Image,
        pod: &Pod,
        listen: &str,
        certs: &Path,
        probe: impl Fn(&str) -> Option<u16>,
    ) -> Container {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let id = format!(
            "chartreg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let log_dir = tempfile::tempdir().expect("temp dir");
        let log = log_dir.path().join("container.log");
        let mount = format!(
            "type=bind,src={},dst={},options=rbind:ro",
            certs.to_str().expect("UTF-8 path"),
            pod.certs_mount
        );
        let memory = pod.memory_limit.to_string();
        let mut args: Vec<String> = ["run", "--rm", "--snapshotter", "native", "--net-host"]
            .map(str::to_owned)
            .to_vec();
        if pod.read_only_root {
            args.push("--read-only".into());
        }
        if pod.drop_all_capabilities {
            for cap in CAPABILITIES {
                args.extend(["--cap-drop".into(), format!("CAP_{cap}")]);
            }
        }
        if !pod.no_new_privileges {
            args.push("--allow-new-privs".into());
        }
        if pod.runtime_default_seccomp {
            args.push("--seccomp".into());
        }
        args.extend(["--memory-limit".into(), memory, "--mount".into(), mount]);
        args.extend([image.reference.clone(), id.clone()]);
        args.extend(image.entrypoint.iter().cloned());
        args.extend(pod.args_listening_on(listen));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let file = std::fs::File::create(&log).expect("log file");
        let child = self
            .containerd
            .ctr(&args)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .expect("ctr run");
        self.started.lock().expect("lock").push(id.clone());
        let mut container = Container {
            id,
            child,
            log,
            _log_dir: log_dir,
            exit: None,
        };
        let started = Instant::now();
        loop {
            if let Some(status) = container.child.try_wait().expect("poll ctr run") {
                panic!(
                    "container {} exited ({status}) before it was ready:\n{}",
                    container.id,
                    container.log()
                );
            }
            if probe(&pod.readiness_path) == Some(200) {
                break;
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "container {} not ready within {START_TIMEOUT:?}:\n{}",
                container.id,
                container.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        container
    }

    /// The host PID of `container`'s process (`ctr task ls`).
    pub fn pid(&self, container: &Container) -> u32 {
        let table = self.containerd.ctr_ok(&["task", "ls"]);
        table
            .lines()
            .skip(1)
            .find_map(|line| {
                let mut fields = line.split_whitespace();
                (fields.next() == Some(container.id.as_str()))
                    .then(|| fields.next()?.parse().ok())?
            })
            .unwrap_or_else(|| panic!("no task {} in:\n{table}", container.id))
    }

    /// Sends `signal` to the container's process (`ctr task kill`), as the kubelet does.
    pub fn signal(&self, container: &Container, signal: &str) {
        self.containerd
            .ctr_ok(&["task", "kill", "--signal", signal, &container.id]);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // runc's containers outlive containerd: kill every one started here first.
        for id in self.started.lock().map(|s| s.clone()).unwrap_or_default() {
            let _ = self
                .containerd
                .ctr(&["task", "kill", "--signal", "SIGKILL", &id])
                .stdin(Stdio::null())
                .output();
            let _ = self
                .containerd
                .ctr(&["task", "delete", "--force", &id])
                .stdin(Stdio::null())
                .output();
            let _ = self
                .containerd
                .ctr(&["containers", "delete", &id])
                .stdin(Stdio::null())
                .output();
        }
    }
}

/// A running container: `ctr run --rm` in the foreground.
pub struct Container {
    pub id: String,
    child: Child,
    log: PathBuf,
    _log_dir: tempfile::TempDir,
    exit: Option<ExitStatus>,
}

impl Container {
    /// What the container printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the container to exit, at most `bound`; its exit status (`ctr run`'s, which is
    /// the container's), or `None` when it still runs.
    pub fn wait(&mut self, bound: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < bound {
            if let Some(status) = self.child.try_wait().expect("poll ctr run") {
                self.exit = Some(status);
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        self.exit.is_none() && self.child.try_wait().expect("poll ctr run").is_none()
    }
}

/// The memory cgroup of process `pid`, read as the kernel counts it (cgroup v1 or v2).
pub struct Memory {
    dir: PathBuf,
    v2: bool,
}

/// What the memory cgroup says.
#[derive(Debug)]
pub struct MemoryReport {
    pub limit: u64,
    /// The most the cgroup was charged at once.
    pub peak: u64,
    /// Anonymous memory (heap, stacks) now.
    pub anon: u64,
    /// Page cache charged now (the binary's pages among it).
    pub file: u64,
    /// Times the cgroup reached its limit (and reclaimed).
    pub limit_hits: u64,
    pub oom_kills: u64,
}

impl Memory {
    pub fn of(pid: u32) -> Memory {
        let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).expect("cgroup");
        for line in cgroups.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
            let path = path.expect("cgroup path").trim_start_matches('/');
            if controllers.is_some_and(|c| c.split(',').any(|c| c == "memory")) {
                return Memory {
                    dir: Path::new("/sys/fs/cgroup/memory").join(path),
                    v2: false,
                };
            }
        }
        let path = cgroups
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .expect("a memory cgroup (v1) or a unified one (v2)");
        Memory {
            dir: Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/')),
            v2: true,
        }
    }

    fn number(&self, file: &str) -> u64 {
        let text = std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", self.dir.join(file).display()));
        text.trim().parse().unwrap_or(u64::MAX)
    }

    fn keyed(&self, file: &str, key: &str) -> u64 {
        let text = std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", self.dir.join(file).display()));
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn report(&self) -> MemoryReport {
        if self.v2 {
            MemoryReport {
                limit: self.number("memory.max"),
                peak: self.number("memory.peak"),
                anon: self.keyed("memory.stat", "anon"),
                file: self.keyed("memory.stat", "file"),
                limit_hits: self.keyed("memory.events", "max"),
                oom_kills: self.keyed("memory.events", "oom_kill"),
            }
        } else {
            MemoryReport {
                limit: self.number("memory.limit_in_bytes"),
                peak: self.number("memory.max_usage_in_bytes"),
                anon: self.keyed("memory.stat", "total_rss"),
                file: self.keyed("memory.stat", "total_cache"),
                limit_hits: self.number("memory.failcnt"),
                oom_kills: self.keyed("memory.oom_control", "oom_kill"),
            }
        }
    }
}

/// The entrypoint and user of the image tagged `tag` in `layout` (its config).
fn entrypoint_and_user(layout: &Path, tag: &str) -> (Vec<String>, String) {
    let json = |digest: &str| -> serde_json::Value {
        let hex = digest.strip_prefix("sha256:").expect("sha256 digest");
        serde_json::from_slice(&common::read(&layout.join("blobs/sha256").join(hex)))
            .expect("JSON blob")
    };
    let index: serde_json::Value =
        serde_json::from_slice(&common::read(&layout.join("index.json"))).expect("index.json");
    let entry = index["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .unwrap_or_else(|| panic!("tag {tag} in {}", layout.display()));
    let manifest = json(entry["digest"].as_str().expect("digest"));
    let config = json(
        manifest["config"]["digest"]
            .as_str()
            .expect("config digest"),
    );
    let entrypoint = config["config"]["Entrypoint"]
        .as_array()
        .expect("Entrypoint")
        .iter()
        .map(|a| a.as_str().expect("string").to_owned())
        .collect();
    let user = config["config"]["User"].as_str().unwrap_or("").to_owned();
    (entrypoint, user)
}

/// `/proc/PID/status`'s value of `key` (`Uid`, `CapEff`, `NoNewPrivs`, `Seccomp`).
pub fn status(pid: u32, key: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("{key} in /proc/{pid}/status"))
        .trim()
        .to_owned()
}
