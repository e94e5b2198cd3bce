//! A rolling update that fails no pull. Two replicas of the old image (`make image`'s) run as
//! the chart runs them, behind haproxy standing in for the Service: TCP passthrough of HTTPS,
//! round robin, each replica health-checked on the chart's readiness probe with its period
//! and failure threshold. Helm 3 and 4 pulls and blob downloads (curl, HTTP/2) run throughout,
//! while each replica in turn is replaced as the chart's strategy says (maxSurge 1,
//! maxUnavailable 0: the new pod is started and ready, then the old one gets SIGTERM, as the
//! kubelet sends it, and must exit 0 within the grace period). The new image holds one chart
//! more, `rollout`. Every pull and download must succeed with the exact bytes, and after the
//! rollout the new chart is served.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::common;
use super::https::{Certs, Client, free_port};
use super::images;
use super::node::{Container, Image, Node};
use super::pod::Pod;

/// haproxy in the foreground with a config of the test's; killed on drop.
struct Haproxy {
    child: Child,
    stats: u16,
    dir: tempfile::TempDir,
}

impl Haproxy {
    /// `None` (skipped) without haproxy, a failure under CI=true (`common::tool`).
    fn start(port: u16, servers: &[(&str, u16)], pod: &Pod) -> Option<Haproxy> {
        let bin = common::tool("haproxy")?;
        let dir = tempfile::tempdir().expect("temp dir");
        let stats = free_port();
        let mut config = format!(
            "global\n  maxconn 2000\n\
             defaults\n  timeout connect 1s\n  timeout client 120s\n  timeout server 120s\n  retries 3\n  option redispatch 1\n\
             listen stats\n  mode http\n  bind 127.0.0.1:{stats}\n  stats enable\n  stats uri /stats\n\
             listen registry\n  mode tcp\n  bind 127.0.0.1:{port}\n  balance roundrobin\n\
             \x20 option httpchk\n  http-check send meth GET uri {path}\n  http-check expect status 200\n\
             \x20 default-server check check-ssl verify none inter {period}ms fall {fall} rise 1\n",
            path = pod.readiness_path,
            period = pod.readiness_period.as_millis(),
            fall = pod.readiness_failures,
        );
        for (name, port) in servers {
            config.push_str(&format!("  server {name} 127.0.0.1:{port}\n"));
        }
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config).expect("haproxy.cfg");
        let log = std::fs::File::create(dir.path().join("haproxy.log")).expect("log");
        let child = Command::new(bin)
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("haproxy starts");
        Some(Haproxy { child, stats, dir })
    }

    /// Each server's status as haproxy's health checks see it (`UP`, `DOWN`, ...).
    fn status(&self, server: &str) -> Option<String> {
        let out = Command::new("curl")
            .args(["--silent", "--max-time", "2"])
            .arg(format!("http://127.0.0.1:{}/stats;csv", self.stats))
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
        let column = header.iter().position(|h| *h == "status")?;
        lines.find_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields.first() == Some(&"registry") && fields.get(1) == Some(&server))
                .then(|| fields.get(column).map(|s| s.to_string()))?
        })
    }

    /// Waits until haproxy sees `server` as `want` (`UP`: it takes traffic; `DOWN`: none).
    fn wait_for(&self, server: &str, want: &str, bound: Duration) {
        let start = Instant::now();
        loop {
            let status = self.status(server);
            if status.as_deref().is_some_and(|s| s.starts_with(want)) {
                return;
            }
            assert!(
                start.elapsed() < bound,
                "haproxy sees {server} as {status:?}, not {want}, after {bound:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("haproxy.log")).unwrap_or_default()
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the clients saw: successes, and each failure.
#[derive(Default)]
struct Tally {
    pulls: AtomicUsize,
    downloads: AtomicUsize,
    failures: Mutex<Vec<String>>,
}

/// A Helm pull of `chart:version` through the load balancer, into a fresh folder: the
/// package's bytes, or why it failed.
fn helm_pull(
    helm: &common::Helm,
    hosts: &Path,
    port: u16,
    ca: &Path,
    chart: &str,
    version: &str,
) -> Result<Vec<u8>, String> {
    let out_dir = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}:{port}/charts/{chart}", common::LOOPBACK_NAME);
    let args = [
        "pull",
        &reference,
        "--version",
        version,
        "--ca-file",
        ca.to_str().expect("UTF-8"),
        "-d",
        out_dir.path().to_str().expect("UTF-8"),
    ];
    let mut cmd = common::with_hosts(&helm.command(&args), hosts).expect("unshare and mount");
    let out = common::output_of(&mut cmd, helm.name);
    if !out.status.success() {
        return Err(format!(
            "{} pull {chart} {version}: {}",
            helm.name,
            common::describe(&out)
        ));
    }
    std::fs::read(out_dir.path().join(format!("{chart}-{version}.tgz")))
        .map_err(|e| format!("{} pull wrote no package: {e}", helm.name))
}

/// Runs `client` in a loop on its own thread until `stop`.
fn looping(
    stop: &Arc<AtomicBool>,
    mut client: impl FnMut() + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let stop = stop.clone();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            client();
        }
    })
}

/// The digests of the blobs the downloaders take: the sample image's config and layers (of its
/// first platform's manifest, `v1` being an index).
fn blobs(client: &Client) -> Vec<String> {
    let json = |path: &str| -> serde_json::Value {
        serde_json::from_slice(&client.get(path)).expect("manifest JSON")
    };
    let mut manifest = json("/v2/images/sample/manifests/v1");
    if let Some(first) = manifest["manifests"][0]["digest"].as_str() {
        manifest = json(&format!("/v2/images/sample/manifests/{first}"));
    }
    let digests: Vec<String> = std::iter::once(&manifest["config"])
        .chain(manifest["layers"].as_array().into_iter().flatten())
        .filter_map(|d| d["digest"].as_str().map(str::to_owned))
        .collect();
    assert!(
        digests.len() >= 2,
        "the sample image has a config and layers"
    );
    digests
}

#[test]
fn a_rolling_update_fails_no_pull() {
    let Some(pod) = Pod::from_chart() else { return };
    assert_eq!(
        (pod.max_surge, pod.max_unavailable),
        (1, 0),
        "the chart's rolling update: this test replays surge 1, unavailable 0"
    );
    let Some(old) = images::old() else { return };
    let Some(new) = images::new() else { return };
    let Some(node) = Node::start() else { return };
    let (Some(helm3), Some(helm4)) = (common::Helm::new("helm3"), common::Helm::new("helm4"))
    else {
        return;
    };
    let old_image = node.import(&old.dir, &old.tag);
    let new_image = node.import(&new.layout.dir, &new.layout.tag);
    let certs = Certs::new();
    let ports: Vec<u16> = (0..5).map(|_| free_port()).collect();
    let (lb, replicas) = (ports[0], &ports[1..]);
    let names = ["old0", "old1", "new0", "new1"];
    let servers: Vec<(&str, u16)> = names
        .iter()
        .copied()
        .zip(replicas.iter().copied())
        .collect();
    let Some(haproxy) = Haproxy::start(lb, &servers, &pod) else {
        return;
    };
    let run = |image: &Image, port: u16| -> Container {
        let direct = Client::new(port, &certs.ca()).expect("curl");
        node.run(
            image,
            &pod,
            &format!("127.0.0.1:{port}"),
            &certs.secret(),
            |p| direct.status(p),
        )
    };
    let mut olds: Vec<Container> = (0..2).map(|i| run(&old_image, replicas[i])).collect();
    let checks = pod.readiness_period * (pod.readiness_failures as u32 + 2);
    for name in &names[..2] {
        haproxy.wait_for(name, "UP", checks);
    }
    let service = Client::new(lb, &certs.ca()).expect("curl");
    let digests = blobs(&service);
    let package = common::read(&common::root().join("charts/hello-1.0.0.tgz"));

    // Clients, throughout.
    let dir = tempfile::tempdir().expect("temp dir");
    let hosts: PathBuf = dir.path().join("hosts");
    std::fs::write(
        &hosts,
        format!("127.0.0.1 localhost\n127.0.0.1 {}\n", common::LOOPBACK_NAME),
    )
    .expect("hosts");
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let mut clients = Vec::new();
    for helm in [helm3, helm4] {
        let (tally, hosts, ca, package) =
            (tally.clone(), hosts.clone(), certs.ca(), package.clone());
        clients.push(looping(&stop, move || {
            match helm_pull(&helm, &hosts, lb, &ca, "hello", "1.0.0") {
                Ok(bytes) if bytes == package => {
                    tally.pulls.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => tally
                    .failures
                    .lock()
                    .expect("lock")
                    .push(format!("{}: wrong bytes", helm.name)),
                Err(e) => tally.failures.lock().expect("lock").push(e),
            }
        }));
    }
    for worker in 0..2 {
        let (tally, digests) = (tally.clone(), digests.clone());
        let client = Client::new(lb, &certs.ca()).expect("curl");
        let mut next = worker;
        clients.push(looping(&stop, move || {
            let digest = &digests[next % digests.len()];
            next += 1;
            let path = format!("/v2/images/sample/blobs/{digest}");
            let out = client
                .command(&path, 30)
                .arg("--fail")
                .output()
                .expect("curl runs");
            if !out.status.success() {
                tally
                    .failures
                    .lock()
                    .expect("lock")
                    .push(format!("GET {path}: {}", common::describe(&out)));
            } else if common::sha256(&out.stdout) != *digest {
                tally
                    .failures
                    .lock()
                    .expect("lock")
                    .push(format!("GET {path}: wrong bytes"));
            } else {
                tally.downloads.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    std::thread::sleep(Duration::from_secs(2));

    // The rollout: for each replica, the new pod up and ready, then the old one stopped.
    let mut news = Vec::new();
    let started = Instant::now();
    for (i, old) in olds.iter_mut().enumerate() {
        news.push(run(&new_image, replicas[2 + i]));
        haproxy.wait_for(names[2 + i], "UP", checks);
        let term = Instant::now();
        node.signal(old, "SIGTERM");
        let exit = old.wait(pod.grace).unwrap_or_else(|| {
            panic!(
                "{} still running {:?} after SIGTERM:\n{}",
                names[i],
                pod.grace,
                old.log()
            )
        });
        assert!(exit.success(), "{} exited {exit}:\n{}", names[i], old.log());
        eprintln!(
            "{} replaced; it exited 0 {:.1?} after SIGTERM",
            names[i],
            term.elapsed()
        );
        haproxy.wait_for(names[i], "DOWN", checks);
    }
    let rollout = started.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().expect("client thread");
    }
    let failures = tally.failures.lock().expect("lock").clone();
    let (pulls, downloads) = (
        tally.pulls.load(Ordering::Relaxed),
        tally.downloads.load(Ordering::Relaxed),
    );
    eprintln!(
        "rollout of 2 replicas in {rollout:.1?}: {pulls} Helm pulls and {downloads} blob downloads, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} failed during the rollout:\n{}\n--- haproxy ---\n{}",
        failures.len(),
        failures.len() + pulls + downloads,
        failures.join("\n"),
        haproxy.log()
    );
    assert!(
        pulls >= 4 && downloads >= 20,
        "too few requests to say anything: {pulls} pulls, {downloads} downloads"
    );

    // After the rollout, the new chart is served by every replica.
    let helm = common::Helm::new("helm4").expect("helm4");
    for _ in 0..4 {
        let pulled = helm_pull(&helm, &hosts, lb, &certs.ca(), "rollout", "1.0.0")
            .unwrap_or_else(|e| panic!("after the rollout: {e}"));
        assert!(!pulled.is_empty());
    }
    for new in news.iter_mut() {
        assert!(new.running(), "new replica running:\n{}", new.log());
    }
}
