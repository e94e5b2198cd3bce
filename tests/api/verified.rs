//! What was verified at build (`verification.json`), as the pages, their JSON and `chartreg ls`
//! show it, in-process: a chart version verified by a key (`.prov`), an image tag by a keyless
//! identity (bundle), a failed signature let through with a warning, versions without a record
//! and a record of other bytes ("not verified"); content without the file ("not verified"
//! everywhere, `verified: null`); a file the loader cannot read refused, naming it.

use super::*;
use common::{IDENTITY, ISSUER, PROV_KEY, WARNING};

fn text(r: &Reply) -> String {
    String::from_utf8(r.body.to_vec()).expect("UTF-8")
}

/// The section of a repository page about `tag`.
fn section<'a>(html: &'a str, tag: &str) -> &'a str {
    let at = html
        .find(&format!("<h2><code>{tag}</code>"))
        .unwrap_or_else(|| panic!("no section for {tag}: {html}"));
    html[at..].split("</section>").next().unwrap()
}

/// The `<dd>` after `<dt>verification</dt>` in a version's section.
fn signature(section: &str) -> &str {
    let at = section
        .find("<dt>verification</dt><dd>")
        .unwrap_or_else(|| panic!("no verification line: {section}"));
    let rest = &section[at + "<dt>verification</dt><dd>".len()..];
    rest.split("</dd>").next().unwrap()
}

fn key() -> Value {
    json!({"by": [{"by": "key", "key": PROV_KEY, "form": "prov"}], "warning": null})
}

fn identity() -> Value {
    json!({
        "by": [{"by": "identity", "identity": IDENTITY, "issuer": ISSUER, "form": "bundle"}],
        "warning": null,
    })
}

fn warned() -> Value {
    json!({"by": [], "warning": WARNING})
}

/// A repository, a tag, and what its page's JSON and `ls --json` say verified it.
type Expected = (&'static str, &'static str, fn() -> Value);

/// Every tag of [`common::verified_content`].
const EXPECTED: [Expected; 6] = [
    ("charts/one", "1.0.0", key),
    ("charts/one", "2.0.0", Value::default),
    ("charts/one", "3.0.0_build.1", warned),
    ("images/signed", "v1", identity),
    ("images/signed", "v2", Value::default),
    ("images/plain", "v1", Value::default),
];

#[actix_web::test]
async fn a_versions_page_says_what_verified_it_at_build() {
    let content = common::verified_content();
    let charts = text(&call(content.registry(), Method::GET, "/ui/charts/one", &[]).await);
    assert_eq!(
        signature(section(&charts, "1.0.0")),
        format!("verified: key {PROV_KEY} (.prov) at build<br>")
    );
    assert_eq!(signature(section(&charts, "2.0.0")), "not verified");
    assert_eq!(
        signature(section(&charts, "3.0.0_build.1")),
        format!(r#"<span class="missing">signature failed, warned at build: {WARNING}</span>"#)
    );
    let signed = text(&call(content.registry(), Method::GET, "/ui/images/signed", &[]).await);
    assert_eq!(
        signature(section(&signed, "v1")),
        format!("verified: identity {IDENTITY} (issuer {ISSUER}, bundle) at build<br>")
    );
    // Its record is of another digest: it says nothing of these bytes.
    assert_eq!(signature(section(&signed, "v2")), "not verified");
    let plain = text(&call(content.registry(), Method::GET, "/ui/images/plain", &[]).await);
    assert_eq!(signature(section(&plain, "v1")), "not verified");
}

#[actix_web::test]
async fn the_json_of_every_version_carries_what_verified_it() {
    let content = common::verified_content();
    let overview = call(
        content.registry(),
        Method::GET,
        "/",
        &[("Accept", "application/json")],
    )
    .await
    .json();
    for (repository, tag, expected) in EXPECTED {
        let page = call(
            content.registry(),
            Method::GET,
            &format!("/ui/{repository}"),
            &[("Accept", "application/json")],
        )
        .await
        .json();
        let version = |page: &Value| -> Value {
            page["versions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["tag"] == tag)
                .unwrap_or_else(|| panic!("{repository}:{tag} in {page}"))
                .clone()
        };
        let on_page = version(&page);
        assert_eq!(on_page["verified"], expected(), "{repository}:{tag}");
        assert!(on_page.get("verified").is_some(), "null, not absent");
        let listed = overview["repositories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == repository)
            .unwrap();
        assert_eq!(
            version(listed)["verified"],
            expected(),
            "{repository}:{tag}"
        );
    }
}

/// `chartreg ls --json` prints these rows, and `chartreg ls` this table (the binary's
/// listing of the committed content is in tests/cli.rs).
#[test]
fn ls_rows_and_table_say_what_verified_each_tag() {
    let registry = common::verified_content().registry();
    let rows = chartreg::inspect::rows(&registry).unwrap();
    let json = serde_json::to_value(&rows).unwrap();
    let json = json.as_array().unwrap();
    assert_eq!(json.len(), EXPECTED.len(), "{json:?}");
    for (repository, tag, expected) in EXPECTED {
        let row = json
            .iter()
            .find(|r| r["repository"] == repository && r["tag"] == tag)
            .unwrap_or_else(|| panic!("{repository}:{tag} in {json:?}"));
        assert_eq!(row["verified"], expected(), "{repository}:{tag}");
    }
    let mut table = Vec::new();
    chartreg::inspect::write_table(&mut table, &rows, 0).unwrap();
    let table = String::from_utf8(table).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "REPOSITORY",
            "TAG",
            "KIND",
            "PLATFORMS",
            "DIGEST",
            "SIZE",
            "VERIFIED"
        ],
        "{table}"
    );
    let words: Vec<(&str, &str, String)> = lines[1..lines.len() - 1]
        .iter()
        .map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            (cols[0], cols[1], cols[6..].join(" "))
        })
        .collect();
    let word = |repository: &str, tag: &str| {
        words
            .iter()
            .find(|(r, t, _)| *r == repository && *t == tag)
            .map(|(_, _, w)| w.as_str())
            .unwrap_or_else(|| panic!("{repository}:{tag} in {table}"))
    };
    assert_eq!(word("charts/one", "1.0.0"), "verified");
    assert_eq!(word("charts/one", "2.0.0"), "not verified");
    assert_eq!(word("charts/one", "3.0.0_build.1"), "warned");
    assert_eq!(word("images/signed", "v1"), "verified");
    assert_eq!(word("images/signed", "v2"), "not verified");
    assert_eq!(word("images/plain", "v1"), "not verified");
}

/// The committed content has no record: every version's page says "not verified", every
/// JSON version and `ls` tag row has `verified: null`, and referrers (no tag) have no key.
#[actix_web::test]
async fn content_without_the_file_shows_every_version_not_verified() {
    let registry = common::assets_registry();
    assert!(!registry.has_verification());
    let overview = call(
        common::assets_registry(),
        Method::GET,
        "/",
        &[("Accept", "application/json")],
    )
    .await
    .json();
    let mut versions = 0;
    for repository in overview["repositories"].as_array().unwrap() {
        let name = repository["name"].as_str().unwrap();
        let html = text(&get(&format!("/ui/{name}")).await);
        for version in repository["versions"].as_array().unwrap() {
            assert!(version["verified"].is_null(), "{version}");
            assert!(version.get("verified").is_some(), "{version}");
            let tag = version["tag"].as_str().unwrap();
            assert_eq!(
                signature(section(&html, tag)),
                "not verified",
                "{name}:{tag}"
            );
            versions += 1;
        }
    }
    assert!(versions > 5, "{overview}");
    let rows = serde_json::to_value(chartreg::inspect::rows(&registry).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(rows.iter().any(|r| r["tag"].is_null()), "referrers listed");
    for row in rows {
        match row["tag"].is_null() {
            true => assert!(row.get("verified").is_none(), "{row}"),
            false => assert!(row.get("verified").is_some_and(Value::is_null), "{row}"),
        }
    }
}

/// A record the loader cannot read is content that cannot be served, naming the file.
#[test]
fn a_record_the_loader_cannot_read_is_refused_naming_it() {
    let content = common::verified_content();
    let truncated = &content.record[..content.record.len() / 2];
    let unknown = content
        .record
        .replacen("\"form\": \"prov\"", "\"form\": \"gpg\"", 1);
    assert_ne!(unknown, content.record);
    for bad in [truncated, &unknown] {
        let mut files = content.files.clone();
        files.push(HeldFile::new(
            chartreg_core::content::VERIFICATION_FILE,
            bad.as_bytes().to_vec(),
        ));
        let refused = Registry::from_files(files).expect_err("refused");
        assert!(
            refused.to_string().starts_with("verification.json: "),
            "{refused}"
        );
    }
}
