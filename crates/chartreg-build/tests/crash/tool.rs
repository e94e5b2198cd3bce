//! The binary under test and how it is run.
//!
//! The binary is this tree's `chartreg-build`, or the one `CHARTREG_CRASH_TOOL` names (to
//! measure another build with the same harness, e.g. the one before fetched folders). Its
//! command line comes in two shapes ([`Shape`]), told apart by `fetch --help`: a fetched folder
//! (`--out DIR`, the lock inside it), or the earlier one (`--out charts --images-out images`,
//! the lock beside the lists).
//!
//! Every run is bounded ([`Running::wait`]): its output goes to files outside the folder it
//! works in, and a run that outlives [`LIMIT`] is killed with its process group and fails the
//! test. A run still going when its [`Running`] is dropped is killed too.

use std::fs;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The longest any one run may take.
pub const LIMIT: Duration = Duration::from_secs(120);

/// Where a run puts what it fetched, by the command line it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `fetch --out fetched`: one folder, the lock inside it (`fetched/chartreg.lock`).
    Folder,
    /// `fetch --out charts --images-out images`: the lock beside the lists
    /// (`lists/chartreg.lock`), naming `../charts/...` and `../images/...`.
    Beside,
}

/// The `chartreg-build` under test.
#[derive(Debug, Clone)]
pub struct Tool {
    pub bin: PathBuf,
    pub shape: Shape,
}

impl Tool {
    pub fn under_test() -> Tool {
        let bin = std::env::var_os("CHARTREG_CRASH_TOOL")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_chartreg-build")));
        let help = Command::new(&bin)
            .args(["fetch", "--help"])
            .output()
            .unwrap_or_else(|e| panic!("{} fetch --help: {e}", bin.display()));
        let shape = if String::from_utf8_lossy(&help.stdout).contains("--images-out") {
            Shape::Beside
        } else {
            Shape::Folder
        };
        Tool { bin, shape }
    }

    /// `fetch` of the two lists (`lists/charts.yaml`, `lists/images.yaml`), into the fetched
    /// folder or beside them.
    pub fn fetch(&self) -> Invocation {
        let mut args = vec![
            "fetch",
            "--helm-charts-file",
            "lists/charts.yaml",
            "--images-file",
            "lists/images.yaml",
        ];
        match self.shape {
            Shape::Folder => args.extend(["--out", "fetched"]),
            Shape::Beside => args.extend(["--out", "charts", "--images-out", "images"]),
        }
        self.invocation(&args)
    }

    /// `pack --config content.yaml --out assets`.
    pub fn pack(&self) -> Invocation {
        self.invocation(&["pack", "--config", "content.yaml", "--out", "assets"])
    }

    /// The tool with `args`, in the work folder.
    pub fn invocation(&self, args: &[&str]) -> Invocation {
        Invocation {
            program: self.bin.clone(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    /// What a fetch replaces, relative to the work folder.
    pub fn fetched(&self) -> &'static [&'static str] {
        match self.shape {
            Shape::Folder => &["fetched"],
            Shape::Beside => &["lists/chartreg.lock", "charts", "images"],
        }
    }

    /// The lock, relative to the work folder.
    pub fn lock(&self) -> &'static str {
        match self.shape {
            Shape::Folder => "fetched/chartreg.lock",
            Shape::Beside => "lists/chartreg.lock",
        }
    }
}

/// One command line of the tool.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl Invocation {
    /// The command, run in `work`, with none of this environment's settings that change what
    /// the tool does (certificates, image settings), and a fixed `SOURCE_DATE_EPOCH`.
    pub fn command(&self, work: &Path) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        isolate(&mut command, work);
        command
    }

    /// The command under `strace OPTIONS --`, run in `work` as [`Invocation::command`] is.
    pub fn traced(&self, strace: &Path, options: &[String], work: &Path) -> Command {
        let mut command = Command::new(strace);
        command
            .args(options)
            .arg("--")
            .arg(&self.program)
            .args(&self.args);
        isolate(&mut command, work);
        command
    }

    /// `chartreg-build ARGS`, for messages.
    pub fn describe(&self) -> String {
        format!("chartreg-build {}", self.args.join(" "))
    }
}

fn isolate(command: &mut Command, work: &Path) {
    command
        .current_dir(work)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .env("NO_COLOR", "1");
    for name in [
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "CHARTREG_PACK_CONFIG",
        "CHARTREG_PACK_OUT",
        "CHARTREG_IMAGE_OUT",
        "CHARTREG_IMAGE_TAG",
        "CHARTREG_IMAGE_BASE",
        "CHARTREG_CACHE",
    ] {
        command.env_remove(name);
    }
}

/// How a run ended, and what it said.
#[derive(Debug)]
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.status.success()
    }

    /// Ended by SIGKILL (strace kills itself with the signal that killed what it traced).
    pub fn killed(&self) -> bool {
        self.status.signal() == Some(9) || self.status.code() == Some(137)
    }

    /// The status and both outputs, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// A run started and not yet waited for (see the module doc).
pub struct Running {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
    what: String,
}

/// Numbers the output files of runs, so that runs sharing a scratch folder never share one.
static RUNS: AtomicUsize = AtomicUsize::new(0);

impl Running {
    /// Starts `command` in a process group of its own, its output into files in `scratch`.
    pub fn spawn(mut command: Command, scratch: &Path) -> Running {
        let n = RUNS.fetch_add(1, Ordering::SeqCst);
        let stdout = scratch.join(format!("run-{n}.out"));
        let stderr = scratch.join(format!("run-{n}.err"));
        let what = format!("{command:?}");
        let child = command
            .stdin(Stdio::null())
            .stdout(fs::File::create(&stdout).expect("stdout file"))
            .stderr(fs::File::create(&stderr).expect("stderr file"))
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("could not run {what}: {e}"));
        Running {
            child,
            stdout,
            stderr,
            what,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has ended (without reaping it: [`Running::wait`] does).
    pub fn ended(&mut self) -> bool {
        self.child.try_wait().expect("poll a run").is_some()
    }

    /// Sends `signal` to the run's process (not its group).
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.pid()).expect("a pid"))
            .expect("a pid");
        rustix::process::kill_process(pid, signal).expect("signal the run");
    }

    /// Waits for the end, polling; past `limit` the run's process group is killed and the test
    /// fails.
    pub fn wait(mut self, limit: Duration) -> Ran {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll a run") {
                break status;
            }
            if Instant::now() > deadline {
                self.kill();
                panic!("{} ran for more than {limit:?}", self.what);
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let read =
            |path: &Path| String::from_utf8_lossy(&fs::read(path).unwrap_or_default()).into_owned();
        let ran = Ran {
            status,
            stdout: read(&self.stdout),
            stderr: read(&self.stderr),
        };
        let _ = fs::remove_file(&self.stdout);
        let _ = fs::remove_file(&self.stderr);
        ran
    }

    fn kill(&mut self) {
        if let Some(pid) =
            rustix::process::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(0))
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.kill();
        }
    }
}

/// Runs `command` to its end (bounded by [`LIMIT`]), its output through files in `scratch`.
pub fn run(command: Command, scratch: &Path) -> Ran {
    Running::spawn(command, scratch).wait(LIMIT)
}
