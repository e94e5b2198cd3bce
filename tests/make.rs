//! The Makefile and `scripts/build-image.sh` as a build machine runs them: the binaries are
//! found wherever cargo builds (`CARGO_TARGET_DIR` absolute, relative, or cargo's
//! configuration), and the image is tagged and labelled for the content it holds.
//!
//! - `make -n` shows, for each folder setting, the paths the recipes run (a table; instant).
//! - One real `make image` in a copy of the source without `.git` (as a source release or
//!   `git archive` has it) with `CARGO_TARGET_DIR` outside it, and `make run` there serving
//!   what it built; then more runs on that warm folder for the tag and labels: the same content
//!   gives the same tag, other content (`CONTENT`, a content file elsewhere) another, compiling
//!   only the crate that embeds it, `IMAGE_TAG` overrides, a bad `IMAGE_TAG` or `IMAGE_SOURCE` is
//!   refused leaving the previous image, `revision` only from a clean work tree and `source`
//!   only as an http(s) URL without credentials; `make image-containerfile` (buildah and the
//!   Containerfile) gives the same tag and labels. The copy shares what the checkout compiled:
//!   cargo's intermediate artifacts (`CARGO_BUILD_BUILD_DIR`, the checkout's: cargo names a
//!   workspace's crates by their path in it, and the copy's files keep their times, so its
//!   crates are the checkout's, fresh, and the build tool is only written into the new folder),
//!   and the kit and its cache (`KIT=` and `KIT_CACHE=` on make's command line): the kit the
//!   copy makes is the checkout's, unchanged, and only the crate that embeds the content
//!   compiles (the builder image compiles the release archive's kit cold). Under `CI=true` the
//!   test checks both, and that the copy compiled none of the checkout's units again.
//!   Every binary and image is written into the new folder.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rstest::rstest;
use serde_json::Value;

/// `make ARGS` in the repository, with only `env` of the variables this file is about set (the
/// caller's and an enclosing make's removed).
fn make(args: &[&str], env: &[(&str, &str)]) -> Output {
    make_in(&common::root(), args, env)
}

/// `make ARGS` in the source tree `tree`, as [`make`] runs it.
fn make_in(tree: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = make_command(tree, args, env);
    common::output_of(&mut cmd, &format!("make {}", args.join(" ")))
}

/// The command `make ARGS` in `tree` with only `env` of the variables this file is about set,
/// and none of those cargo sets for this test (a build machine's shell has none).
fn make_command(tree: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new("make");
    cmd.args(args).current_dir(tree);
    common::without_cargos_test_variables(&mut cmd);
    for name in [
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
        "CARGO_MAKEFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_BUILD_DIR",
        "CHARTREG_ASSETS",
        "CONTENT",
        "CONTAINER_ENGINE",
        "IMAGE_TAG",
        "IMAGE_SOURCE",
        "IMAGE_OUT",
        "GIT_DIR",
        "GIT_WORK_TREE",
    ] {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    cmd
}

/// The crates cargo compiled in a run, by name (`Compiling NAME VERSION ...` on stderr; the
/// build tool is compiled quietly).
fn compiled(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Compiling "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[rstest]
#[case::default(None, "target")]
#[case::absolute_outside(
    Some("CARGO_TARGET_DIR=/tmp/chartreg-elsewhere/t"),
    "/tmp/chartreg-elsewhere/t"
)]
#[case::relative(Some("CARGO_TARGET_DIR=build/out"), "build/out")]
#[case::cargo_configuration(
    Some("CARGO_BUILD_TARGET_DIR=/tmp/chartreg-configured"),
    "/tmp/chartreg-configured"
)]
fn the_recipes_run_the_binaries_where_cargo_builds_them(
    #[case] setting: Option<&str>,
    #[case] folder: &str,
) {
    if common::tool("make").is_none() {
        return;
    }
    let env: Vec<(&str, &str)> = setting
        .and_then(|s| s.split_once('='))
        .into_iter()
        .collect();
    // Relative to the folder make runs in, the repository, as cargo takes it.
    let folder = common::root().join(folder);
    let folder = folder.display();
    let out = make(&["-n", "assets", "run", "image", "assets-check"], &env);
    assert!(out.status.success(), "{}", common::describe(&out));
    let text = stdout(&out);
    for expected in [
        format!("'{folder}/release/chartreg-build' pack --config content.yaml --out assets\n"),
        format!(
            "'{folder}/release/chartreg-build' pack --config content.yaml --out assets --check\n"
        ),
        format!("scripts/make-kit.sh '{folder}/share/chartreg/kit' "),
        format!(
            "'{folder}/release/chartreg-build' build --config content.yaml --kit '{folder}/share/chartreg/kit' --out '{folder}/server/chartreg' --cache '{folder}/kit-cache'\n"
        ),
        format!("'{folder}/server/chartreg' serve --listen"),
        format!(
            "SERVER_BIN='{folder}/server/chartreg' BUILD_TOOL='{folder}/release/chartreg-build' IMAGE_BASE=scratch scripts/build-image.sh"
        ),
    ] {
        assert!(
            text.contains(&expected),
            "{setting:?}: no `{expected}` in:\n{text}"
        );
    }
    assert!(!text.contains(" target/release"), "{setting:?}:\n{text}");
}

/// The labels of the image tagged `tag` in the layout `layout`, as skopeo reads them.
fn labels(skopeo: &Path, layout: &Path, tag: &str) -> serde_json::Map<String, Value> {
    let mut cmd = Command::new(skopeo);
    cmd.arg("inspect")
        .arg(format!("oci:{}:{tag}", layout.display()));
    let out = common::output_of(&mut cmd, "skopeo inspect");
    assert!(out.status.success(), "{}", common::describe(&out));
    let info: Value = serde_json::from_slice(&out.stdout).expect("skopeo prints JSON");
    info["Labels"].as_object().cloned().unwrap_or_default()
}

/// What one `make image` wrote: the tag it printed to `OUT/tag`, and the labels of that tag.
struct Image {
    tag: String,
    labels: serde_json::Map<String, Value>,
}

impl Image {
    fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name).and_then(Value::as_str)
    }
}

/// `make image` into `out` with `env`; the image it wrote, checked against its tag file and the
/// layout's own tag.
fn image(tree: &Path, skopeo: &Path, out: &Path, env: &[(&str, &str)]) -> Image {
    let run = make_image(tree, out, env);
    assert!(run.status.success(), "{}", common::describe(&run));
    read_image(skopeo, out, true)
}

fn make_image(tree: &Path, out: &Path, env: &[(&str, &str)]) -> Output {
    let out = out.to_str().expect("UTF-8 temp path");
    let mut all = vec![("IMAGE_OUT", out)];
    all.extend_from_slice(env);
    make_shared(tree, "image", &[], &all)
}

/// `make TARGET ARGS` in `tree`, a copy of the checkout, sharing the checkout's compiles
/// ([`share_the_checkouts_compiles`]).
fn make_shared(tree: &Path, target: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = make_command(tree, &[target], env);
    share_the_checkouts_compiles(&mut cmd);
    cmd.args(args);
    common::output_of(&mut cmd, &format!("make {target}"))
}

/// The checkout's target folder, as scripts/target-dir.sh names it for the Makefile.
fn checkout_target() -> &'static Path {
    static TARGET: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    TARGET.get_or_init(|| {
        let out = common::output_of(
            Command::new(common::root().join("scripts/target-dir.sh")).current_dir(common::root()),
            "scripts/target-dir.sh",
        );
        assert!(out.status.success(), "{}", common::describe(&out));
        PathBuf::from(stdout(&out).trim_end())
    })
}

/// Makes `cmd` (make in a copy of the checkout) share what the checkout compiled, leaving
/// every binary and image in the copy's own target folder: the kit and its cache (`KIT=` and
/// `KIT_CACHE=` on make's command line, as the checkout's Makefile has them), and cargo's
/// intermediate artifacts (`CARGO_BUILD_BUILD_DIR`, the checkout's target folder).
fn share_the_checkouts_compiles(cmd: &mut Command) {
    let target = checkout_target();
    cmd.arg(format!(
        "KIT={}",
        target.join("share/chartreg/kit").display()
    ))
    .arg(format!("KIT_CACHE={}", target.join("kit-cache").display()))
    .env("CARGO_BUILD_BUILD_DIR", target);
}

/// The checkout's compile fingerprints (cargo's record of each unit it compiled, under the
/// build folder's `release/.fingerprint`): each file's path, length and time. A unit compiled
/// again rewrites its files.
fn checkouts_fingerprints() -> std::collections::BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    fn walk(
        dir: &Path,
        into: &mut std::collections::BTreeMap<PathBuf, (u64, std::time::SystemTime)>,
    ) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                walk(&entry.path(), into);
            } else {
                into.insert(entry.path(), (meta.len(), meta.modified().unwrap()));
            }
        }
    }
    let mut found = std::collections::BTreeMap::new();
    walk(&checkout_target().join("release/.fingerprint"), &mut found);
    found
}

/// `attached`: whether the image carries its SBOM (`chartreg-build image` attaches it; an
/// engine's build from the Containerfile does not).
fn read_image(skopeo: &Path, out: &Path, attached: bool) -> Image {
    let tag = std::fs::read_to_string(out.join("tag")).expect("make image wrote its tag");
    let tag = tag.trim_end().to_owned();
    let index: Value =
        serde_json::from_slice(&std::fs::read(out.join("oci/index.json")).unwrap()).unwrap();
    let entries = index["manifests"].as_array().unwrap();
    let names: Vec<&Value> = entries
        .iter()
        .map(|m| &m["annotations"]["org.opencontainers.image.ref.name"])
        // cosign's tags of what is attached (`sha256-<hex>.sbom`) name no image.
        .filter(|name| name.as_str().is_some_and(|n| !n.starts_with("sha256-")))
        .collect();
    assert_eq!(
        names,
        [&Value::from(tag.clone())],
        "the layout holds the tag"
    );
    for kind in ["application/spdx+json", "application/vnd.cyclonedx+json"] {
        let sboms = entries.iter().filter(|m| m["artifactType"] == kind).count();
        assert_eq!(
            sboms,
            usize::from(attached),
            "the image's {kind} SBOM: {index}"
        );
    }
    let labels = labels(skopeo, &out.join("oci"), &tag);
    Image { tag, labels }
}

/// The tag `make image` gives content whose digest is `digest`.
fn tag_for(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    format!("{}-{}", env!("CARGO_PKG_VERSION"), &hex[..12])
}

/// `git ARGS` on the repository `git_dir` whose work tree is `tree`.
fn git(git_dir: &Path, tree: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    cmd.args([
        "-c",
        "user.name=chartreg tests",
        "-c",
        "user.email=tests@chartreg.invalid",
    ])
    .args(args)
    .env("GIT_DIR", git_dir)
    .env("GIT_WORK_TREE", tree)
    .current_dir(tree);
    let out = common::output_of(&mut cmd, "git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        common::describe(&out)
    );
    stdout(&out).trim().to_owned()
}

#[test]
fn make_image_outside_the_tree_tags_and_labels_the_content() {
    let mut tools = Vec::new();
    for name in ["make", "git", "skopeo", "buildah"] {
        let Some(path) = common::tool(name) else {
            return;
        };
        tools.push(path);
    }
    let skopeo = tools[2].clone();
    let tmp = tempfile::tempdir().unwrap();
    assert!(
        !tmp.path().starts_with(common::root()),
        "a folder outside the tree"
    );
    // The source as a release or `git archive` has it: the files git tracks, without `.git`.
    let tree = tmp.path().join("source");
    git_less_copy(&tree);
    let tree = tree.as_path();
    let target = tmp.path().join("cargo-target");
    let target_env = target.to_str().unwrap();
    let fingerprints = checkouts_fingerprints();

    // 1. The real run, in the copy: the build tool and the static server written into, and run
    //    from, the folder outside the tree (compiled sharing the checkout's compiles); the
    //    image tagged with the version and the content digest, with no revision (no git).
    let first_out = tmp.path().join("first");
    let run = make_image(tree, &first_out, &[("CARGO_TARGET_DIR", target_env)]);
    assert!(run.status.success(), "{}", common::describe(&run));
    let assets_digest = common::folder_content_digest(&tree.join("assets"));
    assert_eq!(
        assets_digest,
        common::folder_content_digest(&common::root().join("assets")),
        "the copy packs what the checkout packs"
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        // `make build` compiled the suite's kit before the tests: the copy's kit is that kit,
        // and its cache leaves only the crate that embeds the copy's content to compile.
        let said = String::from_utf8_lossy(&run.stderr);
        assert!(said.contains("[kit] unchanged: "), "{said}");
        assert_eq!(compiled(&run), ["chartreg-bin"], "{said}");
        // The copy's crates were the checkout's, fresh: its build compiled none of the
        // checkout's units again (one compiled again would leave the checkout's next build
        // recompiling all that depends on it).
        let after = checkouts_fingerprints();
        let units: std::collections::BTreeSet<String> = fingerprints
            .iter()
            .filter(|(path, was)| after.get(*path) != Some(was))
            .filter_map(|(path, _)| path.parent()?.file_name())
            .map(|unit| unit.to_string_lossy().into_owned())
            .collect();
        assert!(
            units.is_empty(),
            "compiled again in the checkout: {units:?}"
        );
    }
    let ran = stdout(&run);
    let tool = format!(
        "'{}/release/chartreg-build' build --config content.yaml",
        target.display()
    );
    assert!(ran.contains(&tool), "make ran no `{tool}`:\n{ran}");
    // The static binary `chartreg-build build` compiled from the kit beside the tool.
    let static_bin: PathBuf = target.join("server/chartreg");
    assert!(static_bin.is_file(), "no {}", static_bin.display());
    assert_eq!(common::content_digest_of(&static_bin), assets_digest);
    let first = read_image(&skopeo, &first_out, true);
    assert_eq!(first.tag, tag_for(&assets_digest));
    assert_eq!(
        first.label("org.opencontainers.image.version"),
        Some(&*first.tag)
    );
    assert_eq!(
        first.label("io.chartreg.content.digest"),
        Some(&*assets_digest)
    );
    for label in [
        "org.opencontainers.image.revision",
        "org.opencontainers.image.source",
    ] {
        assert_eq!(first.label(label), None, "{:?}", first.labels);
    }

    // `make run` in the copy serves what it built.
    make_run_serves(tree, target_env);

    // 2. The same content again: the same tag.
    let again = image(
        tree,
        &skopeo,
        &tmp.path().join("again"),
        &[("CARGO_TARGET_DIR", target_env)],
    );
    assert_eq!(again.tag, first.tag);

    // 3. IMAGE_TAG overrides the tag; IMAGE_SOURCE names the source, without credentials.
    let named_out = tmp.path().join("named");
    let named = image(
        tree,
        &skopeo,
        &named_out,
        &[
            ("CARGO_TARGET_DIR", target_env),
            ("IMAGE_TAG", "review-7"),
            (
                "IMAGE_SOURCE",
                "https://builder:s3cret@git.example/team/chartreg",
            ),
        ],
    );
    assert_eq!(named.tag, "review-7");
    assert_eq!(
        named.label("org.opencontainers.image.version"),
        Some("review-7")
    );
    assert_eq!(
        named.label("org.opencontainers.image.source"),
        Some("https://git.example/team/chartreg")
    );

    // 4. A bad tag or a source that is not a URL: refused, naming it, and the image written
    //    before is still there.
    for (setting, value) in [
        ("IMAGE_TAG", "not a tag"),
        ("IMAGE_SOURCE", "/home/me/chartreg"),
    ] {
        let refused = make_image(
            tree,
            &named_out,
            &[("CARGO_TARGET_DIR", target_env), (setting, value)],
        );
        assert!(!refused.status.success(), "{setting}={value} was taken");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains(&format!("{setting}={value}")), "{said}");
        assert_eq!(read_image(&skopeo, &named_out, true).tag, "review-7");
    }

    // 5. A clean work tree (a repository whose commit holds the checkout as it is): the
    //    revision names that commit; the origin's https URL is the source, without credentials.
    let git_dir = tmp.path().join("git");
    let git_env = git_dir.to_str().unwrap();
    git(&git_dir, tree, &["init", "--quiet"]);
    git(&git_dir, tree, &["add", "--all"]);
    git(
        &git_dir,
        tree,
        &[
            "commit",
            "--quiet",
            "--no-verify",
            "--message",
            "the checkout",
        ],
    );
    git(
        &git_dir,
        tree,
        &[
            "remote",
            "add",
            "origin",
            "https://ci:token@git.example/team/chartreg.git",
        ],
    );
    let head = git(&git_dir, tree, &["rev-parse", "HEAD"]);
    let work_tree = tree.to_str().unwrap();
    let git_env = [
        ("CARGO_TARGET_DIR", target_env),
        ("GIT_DIR", git_env),
        ("GIT_WORK_TREE", work_tree),
    ];
    let clean = image(tree, &skopeo, &tmp.path().join("clean"), &git_env);
    assert_eq!(
        clean.label("org.opencontainers.image.revision"),
        Some(&*head)
    );
    assert_eq!(
        clean.label("org.opencontainers.image.source"),
        Some("https://git.example/team/chartreg.git")
    );

    // 6. A dirty one (a file taken out of the index), with a local path as its origin: neither
    //    a revision nor a source.
    git(&git_dir, tree, &["rm", "--cached", "--quiet", "README.md"]);
    git(
        &git_dir,
        tree,
        &["remote", "set-url", "origin", "/srv/git/chartreg.git"],
    );
    let dirty = image(tree, &skopeo, &tmp.path().join("dirty"), &git_env);
    assert_eq!(
        dirty.label("org.opencontainers.image.revision"),
        None,
        "{:?}",
        dirty.labels
    );
    assert_eq!(
        dirty.label("org.opencontainers.image.source"),
        None,
        "{:?}",
        dirty.labels
    );
    assert_eq!(dirty.tag, first.tag);

    // 7. Other content (a content file of its own, outside the tree: one chart): another tag,
    //    naming that content; only the crate that embeds content was compiled again.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let chart = common::root().join("charts/hello-1.0.0.tgz");
    std::fs::write(
        other.join("content.yaml"),
        format!("charts:\n  from: [{}]\n", chart.display()),
    )
    .unwrap();
    let other_content = other.join("content.yaml");
    let run = make_image(
        tree,
        &tmp.path().join("changed"),
        &[
            ("CARGO_TARGET_DIR", target_env),
            ("CONTENT", other_content.to_str().unwrap()),
        ],
    );
    assert!(run.status.success(), "{}", common::describe(&run));
    assert_eq!(
        compiled(&run),
        ["chartreg-bin"],
        "{}",
        common::describe(&run)
    );
    let other_digest = common::folder_content_digest(&other.join("assets"));
    assert_ne!(other_digest, assets_digest);
    let changed = read_image(&skopeo, &tmp.path().join("changed"), true);
    assert_eq!(changed.tag, tag_for(&other_digest));
    assert_ne!(changed.tag, first.tag);
    assert_eq!(
        changed.label("io.chartreg.content.digest"),
        Some(&*other_digest)
    );

    // 8. The Containerfile with an engine (buildah): the same binary, tag and labels.
    let engine_out = tmp.path().join("containerfile");
    let out = engine_out.to_str().unwrap();
    let run = make_shared(
        tree,
        "image-containerfile",
        &[],
        &[("CARGO_TARGET_DIR", target_env), ("IMAGE_OUT", out)],
    );
    assert!(run.status.success(), "{}", common::describe(&run));
    let built = read_image(&skopeo, &engine_out, false);
    assert_eq!(built.tag, first.tag);
    for label in [
        "org.opencontainers.image.version",
        "io.chartreg.content.digest",
        "org.opencontainers.image.licenses",
        "org.opencontainers.image.title",
    ] {
        assert_eq!(built.label(label), first.label(label), "{label}");
    }
}

/// Copies the files git tracks in the checkout (as they are in the work tree) to `to`: the tree
/// a source release or `git archive` holds, with no `.git`, each file with its time (as tar
/// unpacks them), so that cargo finds the copy's crates as fresh as the checkout's.
fn git_less_copy(to: &Path) {
    let out = Command::new("git")
        .args(["ls-files", "-z", "--cached"])
        .current_dir(common::root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::describe(&out));
    let mut copied = 0;
    for path in out.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = Path::new(std::str::from_utf8(path).unwrap());
        let from = common::root().join(path);
        let Ok(meta) = std::fs::symlink_metadata(&from) else {
            continue; // deleted in the work tree
        };
        let dest = to.join(path);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &dest).unwrap();
        } else {
            std::fs::copy(&from, &dest).unwrap();
            let file = std::fs::File::options().write(true).open(&dest).unwrap();
            file.set_modified(meta.modified().unwrap()).unwrap();
        }
        copied += 1;
    }
    assert!(copied > 100, "git lists {copied} files");
    assert!(!to.join(".git").exists());
}

/// `make run LISTEN=127.0.0.1:PORT` in `tree`: it serves the sample (its catalog lists the
/// sample chart) once it has built; then it is stopped with its process group.
fn make_run_serves(tree: &Path, target_env: &str) {
    let Some(curl) = common::tool("curl") else {
        return;
    };
    // A port the kernel had free a moment ago (make prints no address to read back).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("LISTEN=127.0.0.1:{port}");
    let mut cmd = make_command(tree, &["run", &listen], &[("CARGO_TARGET_DIR", target_env)]);
    share_the_checkouts_compiles(&mut cmd);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut make = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/v2/_catalog");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let catalog = loop {
        let out = Command::new(&curl).args(["-fsS", &url]).output().unwrap();
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        let exited = make.try_wait().unwrap();
        if exited.is_some() || std::time::Instant::now() > deadline {
            let _ = Command::new("kill")
                .args(["--", &format!("-{}", make.id())])
                .status();
            panic!("make run served nothing on {url} ({exited:?})");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let stopped = Command::new("kill")
        .args(["--", &format!("-{}", make.id())])
        .status()
        .unwrap();
    assert!(stopped.success());
    let _ = make.wait();
    assert!(catalog.contains("charts/hello"), "{catalog}");
}
