//! The page at `/` over chartreg's own TLS: its commands name the CA file (`--ca-file`,
//! `--cert-dir`) and where it comes from, and none turns verification off. What the page
//! knows of the connection comes from the listener, so only a real TLS socket shows it.

use super::*;

/// curl fetches `/` and a repository's page over HTTP/2 with the test CA.
#[test]
fn the_commands_on_the_page_name_the_ca_file() {
    let Some(curl) = common::tool("curl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let https = Trusted::start(dir.path(), "chartreg test CA");
    let (ca_file, port, resolve) = (&https.ca_file, https.server.addr.port(), https.resolve());
    let get = |path: &str| {
        let out = common::output_of(
            Command::new(&curl)
                .args(["--silent", "--show-error", "--fail", "--max-time", "30"])
                .args(["--http2", "--resolve", &resolve, "--cacert"])
                .arg(ca_file)
                .arg(format!("https://{NAME}:{port}{path}")),
            "curl",
        );
        assert!(out.status.success(), "curl {path}: {}", describe(&out));
        String::from_utf8(out.stdout).expect("the page is UTF-8")
    };

    let overview = get("/");
    let origin = format!("{NAME}:{port}");
    let fetch_ca = "kubectl -n NAMESPACE get secret helm-repository-tls -o jsonpath='{.data.ca\\.crt}' | base64 -d &gt; ca.crt";
    for want in [
        format!("helm repo add chartreg https://{origin}/charts --ca-file ca.crt</code>"),
        format!("oci://{origin}/"),
        fetch_ca.to_string(),
    ] {
        assert!(overview.contains(&want), "over TLS, {want}: {overview}");
    }
    let pulls: Vec<&str> = overview
        .split("<code>")
        .filter_map(|code| code.split("</code>").next())
        .filter(|code| code.starts_with("helm pull oci://"))
        .collect();
    assert!(
        !pulls.is_empty(),
        "the page shows helm pull commands: {overview}"
    );
    for pull in &pulls {
        assert!(pull.ends_with(" --ca-file ca.crt"), "{pull}");
    }
    for off in ["--plain-http", "--tls-verify", "--insecure"] {
        assert!(!overview.contains(off), "{off} on the TLS page: {overview}");
    }

    // A repository's own page, reached from the overview's first link.
    let link = overview
        .split("<h2><a href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the overview links a repository");
    let repository = get(link);
    assert!(
        repository.contains("--ca-file ca.crt</code>") && repository.contains(fetch_ca),
        "{link}: {repository}"
    );
    assert!(!repository.contains("--plain-http"), "{repository}");
}
