//! Start-up fails, before listening, on every kind of bad TLS file; the binary links no
//! OpenSSL.

use super::*;

/// Runs `chartreg serve --listen ADDR ARGS` with `env` on a loopback address this test holds
/// (so that a server which bound before checking its files would fail with "cannot listen"
/// instead), requires it to exit by itself within 10 s, and returns its exit code and stderr.
fn start_up(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let held = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = held.local_addr().expect("bound address").to_string();
    let mut child = Command::new(common::chartreg_bin())
        .args(["serve", "--listen", &addr])
        .args(args)
        .env_remove("CHARTREG_TLS_CERT_FILE")
        .env_remove("CHARTREG_TLS_PRIVATE_KEY_FILE")
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chartreg starts");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll chartreg") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chartreg {args:?} {env:?} did not exit within 10 s:\n{}",
                reader.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().expect("stderr reader");
    assert!(
        !stderr.contains("cannot listen") && !stderr.contains(" on https://"),
        "chartreg {args:?} {env:?} went as far as listening: {stderr}"
    );
    drop(held);
    (status.code(), stderr)
}

#[derive(Debug, Clone, Copy)]
enum Broken {
    CertMissing,
    KeyMissing,
    /// Text that is no PEM at all.
    CertNotPem,
    /// The certificate in DER (binary), not PEM.
    CertDer,
    /// The key file holds only the certificate.
    KeyFileHoldsNoKey,
    KeyFileEmpty,
    /// The key of another pair.
    KeyDoesNotMatch,
}

/// Each kind of bad file stops start-up: exit code 1, `chartreg: ...` on stderr naming the
/// file and what is wrong with it, before anything listens.
#[rstest]
#[case::cert_file_missing(Broken::CertMissing)]
#[case::key_file_missing(Broken::KeyMissing)]
#[case::cert_file_not_pem(Broken::CertNotPem)]
#[case::cert_file_der(Broken::CertDer)]
#[case::key_file_holds_no_key(Broken::KeyFileHoldsNoKey)]
#[case::key_file_empty(Broken::KeyFileEmpty)]
#[case::key_does_not_match(Broken::KeyDoesNotMatch)]
fn start_up_fails_on_bad_tls_files(#[case] broken: Broken) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::root("chartreg test CA");
    let pair = ca.pair();
    let (mut cert, mut key) = pair.write(dir.path());
    let cert_s = |c: &Path| str_path(c).to_owned();
    let expected: Vec<String> = match broken {
        Broken::CertMissing => {
            cert = dir.path().join("missing.crt");
            vec![
                format!("cannot read {}", cert_s(&cert)),
                "No such file".into(),
            ]
        }
        Broken::KeyMissing => {
            key = dir.path().join("missing.key");
            vec![
                format!("cannot read {}", cert_s(&key)),
                "No such file".into(),
            ]
        }
        Broken::CertNotPem => {
            write(&cert, "this is not a certificate\n");
            vec![cert_s(&cert), "PEM certificate".into()]
        }
        Broken::CertDer => {
            write(&cert, pair.leaf.as_ref());
            vec![cert_s(&cert), "PEM certificate".into()]
        }
        Broken::KeyFileHoldsNoKey => {
            write(&key, &pair.cert_pem);
            vec![cert_s(&key), "no PEM private key".into()]
        }
        Broken::KeyFileEmpty => {
            write(&key, "");
            vec![cert_s(&key), "no PEM private key".into()]
        }
        Broken::KeyDoesNotMatch => {
            write(&key, KeyPair::generate().expect("key").serialize_pem());
            vec![cert_s(&cert), cert_s(&key), "do not make a pair".into()]
        }
    };
    let (code, stderr) = start_up(
        &[
            "--tls-cert-file",
            str_path(&cert),
            "--tls-private-key-file",
            str_path(&key),
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{broken:?}: exit code; stderr: {stderr}");
    assert!(
        stderr.starts_with("chartreg: ") || stderr.contains("\nchartreg: "),
        "{broken:?}: the error should be a `chartreg: ...` line: {stderr}"
    );
    for fragment in &expected {
        assert!(
            stderr.contains(fragment.as_str()),
            "{broken:?}: stderr should contain {fragment:?}: {stderr}"
        );
    }
}

/// One of the two files without the other is a usage error (exit code 2) naming the missing
/// one, whether given as a flag or through the environment.
#[test]
fn one_tls_file_without_the_other_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key) = Ca::root("chartreg test CA").pair().write(dir.path());
    let (cert, key) = (str_path(&cert), str_path(&key));
    /// A start missing one file: how, its arguments and environment, and the flag it lacks.
    struct Case<'a> {
        what: &'a str,
        args: &'a [&'a str],
        env: &'a [(&'a str, &'a str)],
        missing: &'a str,
    }
    let cases = [
        Case {
            what: "--tls-cert-file only",
            args: &["--tls-cert-file", cert],
            env: &[],
            missing: "--tls-private-key-file",
        },
        Case {
            what: "--tls-private-key-file only",
            args: &["--tls-private-key-file", key],
            env: &[],
            missing: "--tls-cert-file",
        },
        Case {
            what: "CHARTREG_TLS_CERT_FILE only",
            args: &[],
            env: &[("CHARTREG_TLS_CERT_FILE", cert)],
            missing: "--tls-private-key-file",
        },
        Case {
            what: "CHARTREG_TLS_PRIVATE_KEY_FILE only",
            args: &[],
            env: &[("CHARTREG_TLS_PRIVATE_KEY_FILE", key)],
            missing: "--tls-cert-file",
        },
    ];
    for Case {
        what,
        args,
        env,
        missing,
    } in cases
    {
        let (code, stderr) = start_up(args, env);
        assert_eq!(code, Some(2), "{what}: exit code; stderr: {stderr}");
        assert!(
            stderr.contains(missing),
            "{what}: stderr should name {missing}: {stderr}"
        );
    }
}

/// The binary does not link libssl or libcrypto (its TLS is rustls with ring).
#[test]
fn the_binary_links_no_openssl() {
    let Some(ldd) = common::tool("ldd") else {
        return;
    };
    let bin = common::chartreg_bin();
    let out = common::output_of(Command::new(ldd).arg(&bin), "ldd");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // A static binary makes ldd say "not a dynamic executable" (and exit 1): nothing linked.
    assert!(
        out.status.success() || text.contains("not a dynamic executable"),
        "ldd {}: {}",
        bin.display(),
        describe(&out)
    );
    let linked: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("libssl") || l.contains("libcrypto"))
        .collect();
    assert!(
        linked.is_empty(),
        "{} links OpenSSL: {linked:?}",
        bin.display()
    );
}
