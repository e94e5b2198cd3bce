//! Shared by the integration tests: the committed content, chartreg on a real socket (the
//! release binary as a process, or the library in-process over any content), and the external
//! tools the tests drive.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use actix_web::{HttpServer, web};
use chartreg::content::{ContentFile, Registry};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir`, as the binary would embed them.
pub fn files_in(dir: &Path) -> Vec<ContentFile> {
    chartreg::pack::read_tree(dir, dir)
        .expect("content folder is readable")
        .into_iter()
        .map(|(path, data)| ContentFile::new(path, data))
        .collect()
}

/// The committed `assets/` as a registry: the same content the binary embeds.
pub fn assets_registry() -> Registry {
    Registry::from_files(files_in(&root().join("assets"))).expect("assets/ is valid content")
}

/// The chartreg binary cargo built for these tests (the release binary under `make test`).
pub fn chartreg_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_chartreg"))
}

/// `chartreg serve` as a child process on 127.0.0.1 with a port the OS picked; killed on drop,
/// with its log printed if the test failed.
pub struct Process {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl Process {
    /// Starts the binary and waits for its "serving ... on http://ADDR" line.
    pub fn start() -> Process {
        Self::start_with(&chartreg_bin(), &[])
    }

    pub fn start_with(bin: &Path, env: &[(&str, &str)]) -> Process {
        let mut child = Command::new(bin)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chartreg starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.split(" on http://").nth(1) {
                    let addr = addr.split_whitespace().next().unwrap_or_default();
                    if let (Some(tx), Ok(addr)) = (tx.take(), addr.parse::<SocketAddr>()) {
                        let _ = tx.send(addr);
                    }
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => Process { child, addr, log },
            Err(_) => {
                let _ = child.kill();
                panic!("chartreg did not start:\n{}", log.lock().unwrap());
            }
        }
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

/// The library serving `registry` on a real socket in this process (a listener bound to
/// 127.0.0.1:0 and kept), stopped on drop.
pub struct InProcess {
    pub addr: SocketAddr,
    handle: actix_web::dev::ServerHandle,
    thread: Option<thread::JoinHandle<()>>,
}

impl InProcess {
    pub fn start(registry: Registry) -> InProcess {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("bound address");
        let data = web::Data::new(registry);
        let (tx, rx) = mpsc::channel();
        let thread = thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || chartreg::http::app(data.clone()))
                    .workers(2)
                    .listen(listener)
                    .expect("listen on the bound socket")
                    .run();
                tx.send(server.handle()).expect("test is waiting");
                server.await.expect("server runs");
            })
        });
        let handle = rx.recv().expect("server started");
        InProcess {
            addr,
            handle,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        let stop = self.handle.stop(false);
        // The server's own runtime is on its thread; waiting for the stop needs none here.
        futures_util::FutureExt::now_or_never(stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// An external tool: Helm from `.tools/` (`helm3`, `helm4`), anything else from PATH.
/// Missing: under `CI=true` the test fails; elsewhere it is skipped with a note.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = match name {
        "helm3" | "helm4" => Some(root().join(".tools").join(name).join("helm")).filter(|p| p.is_file()),
        _ => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        }),
    };
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{name} is missing (CI=true): run scripts/install-tools.sh, which `make test` does");
        }
        eprintln!("SKIPPED: {name} is not installed; run scripts/install-tools.sh");
    }
    found
}

/// sha256 of bytes, as `sha256:<hex>`.
pub fn sha256(data: &[u8]) -> String {
    chartreg::oci::Digest::sha256_of(data).to_string()
}
