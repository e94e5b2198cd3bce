//! The new image (`images::new`: the sample content, one chart more and a 1 GiB blob) run by
//! containerd and runc as the deploy chart runs it, over HTTPS:
//! - the process has the chart's user and group, no capability, no new privileges, a seccomp
//!   filter and a read-only root;
//! - it answers the chart's readiness and liveness probes, Helm 3 and 4 pulls (byte-exact) and a
//!   containerd pull of an image through it;
//! - it serves the 1 GiB blob, twice its memory limit, byte-exact and is not OOM-killed: its
//!   memory cgroup reaches the limit and the kernel reclaims the binary's pages (file-backed:
//!   the anonymous memory stays small), rather than killing it;
//! - on SIGTERM it answers 503 to its readiness probe at once, finishes a download in flight
//!   and exits 0 within the chart's terminationGracePeriodSeconds.

use std::io::Read;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::common;
use super::https::{Certs, Client, free_port};
use super::images;
use super::node::{Memory, Node, status};
use super::pod::Pod;

/// Anonymous memory the server may hold after serving the big blob (its heap and stacks; the
/// blob's pages are the binary's, file-backed).
const ANON_BOUND: u64 = 64 << 20;

/// How soon after SIGTERM the readiness probe must fail.
const NOT_READY_WITHIN: Duration = Duration::from_secs(1);

/// Downloads `path` with curl (extra args `extra`), hashing as it reads; the sha256 digest and
/// the bytes read. `progress` counts them as they come.
fn download(client: &Client, path: &str, extra: &[&str], progress: &AtomicU64) -> (String, u64) {
    let mut child = client
        .command(path, 300)
        .arg("--fail")
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("curl runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut hash = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    let mut total = 0;
    loop {
        let n = stdout.read(&mut buffer).expect("read curl's output");
        if n == 0 {
            break;
        }
        hash.update(&buffer[..n]);
        total += n as u64;
        progress.store(total, Ordering::Relaxed);
    }
    let out = child.wait_with_output().expect("curl ends");
    assert!(
        out.status.success(),
        "GET {path}: {}",
        common::describe(&out)
    );
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    (format!("sha256:{hex}"), total)
}

/// Drops the page cache of the container's binary (it was written there by the unpack, and
/// charged to containerd), so that serving the blob faults its pages into the container's
/// own memory cgroup.
fn drop_cached_binary(pid: u32) {
    let file = std::fs::File::open(format!("/proc/{pid}/root/chartreg")).expect("the binary");
    file.sync_all().expect("fsync the binary");
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).expect("fadvise");
}

/// The readiness probe of the root mount: whether `/` is mounted read-only in the container.
fn root_read_only(pid: u32) -> bool {
    let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).expect("mountinfo");
    info.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(4) == Some(&"/")
            && fields
                .get(5)
                .is_some_and(|o| o.split(',').any(|o| o == "ro"))
    })
}

#[test]
fn the_image_runs_under_containerd_as_the_chart_runs_it() {
    let Some(pod) = Pod::from_chart() else { return };
    let Some(new) = images::new() else { return };
    let Some(node) = Node::start() else { return };
    let certs = Certs::new();
    let port = free_port();
    let Some(client) = Client::new(port, &certs.ca()) else {
        return;
    };
    let image = node.import(&new.layout.dir, &new.layout.tag);
    assert_eq!(
        image.user,
        format!("{}:{}", pod.run_as_user, pod.run_as_group),
        "the image's user is the chart's runAsUser:runAsGroup"
    );
    let listen = format!("127.0.0.1:{port}");
    let mut container = node.run(&image, &pod, &listen, &certs.secret(), |p| client.status(p));
    let pid = node.pid(&container);

    // What the process runs with.
    let ids = |key| {
        status(pid, key)
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids("Uid"), vec![pod.run_as_user.to_string(); 4], "user");
    assert_eq!(ids("Gid"), vec![pod.run_as_group.to_string(); 4], "group");
    for caps in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(
            status(pid, caps),
            "0000000000000000",
            "{caps}: no capability"
        );
    }
    assert_eq!(status(pid, "NoNewPrivs"), "1");
    assert_eq!(status(pid, "Seccomp"), "2", "a seccomp filter");
    assert!(root_read_only(pid), "the root file system is read-only");

    // Probes, on the chart's paths, over HTTPS as the chart's scheme says.
    assert_eq!(pod.probe_scheme, "HTTPS");
    assert_eq!(client.status(&pod.readiness_path), Some(200));
    assert_eq!(client.status(&pod.liveness_path), Some(200));

    // Helm 3 and 4 pull charts through it, byte-exact.
    let dir = tempfile::tempdir().expect("temp dir");
    let hosts = dir.path().join("hosts");
    std::fs::write(
        &hosts,
        format!("127.0.0.1 localhost\n127.0.0.1 {}\n", common::LOOPBACK_NAME),
    )
    .expect("hosts");
    for helm in ["helm3", "helm4"] {
        let Some(helm) = common::Helm::new(helm) else {
            return;
        };
        for (chart, version) in [("hello", "1.0.0"), ("rollout", "1.0.0")] {
            let out_dir = dir.path().join(format!("{}-{chart}", helm.name));
            std::fs::create_dir(&out_dir).expect("folder");
            let reference = format!("oci://{}:{port}/charts/{chart}", common::LOOPBACK_NAME);
            let ca = certs.ca();
            let args = [
                "pull",
                &reference,
                "--version",
                version,
                "--ca-file",
                ca.to_str().expect("UTF-8"),
                "-d",
                out_dir.to_str().expect("UTF-8"),
            ];
            let mut cmd = common::with_hosts(&helm.command(&args), &hosts).expect("unshare");
            let out = common::output_of(&mut cmd, helm.name);
            assert!(
                out.status.success(),
                "{} {}: {}\n{}",
                helm.name,
                args.join(" "),
                common::describe(&out),
                container.log()
            );
            let pulled = common::read(&out_dir.join(format!("{chart}-{version}.tgz")));
            let served = client.get(&format!(
                "/v2/charts/{chart}/blobs/{}",
                layer_of(&client, chart, version)
            ));
            assert_eq!(pulled, served, "{} pulled what is served", helm.name);
            if chart == "hello" {
                common::assert_same_bytes(
                    &pulled,
                    &common::root().join("charts/hello-1.0.0.tgz"),
                    helm.name,
                );
            }
        }
    }

    // containerd pulls an image through it (the node's own puller, HTTPS with the CA).
    let hosts_dir = dir.path().join("certs.d");
    let host = format!("127.0.0.1:{port}");
    std::fs::create_dir_all(hosts_dir.join(&host)).expect("hosts folder");
    std::fs::write(
        hosts_dir.join(&host).join("hosts.toml"),
        format!(
            "server = \"https://{host}\"\n[host.\"https://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"{}\"\n",
            certs.ca().display()
        ),
    )
    .expect("hosts.toml");
    let sample = format!("{host}/images/sample:v1");
    node.containerd.pull_ok(&sample, &hosts_dir, &[]);
    assert!(
        node.containerd.unpacked(&sample),
        "{sample} pulled and unpacked"
    );

    // The 1 GiB blob, twice the memory limit, byte-exact and without an OOM kill.
    let memory = Memory::of(pid);
    assert_eq!(
        memory.report().limit,
        pod.memory_limit,
        "the chart's memory limit"
    );
    drop_cached_binary(pid);
    let big = format!("/v2/big/blob/blobs/{}", new.big_digest);
    let started = Instant::now();
    let (digest, size) = download(&client, &big, &[], &AtomicU64::new(0));
    let took = started.elapsed();
    assert_eq!(
        (digest.as_str(), size),
        (new.big_digest.as_str(), images::BIG)
    );
    let report = memory.report();
    eprintln!(
        "1 GiB served in {took:.1?} under a {} MiB limit: {report:?}",
        pod.memory_limit >> 20
    );
    assert_eq!(report.oom_kills, 0, "OOM kills: {report:?}");
    assert!(container.running(), "still running:\n{}", container.log());
    assert!(
        report.limit_hits > 0,
        "the cgroup never reached its limit, so nothing was proven reclaimable: {report:?}"
    );
    assert!(report.peak <= report.limit, "{report:?}");
    assert!(
        report.file > report.limit / 2,
        "the blob's pages are charged as page cache (file-backed): {report:?}"
    );
    assert!(
        report.anon < ANON_BOUND,
        "anonymous memory {} MiB: the blob's pages should be the binary's, file-backed: {report:?}",
        report.anon >> 20
    );
    assert_eq!(client.status(&pod.readiness_path), Some(200));

    // SIGTERM with a download in flight: not ready at once, the download finishes, exit 0
    // within the grace period.
    let progress = Arc::new(AtomicU64::new(0));
    let in_flight = {
        let (progress, client) = (
            progress.clone(),
            Client::new(port, &certs.ca()).expect("curl"),
        );
        let big = big.clone();
        std::thread::spawn(move || download(&client, &big, &["--limit-rate", "200M"], &progress))
    };
    while progress.load(Ordering::Relaxed) < 64 << 20 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let term = Instant::now();
    node.signal(&container, "SIGTERM");
    loop {
        let status = client.status(&pod.readiness_path);
        if status == Some(503) {
            break;
        }
        assert!(
            term.elapsed() < NOT_READY_WITHIN,
            "readiness still answered {status:?} {:?} after SIGTERM",
            term.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (digest, size) = in_flight.join().expect("the download in flight completes");
    assert_eq!(
        (digest.as_str(), size),
        (new.big_digest.as_str(), images::BIG)
    );
    let exit = container
        .wait(pod.grace.saturating_sub(term.elapsed()))
        .unwrap_or_else(|| {
            panic!(
                "still running {:?} after SIGTERM (the grace period):\n{}",
                pod.grace,
                container.log()
            )
        });
    assert!(exit.success(), "exit status {exit}:\n{}", container.log());
    eprintln!(
        "SIGTERM: not ready at once, the download in flight finished, exited 0 after {:.1?} (grace {:?})",
        term.elapsed(),
        pod.grace
    );
}

/// The digest of chart `chart:version`'s package layer, from its manifest.
fn layer_of(client: &Client, chart: &str, version: &str) -> String {
    let manifest: serde_json::Value =
        serde_json::from_slice(&client.get(&format!("/v2/charts/{chart}/manifests/{version}")))
            .expect("manifest JSON");
    manifest["layers"][0]["digest"]
        .as_str()
        .expect("layer digest")
        .to_owned()
}
