//! The external tools the tests drive (Helm, skopeo, curl, unshare, a CNCF distribution
//! registry to push to), each found by [`tool`] and isolated from the caller's settings; byte
//! comparisons and commands' output for failure messages; generated layouts.
//!
//! Shared by the server's tests (`tests/common`) and the build tool's (`crates/chartreg-build/tests/common`,
//! which includes this file by path); `super::root()` is the repository root on both sides.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use chartreg_core::content::HeldFile;

use super::{root, sha256};

/// An external tool: Helm from `.tools/` (`helm3`, `helm4`), the Python tools from `.tools/bin`
/// (`pyspdxtools`, `cyclonedx-validate`, `trivy`, `rust-audit-info`), Debian trixie's signature
/// verifiers from `.tools/bin` (`skopeo-sigstore`, `cosign`), anything else from PATH.
/// Missing: under `CI=true` the test fails; elsewhere it is skipped with a note.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = match name {
        "helm3" | "helm4" => {
            Some(root().join(".tools").join(name).join("helm")).filter(|p| p.is_file())
        }
        "pyspdxtools" | "cyclonedx-validate" | "skopeo-sigstore" | "cosign" | "trivy"
        | "rust-audit-info" => Some(root().join(".tools/bin").join(name)).filter(|p| p.is_file()),
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

/// `trivy COMMAND` offline (trivy from [`tool`]), its cache in `cache`: no vulnerability or
/// Java database update, and no database repository taken from the environment.
pub fn trivy_offline(trivy: &Path, cache: &Path, command: &str) -> Command {
    let mut trivy = Command::new(trivy);
    trivy
        .arg(command)
        .arg("--quiet")
        .arg("--cache-dir")
        .arg(cache)
        .args([
            "--offline-scan",
            "--skip-db-update",
            "--skip-java-db-update",
        ])
        .env_remove("TRIVY_DB_REPOSITORY");
    trivy
}

/// The (name, version) of every library a CycloneDX document lists.
pub fn cyclonedx_libraries(
    bom: &serde_json::Value,
) -> std::collections::BTreeSet<(String, String)> {
    bom["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "library")
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["version"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Whether SPDX's own validator (`pyspdxtools -i`, spdx-tools) takes `document` as a valid
/// SPDX 2.3 document; `None` when it is missing (under `CI=true` the test fails). Its output
/// names every problem.
pub fn spdx_validated(document: &Path) -> Option<Result<(), String>> {
    let validator = tool("pyspdxtools")?;
    let done = output_of(
        Command::new(validator).arg("-i").arg(document),
        "pyspdxtools",
    );
    let said = describe(&done);
    Some(if done.status.success() && !said.contains("invalid") {
        Ok(())
    } else {
        Err(said)
    })
}

/// Whether CycloneDX's own library (cyclonedx-python-lib's strict JSON schema validator, run by
/// `.tools/bin/cyclonedx-validate`) takes `bom` as a valid CycloneDX BOM of its own `specVersion`; `None` when it is
/// missing (under `CI=true` the test fails). Its output names every problem.
pub fn cyclonedx_validated(bom: &Path) -> Option<Result<(), String>> {
    let validator = tool("cyclonedx-validate")?;
    let done = output_of(Command::new(validator).arg(bom), "cyclonedx-validate");
    Some(if done.status.success() {
        Ok(())
    } else {
        Err(describe(&done))
    })
}

/// The signature fixtures: `tests/fixtures/signing/sign.py` (Python's cryptography, an
/// independent signer) writes into `out` cosign public keys, a test Sigstore trusted root, and
/// one OCI image layout per case with its signatures (see its `cases.json`). `None` when Python
/// or its cryptography is missing: under `CI=true` the test fails.
pub fn signing_fixtures(out: &Path) -> Option<()> {
    let python = tool("python3")?;
    let has = std::process::Command::new(&python)
        .args(["-c", "import cryptography"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "python3's cryptography is missing (CI=true): run scripts/install-tools.sh, which `make test` does"
            );
        }
        eprintln!("SKIPPED: python3's cryptography is not installed; run scripts/install-tools.sh");
        return None;
    }
    let out_text = out.to_str().expect("a UTF-8 path");
    let script = root().join("tests/fixtures/signing/sign.py");
    let done = output_of(
        std::process::Command::new(&python)
            .arg(&script)
            .arg(out_text),
        "sign.py",
    );
    assert!(done.status.success(), "sign.py: {}", describe(&done));
    Some(())
}

/// A throwaway RSA key in a private GNUPGHOME: its public keyring and the legacy secret keyring
/// `helm package --sign` reads (exported beside GNUPGHOME: gpg would migrate one inside it).
pub struct GpgKey {
    pub public: PathBuf,
    pub secret: PathBuf,
}

impl GpgKey {
    /// Makes the key `uid` in `dir` (files named after `name`); `None` (the test is skipped)
    /// when gpg is missing.
    pub fn make(dir: &Path, name: &str, uid: &str) -> Option<GpgKey> {
        use std::os::unix::fs::PermissionsExt;
        let gpg = tool("gpg")?;
        let home = dir.join(format!("gnupg-{name}"));
        std::fs::create_dir(&home).expect("GNUPGHOME");
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let run = |args: &[&str]| {
            let out = output_of(
                Command::new(&gpg)
                    .args([
                        "--batch",
                        "--quiet",
                        "--pinentry-mode",
                        "loopback",
                        "--passphrase",
                        "",
                    ])
                    .args(args)
                    .env("GNUPGHOME", &home),
                "gpg",
            );
            assert!(out.status.success(), "gpg {args:?}: {}", describe(&out));
            out.stdout
        };
        run(&["--quick-gen-key", uid, "rsa3072", "sign", "never"]);
        let key = GpgKey {
            public: dir.join(format!("{name}.pub.gpg")),
            secret: dir.join(format!("{name}.sec.gpg")),
        };
        std::fs::write(&key.public, run(&["--export"])).expect("public keyring");
        std::fs::write(&key.secret, run(&["--export-secret-keys"])).expect("secret keyring");
        if let Some(gpgconf) = tool("gpgconf") {
            let _ = Command::new(gpgconf)
                .args(["--kill", "gpg-agent"])
                .env("GNUPGHOME", &home)
                .output();
        }
        Some(key)
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

/// One Helm binary with private config, cache and data folders (and HOME), so that tests
/// share nothing with each other or with the user's Helm.
pub struct Helm {
    pub name: &'static str,
    pub bin: PathBuf,
    pub home: tempfile::TempDir,
}

impl Helm {
    /// `None` (the test is skipped) when this Helm is not installed.
    pub fn new(name: &'static str) -> Option<Helm> {
        let bin = tool(name)?;
        let home = tempfile::tempdir().expect("temp dir");
        Some(Helm { name, bin, home })
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let home = self.home.path();
        let mut cmd = Command::new(&self.bin);
        cmd.args(args);
        isolate_helm(&mut cmd, home);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        output_of(&mut self.command(args), self.name)
    }

    /// Runs Helm and fails the test, naming this Helm and the command, unless it succeeds.
    pub fn ok(&self, args: &[&str]) -> std::process::Output {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{} {} failed: {}",
            self.name,
            args.join(" "),
            describe(&out)
        );
        out
    }

    /// Runs Helm and fails the test unless it fails.
    pub fn fails(&self, args: &[&str]) -> std::process::Output {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "{} {} should have failed: {}",
            self.name,
            args.join(" "),
            describe(&out)
        );
        out
    }

    /// `helm pull oci://HOST/charts/CHART --version VERSION --plain-http` into `dir`; fails the
    /// test unless it succeeds.
    pub fn pull(&self, host: &str, chart: &str, version: &str, dir: &Path) -> std::process::Output {
        let reference = format!("oci://{host}/charts/{chart}");
        let dir = dir.to_str().expect("UTF-8 path");
        self.ok(&[
            "pull",
            &reference,
            "--version",
            version,
            "--plain-http",
            "-d",
            dir,
        ])
    }
}

/// `cmd` run in a private mount namespace whose `/etc/hosts` is `hosts` (so that a name
/// resolves to 127.0.0.1 for that command only), with the same arguments, environment and
/// folder; `None` (the test is skipped) without unshare(1) and mount(8).
pub fn with_hosts(cmd: &Command, hosts: &Path) -> Option<Command> {
    let unshare = tool("unshare")?;
    tool("mount")?;
    let mut wrapped = Command::new(unshare);
    wrapped
        .args([
            "-m",
            "sh",
            "-c",
            r#"mount --bind "$0" /etc/hosts && exec "$@""#,
        ])
        .arg(hosts)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    Some(wrapped)
}

/// skopeo with a private HOME, runtime and temp folders and an accept-anything policy file.
pub struct Skopeo {
    pub bin: PathBuf,
    dir: tempfile::TempDir,
}

impl Skopeo {
    /// `None` (the test is skipped) when skopeo is not installed.
    pub fn new() -> Option<Skopeo> {
        let bin = tool("skopeo")?;
        let dir = tempfile::tempdir().expect("temp dir");
        for sub in ["home", "run", "tmp"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::write(
            dir.path().join("policy.json"),
            r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
        )
        .expect("write policy");
        Some(Skopeo { bin, dir })
    }

    /// `skopeo --policy POLICY ARGS` with the private folders.
    pub fn command(&self, args: &[&str]) -> Command {
        let d = self.dir.path();
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--policy")
            .arg(d.join("policy.json"))
            .args(args)
            .env("HOME", d.join("home"))
            .env("XDG_RUNTIME_DIR", d.join("run"))
            .env("XDG_CONFIG_HOME", d.join("home/.config"))
            .env("TMPDIR", d.join("tmp"))
            .env_remove("REGISTRY_AUTH_FILE");
        cmd
    }

    /// Runs skopeo and fails the test, naming the command, unless it succeeds.
    pub fn ok(&self, args: &[&str]) -> std::process::Output {
        let out = output_of(&mut self.command(args), "skopeo");
        assert!(
            out.status.success(),
            "skopeo {} failed: {}",
            args.join(" "),
            describe(&out)
        );
        out
    }
}

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
    /// The body as text (lossy).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

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

/// Why curl gave no response.
#[derive(Debug)]
pub enum CurlError {
    /// curl failed: how it exited and what it said.
    Failed(String),
    /// The header file curl wrote cannot be read.
    Headers(std::io::Error),
    /// The headers curl wrote have no status line.
    NoStatus(String),
}

impl std::fmt::Display for CurlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CurlError::Failed(described) => f.write_str(described),
            CurlError::Headers(e) => write!(f, "{e}"),
            CurlError::NoStatus(raw) => write!(f, "no HTTP status line in {raw:?}"),
        }
    }
}

/// Like [`curl`], returning curl's complaint instead of failing.
pub fn try_curl(
    curl: &Path,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<CurlResponse, CurlError> {
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
        return Err(CurlError::Failed(describe(&out)));
    }
    let raw = std::fs::read_to_string(&header_file).map_err(CurlError::Headers)?;
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
        .ok_or_else(|| CurlError::NoStatus(raw.clone()))?;
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
/// loopback port it binds itself, with its storage in a temporary folder; killed on drop, with
/// its log printed if the test failed.
///
/// Ports: distribution cannot be handed a bound socket, so it is told to listen on
/// 127.0.0.1:0 and keeps the port the system gives it; the port is read from the listening
/// socket the process holds (`/proc/PID/fd` and `/proc/net/tcp`). Readiness is a blob upload
/// started on that port (POST, 202) whose upload folder appears in this instance's storage.
pub struct Distribution {
    child: Child,
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
    /// `Authorization` for every request, when started with a user.
    authorization: Option<String>,
}

impl Distribution {
    /// Starts distribution; `None` (test skipped) when docker-registry or curl is missing.
    pub fn start() -> Option<Distribution> {
        Distribution::start_as(None)
    }

    /// Starts distribution requiring basic auth as `user` (an htpasswd file made with
    /// `htpasswd -B`); `None` (test skipped) when a tool is missing.
    pub fn start_with_user(user: &str, password: &str) -> Option<Distribution> {
        Distribution::start_as(Some((user, password)))
    }

    fn start_as(user: Option<(&str, &str)>) -> Option<Distribution> {
        tool("docker-registry")?;
        let curl_bin = tool("curl")?;
        let htpasswd = match user {
            Some((user, password)) => {
                let bin = tool("htpasswd")?;
                let out = output_of(Command::new(bin).args(["-Bbn", user, password]), "htpasswd");
                assert!(out.status.success(), "htpasswd: {}", describe(&out));
                Some(out.stdout)
            }
            None => None,
        };
        let authorization = user.map(|(user, password)| {
            use base64::Engine as _;
            let pair = format!("{user}:{password}");
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        let script = root().join("scripts").join("run-distribution.sh");
        let dir = tempfile::tempdir().expect("temp dir");
        let log = std::fs::File::create(dir.path().join("registry.log")).expect("log file");
        let mut command = Command::new("bash");
        command
            .arg(&script)
            .arg(dir.path().join("registry"))
            .arg("127.0.0.1:0");
        if let Some(htpasswd) = &htpasswd {
            let path = dir.path().join("htpasswd");
            std::fs::write(&path, htpasswd).expect("write htpasswd");
            command.arg(path);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start scripts/run-distribution.sh");
        let mut registry = Distribution {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            dir,
            authorization,
        };
        if let Err(why) = registry.wait_ready(&curl_bin) {
            panic!("distribution did not start: {why}\n{}", registry.log());
        }
        Some(registry)
    }

    /// Polls until the process listens (its port is then `addr`) and answers as itself.
    fn wait_ready(&mut self, curl_bin: &Path) -> Result<(), NotReady> {
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
                return Err(NotReady::Exited(status));
            }
            if self.addr.port() == 0
                && let Some(port) = listening_port(self.child.id())
            {
                self.addr.set_port(port);
            }
            if self.addr.port() != 0 {
                let url = format!("http://{}/v2/{PROBE}/blobs/uploads/", self.addr);
                let mut headers = vec![("Content-Length", "0")];
                if let Some(authorization) = &self.authorization {
                    headers.push(("Authorization", authorization));
                }
                if let Ok(r) = try_curl(curl_bin, "POST", &url, &headers)
                    && r.status == 202
                    && std::fs::read_dir(&uploads).is_ok_and(|mut d| d.next().is_some())
                {
                    return Ok(());
                }
            }
            thread::sleep(Duration::from_millis(25));
        }
        Err(NotReady::Silent)
    }

    /// `127.0.0.1:PORT`
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The storage root (`rootdirectory`): `docker/registry/v2/...` below it, as a mindthegap
    /// bundle holds it.
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("registry").join("data")
    }

    /// What distribution logged (errors only).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }
}

/// Why a started distribution is not ready.
#[derive(Debug)]
enum NotReady {
    Exited(std::process::ExitStatus),
    Silent,
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::Exited(status) => write!(f, "distribution exited ({status})"),
            NotReady::Silent => f.write_str("distribution did not answer within 20 s"),
        }
    }
}

/// The port of the TCP socket process `pid` listens on (on 127.0.0.1), if it has one yet: its
/// sockets' inodes (`/proc/PID/fd`) found among the listening sockets of `/proc/net/tcp`.
fn listening_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    // `sl local_address rem_address st ... inode`: local as `0100007F:PORT` in hex, state 0A
    // is LISTEN, the inode is the tenth field.
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
        if *state != "0A" || !inodes.iter().any(|i| i == inode) {
            return None;
        }
        let (address, port) = local.split_once(':')?;
        (address == "0100007F").then(|| u16::from_str_radix(port, 16).ok())?
    })
}

impl Distribution {
    /// Stops the registry (its address stays known, and closed): what a test then pulls
    /// cannot have come from it.
    pub fn stop(&mut self) {
        // The script exec's the registry: this PID is the registry's own.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Distribution {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            eprintln!("--- distribution log ---\n{}", self.log());
        }
    }
}

/// A one-manifest OCI image layout built in a test, as content files for
/// [`Registry::from_files`].
pub struct GeneratedLayout {
    /// `<repo>/oci-layout`, `<repo>/index.json` and `<repo>/blobs/sha256/*`.
    pub files: Vec<HeldFile>,
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
        files.push(HeldFile::new(
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
    files.push(HeldFile::new(
        format!("{repo}/index.json"),
        serde_json::to_vec(&index).expect("index serialises"),
    ));
    files.push(HeldFile::new(
        format!("{repo}/oci-layout"),
        serde_json::to_vec(&layout).expect("oci-layout serialises"),
    ));
    GeneratedLayout {
        files,
        manifest,
        manifest_digest,
    }
}
