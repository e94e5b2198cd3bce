//! The NOTES `helm install` prints for `deploy/chart`, run as printed: the chart is rendered
//! with the Service's port set to the test server's, and the `curl` and `helm pull` lines of
//! its NOTES run unchanged against the chartreg binary, over plain HTTP and over HTTPS with a
//! private CA, with Helm 3 and 4 as `helm`. The Service's name resolves to 127.0.0.1 through
//! `/etc/hosts` in a private mount namespace, as in the TLS tests.

use super::*;

/// The Service's name for `service.name` `helm-repository` in namespace `registry`.
const SERVICE: &str = "helm-repository.registry.svc";

#[derive(Debug, Clone, Copy)]
enum Tls {
    Off,
    /// `tls.enabled`, the secret made elsewhere: ca.crt is the CA that signed it.
    OwnSecret,
    /// `tls.enabled` and `tls.certManager.enabled`: ca.crt is read from the secret.
    CertManager,
}

impl Tls {
    fn sets(self) -> &'static [&'static str] {
        match self {
            Tls::Off => &[],
            Tls::OwnSecret => &["tls.enabled=true"],
            Tls::CertManager => &["tls.enabled=true", "tls.certManager.enabled=true"],
        }
    }
}

/// A private CA (PEM) and a server certificate and key it signed for [`SERVICE`], written into
/// `dir` as `ca.crt`, `tls.crt` and `tls.key`.
fn service_certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca.distinguished_name
        .push(DnType::CommonName, "chartreg NOTES test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().expect("CA key");
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca, ca_key);
    let mut leaf =
        CertificateParams::new(vec![SERVICE.to_owned(), format!("{SERVICE}.cluster.local")])
            .expect("leaf parameters");
    leaf.distinguished_name.push(DnType::CommonName, SERVICE);
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("leaf key");
    let cert = leaf.signed_by(&key, &issuer).expect("leaf certificate");
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    };
    (
        write("ca.crt", ca_cert.pem()),
        write("tls.crt", cert.pem()),
        write("tls.key", key.serialize_pem()),
    )
}

/// The NOTES Helm 4 prints for `helm install chartreg deploy/chart --namespace registry
/// --dry-run=client --set SETS` (Helm 3 asks a cluster even for a client dry run; the chart's
/// own tests show that it renders the same NOTES).
fn notes(helm4: &Helm, sets: &[String]) -> String {
    let chart = root().join("deploy/chart");
    let mut args = vec![
        "install",
        "chartreg",
        str_path(&chart),
        "--namespace",
        "registry",
        "--dry-run=client",
    ];
    for set in sets {
        args.extend(["--set", set.as_str()]);
    }
    let out = helm4.ok(&args);
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    stdout
        .split_once("\nNOTES:\n")
        .unwrap_or_else(|| panic!("helm4 install printed no NOTES:\n{stdout}"))
        .1
        .to_owned()
}

/// Runs `command` with `sh -c` in `home` (Helm's folders there too), `bin_dir` first on PATH,
/// in a private mount namespace whose `/etc/hosts` is `hosts`.
fn run_as_printed(
    unshare: &Path,
    hosts: &Path,
    bin_dir: &Path,
    home: &Path,
    command: &str,
) -> Output {
    let mut cmd = Command::new(unshare);
    cmd.args([
        "-m",
        "sh",
        "-c",
        r#"mount --bind "$0" /etc/hosts && exec sh -c "$1""#,
    ])
    .arg(hosts)
    .arg(command)
    .env(
        "PATH",
        format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    common::isolate_helm(&mut cmd, home);
    common::output_of(&mut cmd, command)
}

/// The NOTES' `curl` line lists the catalog, and their `helm pull` line writes this chart's
/// package as chartreg serves it (the manifest its layout tags), each run exactly as printed,
/// with the CA as `ca.crt` where TLS is on.
#[rstest]
#[case::plain_http(Tls::Off)]
#[case::tls_own_secret(Tls::OwnSecret)]
#[case::tls_cert_manager(Tls::CertManager)]
fn notes_commands_work_as_printed(
    #[values("helm3", "helm4")] helm: &'static str,
    #[case] tls: Tls,
) {
    let Some(helm) = Helm::new(helm) else { return };
    let Some(helm4) = Helm::new("helm4") else {
        return;
    };
    let (Some(unshare), Some(_mount), Some(_curl)) = (
        common::tool("unshare"),
        common::tool("mount"),
        common::tool("curl"),
    ) else {
        return;
    };
    let certs = tempfile::tempdir().expect("temp dir");
    let home = tempfile::tempdir().expect("temp dir");
    let server = match tls {
        Tls::Off => Process::start(),
        Tls::OwnSecret | Tls::CertManager => {
            let (ca, cert, key) = service_certificate(certs.path());
            std::fs::copy(&ca, home.path().join("ca.crt")).expect("copy ca.crt");
            Process::start_args(
                &common::chartreg_bin(),
                &[
                    "--tls-cert-file",
                    str_path(&cert),
                    "--tls-private-key-file",
                    str_path(&key),
                ],
                &[],
            )
        }
    };
    let port = server.addr.port();
    let mut sets = vec![format!("service.port={port}")];
    sets.extend(tls.sets().iter().map(|s| s.to_string()));
    let notes = notes(&helm4, &sets);
    let context = format!("{} {tls:?}", helm.name);
    assert!(
        notes.contains(&format!("{SERVICE}:{port}")),
        "{context}: the NOTES should name {SERVICE}:{port}:\n{notes}"
    );
    let commands: Vec<&str> = notes
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("curl ") || l.starts_with("helm "))
        .collect();
    let [curl, pull] = commands[..] else {
        panic!("{context}: one curl and one helm line in the NOTES:\n{notes}");
    };
    assert!(pull.starts_with("helm pull "), "{context}: {pull}");

    let hosts = certs.path().join("hosts");
    std::fs::write(
        &hosts,
        format!(
            "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.0.1 {SERVICE}\n"
        ),
    )
    .expect("write hosts");
    let bin_dir = helm.bin.parent().expect("helm's folder");

    let out = run_as_printed(&unshare, &hosts, bin_dir, home.path(), curl);
    assert!(
        out.status.success(),
        "{context}: `{curl}`: {}",
        describe(&out)
    );
    let catalog: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{context}: `{curl}` gave no JSON ({e}): {}", describe(&out)));
    assert!(
        catalog["repositories"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r == "charts/chartreg")),
        "{context}: `{curl}` lists no charts/chartreg: {catalog}"
    );

    let out = run_as_printed(&unshare, &hosts, bin_dir, home.path(), pull);
    assert!(
        out.status.success(),
        "{context}: `{pull}`: {}",
        describe(&out)
    );
    let words: Vec<&str> = pull.split_whitespace().collect();
    let version = words
        .windows(2)
        .find(|w| w[0] == "--version")
        .map(|w| w[1])
        .unwrap_or_else(|| panic!("{context}: no --version in `{pull}`"));
    let package = home.path().join(format!("chartreg-{version}.tgz"));
    assert!(
        package.is_file(),
        "{context}: `{pull}` wrote no {}: {}",
        package.display(),
        describe(&out)
    );
    let digest = assets_tag_digest("charts/chartreg", version);
    assert!(
        text(&out).contains(&format!("Digest: {digest}")),
        "{context}: `{pull}` should pull manifest {digest}: {}",
        describe(&out)
    );
}
