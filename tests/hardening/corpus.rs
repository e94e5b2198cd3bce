//! The bad-input corpus: raw requests, each with its expected outcome beside it.
//!
//! - `Rejected`: a 4xx or a closed connection (what the HTTP parser does with a request it
//!   cannot read, before the application sees it).
//! - `Error(status, code)`: the application's answer, in the OCI JSON envelope.
//! - `Status(status)`: unusual but valid, answered as it should be.
//! - `All(status, n)`: n answers on one connection (pipelining), each `status`.

use super::common;

#[derive(Debug, Clone)]
pub enum Expect {
    Rejected,
    Error(u16, &'static str),
    Status(u16),
    All(u16, usize),
}

impl Expect {
    /// How many answers to wait for.
    pub fn answers(&self) -> usize {
        match self {
            Expect::All(_, n) => *n,
            _ => 1,
        }
    }
}

pub struct Case {
    pub name: String,
    pub request: Vec<u8>,
    pub expect: Expect,
}

const ZEROS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes()
}

fn with_headers(path: &str, headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n").into_bytes()
}

/// The config blob of charts/hello 1.0.0 (a blob the server holds), and its size.
fn hello_blob() -> (String, usize) {
    let digest = common::assets_tag_digest("charts/hello", "1.0.0");
    let hex = digest.trim_start_matches("sha256:");
    let dir = common::root().join("assets/charts/hello/blobs/sha256");
    let manifest: serde_json::Value =
        serde_json::from_slice(&common::read(&dir.join(hex))).expect("manifest JSON");
    let config = manifest["config"]["digest"]
        .as_str()
        .expect("config digest")
        .to_owned();
    let size = common::read(&dir.join(config.trim_start_matches("sha256:"))).len();
    (config, size)
}

pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut add = |name: &str, request: Vec<u8>, expect: Expect| {
        cases.push(Case {
            name: name.to_owned(),
            request,
            expect,
        })
    };
    use Expect::*;
    let (blob, blob_size) = hello_blob();
    let blob_path = format!("/v2/charts/hello/blobs/{blob}");

    // Malformed request lines.
    add("no target", b"GET\r\n\r\n".to_vec(), Rejected);
    add(
        "no version (HTTP/0.9)",
        b"GET /v2/\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "extra token",
        b"GET /v2/ HTTP/1.1 extra\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "leading space",
        b" GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "two spaces",
        b"GET  /v2/ HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "tab separator",
        b"GET\t/v2/ HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "lower-case version",
        b"GET /v2/ http/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "HTTP/2.0 on HTTP/1 framing",
        b"GET /v2/ HTTP/2.0\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "HTTP/9.9",
        b"GET /v2/ HTTP/9.9\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "HTTP/1.x",
        b"GET /v2/ HTTP/1.x\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "bare LF line ends",
        b"GET /v2/ HTTP/1.1\nHost: x\n\n".to_vec(),
        Status(200),
    );
    add(
        "garbage",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
        Rejected,
    );
    add(
        "empty lines first",
        b"\r\n\r\nGET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "header without colon",
        b"GET /v2/ HTTP/1.1\r\nHost x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "space before colon",
        b"GET /v2/ HTTP/1.1\r\nHost : x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "obsolete line folding",
        b"GET /v2/ HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "NUL in a header value",
        b"GET /v2/ HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "control byte in a header value",
        b"GET /v2/ HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "NUL in the target",
        b"GET /v2/\x00 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "DEL in the target",
        b"GET /v2/\x7f HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "space in the target",
        b"GET /v2/a b HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "invalid UTF-8 in the target",
        b"GET /v2/\xff\xfe/tags/list HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "invalid UTF-8 in a name",
        b"GET /v2/charts/h\xc3llo/tags/list HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );

    // Methods: unknown, lower-case, writes.
    for method in [
        "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "FOO", "get", "Get", "PROPFIND",
    ] {
        add(
            &format!("{method} under /v2"),
            format!("{method} /v2/charts/hello/manifests/1.0.0 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").into_bytes(),
            Error(405, "UNSUPPORTED"),
        );
    }
    for method in ["POST", "TRACE", "get"] {
        add(
            &format!("{method} outside /v2"),
            format!("{method} /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                .into_bytes(),
            Error(404, "UNSUPPORTED"),
        );
    }
    add(
        "CONNECT",
        b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "method too long",
        format!("{} /v2/ HTTP/1.1\r\nHost: x\r\n\r\n", "G".repeat(10_000)).into_bytes(),
        Rejected,
    );

    // Request-target forms.
    add(
        "absolute form",
        b"GET http://example.com/v2/ HTTP/1.1\r\nHost: example.com\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "absolute form, other scheme",
        b"GET ftp://example.com/v2/ HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "asterisk form",
        b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "authority form on GET",
        b"GET example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Rejected,
    );
    add("no leading slash", get("v2/"), Rejected);

    // Traversal, encodings, odd segments.
    for (name, path) in [
        ("dot-dot", "/v2/../../etc/passwd"),
        ("encoded dot-dot", "/v2/%2e%2e/%2e%2e/etc/passwd"),
        ("encoded slash in a name", "/v2/charts%2fhello/tags/list"),
        ("encoded backslash", "/v2/charts%5chello/tags/list"),
        ("double encoding", "/v2/%252e%252e/etc/passwd/tags/list"),
        ("dot-dot in a name", "/v2/charts/../hello/tags/list"),
        ("dot segment in a name", "/v2/./charts/hello/tags/list"),
        ("empty segment in a name", "/v2/charts//hello/tags/list"),
        ("double slash after v2", "/v2//charts/hello/tags/list"),
        ("encoded NUL in a name", "/v2/charts/he%00llo/tags/list"),
        ("percent in a name", "/v2/charts/he%llo/tags/list"),
        ("backslash in a name", "/v2/charts\\hello/tags/list"),
        ("upper-case name", "/v2/Charts/Hello/tags/list"),
        ("name ending in a separator", "/v2/charts/hello-/tags/list"),
        (
            "name with a leading separator",
            "/v2/-charts/hello/tags/list",
        ),
        (
            "name with three underscores",
            "/v2/charts/he___llo/tags/list",
        ),
    ] {
        add(
            name,
            get(path),
            if path.contains("tags/list") {
                Error(400, "NAME_INVALID")
            } else {
                Error(404, "UNSUPPORTED")
            },
        );
    }
    add(
        "double slash at the start",
        get("//v2/"),
        Error(404, "UNSUPPORTED"),
    );
    add(
        "traversal to a page",
        get("/ui/../v2/"),
        Error(400, "NAME_INVALID"),
    );
    add(
        "traversal in the classic repository",
        get("/charts/..%2fhello-1.0.0.tgz"),
        Error(404, "UNSUPPORTED"),
    );
    add(
        "encoded traversal in a classic prefix",
        get("/%2e%2e/index.yaml"),
        Error(400, "NAME_INVALID"),
    );
    add(
        "unknown path",
        get("/etc/passwd"),
        Error(404, "UNSUPPORTED"),
    );
    add("favicon", get("/favicon.ico"), Error(404, "UNSUPPORTED"));

    // Names and tags at and over their limits.
    let long = |n: usize| "a".repeat(n);
    add(
        "name of 255 characters",
        get(&format!("/v2/{}/tags/list", long(255))),
        Error(404, "NAME_UNKNOWN"),
    );
    add(
        "name of 256 characters",
        get(&format!("/v2/{}/tags/list", long(256))),
        Error(400, "NAME_INVALID"),
    );
    add(
        "name of 4,000 characters",
        get(&format!("/v2/{}/tags/list", long(4000))),
        Error(400, "NAME_INVALID"),
    );
    add(
        "name of 300 components",
        get(&format!("/v2/{}/tags/list", vec!["a"; 300].join("/"))),
        Error(400, "NAME_INVALID"),
    );
    add(
        "tag of 128 characters",
        get(&format!("/v2/charts/hello/manifests/{}", long(128))),
        Error(404, "MANIFEST_UNKNOWN"),
    );
    add(
        "tag of 129 characters",
        get(&format!("/v2/charts/hello/manifests/{}", long(129))),
        Error(404, "MANIFEST_UNKNOWN"),
    );
    add(
        "version of 200 characters",
        get(&format!(
            "/v2/charts/hello/manifests/1.0.0-{}",
            "1".repeat(200)
        )),
        Error(404, "MANIFEST_UNKNOWN"),
    );
    add(
        "tag starting with a dot",
        get("/v2/charts/hello/manifests/.1"),
        Error(404, "MANIFEST_UNKNOWN"),
    );
    add(
        "tag with a slash",
        get("/v2/charts/hello/manifests/1/0"),
        Error(404, "UNSUPPORTED"),
    );
    add(
        "empty tag",
        get("/v2/charts/hello/manifests/"),
        Error(404, "UNSUPPORTED"),
    );
    add(
        "tag with plus (curl style)",
        get("/v2/charts/hello/manifests/1.0.1+build.7"),
        Status(200),
    );
    add(
        "tag with v prefix alias",
        get("/v2/charts/hello/manifests/v1.0.0"),
        Status(200),
    );
    add(
        "page for an upper-case name",
        get("/ui/Charts/Hello"),
        Error(400, "NAME_INVALID"),
    );
    add(
        "page for a long name",
        get(&format!("/ui/{}", long(300))),
        Error(400, "NAME_INVALID"),
    );
    add(
        "page for markup",
        get("/ui/%3Cscript%3E"),
        Error(400, "NAME_INVALID"),
    );

    // Digests.
    for (name, digest, expect) in [
        (
            "digest of 63 hex digits",
            "sha256:000000000000000000000000000000000000000000000000000000000000000",
            Error(400, "DIGEST_INVALID"),
        ),
        (
            "digest of 65 hex digits",
            "sha256:00000000000000000000000000000000000000000000000000000000000000000",
            Error(400, "DIGEST_INVALID"),
        ),
        (
            "upper-case hex",
            "sha256:ABCDEF0000000000000000000000000000000000000000000000000000000000",
            Error(400, "DIGEST_INVALID"),
        ),
        (
            "no algorithm",
            ":0000000000000000000000000000000000000000000000000000000000000000",
            Error(400, "DIGEST_INVALID"),
        ),
        (
            "no colon",
            "sha2560000000000000000000000000000000000000000000000000000000000000000",
            Error(400, "DIGEST_INVALID"),
        ),
        (
            "md5",
            "md5:d41d8cd98f00b204e9800998ecf8427e",
            Error(404, "BLOB_UNKNOWN"),
        ),
        (
            "sha512 of the wrong length",
            "sha512:00",
            Error(400, "DIGEST_INVALID"),
        ),
        (
            "sha512, unknown",
            &format!("sha512:{}", "0".repeat(128)),
            Error(404, "BLOB_UNKNOWN"),
        ),
        (
            "upper-case algorithm",
            "SHA256:0000000000000000000000000000000000000000000000000000000000000000",
            Error(400, "DIGEST_INVALID"),
        ),
        (
            "encoded colon",
            "sha256%3a0000000000000000000000000000000000000000000000000000000000000000",
            Error(400, "DIGEST_INVALID"),
        ),
        ("unknown sha256", ZEROS, Error(404, "BLOB_UNKNOWN")),
    ] {
        add(
            &format!("blob: {name}"),
            get(&format!("/v2/charts/hello/blobs/{digest}")),
            expect.clone(),
        );
        let referrers = match &expect {
            Error(404, _) => Status(200),
            other => other.clone(),
        };
        add(
            &format!("referrers: {name}"),
            get(&format!("/v2/charts/hello/referrers/{digest}")),
            referrers,
        );
    }
    add(
        "manifest by an unknown digest",
        get(&format!("/v2/charts/hello/manifests/{ZEROS}")),
        Error(404, "MANIFEST_UNKNOWN"),
    );
    add(
        "manifest by a bad digest",
        get("/v2/charts/hello/manifests/sha256:xyz"),
        Error(400, "DIGEST_INVALID"),
    );

    // Query strings.
    for (name, query, expect) in [
        ("n=0", "n=0", Status(200)),
        (
            "n huge",
            "n=99999999999999999999999999",
            Error(400, "PAGINATION_NUMBER_INVALID"),
        ),
        ("n = usize::MAX", "n=18446744073709551615", Status(200)),
        (
            "n negative",
            "n=-1",
            Error(400, "PAGINATION_NUMBER_INVALID"),
        ),
        (
            "n not a number",
            "n=abc",
            Error(400, "PAGINATION_NUMBER_INVALID"),
        ),
        (
            "n with a plus (a space, decoded)",
            "n=+1",
            Error(400, "PAGINATION_NUMBER_INVALID"),
        ),
        ("n empty", "n=", Error(400, "PAGINATION_NUMBER_INVALID")),
        (
            "n repeated",
            "n=1&n=2",
            Error(400, "PAGINATION_NUMBER_INVALID"),
        ),
        ("last with odd bytes", "last=%ff%fe%00", Status(200)),
        (
            "last of 10,000 bytes",
            &format!("last={}", "z".repeat(10_000)),
            Status(200),
        ),
        (
            "last repeated",
            "last=a&last=b",
            Error(400, "PAGINATION_NUMBER_INVALID"),
        ),
        (
            "bad percent encoding",
            "n=%zz",
            Error(400, "PAGINATION_NUMBER_INVALID"),
        ),
        ("unknown keys", "foo=bar&baz", Status(200)),
        ("only an ampersand", "&", Status(200)),
        ("a thousand keys", &vec!["k=v"; 1000].join("&"), Status(200)),
    ] {
        add(
            &format!("tags list: {name}"),
            get(&format!("/v2/charts/hello/tags/list?{query}")),
            expect.clone(),
        );
        add(
            &format!("catalog: {name}"),
            get(&format!("/v2/_catalog?{query}")),
            expect,
        );
    }
    add(
        "referrers: artifactType twice",
        get(&format!(
            "/v2/charts/hello/referrers/{ZEROS}?artifactType=a&artifactType=b"
        )),
        Error(400, "QUERY_INVALID"),
    );
    add(
        "referrers: artifactType odd bytes",
        get(&format!(
            "/v2/charts/hello/referrers/{ZEROS}?artifactType=%ff"
        )),
        Status(200),
    );

    // Range headers on a blob.
    let past = blob_size + 10;
    for (name, range, expect) in [
        ("one range", "bytes=0-9".to_owned(), Status(206)),
        ("suffix range", "bytes=-5".to_owned(), Status(206)),
        ("open range", "bytes=5-".to_owned(), Status(206)),
        (
            "several ranges (served whole)",
            "bytes=0-1,3-4".to_owned(),
            Status(200),
        ),
        ("negative start", "bytes=-1-5".to_owned(), Status(200)),
        (
            "start past the end",
            format!("bytes={past}-"),
            Error(416, "RANGE_INVALID"),
        ),
        (
            "end before start",
            "bytes=9-1".to_owned(),
            Error(416, "RANGE_INVALID"),
        ),
        (
            "end past u64",
            "bytes=0-18446744073709551616".to_owned(),
            Status(200),
        ),
        (
            "start past u64",
            "bytes=18446744073709551616-".to_owned(),
            Status(200),
        ),
        (
            "empty suffix",
            "bytes=-0".to_owned(),
            Error(416, "RANGE_INVALID"),
        ),
        (
            "spaces around = (read leniently)",
            "bytes = 0-1".to_owned(),
            Status(206),
        ),
        (
            "unknown unit (ignored)",
            "items=0-1".to_owned(),
            Status(200),
        ),
        ("no unit", "0-1".to_owned(), Status(200)),
        ("empty", "".to_owned(), Status(200)),
        ("garbage", "bytes=a-b".to_owned(), Status(200)),
        (
            "huge list",
            format!("bytes={}", vec!["0-1"; 2000].join(",")),
            Status(200),
        ),
    ] {
        add(
            &format!("range: {name}"),
            with_headers(&blob_path, &format!("Range: {range}\r\n")),
            expect,
        );
    }
    add(
        "two Range headers (the first is read)",
        with_headers(&blob_path, "Range: bytes=0-1\r\nRange: bytes=2-3\r\n"),
        Status(206),
    );

    // Headers: sizes, counts, framing.
    add(
        "one header of 64 KiB",
        with_headers("/v2/", &format!("X-Big: {}\r\n", "a".repeat(64 * 1024))),
        Status(431),
    );
    add(
        "headers of 20 KiB in all",
        with_headers(
            "/v2/",
            &format!(
                "X-A: {}\r\nX-B: {}\r\n",
                "a".repeat(10_000),
                "b".repeat(10_000)
            ),
        ),
        Status(431),
    );
    add(
        "200 headers",
        with_headers(
            "/v2/",
            &(0..200)
                .map(|i| format!("X-H{i}: v\r\n"))
                .collect::<String>(),
        ),
        Rejected,
    );
    add(
        "90 headers",
        with_headers(
            "/v2/",
            &(0..90)
                .map(|i| format!("X-H{i}: v\r\n"))
                .collect::<String>(),
        ),
        Status(200),
    );
    add(
        "header name of 8 KiB",
        with_headers("/v2/", &format!("{}: v\r\n", "X".repeat(8192))),
        Status(200),
    );
    add(
        "target of 20 KiB",
        get(&format!("/v2/{}", "a".repeat(20_000))),
        Status(431),
    );
    add(
        "conflicting Content-Length",
        with_headers("/v2/", "Content-Length: 1\r\nContent-Length: 2\r\n"),
        Rejected,
    );
    add(
        "negative Content-Length",
        with_headers("/v2/", "Content-Length: -1\r\n"),
        Rejected,
    );
    add(
        "Content-Length not a number",
        with_headers("/v2/", "Content-Length: abc\r\n"),
        Rejected,
    );
    add(
        "Content-Length and chunked",
        with_headers(
            "/v2/",
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        ),
        Rejected,
    );
    add(
        "unknown Transfer-Encoding",
        with_headers("/v2/", "Transfer-Encoding: gzip\r\n"),
        Rejected,
    );
    add("chunked body on GET", b"GET /v2/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(), Status(200));
    add("bad chunk size", b"GET /v2/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n".to_vec(), Status(200));
    add(
        "body on GET",
        b"GET /v2/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
        Status(200),
    );
    add(
        "no Host on HTTP/1.1 (RFC 9112: 400)",
        b"GET /v2/ HTTP/1.1\r\n\r\n".to_vec(),
        Rejected,
    );
    add(
        "two Host headers (RFC 9112: 400)",
        with_headers("/v2/", "Host: y\r\n"),
        Rejected,
    );
    add(
        "Host with markup, on a page",
        b"GET / HTTP/1.1\r\nHost: <script>\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "Expect: 100-continue on GET",
        with_headers("/v2/", "Expect: 100-continue\r\n"),
        Status(200),
    );
    add(
        "odd Accept",
        with_headers("/v2/charts/hello/manifests/1.0.0", "Accept: */*;q=\x7e\r\n"),
        Status(200),
    );
    add(
        "odd If-None-Match",
        with_headers(
            "/v2/charts/hello/manifests/1.0.0",
            "If-None-Match: \"\", W/, *x\r\n",
        ),
        Status(200),
    );
    add(
        "If-None-Match: *",
        with_headers("/v2/charts/hello/manifests/1.0.0", "If-None-Match: *\r\n"),
        Status(304),
    );
    add(
        "Upgrade to h2c",
        with_headers(
            "/v2/",
            "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
        ),
        Status(200),
    );
    add(
        "HTTP/2 preface on a plain port",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        Rejected,
    );

    // HTTP versions and pipelining.
    add(
        "HTTP/1.0",
        b"GET /v2/ HTTP/1.0\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "HTTP/1.0 keep-alive",
        b"GET /v2/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "HTTP/1.0 HEAD",
        b"HEAD /v2/charts/hello/manifests/1.0.0 HTTP/1.0\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "pipelined GETs",
        [
            get("/v2/"),
            get("/v2/_catalog"),
            get("/v2/charts/hello/tags/list"),
        ]
        .concat(),
        All(200, 3),
    );
    add(
        "pipelined HEAD then GET",
        [
            b"HEAD /v2/_catalog HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            get("/v2/"),
        ]
        .concat(),
        All(200, 2),
    );
    add(
        "pipelined 100 requests",
        get("/v2/").repeat(100),
        All(200, 100),
    );
    add(
        "pipelined good then bad",
        [get("/v2/"), b"GET /v2/\x00 HTTP/1.1\r\n\r\n".to_vec()].concat(),
        Status(200),
    );
    add(
        "HEAD of a blob",
        format!("HEAD {blob_path} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes(),
        Status(200),
    );
    add(
        "HEAD of a page",
        b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Status(200),
    );
    add(
        "HEAD of the classic index",
        b"HEAD /charts/index.yaml HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Status(200),
    );

    cases
}
