//! The HTTPS side of a test: the certificate secret the chart mounts (a private CA's
//! certificate for 127.0.0.1 and `chartreg.test`), and curl as the client, trusting that CA.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::common;

/// The secret's files (`tls.crt`, `tls.key`) in a folder the container mounts, and the CA
/// (`ca.crt`) beside them, outside it.
pub struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    pub fn new() -> Certs {
        let cert = common::LoopbackCert::new("chartreg runtime test CA");
        let dir = tempfile::tempdir().expect("temp dir");
        let secret = dir.path().join("secret");
        std::fs::create_dir(&secret).expect("secret folder");
        std::fs::write(secret.join("tls.crt"), &cert.cert_pem).expect("tls.crt");
        std::fs::write(secret.join("tls.key"), &cert.key_pem).expect("tls.key");
        std::fs::write(dir.path().join("ca.crt"), &cert.ca_pem).expect("ca.crt");
        // Mounted as it is: the container's user (65532) reads it, as from a Secret volume.
        for path in [dir.path().to_owned(), secret.clone()] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        for file in ["tls.crt", "tls.key"] {
            std::fs::set_permissions(secret.join(file), std::fs::Permissions::from_mode(0o644))
                .expect("chmod");
        }
        Certs { dir }
    }

    /// The folder mounted at the chart's certs path.
    pub fn secret(&self) -> PathBuf {
        self.dir.path().join("secret")
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }
}

/// A free port on 127.0.0.1 (bound, then let go: the container binds it by number).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// curl against `https://127.0.0.1:PORT`, trusting the CA.
pub struct Client {
    pub port: u16,
    pub ca: PathBuf,
    curl: PathBuf,
}

impl Client {
    /// `None` (skipped) without curl.
    pub fn new(port: u16, ca: &Path) -> Option<Client> {
        Some(Client {
            port,
            ca: ca.to_owned(),
            curl: common::tool("curl")?,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// `curl ARGS URL` with the CA, at most `seconds` long.
    pub fn command(&self, path: &str, seconds: u32) -> Command {
        let mut cmd = Command::new(&self.curl);
        cmd.args([
            "--silent",
            "--show-error",
            "--max-time",
            &seconds.to_string(),
        ])
        .arg("--cacert")
        .arg(&self.ca)
        .arg(self.url(path))
        .stdin(Stdio::null());
        cmd
    }

    /// The status of GET `path` (HTTP/2, as curl negotiates), `None` when nothing answered.
    pub fn status(&self, path: &str) -> Option<u16> {
        let out = self
            .command(path, 5)
            .args(["--output", "/dev/null", "--write-out", "%{http_code}"])
            .output()
            .expect("curl runs");
        let code: u16 = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
        (code != 0).then_some(code)
    }

    /// The body of GET `path`, which must answer 200.
    pub fn get(&self, path: &str) -> Vec<u8> {
        let out = self
            .command(path, 60)
            .arg("--fail")
            .output()
            .expect("curl runs");
        assert!(
            out.status.success(),
            "GET {}: {}",
            self.url(path),
            common::describe(&out)
        );
        out.stdout
    }
}
