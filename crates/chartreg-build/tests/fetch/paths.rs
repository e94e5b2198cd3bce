//! Where fetch writes and how the lock names it: docs/content.md's layout (lists in `addons/`,
//! the fetched folder `fetched/` at the top with the lock, `charts/` and `images/` in it,
//! `content.yaml` naming the lock) packs as written; every path in the lock is relative to the
//! lock's folder, and local `chartURLs` are keyed as the list writes them, so the lock is the
//! same from any folder, on any machine; the command pack's error suggests is the one that
//! mends what it names. A lock an earlier chartreg-build wrote beside the lists, with its
//! packages in `charts/`, is moved into the fetched folder by the next fetch, and only once
//! that fetch succeeds.

use super::sources::HelmRepo;
use super::*;

/// `chartreg-build ARGS` run in `dir`.
fn build_tool_in(dir: &Path, args: &[&str]) -> Output {
    common::output_of(
        Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
            .args(args)
            .current_dir(dir),
        "chartreg-build",
    )
}

fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what} failed: {}", describe(&out));
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn git(dir: &Path, args: &[&str]) {
    let out = common::output_of(
        Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e.test"])
            .args(args)
            .current_dir(dir),
        "git",
    );
    assert!(out.status.success(), "git {args:?}: {}", describe(&out));
}

#[test]
fn the_readme_layout_packs_and_the_lock_is_the_same_from_any_folder() {
    let repo = HelmRepo::start();
    let hello = package("hello-1.0.0.tgz");
    repo.publish(&[("hello-1.0.0.tgz", &hello)], str::to_owned, |_, d| {
        hex_sha256(d)
    });
    // The team's repository: lists in addons/, a vendored package beside them.
    let work = Work::new();
    work.write(
        "addons/charts.yaml",
        &format!(
            "repositories:\n  test:\n    repoURL: {}\n    charts:\n      hello: [\"1.0.0\"]\nchartURLs:\n  - ./vendor/hello-0.2.0.tgz\n",
            repo.url("")
        ),
    );
    std::fs::create_dir_all(work.path("addons/vendor")).expect("create folder");
    std::fs::write(
        work.path("addons/vendor/hello-0.2.0.tgz"),
        package("hello-0.2.0.tgz"),
    )
    .expect("write package");
    // docs/content.md's commands, as written, from the repository's top.
    let out = work.fetch_ok(&["--helm-charts-file", "addons/charts.yaml"]);
    assert!(out.contains("; wrote fetched"), "{out}");
    assert_eq!(
        common::file_names(&work.path("fetched")),
        ["chartreg.lock", "charts"],
        "the fetched folder holds the lock and what it pins"
    );
    let lock_text = || String::from_utf8(work.read("fetched/chartreg.lock")).expect("UTF-8");
    let lock = lock_text();
    for line in [
        "  ./vendor/hello-0.2.0.tgz:",
        "    url: ./vendor/hello-0.2.0.tgz",
        "    file: charts/hello-0.2.0.tgz",
        "    file: charts/hello-1.0.0.tgz",
        "  helm_charts_file: ../addons/charts.yaml",
    ] {
        assert!(
            lock.lines().any(|l| l == line),
            "lock lacks `{line}`:\n{lock}"
        );
    }
    assert!(
        !lock.contains(str_path(work.dir.path())),
        "an absolute path in the lock:\n{lock}"
    );
    work.write("content.yaml", "lock: fetched/chartreg.lock\n");
    let packed = ok(
        build_tool_in(
            work.dir.path(),
            &["pack", "--config", "content.yaml", "--out", "assets"],
        ),
        "pack from the top",
    );
    assert!(packed.contains("1 charts, 2 versions"), "{packed}");
    // And from another folder, the content file named by a relative path.
    ok(
        build_tool_in(
            &work.path("addons"),
            &["pack", "--config", "../content.yaml", "--out", "../assets"],
        ),
        "pack from addons/",
    );

    // --locked from another folder, the lock and the list by their absolute paths: the lock
    // matches, and nothing is written where fetch runs.
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let out = ok(
        build_tool_in(
            elsewhere.path(),
            &[
                "fetch",
                "--helm-charts-file",
                str_path(&work.path("addons/charts.yaml")),
                "--lock",
                str_path(&work.path("fetched/chartreg.lock")),
                "--locked",
            ],
        ),
        "fetch --locked from elsewhere",
    );
    assert!(out.contains("lock matches"), "{out}");
    assert_eq!(common::file_names(elsewhere.path()), Vec::<String>::new());
    // Without --locked from addons/, the list by a relative path: the same lock, byte for
    // byte, and the folder left as it was.
    let out = ok(
        build_tool_in(
            &work.path("addons"),
            &[
                "fetch",
                "--helm-charts-file",
                "charts.yaml",
                "--out",
                "../fetched",
            ],
        ),
        "fetch from addons/",
    );
    assert!(out.contains("lock unchanged:"), "{out}");
    assert!(out.contains("; unchanged: ../fetched"), "{out}");
    assert_eq!(lock_text(), lock);

    // Committed without the packages and cloned elsewhere: pack names what is missing and the
    // command to run; that command, run as it is printed, mends it.
    work.write(".gitignore", "/fetched/charts/\n/assets/\n");
    git(work.dir.path(), &["init", "-q", "-b", "main"]);
    git(work.dir.path(), &["add", "."]);
    git(work.dir.path(), &["commit", "-q", "-m", "content"]);
    let machine = tempfile::tempdir().expect("temp dir");
    git(
        machine.path(),
        &["clone", "-q", str_path(work.dir.path()), "clone"],
    );
    let clone = machine.path().join("clone");
    let failed = build_tool_in(
        &clone,
        &["pack", "--config", "content.yaml", "--out", "assets"],
    );
    let e = String::from_utf8(failed.stderr.clone()).expect("UTF-8");
    assert!(!failed.status.success(), "{}", describe(&failed));
    assert!(
        e.contains("fetched/charts/hello-0.2.0.tgz: No such file")
            || e.contains("fetched/charts/hello-1.0.0.tgz: No such file"),
        "{e}"
    );
    let remedy = e
        .split("run `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no command suggested: {e}"));
    assert_eq!(
        remedy,
        "chartreg-build fetch --locked --lock fetched/chartreg.lock"
    );
    let args: Vec<&str> = remedy.split(' ').skip(1).collect();
    let out = ok(build_tool_in(&clone, &args), "the suggested command");
    assert!(out.contains("lock matches"), "{out}");
    assert!(std::fs::read(clone.join("fetched/charts/hello-1.0.0.tgz")).expect("fetched") == hello);
    ok(
        build_tool_in(
            &clone,
            &["pack", "--config", "content.yaml", "--out", "assets"],
        ),
        "pack in the clone",
    );
    assert_eq!(
        std::fs::read(clone.join("fetched/chartreg.lock")).expect("lock"),
        lock.as_bytes(),
        "--locked wrote the lock"
    );
}

/// A lock as chartreg-build wrote it before the fetched folder: beside the lists, naming the
/// packages it put into `charts/` at the top.
fn earlier_lock(repo: &HelmRepo, hello: &[u8]) -> String {
    format!(
        "# Written by chartreg-build fetch: what was fetched, pinned by digest. Review changes\n\
         # to it like code; `fetch --locked` refuses anything else.\n\
         version: 1\nlists:\n  helm_charts_file: charts.yaml\ncharts:\n  hello 1.0.0 from {}:\n    name: hello\n    version: 1.0.0\n    url: {}\n    sha256: {}\n    file: ../charts/hello-1.0.0.tgz\nimages: {{}}\n",
        repo.url(""),
        repo.url("hello-1.0.0.tgz"),
        hex_sha256(hello)
    )
}

#[test]
fn an_earlier_lock_beside_the_lists_is_moved_into_the_fetched_folder_once_a_fetch_succeeds() {
    let repo = HelmRepo::start();
    let hello = package("hello-1.0.0.tgz");
    repo.publish(&[("hello-1.0.0.tgz", &hello)], str::to_owned, |_, d| {
        hex_sha256(d)
    });
    let work = Work::new();
    let list = |charts: &str| {
        format!(
            "repositories:\n  test:\n    repoURL: {}\n    charts:\n{charts}",
            repo.url("")
        )
    };
    work.write("addons/charts.yaml", &list("      hello: [\"1.0.0\"]\n"));
    work.write("addons/chartreg.lock", &earlier_lock(&repo, &hello));
    std::fs::create_dir_all(work.path("charts")).expect("create folder");
    std::fs::write(work.path("charts/hello-1.0.0.tgz"), &hello).expect("write package");
    // A package of the team's own in the same folder: no lock names it.
    std::fs::write(
        work.path("charts/mine-0.1.0.tgz"),
        package("hello-0.1.0.tgz"),
    )
    .expect("write package");
    // What an interrupted run of the earlier chartreg-build left beside its packages.
    for left in [
        ".hello-1.0.0.tgz.fetch-new",
        "..hello-1.0.0.tgz.fetch-new.part-7-0",
    ] {
        std::fs::write(work.path("charts").join(left), b"partial").expect("write");
    }
    let files = || chartreg_core::tree::read_dir(work.dir.path(), work.dir.path()).expect("read");
    let before = files();

    // A fetch that fails moves nothing.
    work.write(
        "addons/charts.yaml",
        &list("      hello: [\"1.0.0\"]\n      absent: [\"1.0.0\"]\n"),
    );
    let e = work.fetch_fails(&["--helm-charts-file", "addons/charts.yaml"]);
    assert!(e.contains("nothing was changed"), "{e}");
    work.write("addons/charts.yaml", &list("      hello: [\"1.0.0\"]\n"));
    assert!(files() == before, "a failed fetch changed files");

    // One that succeeds moves the lock and what it pins, and takes nothing again.
    let out = work.fetch_ok(&["--helm-charts-file", "addons/charts.yaml"]);
    assert!(
        out.contains(
            "moved what addons/chartreg.lock pinned into fetched: its lock is now fetched/chartreg.lock"
        ),
        "{out}"
    );
    assert!(out.contains("lock unchanged:"), "{out}");
    assert_eq!(repo.hits("hello-1.0.0.tgz"), 0, "downloaded again");
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == hello);
    assert!(!work.path("addons/chartreg.lock").exists());
    assert_eq!(common::file_names(&work.path("charts")), ["mine-0.1.0.tgz"]);
    let lock = work.lock();
    for line in [
        "  helm_charts_file: ../addons/charts.yaml",
        "    file: charts/hello-1.0.0.tgz",
    ] {
        assert!(
            lock.lines().any(|l| l == line),
            "lock lacks `{line}`:\n{lock}"
        );
    }
    work.write("content.yaml", "lock: fetched/chartreg.lock\n");
    ok(
        build_tool_in(
            work.dir.path(),
            &["pack", "--config", "content.yaml", "--out", "assets"],
        ),
        "pack the moved lock",
    );
    // The next fetch finds the folder's lock.
    let again = work.fetch_ok(&["--helm-charts-file", "addons/charts.yaml"]);
    assert!(
        again.contains("lock unchanged:") && !again.contains("moved"),
        "{again}"
    );
}
