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
use chartreg_core::content::{ContentFile, Registry};
use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::tree::LayoutBuilder;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir`, as the binary would embed them.
pub fn files_in(dir: &Path) -> Vec<ContentFile> {
    chartreg_core::tree::read_dir(dir, dir)
        .expect("content folder is readable")
        .into_iter()
        .map(|(path, data)| ContentFile::new(path, data))
        .collect()
}

/// The names of the files in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// An OCI image manifest of an empty config and one layer of `layer`, its blobs added to
/// `layout`.
pub fn image(layout: &mut LayoutBuilder, layer: &[u8]) -> ImageManifest {
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/vnd.oci.image.layer.v1.tar", layer.to_vec());
    ImageManifest::new(config, vec![layer])
}

/// The committed `assets/` as a registry: the same content the binary embeds.
pub fn assets_registry() -> Registry {
    Registry::from_files(files_in(&root().join("assets"))).expect("assets/ is valid content")
}

/// The chartreg binary cargo built for these tests (the release binary under `make test`).
pub fn chartreg_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_chartreg"))
}

/// The build tool's binary, `chartreg-build`, from the same build as [`chartreg_bin`] (`env!`
/// names only this package's own binaries; `cargo test --workspace`, which `make test` runs,
/// builds both). Never built from here: a missing binary fails the test, saying how to build it.
pub fn chartreg_build_bin() -> PathBuf {
    let bin =
        chartreg_bin().with_file_name(format!("chartreg-build{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build both binaries (`cargo test --workspace`, as `make test` does)",
        bin.display()
    );
    bin
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

    /// Sends the process a signal (`"TERM"`, `"INT"`) with kill(1).
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{name} failed");
    }

    /// Waits for the process to exit.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.child.wait().expect("chartreg can be waited for")
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

/// Makes `cmd` (Helm, or a wrapper that runs it) use its own folders under `home` and none
/// of the caller's Helm, registry, Kubernetes or TLS settings.
pub fn isolate_helm<'c>(cmd: &'c mut Command, home: &Path) -> &'c mut Command {
    cmd.current_dir(home)
        .env("HOME", home)
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("DOCKER_CONFIG", home.join("docker"))
        .env("KUBECONFIG", home.join("kubeconfig"))
        .env("GNUPGHOME", home.join("gnupg"));
    for var in [
        "HELM_REGISTRY_CONFIG",
        "HELM_REPOSITORY_CONFIG",
        "HELM_REPOSITORY_CACHE",
        "HELM_PLUGINS",
        "HELM_DEBUG",
        "HELM_NAMESPACE",
        "HELM_KUBECONTEXT",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    ] {
        cmd.env_remove(var);
    }
    cmd
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
        "helm3" | "helm4" => {
            Some(root().join(".tools").join(name).join("helm")).filter(|p| p.is_file())
        }
        _ => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        }),
    };
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "{name} is missing (CI=true): run scripts/install-tools.sh, which `make test` does"
            );
        }
        eprintln!("SKIPPED: {name} is not installed; run scripts/install-tools.sh");
    }
    found
}

/// sha256 of bytes, as `sha256:<hex>`.
pub fn sha256(data: &[u8]) -> String {
    chartreg_core::oci::Digest::sha256_of(data).to_string()
}

// ---------------------------------------------------------------------------------------------
// Helpers for the client tests (tests/helm.rs, tests/clients.rs).
// ---------------------------------------------------------------------------------------------

/// The manifest digest that `index.json` of the committed layout `assets/<repo>` tags `tag`
/// with: what chartreg must serve for `<repo>:<tag>`.
pub fn assets_tag_digest(repo: &str, tag: &str) -> String {
    use chartreg_core::oci::layout::{ImageIndex, REF_NAME};
    let path = root().join("assets").join(repo).join("index.json");
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let index: ImageIndex =
        serde_json::from_slice(&data).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
    index
        .manifests
        .iter()
        .find(|d| d.annotations.get(REF_NAME).map(String::as_str) == Some(tag))
        .unwrap_or_else(|| panic!("{} tags no manifest `{tag}`", path.display()))
        .digest
        .to_string()
}

/// The bytes of a file, or a panic naming it.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Panics unless `got` holds exactly the bytes of `want`, naming both (with sizes and digests,
/// not the bytes) and `context`.
pub fn assert_same_bytes(got: &[u8], want: &Path, context: &str) {
    let expected = read(want);
    assert!(
        got == expected.as_slice(),
        "{context}: bytes differ from {}: got {} bytes {}, want {} bytes {}",
        want.display(),
        got.len(),
        sha256(got),
        expected.len(),
        sha256(&expected),
    );
}

/// Runs a command to completion, capturing its output; panics naming `what` if it cannot
/// start at all.
pub fn output_of(cmd: &mut Command, what: &str) -> std::process::Output {
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not run {cmd:?}: {e}"))
}

/// stdout and stderr of a finished command, for failure messages.
pub fn describe(out: &std::process::Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// One HTTP exchange made with curl.
#[derive(Debug)]
pub struct CurlResponse {
    pub status: u16,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl CurlResponse {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `curl` with `method` (GET, HEAD, POST, ...) on `url` with extra request headers. Fails the
/// test only if curl itself fails (connection refused and the like), not on HTTP errors.
pub fn curl(curl: &Path, method: &str, url: &str, headers: &[(&str, &str)]) -> CurlResponse {
    try_curl(curl, method, url, headers)
        .unwrap_or_else(|e| panic!("curl {method} {url} failed: {e}"))
}

/// Like [`curl`], returning curl's complaint instead of failing.
pub fn try_curl(
    curl: &Path,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<CurlResponse, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let header_file = dir.path().join("headers");
    let mut cmd = Command::new(curl);
    cmd.args([
        "--silent",
        "--show-error",
        "--max-time",
        "30",
        "--dump-header",
    ])
    .arg(&header_file)
    .args(["--output", "-"]);
    match method {
        "HEAD" => {
            cmd.arg("--head");
        }
        "GET" => {}
        other => {
            cmd.args(["--request", other]);
        }
    }
    for (name, value) in headers {
        cmd.arg("--header").arg(format!("{name}: {value}"));
    }
    let out = output_of(cmd.arg(url), "curl");
    if !out.status.success() {
        return Err(describe(&out));
    }
    let raw = std::fs::read_to_string(&header_file).map_err(|e| e.to_string())?;
    // With --head the header block is also printed on stdout: it is no body.
    let body = if method == "HEAD" {
        Vec::new()
    } else {
        out.stdout
    };
    // Only the last header block counts (a `100 Continue` may come first).
    let block = raw
        .trim_end()
        .rsplit("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut lines = block.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no HTTP status line in {raw:?}"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(CurlResponse {
        status,
        headers,
        body,
    })
}

/// The CNCF distribution registry (`docker-registry`, via `scripts/run-distribution.sh`) on a
/// free loopback port, with its storage in a temporary folder; killed on drop, with its log
/// printed if the test failed.
///
/// Ports: distribution cannot be handed a bound socket, so a port is picked by binding
/// 127.0.0.1:0 and releasing it, which is racy on its own. Two things make it safe:
/// - if distribution cannot bind (it exits at once with "address already in use"), another
///   port is tried;
/// - readiness is proven to be *this* instance, not whatever else may hold the port: a blob
///   upload is started on the port (POST, 202) and its upload folder must appear in this
///   instance's own storage folder.
pub struct Distribution {
    child: Child,
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Distribution {
    /// Starts distribution; `None` (test skipped) when docker-registry or curl is missing.
    pub fn start() -> Option<Distribution> {
        tool("docker-registry")?;
        let curl_bin = tool("curl")?;
        let script = root().join("scripts").join("run-distribution.sh");
        let mut failures = String::new();
        for _attempt in 0..10 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("pick a loopback port")
                .port();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let dir = tempfile::tempdir().expect("temp dir");
            let log = std::fs::File::create(dir.path().join("registry.log")).expect("log file");
            let child = Command::new("bash")
                .arg(&script)
                .arg(dir.path().join("registry"))
                .arg(addr.to_string())
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log file"))
                .stderr(log)
                .spawn()
                .expect("start scripts/run-distribution.sh");
            let mut registry = Distribution { child, addr, dir };
            match registry.wait_ready(&curl_bin) {
                Ok(()) => return Some(registry),
                Err(why) => {
                    failures.push_str(&format!("{addr}: {why}\n{}\n", registry.log()));
                    // Dropping kills it if it still runs; try another port.
                }
            }
        }
        panic!("distribution did not start on any port:\n{failures}");
    }

    fn wait_ready(&mut self, curl_bin: &Path) -> Result<(), String> {
        const PROBE: &str = "chartreg-probe/ready";
        let uploads = self
            .dir
            .path()
            .join("registry/data/docker/registry/v2/repositories")
            .join(PROBE)
            .join("_uploads");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("poll distribution") {
                return Err(format!("distribution exited ({status})"));
            }
            if std::net::TcpStream::connect(self.addr).is_ok() {
                let url = format!("http://{}/v2/{PROBE}/blobs/uploads/", self.addr);
                if let Ok(r) = try_curl(curl_bin, "POST", &url, &[("Content-Length", "0")])
                    && r.status == 202
                    && std::fs::read_dir(&uploads).is_ok_and(|mut d| d.next().is_some())
                {
                    return Ok(());
                }
            }
            thread::sleep(Duration::from_millis(25));
        }
        Err("distribution did not answer within 20 s".into())
    }

    /// `127.0.0.1:PORT`
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What distribution logged (errors only).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }
}

impl Drop for Distribution {
    fn drop(&mut self) {
        // The script exec's the registry: this PID is the registry's own.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- distribution log ---\n{}", self.log());
        }
    }
}

/// A one-manifest OCI image layout built in a test, as content files for
/// [`Registry::from_files`].
pub struct GeneratedLayout {
    /// `<repo>/oci-layout`, `<repo>/index.json` and `<repo>/blobs/sha256/*`.
    pub files: Vec<ContentFile>,
    /// The image manifest's exact bytes and digest.
    pub manifest: Vec<u8>,
    pub manifest_digest: String,
}

/// Builds the layout of repository `repo` whose `index.json` tags one OCI image manifest
/// `tag`; the manifest has the given config and layers, each `(media type, bytes)`.
pub fn generated_layout(
    repo: &str,
    tag: &str,
    config: (&str, &[u8]),
    layers: &[(&str, &[u8])],
) -> GeneratedLayout {
    use chartreg_core::oci::Digest;
    use chartreg_core::oci::layout::{
        Annotations, Descriptor, ImageIndex, ImageManifest, OciLayout, REF_NAME, blob_path,
    };
    let mut files = Vec::new();
    let mut blob = |media_type: &str, data: &[u8]| {
        let digest = Digest::sha256_of(data);
        files.push(ContentFile::new(
            format!("{repo}/{}", blob_path(&digest)),
            data.to_vec(),
        ));
        Descriptor::new(media_type, digest, data.len() as u64)
    };
    let config = blob(config.0, config.1);
    let layers = layers.iter().map(|(t, d)| blob(t, d)).collect();
    let manifest = ImageManifest::new(config, layers);
    let manifest = serde_json::to_vec(&manifest).expect("manifest serialises");
    let mut descriptor = blob("application/vnd.oci.image.manifest.v1+json", &manifest);
    descriptor
        .annotations
        .insert(REF_NAME.to_owned(), tag.to_owned());
    let manifest_digest = descriptor.digest.to_string();
    let index = ImageIndex {
        schema_version: 2,
        media_type: Some("application/vnd.oci.image.index.v1+json".into()),
        artifact_type: None,
        manifests: vec![descriptor],
        subject: None,
        annotations: Annotations::new(),
    };
    let layout = OciLayout {
        image_layout_version: "1.0.0".into(),
    };
    files.push(ContentFile::new(
        format!("{repo}/index.json"),
        serde_json::to_vec(&index).expect("index serialises"),
    ));
    files.push(ContentFile::new(
        format!("{repo}/oci-layout"),
        serde_json::to_vec(&layout).expect("oci-layout serialises"),
    ));
    GeneratedLayout {
        files,
        manifest,
        manifest_digest,
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers for the TLS tests (tests/tls.rs).
// ---------------------------------------------------------------------------------------------

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
        thread::spawn(move || {
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
            Ok(addr) => Process { child, addr, log },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                // Give the reader a moment to take the last lines of a process that exited.
                thread::sleep(Duration::from_millis(100));
                panic!("chartreg did not start:\n{}", log.lock().unwrap());
            }
        }
    }

    /// `https://127.0.0.1:PORT`
    pub fn https_url(&self) -> String {
        format!("https://{}", self.addr)
    }
}
