//! Headless Chromium (Debian's `chromium`) loads the pages from a running chartreg: the DOM
//! it built holds every chart and version, a screenshot is taken, a chart whose metadata is
//! hostile markup shows it as text, and with many repositories an index links to each card.

use std::path::Path;
use std::process::Command;

use super::common::{self, InProcess, Process, describe};

/// `chromium --headless ... ARGS URL`, with a profile of its own; its standard output.
fn chromium(profile: &Path, args: &[&str], url: &str) -> Vec<u8> {
    let bin = common::tool("chromium").expect("chromium (run scripts/install-tools.sh)");
    let out = common::output_of(
        Command::new(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(args)
            .arg(url),
        "chromium",
    );
    assert!(out.status.success(), "chromium {url}: {}", describe(&out));
    out.stdout
}

/// The DOM Chromium built from `url` (with extra `args`), serialised.
pub(super) fn dom(profile: &Path, args: &[&str], url: &str) -> String {
    let mut all = vec!["--dump-dom"];
    all.extend_from_slice(args);
    String::from_utf8(chromium(profile, &all, url)).expect("UTF-8 DOM")
}

#[test]
fn chromium_shows_every_chart_and_version() {
    let server = Process::start();
    let profile = tempfile::tempdir().expect("temp dir");
    let page = dom(profile.path(), &[], &format!("{}/", server.url()));
    let registry = common::assets_registry();
    for repository in registry.repositories() {
        assert!(page.contains(repository.name()), "{}", repository.name());
        for tag in repository
            .tags()
            .into_iter()
            .filter(|t| !t.starts_with("sha256-"))
        {
            assert!(
                page.contains(&format!("<code>{tag}</code>")),
                "{}:{tag}",
                repository.name()
            );
        }
    }
    assert!(
        page.contains(&format!("helm repo add chartreg {}/charts", server.url())),
        "{page}"
    );

    let repository = dom(
        profile.path(),
        &[],
        &format!("{}/ui/charts/motd", server.url()),
    );
    assert!(repository.contains("A message of the day"), "{repository}");

    let shot = profile.path().join("page.png");
    chromium(
        profile.path(),
        &[
            "--window-size=1280,1100",
            &format!("--screenshot={}", shot.display()),
        ],
        &format!("{}/", server.url()),
    );
    let png = common::read(&shot);
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a screenshot ({} bytes)",
        png.len()
    );
}

#[test]
fn chromium_shows_hostile_metadata_as_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = common::chart_folder(dir.path(), "evil", "1.0.0");
    std::fs::write(
        folder.join("Chart.yaml"),
        "apiVersion: v2\nname: evil\nversion: 1.0.0\ndescription: \"<script>document.title='owned'</script><img src=x onerror=alert(1)>\"\n",
    )
    .expect("write Chart.yaml");
    let (_out, registry) = common::packed(&[folder.to_str().expect("UTF-8")]);
    let server = InProcess::start(registry);
    let profile = tempfile::tempdir().expect("temp dir");
    let page = dom(
        profile.path(),
        &[],
        &format!("{}/ui/charts/evil", server.url()),
    );
    assert!(
        !page.contains("<script") && !page.contains("<img"),
        "{page}"
    );
    assert!(
        page.contains("&lt;script&gt;document.title='owned'&lt;/script&gt;"),
        "{page}"
    );
    assert!(
        page.contains("<title>charts/evil - chartreg</title>"),
        "the script did not run: {page}"
    );
}

#[test]
fn chromium_shows_an_index_that_links_to_every_card() {
    let dir = tempfile::tempdir().expect("temp dir");
    let names: Vec<String> = (0..6).map(|i| format!("chart{i}")).collect();
    let folders: Vec<String> = names
        .iter()
        .map(|name| {
            let folder = common::chart_folder(dir.path(), name, "1.0.0");
            folder.to_str().expect("UTF-8").to_owned()
        })
        .collect();
    let (_out, registry) = common::packed(&folders.iter().map(String::as_str).collect::<Vec<_>>());
    let server = InProcess::start(registry);
    let profile = tempfile::tempdir().expect("temp dir");
    let page = dom(profile.path(), &[], &format!("{}/", server.url()));
    let nav = page.find("<nav").expect("an index");
    for name in &names {
        let link = page
            .find(&format!("<a href=\"#charts/{name}\">charts/{name}</a>"))
            .unwrap_or_else(|| panic!("charts/{name} in the index: {page}"));
        let card = page
            .find(&format!("<section id=\"charts/{name}\">"))
            .unwrap_or_else(|| panic!("the card charts/{name} links to: {page}"));
        assert!(nav < link && link < card, "charts/{name}");
    }
}
