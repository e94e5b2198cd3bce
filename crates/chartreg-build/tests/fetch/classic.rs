//! Classic Helm repositories and chart URLs: fetched, checked against `index.yaml`, locked;
//! failures named; credentials kept to their host; HTTPS with a private CA; re-pushes caught.

use super::sources::{HelmRepo, Tls};
use super::*;

/// The charts file for `repo` (as repository `test`), asking for `charts` (`name: [versions]`
/// lines), plus `extra` (more YAML: `chartURLs`, credentials).
fn charts_file(repo_url: &str, charts: &str, extra: &str) -> String {
    format!("repositories:\n  test:\n    repoURL: {repo_url}\n{extra}    charts:\n{charts}")
}

/// A repository serving hello 1.0.0 (a relative URL) and motd 1.0.0 with its `.prov` (an
/// absolute URL, under another folder), each with its sha256 in the index.
fn sample_repository() -> HelmRepo {
    let repo = HelmRepo::start();
    let hello = package("hello-1.0.0.tgz");
    let motd = package("motd-1.0.0.tgz");
    repo.publish(
        &[("hello-1.0.0.tgz", &hello), ("pkgs/motd-1.0.0.tgz", &motd)],
        |path| {
            if path.starts_with("pkgs/") {
                repo.url(path)
            } else {
                path.to_owned()
            }
        },
        |_, data| hex_sha256(data),
    );
    repo.put("pkgs/motd-1.0.0.tgz.prov", &package("motd-1.0.0.tgz.prov"));
    repo
}

#[test]
fn classic_repository_charts_are_fetched_checked_locked_and_served() {
    let repo = sample_repository();
    repo.put("direct/hello-0.1.0.tgz", &package("hello-0.1.0.tgz"));
    let work = Work::new();
    std::fs::create_dir_all(work.path("local")).expect("create folder");
    std::fs::write(
        work.path("local/hello-0.2.0.tgz"),
        package("hello-0.2.0.tgz"),
    )
    .expect("write package");
    work.write(
        "lists/charts.yaml",
        &format!(
            "{}chartURLs:\n  - ../local/hello-0.2.0.tgz\n  - {}\n",
            charts_file(
                &repo.url(""),
                "      hello: [\"1.0.0\"]\n      motd: [\"^1.0\"]\n",
                ""
            ),
            repo.url("direct/hello-0.1.0.tgz")
        ),
    );
    let args = [
        "--helm-charts-file",
        "lists/charts.yaml",
        "--lock",
        "fetched/chartreg.lock",
    ];
    let first = work.fetch_ok(&args);
    assert!(
        first.contains("fetched 4 charts, 0 images; lock updated"),
        "{first}"
    );
    assert!(first.contains("added chart motd ^1.0 from"), "{first}");

    let want = [
        "hello-0.1.0.tgz",
        "hello-0.2.0.tgz",
        "hello-1.0.0.tgz",
        "motd-1.0.0.tgz",
        "motd-1.0.0.tgz.prov",
    ];
    assert_eq!(
        work.files("fetched/charts"),
        want,
        "exactly the packages, no temporary files"
    );
    for name in want {
        assert!(
            work.read(&format!("fetched/charts/{name}")) == package(name),
            "charts/{name} is not the upstream bytes"
        );
    }
    let lock = work.lock();
    for line in [
        format!("  hello 1.0.0 from {}:", repo.url("")),
        format!("    url: {}", repo.url("hello-1.0.0.tgz")),
        format!("    sha256: {}", hex_sha256(&package("hello-1.0.0.tgz"))),
        format!("    url: {}", repo.url("pkgs/motd-1.0.0.tgz")),
        format!(
            "    provenance_sha256: {}",
            hex_sha256(&package("motd-1.0.0.tgz.prov"))
        ),
        "    file: charts/motd-1.0.0.tgz".to_owned(),
    ] {
        assert!(
            lock.lines().any(|l| l == line),
            "lock lacks `{line}`:\n{lock}"
        );
    }

    // Again: the same lock, byte for byte, and nothing downloaded twice.
    let second = work.fetch_ok(&args);
    assert!(second.contains("lock unchanged:"), "{second}");
    assert_eq!(work.lock(), lock, "a second fetch wrote another lock");
    assert_eq!(
        repo.hits("hello-1.0.0.tgz"),
        1,
        "an identical file was downloaded again"
    );
    assert_eq!(repo.hits("pkgs/motd-1.0.0.tgz"), 1);
    let locked = work.fetch_ok(&[
        "--helm-charts-file",
        "lists/charts.yaml",
        "--lock",
        "fetched/chartreg.lock",
        "--locked",
    ]);
    assert!(locked.contains("lock matches"), "{locked}");

    // What was fetched is what a chartreg built from the lock serves to Helm 3 and 4.
    let server = work.serve_locked();
    for (chart, version) in [
        ("hello", "1.0.0"),
        ("hello", "0.1.0"),
        ("hello", "0.2.0"),
        ("motd", "1.0.0"),
    ] {
        helm_pulls(
            &server,
            chart,
            version,
            &package(&format!("{chart}-{version}.tgz")),
        );
    }

    // Where each was downloaded from: recorded beside the repositories, shown on the chart's
    // page and in the SBOM; the package the list gave by its path has none.
    let fetched_from = [
        ("hello", "1.0.0", Some(repo.url("hello-1.0.0.tgz"))),
        ("hello", "0.1.0", Some(repo.url("direct/hello-0.1.0.tgz"))),
        ("hello", "0.2.0", None),
        ("motd", "1.0.0", Some(repo.url("pkgs/motd-1.0.0.tgz"))),
    ];
    origins_are_recorded_shown_and_described(&work, &server, &fetched_from);
}

#[test]
fn failures_name_the_entry_and_leave_what_was_there() {
    // Other bytes than the index lists.
    let repo = HelmRepo::start();
    repo.publish(
        &[("hello-1.0.0.tgz", &package("hello-1.0.0.tgz"))],
        str::to_owned,
        |_, _| hex_sha256(b"something else"),
    );
    let work = Work::new();
    work.write(
        "charts.yaml",
        &charts_file(&repo.url(""), "      hello: [\"1.0.0\"]\n", ""),
    );
    let e = work.fetch_fails(&["--helm-charts-file", "charts.yaml"]);
    let entry = format!("chart hello 1.0.0 from {}: ", repo.url(""));
    assert!(
        e.contains(&format!(
            "{entry}digest mismatch: expected {}",
            hex_sha256(b"something else")
        )),
        "{e}"
    );
    assert_eq!(
        work.files("fetched/charts"),
        Vec::<String>::new(),
        "a rejected download was left"
    );
    assert!(
        !work.path("fetched/chartreg.lock").exists(),
        "a failed fetch wrote a lock"
    );

    // Listed, but not there.
    repo.publish(
        &[("hello-1.0.0.tgz", &package("hello-1.0.0.tgz"))],
        str::to_owned,
        |_, d| hex_sha256(d),
    );
    repo.remove("hello-1.0.0.tgz");
    let e = work.fetch_fails(&["--helm-charts-file", "charts.yaml"]);
    assert!(e.contains(&format!("{entry}not found")), "{e}");

    // Not in the index.
    work.write(
        "other.yaml",
        &charts_file(
            &repo.url(""),
            "      hello: [\"9.9.9\"]\n      nope: [\"1.0.0\"]\n",
            "",
        ),
    );
    let e = work.fetch_fails(&["--helm-charts-file", "other.yaml"]);
    assert!(
        e.contains(&format!(
            "chart hello 9.9.9 from {}: the source has no version 9.9.9 (nearest it has: 1.0.0)",
            repo.url("")
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "chart nope 1.0.0 from {}: the repository has no such chart",
            repo.url("")
        )),
        "{e}"
    );

    // Cut off on every try: the file that was there stays, and nothing partial is left.
    repo.put("hello-1.0.0.tgz", &package("hello-1.0.0.tgz"));
    repo.reset("hello-1.0.0.tgz", 100);
    std::fs::create_dir_all(work.path("fetched/charts")).expect("create folder");
    std::fs::write(
        work.path("fetched/charts/hello-1.0.0.tgz"),
        b"what was there",
    )
    .expect("write");
    let before = repo.hits("hello-1.0.0.tgz");
    let e = work.fetch_fails(&["--helm-charts-file", "charts.yaml"]);
    assert!(e.contains(&format!("{entry}network failure")), "{e}");
    assert_eq!(repo.hits("hello-1.0.0.tgz") - before, 4, "tried 4 times");
    assert_eq!(
        work.files("fetched/charts"),
        ["hello-1.0.0.tgz"],
        "a partial file was left"
    );
    assert_eq!(
        work.read("fetched/charts/hello-1.0.0.tgz"),
        b"what was there"
    );

    // No repository at all: named once, by its name and URL. The port is held by a socket bound
    // and not listening, so connections to it are refused and nothing else can take it.
    let held =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .expect("bind a loopback port");
    let gone = format!(
        "http://{}/",
        held.local_addr()
            .expect("bound address")
            .as_socket()
            .expect("an IP address")
    );
    work.write(
        "gone.yaml",
        &charts_file(&gone, "      hello: [\"1.0.0\"]\n", ""),
    );
    let e = work.fetch_fails(&["--helm-charts-file", "gone.yaml"]);
    assert!(
        e.contains(&format!("repository test ({gone}): network failure")),
        "{e}"
    );
    assert_eq!(e.matches("network failure").count(), 1, "{e}");

    // A list with a key mindthegap does not know.
    work.write(
        "typo.yaml",
        "repositories:\n  test:\n    repoURL: http://127.0.0.1:1/\n    chart: {}\n",
    );
    let e = work.fetch_fails(&["--helm-charts-file", "typo.yaml"]);
    assert!(
        e.contains("typo.yaml") && e.contains("unknown field `chart`") && e.contains("line 4"),
        "{e}"
    );
}

#[test]
fn a_download_cut_off_is_tried_again() {
    let repo = sample_repository();
    repo.reset("hello-1.0.0.tgz", 2);
    let work = Work::new();
    work.write(
        "charts.yaml",
        &charts_file(&repo.url(""), "      hello: [\"1.0.0\"]\n", ""),
    );
    work.fetch_ok(&["--helm-charts-file", "charts.yaml"]);
    assert_eq!(
        repo.hits("hello-1.0.0.tgz"),
        3,
        "two cut-off tries, then a whole one"
    );
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == package("hello-1.0.0.tgz"));
    assert_eq!(work.files("fetched/charts"), ["hello-1.0.0.tgz"]);
}

#[test]
fn credentials_go_only_to_the_repository_host_and_never_into_the_lock() {
    let repo = HelmRepo::start();
    let cdn = HelmRepo::start();
    let hello = package("hello-1.0.0.tgz");
    let motd = package("motd-1.0.0.tgz");
    cdn.put("motd-1.0.0.tgz", &motd);
    repo.publish(
        &[("hello-1.0.0.tgz", &hello), ("motd-1.0.0.tgz", &motd)],
        |path| {
            if path.starts_with("motd") {
                cdn.url(path)
            } else {
                path.to_owned()
            }
        },
        |_, d| hex_sha256(d),
    );
    repo.remove("motd-1.0.0.tgz");
    repo.require("fetcher", "s3cret-pw");
    let work = Work::new();
    let charts = "      hello: [\"1.0.0\"]\n      motd: [\"1.0.0\"]\n";
    work.write("anonymous.yaml", &charts_file(&repo.url(""), charts, ""));
    let e = work.fetch_fails(&["--helm-charts-file", "anonymous.yaml"]);
    assert!(
        e.contains(&format!(
            "repository test ({}): authentication refused (HTTP 401)",
            repo.url("")
        )),
        "{e}"
    );

    work.write(
        "charts.yaml",
        &charts_file(
            &repo.url(""),
            charts,
            "    username: fetcher\n    password: s3cret-pw\n",
        ),
    );
    work.fetch_ok(&["--helm-charts-file", "charts.yaml"]);
    assert!(work.read("fetched/charts/motd-1.0.0.tgz") == motd);
    assert!(repo.authorized().contains(&"hello-1.0.0.tgz".to_owned()));
    assert_eq!(
        cdn.authorized(),
        Vec::<String>::new(),
        "credentials went to another host"
    );
    assert!(cdn.hits("motd-1.0.0.tgz") == 1);
    let lock = work.lock();
    assert!(
        !lock.contains("s3cret") && !lock.contains("fetcher"),
        "credentials in the lock:\n{lock}"
    );
}

#[test]
fn https_sources_are_verified_against_the_ca_file() {
    let tls = Tls::new();
    let repo = HelmRepo::start_tls(&tls);
    let hello = package("hello-1.0.0.tgz");
    repo.publish(&[("hello-1.0.0.tgz", &hello)], str::to_owned, |_, d| {
        hex_sha256(d)
    });
    repo.put("direct/hello-0.1.0.tgz", &package("hello-0.1.0.tgz"));
    let work = Work::new();
    let ca = work.write("ca.pem", &tls.ca_pem);
    work.write(
        "charts.yaml",
        &format!(
            "{}chartURLs:\n  - {}\n",
            charts_file(&repo.url(""), "      hello: [\"1.0.0\"]\n", ""),
            repo.url("direct/hello-0.1.0.tgz")
        ),
    );
    let e = work.fetch_fails(&["--helm-charts-file", "charts.yaml"]);
    assert!(
        e.contains(&format!("repository test ({}): TLS failure", repo.url(""))),
        "{e}"
    );
    // Each TLS failure says how a private CA is trusted.
    assert_eq!(
        e.matches("TLS failure").count(),
        e.matches("a private CA is trusted with --ca-file FILE; `tlsVerify: false` on the list's entry skips the check").count(),
        "{e}"
    );

    // A CA file with no certificate in it is refused at once, naming it and what it holds.
    let key = work.write("key.pem", &tls.key_pem);
    let text = work.write("notes.txt", "trust me\n");
    let empty = work.write("empty.pem", "");
    for (file, holds) in [
        (&key, " (it holds a private key)"),
        (&text, ""),
        (&empty, ""),
    ] {
        let e = work.fetch_fails(&[
            "--helm-charts-file",
            "charts.yaml",
            "--ca-file",
            str_path(file),
        ]);
        assert!(
            e.contains(&format!(
                "--ca-file {}: no PEM certificate in it{holds}",
                str_path(file)
            )),
            "{e}"
        );
        assert!(!e.contains("TLS failure"), "{e}");
    }

    assert!(
        e.contains(&format!(
            "chart {}: TLS failure",
            repo.url("direct/hello-0.1.0.tgz")
        )),
        "{e}"
    );

    work.fetch_ok(&[
        "--helm-charts-file",
        "charts.yaml",
        "--ca-file",
        str_path(&ca),
    ]);
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == hello);
    assert!(work.read("fetched/charts/hello-0.1.0.tgz") == package("hello-0.1.0.tgz"));

    // `tlsVerify: false` is the repository's own choice, without a CA.
    let unverified = Work::new();
    unverified.write(
        "charts.yaml",
        &charts_file(
            &repo.url(""),
            "      hello: [\"1.0.0\"]\n",
            "    tlsVerify: false\n",
        ),
    );
    unverified.fetch_ok(&["--helm-charts-file", "charts.yaml"]);
}

/// `package` with the same files, compressed again (other bytes).
fn recompressed(package: &[u8]) -> Vec<u8> {
    use std::io::{Read as _, Write as _};
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(package)
        .read_to_end(&mut tar)
        .expect("a gzip package");
    let mut gz = flate2::GzBuilder::new()
        .mtime(1_700_000_000)
        .write(Vec::new(), flate2::Compression::best());
    gz.write_all(&tar).expect("gzip in memory");
    gz.finish().expect("gzip in memory")
}

#[test]
fn a_repushed_chart_fails_a_locked_fetch_naming_it() {
    let repo = sample_repository();
    let work = Work::new();
    let charts = "      hello: [\"1.0.0\"]\n      motd: [\"1.0.0\"]\n";
    work.write("charts.yaml", &charts_file(&repo.url(""), charts, ""));
    work.fetch_ok(&["--helm-charts-file", "charts.yaml"]);
    let lock = work.lock();

    // Upstream pushes other bytes as hello 1.0.0 (the same chart, compressed again).
    let repushed = recompressed(&package("hello-1.0.0.tgz"));
    assert!(repushed != package("hello-1.0.0.tgz"));
    repo.publish(
        &[
            ("hello-1.0.0.tgz", &repushed),
            ("pkgs/motd-1.0.0.tgz", &package("motd-1.0.0.tgz")),
        ],
        |path| {
            if path.starts_with("pkgs/") {
                repo.url(path)
            } else {
                path.to_owned()
            }
        },
        |_, d| hex_sha256(d),
    );
    let e = work.fetch_fails(&["--helm-charts-file", "charts.yaml", "--locked"]);
    assert!(
        e.contains(&format!(
            "chart hello 1.0.0 from {}: the lock pins sha256:{}, the source now serves sha256:{} (re-pushed upstream?)",
            repo.url(""),
            hex_sha256(&package("hello-1.0.0.tgz")),
            hex_sha256(&repushed)
        )),
        "{e}"
    );
    assert!(!e.contains("chart motd"), "motd did not change: {e}");
    assert_eq!(work.lock(), lock, "--locked wrote the lock");
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == package("hello-1.0.0.tgz"));

    // A list that asks for something the lock does not hold.
    work.write(
        "more.yaml",
        &charts_file(
            &repo.url(""),
            "      hello: [\"1.0.0\"]\n      motd: [\"1.0.0\", \"2.0.0\"]\n",
            "",
        ),
    );
    let e = work.fetch_fails(&[
        "--helm-charts-file",
        "more.yaml",
        "--lock",
        "fetched/chartreg.lock",
        "--locked",
    ]);
    assert!(
        e.contains(&format!(
            "chart motd 2.0.0 from {}: in the list but not in the lock",
            repo.url("")
        )),
        "{e}"
    );

    // Without --locked the lock follows upstream, and says what changed.
    let out = work.fetch_ok(&["--helm-charts-file", "charts.yaml"]);
    assert!(
        out.contains(&format!(
            "changed chart hello 1.0.0 from {}: hello 1.0.0 sha256:",
            repo.url("")
        )),
        "{out}"
    );
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == repushed);
}
