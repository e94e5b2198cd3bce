//! Upstream text reaches the terminal written out: a template whose `fail` message holds a
//! title change (OSC 0, ended by BEL) and a screen clear (CSI 2J), as real ESC and BEL bytes
//! (Go template string escapes), quoted by the error that fails the run and by the warning
//! `--static-fallback` gives instead; neither stream carries an ESC or BEL byte, and both show
//! the message as `\u{1b}]0;owned\u{7}\u{1b}[2Jhello`.

use super::*;

/// The template, as the chart holds it: `\x1b` and `\x07` are escapes Go's template parser
/// turns into the bytes.
const OWNED: &str = r#"{{ fail "\x1b]0;owned\x07\x1b[2Jhello" }}
"#;

/// How the message reads once escaped.
const SHOWN: &str = r"\u{1b}]0;owned\u{7}\u{1b}[2Jhello";

/// Panics if `stream` holds an ESC or BEL byte.
fn assert_no_escape_bytes(name: &str, stream: &str) {
    assert!(
        !stream.bytes().any(|b| b == 0x1b || b == 0x07),
        "{name} holds a raw ESC or BEL: {stream:?}"
    );
}

#[test]
fn helm_s_message_is_shown_escaped() {
    let helms: Vec<(&str, HelmFrom)> = ["helm3", "helm4"]
        .into_iter()
        .filter_map(|name| HelmFrom::flag(name).map(|helm| (name, helm)))
        .collect();
    for (name, helm) in helms {
        let work = Work::new();
        work.write("charts/web/templates/owned.yaml", OWNED);

        let stderr = work.images_fails(&helm, &["charts/web"]);
        assert_no_escape_bytes("stderr", &stderr);
        assert!(
            stderr.contains("Helm could not render it") && stderr.contains(SHOWN),
            "{name}: the error quotes Helm's message escaped: {stderr}"
        );

        let (stdout, stderr) = work.images_ok(&helm, &["charts/web", "--static-fallback", "--why"]);
        assert_no_escape_bytes("stdout", &stdout);
        assert_no_escape_bytes("stderr", &stderr);
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("chartreg-build: warning: web:1.0.0"))
                && stderr.contains(SHOWN),
            "{name}: the warning quotes Helm's message escaped: {stderr}"
        );
        assert!(stdout.contains(NGINX), "{name}: found statically: {stdout}");
    }
}
