//! Helm 3 and 4 pull over HTTPS with `--ca-file`, and fail without it.

use super::*;

/// Runs Helm with private home folders, in a private mount namespace whose `/etc/hosts` is
/// `hosts` (so that [`NAME`] is 127.0.0.1 for Helm only).
fn helm_with_hosts(
    unshare: &Path,
    helm: &Path,
    hosts: &Path,
    home: &Path,
    args: &[&str],
) -> Output {
    let mut cmd = Command::new(unshare);
    cmd.args([
        "-m",
        "sh",
        "-c",
        r#"mount --bind "$0" /etc/hosts && exec "$@""#,
    ])
    .arg(hosts)
    .arg(helm)
    .args(args);
    common::isolate_helm(&mut cmd, home);
    common::output_of(&mut cmd, "helm in a mount namespace")
}

/// `helm pull oci://chartreg.test:PORT/charts/hello --version 1.0.0 --ca-file CA` gets the
/// committed package byte for byte; without `--ca-file` the same pull fails on the
/// certificate and writes nothing.
#[rstest]
fn helm_pulls_over_https_with_its_ca_file(#[values("helm3", "helm4")] helm: &str) {
    let Some(helm_bin) = common::tool(helm) else {
        return;
    };
    let (Some(unshare), Some(_mount)) = (common::tool("unshare"), common::tool("mount")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::root("chartreg test CA");
    let (cert, key) = ca.pair().write(dir.path());
    let ca_file = dir.path().join("ca.crt");
    write(&ca_file, ca.pem());
    let hosts = dir.path().join("hosts");
    write(
        &hosts,
        format!(
            "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.0.1 {NAME}\n"
        ),
    );
    let server = serve(&cert, &key, &[]);
    let reference = format!("oci://{NAME}:{}/charts/hello", server.addr.port());
    let package = root().join("charts/hello-1.0.0.tgz");

    let home = tempfile::tempdir().expect("temp dir");
    let out_dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "pull",
        reference.as_str(),
        "--version",
        "1.0.0",
        "--ca-file",
        str_path(&ca_file),
        "-d",
        str_path(out_dir.path()),
    ];
    let out = helm_with_hosts(&unshare, &helm_bin, &hosts, home.path(), &args);
    let context = format!("{helm} {}", args.join(" "));
    assert!(out.status.success(), "{context}: {}", describe(&out));
    assert_eq!(
        common::file_names(out_dir.path()),
        ["hello-1.0.0.tgz"],
        "{context}: files written"
    );
    assert_same_bytes(
        &common::read(&out_dir.path().join("hello-1.0.0.tgz")),
        &package,
        &context,
    );

    let home = tempfile::tempdir().expect("temp dir");
    let out_dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "pull",
        reference.as_str(),
        "--version",
        "1.0.0",
        "-d",
        str_path(out_dir.path()),
    ];
    let out = helm_with_hosts(&unshare, &helm_bin, &hosts, home.path(), &args);
    let context = format!("{helm} {}", args.join(" "));
    assert!(
        !out.status.success(),
        "{context}: should fail without the CA: {}",
        describe(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("certificate signed by unknown authority"),
        "{context}: should fail on the certificate: {}",
        describe(&out)
    );
    assert_eq!(
        common::file_names(out_dir.path()),
        Vec::<String>::new(),
        "{context}: a failed pull wrote files"
    );
}
