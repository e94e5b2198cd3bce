//! Chart packages: flag-shaped names and versions, names that forge output or paths, hostile
//! tar entries, bombs, YAML bombs and deep nesting, and subcharts that nest without end.

use super::archive::{Entry, Tar, chart_yaml, gzip, gzip_zeros_after, gzip_zeros_in_tar};
use super::{Case, Expect, refused};

/// Every flag of `helm template` (Helm 3.17 and 4.3) that names a file, a command or a URL,
/// or reaches the network, with a value that would do harm: as a chart's name, each would be a
/// flag on a command line that put the name there.
pub const HELM_FLAGS: [(&str, &str); 21] = [
    ("post-renderer", "pwn"),
    ("post-renderer", "sh"),
    ("post-renderer-args", "-c"),
    ("output-dir", "written-by-helm"),
    ("values", "/etc/shadow"),
    ("set-file", "a=/etc/shadow"),
    ("ca-file", "/etc/shadow"),
    ("cert-file", "/etc/shadow"),
    ("key-file", "/etc/shadow"),
    ("keyring", "/etc/shadow"),
    ("kubeconfig", "/etc/shadow"),
    ("kube-ca-file", "/etc/shadow"),
    ("registry-config", "/etc/shadow"),
    ("repository-config", "/etc/shadow"),
    ("repository-cache", "written-by-helm"),
    ("content-cache", "written-by-helm"),
    ("repo", "http://127.0.0.1:9/"),
    ("kube-apiserver", "http://127.0.0.1:9/"),
    ("dependency-update", ""),
    ("enable-dns", ""),
    ("verify", ""),
];

fn flag(name: &str, value: &str) -> String {
    if value.is_empty() {
        format!("--{name}")
    } else {
        format!("--{name}={value}")
    }
}

/// A package holding one chart named `name` at `version`.
fn named(name: &str, version: &str) -> Vec<u8> {
    Tar::chart("evil", &chart_yaml(name, version)).tgz()
}

pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, (f, value)) in HELM_FLAGS.iter().enumerate() {
        let name = flag(f, value);
        cases.push(Case::listed(
            &format!("name-flag-{i:02}-{f}"),
            &format!("the chart's name `{name}`: a `helm template` flag if the name reached Helm's command line"),
            named(&name, "1.0.0"),
            (&name, "1.0.0"),
            refused(&["invalid chart name"]),
        ));
    }
    for f in [
        "post-renderer",
        "output-dir",
        "values",
        "set-file",
        "kubeconfig",
        "repo",
    ] {
        let (_, value) = HELM_FLAGS
            .iter()
            .find(|(n, _)| *n == f)
            .expect("a listed flag");
        let version = flag(f, value);
        cases.push(Case::listed(
            &format!("version-flag-{f}"),
            &format!("the chart's version `{version}`: a flag, and part of file names"),
            named("evil", &version),
            ("evil", &version),
            refused(&["not a version Helm accepts"]),
        ));
    }
    let names: [(&str, &str, String); 9] = [
        (
            "name-terminal-escapes",
            "the operator's terminal: a screen clear and a title change in the name",
            "ctl\u{1b}[2J\u{1b}]0;owned\u{7}x".into(),
        ),
        (
            "name-forged-line",
            "the operator's reading: a newline and a line that looks like the tool's own",
            "evil\nchartreg-build: wrote assets (0 charts)".into(),
        ),
        (
            "name-shell",
            "a shell, were the name ever in one",
            "$(touch pwned)".into(),
        ),
        (
            "name-path-traversal",
            "the file system: a name used as a file and folder name",
            "../../../tmp/evil".into(),
        ),
        (
            "name-bidi",
            "the operator's reading: a right-to-left override reorders the text",
            "evil\u{202e}lmay.".into(),
        ),
        (
            "name-uppercase",
            "the OCI repository the chart is served as",
            "Evil".into(),
        ),
        (
            "name-leading-dash",
            "command lines: a name starting with `-`",
            "-evil".into(),
        ),
        (
            "name-too-long",
            "names past Helm's 250 characters",
            "a".repeat(300),
        ),
        (
            "name-dotdot",
            "the file system: `..` as the chart's folder",
            "..".into(),
        ),
    ];
    for (case, attacks, name) in names {
        cases.push(Case::listed(
            case,
            attacks,
            named(&name, "1.0.0"),
            (&name, "1.0.0"),
            refused(&["invalid chart name"]),
        ));
    }

    let chart = chart_yaml("evil", "1.0.0");
    let entries: [(&str, &str, Entry, &'static str); 8] = [
        (
            "tar-parent",
            "the file system: an entry with `..` parts",
            Entry::File("evil/../../../../tmp/pwned".into(), b"x".to_vec()),
            "parent directory",
        ),
        (
            "tar-absolute",
            "the file system: an entry at an absolute path",
            Entry::File("/tmp/pwned-absolute".into(), b"x".to_vec()),
            "is an absolute path",
        ),
        (
            "tar-symlink-out",
            "the build machine's files: a symbolic link to /etc/shadow among the templates",
            Entry::Symlink("evil/templates/shadow.yaml".into(), "/etc/shadow".into()),
            "symbolic link",
        ),
        (
            "tar-hardlink-out",
            "the build machine's files: a hard link to /etc/shadow",
            Entry::Hardlink("evil/templates/shadow.yaml".into(), "/etc/shadow".into()),
            "hard link",
        ),
        (
            "tar-device",
            "the reader: a character device entry",
            Entry::CharDevice("evil/templates/zero".into()),
            "character device",
        ),
        (
            "tar-fifo",
            "the reader: a FIFO entry",
            Entry::Fifo("evil/templates/fifo".into()),
            "FIFO",
        ),
        (
            "tar-duplicate-chart-yaml",
            "pack and Helm disagreeing: a second Chart.yaml naming another chart",
            Entry::File(
                "evil/Chart.yaml".into(),
                chart_yaml("other", "9.9.9").into_bytes(),
            ),
            "both the chart's",
        ),
        (
            "tar-duplicate-template",
            "pack and Helm disagreeing: a template twice",
            Entry::File(
                "evil/templates/deployment.yaml".into(),
                b"kind: ConfigMap\n".to_vec(),
            ),
            "both the chart's",
        ),
    ];
    for (case, attacks, entry, says) in entries {
        cases.push(Case::package(
            case,
            attacks,
            Tar::chart("evil", &chart).entry(entry).tgz(),
            refused(&[".tgz", says]),
        ));
    }
    cases.push(Case::package(
        "tar-chart-yaml-at-top",
        "the loader: Chart.yaml outside the chart's folder",
        Tar::new().file("Chart.yaml", &chart).tgz(),
        refused(&["top of the archive"]),
    ));
    cases.push(Case::package(
        "gzip-bomb",
        "memory: 200 MiB of zeros in a 200 KB package (Helm loads at most 100 MiB)",
        gzip_zeros_in_tar("evil/templates/zeros.yaml", 200 << 20),
        refused(&["100 MiB"]),
    ));
    cases.push(Case::package(
        "not-gzip",
        "the reader: a package that is not gzip",
        b"PK\x03\x04 not a chart".to_vec(),
        refused(&["not a gzip file"]),
    ));
    let whole = Tar::chart("evil", &chart).tgz();
    cases.push(Case::package(
        "gzip-truncated",
        "the reader: a package cut short",
        whole[..whole.len() / 2].to_vec(),
        refused(&["gzip"]),
    ));
    let mut many = Tar::chart("evil", &chart);
    for i in 0..60_000 {
        many = many.file(&format!("evil/files/{i}"), "");
    }
    cases.push(Case::package(
        "tar-many-entries",
        "time and memory: 60,000 entries (30 MB of headers)",
        many.tgz(),
        Expect::Safe,
    ));

    // YAML.
    let bomb = alias_bomb();
    cases.push(Case::package(
        "chart-yaml-alias-bomb",
        "memory: a billion-laughs alias bomb in Chart.yaml",
        Tar::chart("evil", &format!("{chart}{bomb}")).tgz(),
        refused(&["Chart.yaml"]),
    ));
    cases.push(Case::package(
        "chart-yaml-deep",
        "the stack: Chart.yaml nested 100,000 deep",
        Tar::chart("evil", &format!("{chart}deep: {}", deep(100_000))).tgz(),
        refused(&["Chart.yaml"]),
    ));
    cases.push(Case::package(
        "values-yaml-alias-bomb",
        "memory: a billion-laughs alias bomb in values.yaml (packed as bytes; never rendered)",
        Tar::chart_without_values("evil", &chart)
            .file("evil/values.yaml", &bomb)
            .tgz(),
        Expect::RenderRefused(vec!["values.yaml"]),
    ));
    cases.push(Case::package(
        "values-yaml-deep",
        "the stack and time: values.yaml nested 100,000 deep (Helm took 51 s on it)",
        Tar::chart_without_values("evil", &chart)
            .file("evil/values.yaml", format!("deep: {}", deep(100_000)))
            .tgz(),
        Expect::RenderRefused(vec!["values.yaml"]),
    ));
    cases.push(Case::package(
        "requirements-yaml-alias-bomb",
        "memory: an alias bomb in a v1 chart's requirements.yaml",
        Tar::chart("evil", &chart)
            .file("evil/requirements.yaml", &bomb)
            .tgz(),
        refused(&["requirements.yaml"]),
    ));

    // Subcharts.
    let mut nested = Tar::chart("evil", &chart).tgz();
    for depth in 0..40 {
        let name = format!("evil{depth}");
        nested = Tar::chart(&name, &chart_yaml(&name, "1.0.0"))
            .file(&format!("{name}/charts/sub.tgz"), &nested)
            .tgz();
    }
    cases.push(Case::listed(
        "subcharts-nested-40-deep",
        "the stack and memory: subchart packages nested 40 deep",
        nested,
        ("evil39", "1.0.0"),
        Expect::RenderRefused(vec!["nest more than 10 deep"]),
    ));
    let bomb_sub = gzip_zeros_after(
        &Tar::new().file("sub/Chart.yaml", chart_yaml("sub", "1.0.0")),
        "sub/templates/zeros.yaml",
        90 << 20,
    );
    let mut bombs = Tar::chart("evil", &chart);
    for i in 0..6 {
        bombs = bombs.file(&format!("evil/charts/sub{i}.tgz"), &bomb_sub);
    }
    cases.push(Case::package(
        "subcharts-gzip-bombs",
        "memory: six subchart packages of 90 KB, each 90 MiB of zeros (540 MiB in a 600 KB chart)",
        bombs.tgz(),
        Expect::RenderRefused(vec!["256 MiB"]),
    ));
    let itself = Tar::chart(
        "evil",
        &format!("{chart}dependencies:\n  - name: evil\n    version: 1.0.0\n"),
    )
    .tgz();
    cases.push(Case::package(
        "depends-on-itself",
        "the loader: a chart whose dependency is itself (a copy of it in charts/)",
        Tar::chart(
            "evil",
            &format!("{chart}dependencies:\n  - name: evil\n    version: 1.0.0\n"),
        )
        .file("evil/charts/evil-1.0.0.tgz", &itself)
        .tgz(),
        Expect::Safe,
    ));
    cases.push(Case::package(
        "subchart-flag-name",
        "Helm's command line through a subchart: a subchart named `--post-renderer=sh`",
        Tar::chart("evil", &chart)
            .file(
                "evil/charts/sub/Chart.yaml",
                chart_yaml("--post-renderer=sh", "1.0.0"),
            )
            .tgz(),
        // Packed as the bytes it is (a subchart's name is no repository); refused where the
        // chart is read as a tree.
        Expect::RenderRefused(vec!["invalid chart name"]),
    ));
    cases.push(Case::package(
        "subchart-dash-name",
        "a subchart named `--debug` (Helm's rule takes it): it never reaches a command line",
        Tar::chart("evil", &chart)
            .file("evil/charts/sub/Chart.yaml", chart_yaml("--debug", "1.0.0"))
            .file(
                "evil/charts/sub/templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
            )
            .tgz(),
        Expect::Safe,
    ));
    cases.push(Case::package(
        "gzip-of-gzip",
        "the reader: a package whose content is another gzip stream, not a tar",
        gzip(&gzip(b"not a tar")),
        refused(&["tar"]),
    ));
    cases
}

/// A YAML alias bomb: nine levels of nine references (387,420,489 strings when expanded).
pub fn alias_bomb() -> String {
    let mut text = String::from(
        "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..10 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
        ));
    }
    text
}

/// A flow value nested `n` deep.
pub fn deep(n: usize) -> String {
    format!("{}{}\n", "[".repeat(n), "]".repeat(n))
}
