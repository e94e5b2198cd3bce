//! Charts whose templates attack the render: they run forever, render gigabytes, recurse,
//! fail with a message that forges the terminal, read files outside the chart, or put
//! post-renderer commands where a flag-shaped name would send them.

use super::archive::{Tar, chart_yaml};
use super::{Case, Expect, refused};

fn with_template(body: &str) -> Vec<u8> {
    Tar::chart("evil", &chart_yaml("evil", "1.0.0"))
        .file("evil/templates/evil.yaml", body)
        .tgz()
}

pub fn cases() -> Vec<Case> {
    let failed = "Helm could not render it";
    vec![
        Case::package(
            "render-post-renderer-sh",
            "the build machine's shell: a chart named `--post-renderer=sh` whose template is a shell command (Helm 3 piped the render into sh)",
            Tar::chart("evil", &chart_yaml("--post-renderer=sh", "1.0.0"))
                .file("evil/templates/evil.yaml", "touch pwned: y\n")
                .tgz(),
            refused(&["invalid chart name"]),
        ),
        Case::package(
            "render-runaway-range",
            "memory: `range until 2000000000` (24 GB, then the OOM killer, before)",
            with_template("{{ range $i := until 2000000000 }}{{ $i }}{{ end }}\n"),
            Expect::RenderRefused(vec![failed, "memory limit"]),
        ),
        Case::package(
            "render-gigabytes",
            "memory and output: `repeat 2000000000 \"x\"` (10 GB held after 50 s, before)",
            with_template("x: {{ repeat 2000000000 \"x\" }}\n"),
            Expect::RenderRefused(vec![failed, "limit: stopped"]),
        ),
        Case::package(
            "render-output-flood",
            "output: 200 lines of a million characters each",
            with_template("{{ range until 200 }}# {{ repeat 1000000 \"x\" }}\n{{ end }}"),
            Expect::RenderRefused(vec![failed, "limit: stopped"]),
        ),
        Case::package(
            "render-forever",
            "time: ten billion loop turns that allocate little",
            with_template(
                "{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}\n",
            ),
            Expect::RenderRefused(vec![failed, "time limit"]),
        ),
        Case::package(
            "render-include-recursion",
            "the stack: a template that includes itself",
            with_template(
                "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}\n",
            ),
            Expect::RenderRefused(vec![failed]),
        ),
        Case::package(
            "render-fail-escapes",
            "the operator's terminal: `fail` with a screen clear, a title change and a forged line",
            with_template(
                "{{ fail \"\\x1b]0;owned\\x07\\x1b[2J\\nchartreg-build: wrote assets (0 charts)\" }}\n",
            ),
            Expect::RenderRefused(vec![failed]),
        ),
        Case::package(
            "render-files-outside",
            "the build machine's files: `.Files.Get` of /etc/shadow and ../../ paths (Helm reads only the chart's files)",
            with_template(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Files.Get \"/etc/shadow\" | quote }}\n  b: {{ .Files.Get \"../../../../etc/shadow\" | quote }}\n",
            ),
            Expect::Safe,
        ),
        Case::package(
            "render-network",
            "the network: `getHostByName` and `lookup` (Helm template resolves and asks no cluster)",
            with_template(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ getHostByName \"example.com\" | quote }}\n  b: {{ lookup \"v1\" \"Secret\" \"kube-system\" \"x\" | toString | quote }}\n",
            ),
            Expect::Safe,
        ),
        Case::package(
            "render-image-escapes",
            "the operator's terminal: a rendered image reference holding escape sequences",
            with_template(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n    - name: x\n      image: \"evil\\x1b[2J\\x1b]0;owned\\x07:1\"\n",
            ),
            Expect::Safe,
        ),
        Case::package(
            "render-required-missing",
            "the closure: a chart Helm refuses to render is an error, not a silent static finding",
            with_template("{{ required \"licenseKey is required\" .Values.licenseKey }}\n"),
            Expect::RenderRefused(vec![failed, "licenseKey is required"]),
        ),
    ]
}
