//! A rendered page as the server keeps it ([`Pieces`]): its bytes cut where what depends on
//! the request goes, marked in the rendered text by control characters no shown text carries
//! ([`clean`] writes them out of untrusted text first). A request only joins the pieces with what
//! its [`Origin`] says: the host the browser used, its scheme, and whether chartreg itself
//! served it over TLS (the flags Helm and skopeo then need, and where `ca.crt` comes from).

use std::sync::LazyLock;

use bytes::{Bytes, BytesMut};
use maud::html;

/// Cut marks: a control character no text reaches the page with (see [`clean`]).
pub(super) const MARK: char = '\u{1}';
pub(super) const HOST: &str = "\u{1}host\u{1}";
pub(super) const SCHEME: &str = "\u{1}scheme\u{1}";
pub(super) const PLAIN_HTTP: &str = "\u{1}plain-http\u{1}";
pub(super) const CA_FILE: &str = "\u{1}ca-file\u{1}";
pub(super) const SKOPEO_TLS: &str = "\u{1}skopeo-tls\u{1}";
pub(super) const TLS_NOTE: &str = "\u{1}tls-note\u{1}";

/// Where a page's request-dependent text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Host,
    Scheme,
    /// ` --plain-http` when the page was asked for over plain HTTP.
    PlainHttp,
    /// ` --ca-file ca.crt` when chartreg served the page over its own TLS.
    CaFile,
    /// skopeo's ` --cert-dir .` over chartreg's TLS, ` --tls-verify=false` over plain HTTP.
    SkopeoTls,
    /// Where `ca.crt` comes from, over chartreg's TLS.
    TlsNote,
}

impl Slot {
    fn named(name: &str) -> Option<Slot> {
        Some(match name {
            "host" => Slot::Host,
            "scheme" => Slot::Scheme,
            "plain-http" => Slot::PlainHttp,
            "ca-file" => Slot::CaFile,
            "skopeo-tls" => Slot::SkopeoTls,
            "tls-note" => Slot::TlsNote,
            _ => return None,
        })
    }
}

/// The line over TLS that says where `ca.crt` comes from (no request data in it: made once).
static TLS_NOTE_HTML: LazyLock<String> = LazyLock::new(|| {
    html! {
        p.ca {
            "Over HTTPS these commands trust " code { "ca.crt" } " in the current folder: the "
            "certificate of the CA that signed this server's certificate (skopeo's "
            code { "--cert-dir ." } " takes every " code { "*.crt" } " in the folder). Installed "
            "with chartreg's Helm chart and cert-manager, it is in the TLS secret: "
            code { "kubectl -n NAMESPACE get secret helm-repository-tls -o jsonpath='{.data.ca\\.crt}' | base64 -d > ca.crt" }
        }
    }
    .into_string()
});

/// A rendered page: text, and slots for what each request says.
#[derive(Debug, Clone, Default)]
pub struct Pieces(Vec<Result<Bytes, Slot>>);

/// What a request fills the slots with.
pub struct Origin<'a> {
    /// The `Host` the request used, as text (escaped here).
    pub host: &'a str,
    /// The scheme the client used is `https` (chartreg's TLS, or a proxy's that says so).
    pub https: bool,
    /// chartreg itself served the request over TLS.
    pub tls: bool,
}

impl Pieces {
    pub(super) fn cut(page: String) -> Pieces {
        let mut pieces = Vec::new();
        for (i, part) in page.split(MARK).enumerate() {
            if i % 2 == 0 {
                pieces.push(Ok(Bytes::from(part.to_owned())));
            } else if let Some(slot) = Slot::named(part) {
                pieces.push(Err(slot));
            }
        }
        Pieces(pieces)
    }

    /// The page for a request from `origin`.
    pub fn join(&self, origin: &Origin<'_>) -> Bytes {
        let host = html! { (clean(origin.host)) }.into_string();
        let mut out = BytesMut::new();
        for piece in &self.0 {
            match piece {
                Ok(text) => out.extend_from_slice(text),
                Err(Slot::Host) => out.extend_from_slice(host.as_bytes()),
                Err(Slot::Scheme) => {
                    out.extend_from_slice(if origin.https { b"https" } else { b"http" })
                }
                Err(Slot::PlainHttp) if !origin.https => out.extend_from_slice(b" --plain-http"),
                Err(Slot::CaFile) if origin.tls => out.extend_from_slice(b" --ca-file ca.crt"),
                Err(Slot::SkopeoTls) if origin.tls => out.extend_from_slice(b" --cert-dir ."),
                Err(Slot::SkopeoTls) if !origin.https => {
                    out.extend_from_slice(b" --tls-verify=false")
                }
                Err(Slot::TlsNote) if origin.tls => out.extend_from_slice(TLS_NOTE_HTML.as_bytes()),
                Err(Slot::PlainHttp | Slot::CaFile | Slot::SkopeoTls | Slot::TlsNote) => {}
            }
        }
        out.freeze()
    }
}

/// Untrusted text as a page shows it: every control character but newline and tab, and every
/// bidirectional formatting character, written out as text (`\u{1b}`, by
/// [`chartreg_core::shown::escaped`]), so the reader sees it was there, it reorders nothing,
/// and no cut mark ([`MARK`]) is left in it.
pub(super) fn clean(text: &str) -> String {
    chartreg_core::shown::escaped(text).into_owned()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The page `pieces` make for a request to `host`.
    pub(in crate::web) fn join(pieces: &Pieces, host: &str, https: bool, tls: bool) -> String {
        let page = pieces.join(&Origin { host, https, tls });
        String::from_utf8(page.to_vec()).unwrap()
    }

    #[test]
    fn slots_take_the_escaped_host_the_scheme_and_the_flags() {
        let pieces = Pieces::cut(format!(
            "a{HOST}b{SCHEME}c{PLAIN_HTTP}d{CA_FILE}e{SKOPEO_TLS}f{TLS_NOTE}g"
        ));
        assert_eq!(
            join(&pieces, "<x>:5000", false, false),
            "a&lt;x&gt;:5000bhttpc --plain-httpde --tls-verify=falsefg"
        );
        assert_eq!(
            join(&pieces, "h\u{1}ost", true, true),
            format!(
                "ah\\u{{1}}ostbhttpscd --ca-file ca.crte --cert-dir .f{}g",
                *TLS_NOTE_HTML
            )
        );
        // Behind a proxy that terminates TLS: no flag chartreg could not stand behind.
        assert_eq!(join(&pieces, "h", true, false), "ahbhttpscdefg");
    }

    #[test]
    fn the_tls_note_says_where_ca_crt_comes_from() {
        assert!(TLS_NOTE_HTML.contains("kubectl -n NAMESPACE get secret helm-repository-tls"));
        assert!(TLS_NOTE_HTML.contains(r"jsonpath='{.data.ca\.crt}' | base64 -d &gt; ca.crt"));
        assert!(!TLS_NOTE_HTML.contains(MARK));
    }
}
