//! A rotated Kubernetes secret (`..data` symlink swap) is picked up without a failed
//! connection; a bad new pair is ignored with a warning.

use super::*;

const RELOAD: Duration = Duration::from_millis(200);
/// How soon after a swap new connections must get the new certificate.
const PICKUP: Duration = Duration::from_secs(5);

/// A folder laid out as the kubelet mounts a secret: `..<version>/tls.{crt,key}`, `..data`
/// pointing at the current version, `tls.crt -> ..data/tls.crt`, `tls.key -> ..data/tls.key`.
struct Secret {
    dir: tempfile::TempDir,
}

impl Secret {
    fn new(first_version: &str, cert_pem: &str, key_pem: &str) -> Secret {
        let secret = Secret {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        let d = secret.dir.path();
        secret.write_version(first_version, cert_pem, key_pem);
        symlink(first_version, d.join("..data")).expect("..data symlink");
        symlink("..data/tls.crt", d.join("tls.crt")).expect("tls.crt symlink");
        symlink("..data/tls.key", d.join("tls.key")).expect("tls.key symlink");
        secret
    }

    fn write_version(&self, version: &str, cert_pem: &str, key_pem: &str) {
        let v = self.dir.path().join(version);
        std::fs::create_dir(&v).expect("create version folder");
        write(&v.join("tls.crt"), cert_pem);
        write(&v.join("tls.key"), key_pem);
    }

    /// What the kubelet does: write the new version, point `..data_tmp` at it and rename that
    /// over `..data` (atomic), then remove the old version.
    fn swap(&self, old_version: &str, new_version: &str, cert_pem: &str, key_pem: &str) {
        let d = self.dir.path();
        self.write_version(new_version, cert_pem, key_pem);
        symlink(new_version, d.join("..data_tmp")).expect("..data_tmp symlink");
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).expect("rename over ..data");
        std::fs::remove_dir_all(d.join(old_version)).expect("remove the old version");
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("tls.crt")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("tls.key")
    }
}

/// One connection of the probe loop: when its handshake started, and the leaf certificate
/// it saw (or why it failed).
struct Probe {
    at: Instant,
    result: Result<CertificateDer<'static>, TlsFailure>,
}

/// A thread making fresh connections (new TCP, full handshake, `GET /v2/`) back to back until
/// stopped, recording each.
struct Prober {
    probes: Arc<Mutex<Vec<Probe>>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Prober {
    fn start(addr: SocketAddr, config: Arc<ClientConfig>) -> Prober {
        let probes = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (probes.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let at = Instant::now();
                let result = fetch(addr, &config);
                p.lock().unwrap().push(Probe { at, result });
                thread::sleep(Duration::from_millis(5));
            }
        });
        Prober {
            probes,
            stop,
            thread: Some(thread),
        }
    }

    /// Waits (up to `within`) until a probe that started at or after `since` satisfies
    /// `want`; returns when that probe started.
    fn wait_for(
        &self,
        since: Instant,
        within: Duration,
        want: impl Fn(&Probe) -> bool,
    ) -> Option<Instant> {
        let deadline = since + within;
        loop {
            let found = self
                .probes
                .lock()
                .unwrap()
                .iter()
                .find(|p| p.at >= since && want(p))
                .map(|p| p.at);
            if found.is_some() || Instant::now() > deadline {
                return found;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until at least `n` probes started at or after `since` (up to 10 s).
    fn wait_count(&self, since: Instant, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self
            .probes
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.at >= since)
            .count()
            < n
        {
            assert!(Instant::now() < deadline, "the probe loop is stuck");
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn finish(mut self) -> Vec<Probe> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("probe thread");
        }
        std::mem::take(&mut *self.probes.lock().unwrap())
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Names a leaf certificate for messages.
fn which(leaf: &CertificateDer<'_>, known: &[(&str, &CertificateDer<'_>)]) -> String {
    known.iter().find(|(_, c)| *c == leaf).map_or_else(
        || "an unknown certificate".to_owned(),
        |(n, _)| n.to_string(),
    )
}

/// Panics listing every failed probe.
fn assert_no_failures(probes: &[Probe], start: Instant) {
    let failures: Vec<String> = probes
        .iter()
        .filter_map(|p| {
            p.result
                .as_ref()
                .err()
                .map(|e| format!("at {:?}: {e}", p.at - start))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} connections failed:\n{}",
        failures.len(),
        probes.len(),
        failures.join("\n")
    );
}

/// The kubelet's update of a mounted secret (to a pair from another CA) is picked up: a
/// client making new connections back to back sees no failure, gets the new certificate
/// within 5 s of the swap and never the old one after that; a connection opened before the
/// swap keeps working.
#[test]
fn a_rotated_secret_is_picked_up_without_failed_connections() {
    let old_ca = Ca::root("chartreg old CA");
    let new_ca = Ca::root("chartreg new CA");
    let (old, new) = (old_ca.pair(), new_ca.pair());
    let secret = Secret::new("..2026_a", &old.cert_pem, &old.key_pem);
    let server = serve(
        &secret.cert(),
        &secret.key(),
        &["--tls-reload-interval", "200ms"],
    );
    let config = client(&[old_ca.der(), new_ca.der()], BOTH, HTTP1);
    let known = [
        ("the old certificate", &old.leaf),
        ("the new certificate", &new.leaf),
    ];

    let start = Instant::now();
    let mut open = Tls::connect(server.addr, &config).expect("a connection before the swap");
    open.check_v2().expect("GET /v2/ before the swap");
    let prober = Prober::start(server.addr, config.clone());
    // Several reload intervals with nothing changed first.
    prober.wait_count(start, 20);
    thread::sleep(RELOAD * 3);

    let swapped = Instant::now();
    secret.swap("..2026_a", "..2026_b", &new.cert_pem, &new.key_pem);
    let picked = prober.wait_for(swapped, PICKUP, |p| {
        p.result.as_ref().is_ok_and(|leaf| *leaf == new.leaf)
    });
    // Keep probing for a while (many reload intervals) after the new certificate came.
    let after = picked.unwrap_or(swapped);
    thread::sleep(RELOAD * 5);
    prober.wait_count(after, 20);
    let probes = prober.finish();

    assert_no_failures(&probes, start);
    let picked = picked.unwrap_or_else(|| {
        panic!(
            "no connection got the new certificate within {PICKUP:?} of the swap:\n{}",
            server.log()
        )
    });
    for p in &probes {
        let leaf = p.result.as_ref().expect("no failures");
        let expected = if p.at < swapped {
            &old.leaf
        } else if p.at >= picked {
            &new.leaf
        } else {
            continue; // between the swap and the first new certificate: either
        };
        assert!(
            leaf == expected,
            "a connection {:?} after the start ({:?} after the swap, new certificate first seen {:?} after it) got {}",
            p.at - start,
            p.at.checked_duration_since(swapped),
            picked - swapped,
            which(leaf, &known)
        );
    }
    assert!(
        probes.iter().filter(|p| p.at < swapped).count() >= 20
            && probes.iter().filter(|p| p.at >= picked).count() >= 20,
        "too few connections around the swap to tell"
    );

    // The connection opened before the swap was not disturbed.
    open.check_v2()
        .expect("GET /v2/ on the connection opened before the swap");
    assert_eq!(
        open.leaf(),
        old.leaf,
        "the open connection keeps its session"
    );
    let log = server.log();
    assert!(
        log.contains("TLS reload: now serving the certificate in"),
        "the reload should be logged:\n{log}"
    );
    eprintln!(
        "new certificate first seen {:?} after the swap; {} connections",
        picked - swapped,
        probes.len()
    );
}

/// A new pair whose key does not match its certificate is not installed: the old certificate
/// keeps being served (for many reload intervals) with a warning logged once; the next good
/// pair is picked up.
#[test]
fn a_bad_new_pair_is_ignored_until_a_good_one_comes() {
    let ca = Ca::root("chartreg test CA");
    let (first, next) = (ca.pair(), ca.pair());
    let mismatched_key = KeyPair::generate().expect("key").serialize_pem();
    let bad_cert = ca.pair();
    let secret = Secret::new("..2026_a", &first.cert_pem, &first.key_pem);
    let server = serve(
        &secret.cert(),
        &secret.key(),
        &["--tls-reload-interval", "200ms"],
    );
    let config = client(&[ca.der()], BOTH, HTTP1);
    let known = [
        ("the first certificate", &first.leaf),
        ("the bad pair's certificate", &bad_cert.leaf),
        ("the next certificate", &next.leaf),
    ];

    let start = Instant::now();
    let prober = Prober::start(server.addr, config);
    prober.wait_count(start, 20);

    let bad_swap = Instant::now();
    secret.swap("..2026_a", "..2026_b", &bad_cert.cert_pem, &mismatched_key);
    let warned_deadline = bad_swap + PICKUP;
    let warning = |log: &str| {
        log.lines()
            .filter(|l| l.contains("WARN") && l.contains("do not make a pair"))
            .count()
    };
    while warning(&server.log()) == 0 && Instant::now() < warned_deadline {
        thread::sleep(Duration::from_millis(20));
    }
    // Then at least 5 more reload intervals with the bad pair in place.
    thread::sleep(RELOAD * 5);
    let good_swap = Instant::now();
    let log_before_good_swap = server.log();
    secret.swap("..2026_b", "..2026_c", &next.cert_pem, &next.key_pem);
    let picked = prober.wait_for(good_swap, PICKUP, |p| {
        p.result.as_ref().is_ok_and(|leaf| *leaf == next.leaf)
    });
    let after = picked.unwrap_or(good_swap);
    thread::sleep(RELOAD * 3);
    prober.wait_count(after, 20);
    let probes = prober.finish();

    assert_no_failures(&probes, start);
    let warnings: Vec<&str> = log_before_good_swap
        .lines()
        .filter(|l| l.contains("do not make a pair"))
        .collect();
    assert!(
        warnings.len() == 1
            && warnings[0].contains("WARN")
            && warnings[0].contains("still serving the previous certificate"),
        "one warning about the mismatched pair expected, got {warnings:?}:\n{log_before_good_swap}"
    );
    let with_bad_pair: Vec<&Probe> = probes.iter().filter(|p| p.at < good_swap).collect();
    for p in &with_bad_pair {
        let leaf = p.result.as_ref().expect("no failures");
        assert!(
            *leaf == first.leaf,
            "a connection {:?} after the bad swap got {}",
            p.at.checked_duration_since(bad_swap),
            which(leaf, &known)
        );
    }
    let last_old = with_bad_pair.last().map(|p| p.at).expect("probes");
    assert!(
        last_old - bad_swap >= RELOAD * 3
            && with_bad_pair.iter().filter(|p| p.at >= bad_swap).count() >= 20,
        "too few connections with the bad pair in place to tell"
    );

    let picked = picked.unwrap_or_else(|| {
        panic!(
            "no connection got the next good certificate within {PICKUP:?} of its swap:\n{}",
            server.log()
        )
    });
    for p in probes.iter().filter(|p| p.at >= picked) {
        let leaf = p.result.as_ref().expect("no failures");
        assert!(
            *leaf == next.leaf,
            "a connection {:?} after the good swap (picked up after {:?}) got {}",
            p.at - good_swap,
            picked - good_swap,
            which(leaf, &known)
        );
    }
}
