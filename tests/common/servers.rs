//! chartreg on a real socket: the binary as a child process ([`Process`], killed on drop with
//! its log shown when a test fails), over HTTP or HTTPS ([`TlsProcess`]). The library serving a
//! registry in this process is `InProcess` (`in_process.rs`).

use super::*;

/// `chartreg serve` as a child process on 127.0.0.1 with a port the OS picked; killed on drop,
/// with its log printed if the test failed.
pub struct Process {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
    /// Reads the server's stderr into `log` until the process closes it.
    reader: Option<thread::JoinHandle<()>>,
}

/// A line of `/proc/PID/status` (`VmRSS`, `RssAnon`, ...), in KiB; `None` once the process
/// is gone.
pub fn status_kib_of(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

impl Process {
    /// Starts the binary and waits for its "serving ... on http://ADDR" line.
    pub fn start() -> Process {
        Self::start_with(&chartreg_bin(), &[])
    }

    /// `bin serve --listen 127.0.0.1:0` with extra environment variables.
    pub fn start_with(bin: &Path, env: &[(&str, &str)]) -> Process {
        Self::start_args(bin, &[], env)
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `127.0.0.1:PORT`, as `oci://` references and skopeo want it.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A line of the process's `/proc/PID/status` (`VmRSS`, `RssAnon`, ...), in KiB.
    pub fn status_kib(&self, key: &str) -> u64 {
        status_kib_of(self.pid(), key).unwrap_or_else(|| panic!("{key} in /proc/PID/status"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time the process's threads have run so far: the sum of their `schedstat` run times
    /// (nanoseconds; threads that have exited are not counted, and chartreg's live as long as
    /// it does).
    pub fn cpu(&self) -> Duration {
        let tasks =
            std::fs::read_dir(format!("/proc/{}/task", self.pid())).expect("/proc/PID/task");
        let nanos: u64 = tasks
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
            .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        Duration::from_nanos(nanos)
    }

    /// Sends the process a signal (`"TERM"`, `"INT"`) with kill(1).
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{name} failed");
    }

    /// Waits for the process to exit.
    /// Waits for the process to exit, then for its last log lines (the reader ends when the
    /// process closes stderr), so `log()` holds everything it wrote.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        let status = self.child.wait().expect("chartreg can be waited for");
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the log reader does not panic");
        }
        status
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- chartreg log ---\n{}", self.log());
        }
    }
}

/// Where the summary line says the main listener is: the address after the first
/// ` on http://` or ` on https://` (a metrics address may follow it on the same line).
fn served_address(line: &str) -> Option<SocketAddr> {
    let start = [" on http://", " on https://"]
        .iter()
        .filter_map(|marker| line.find(marker).map(|at| at + marker.len()))
        .min()?;
    line[start..]
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()?
        .parse()
        .ok()
}

impl Process {
    /// `bin serve --listen 127.0.0.1:0 ARGS...` with extra environment variables; waits for the
    /// summary line, plain HTTP or HTTPS (`addr` is then the HTTPS listener).
    pub fn start_args(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> Process {
        let mut child = Command::new(bin)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chartreg starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        let reader = thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                {
                    let mut log = sink.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
                if let Some(addr) = served_address(&line)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr);
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => Process {
                child,
                addr,
                log,
                reader: Some(reader),
            },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                // The reader ends once the process's stderr is closed: its last lines are in.
                let _ = reader.join();
                panic!("chartreg did not start:\n{}", log.lock().unwrap());
            }
        }
    }

    /// `https://127.0.0.1:PORT`
    pub fn https_url(&self) -> String {
        format!("https://{}", self.addr)
    }
}

/// chartreg serving HTTPS with a certificate for 127.0.0.1 from a private CA.
pub struct TlsProcess {
    pub process: Process,
    pub cert: LoopbackCert,
    /// Holds `tls.crt`, `tls.key` and the CA as `ca.crt`.
    pub dir: tempfile::TempDir,
}

impl TlsProcess {
    /// `chartreg serve --tls-cert-file ... --tls-private-key-file ... ARGS` with `env`.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> TlsProcess {
        let dir = tempfile::tempdir().expect("temp dir");
        let cert = LoopbackCert::new("chartreg test CA");
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            path.to_str().expect("UTF-8 path").to_owned()
        };
        let (cert_file, key_file) = (
            write("tls.crt", &cert.cert_pem),
            write("tls.key", &cert.key_pem),
        );
        write("ca.crt", &cert.ca_pem);
        let mut all = vec![
            "--tls-cert-file",
            &cert_file,
            "--tls-private-key-file",
            &key_file,
        ];
        all.extend_from_slice(args);
        let process = Process::start_args(&chartreg_bin(), &all, env);
        TlsProcess { process, cert, dir }
    }

    /// The CA file to trust.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }
}
