//! The HTML pages, rendered once with maud (compile-time checked templates; every text
//! HTML-escaped) into [`Pieces`]: the page's bytes cut where what depends on the request goes
//! (the host the browser used, its scheme, and whether chartreg itself served it over TLS), so
//! a request only joins them. Chart metadata, names, tags and image references are untrusted
//! input: each is shown as text, never as markup, with its control and bidirectional
//! formatting characters written out first (`\u{1b}`, by [`clean`]): the reader sees they
//! were there, they reorder nothing, and none is confused with the cut marks.
//!
//! The commands shown work as copied: over plain HTTP Helm's `oci://` commands take
//! `--plain-http` and skopeo `--tls-verify=false`; over chartreg's own TLS, Helm takes
//! `--ca-file ca.crt` and skopeo `--cert-dir .` (the folder holding `ca.crt`), and a line
//! says where `ca.crt` comes from. Behind a proxy that terminates TLS (`X-Forwarded-Proto:
//! https`), no flag is added: chartreg cannot know that proxy's CA.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::model::{ImageView, Overview, RepositoryView, Verified, VersionView};
use super::pieces::{CA_FILE, HOST, PLAIN_HTTP, Pieces, SCHEME, SKOPEO_TLS, TLS_NOTE, clean};
use chartreg_core::content::{Kind, Way};

/// The stylesheet, served at `/ui/style.css` (the pages' CSP allows only styles from here).
pub const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:0;color:#1d2733;background:#f6f8fa}\
header{background:#0f3d5e;color:#fff;padding:1rem 2rem}header h1{margin:0;font-size:1.6rem}\
header a{color:#fff;text-decoration:none}header p{margin:.3rem 0 0;opacity:.85}\
main{padding:1rem 2rem;max-width:72rem}\
section{background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:.8rem 1.2rem;margin:1rem 0}\
h2{font-size:1.2rem;margin:.2rem 0 .6rem}h2 a{color:#0f3d5e}\
.kind{font-size:.75rem;background:#e7eef5;border-radius:4px;padding:.1rem .4rem;margin-left:.5rem;vertical-align:middle}\
.upstream{font-size:.75rem;color:#555;vertical-align:middle}\
pre{background:#f0f3f6;padding:.5rem .8rem;border-radius:4px;overflow-x:auto;margin:.3rem 0}\
table{border-collapse:collapse;width:100%;font-size:.9rem}\
td,th{text-align:left;padding:.25rem .6rem .25rem 0;border-bottom:1px solid #eef1f4;vertical-align:top}\
code{font-family:ui-monospace,monospace;font-size:.85rem}.digest{color:#57606a}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.4rem 0}dt{color:#57606a}dd{margin:0}\
nav ul{columns:18rem;margin:.3rem 0;padding-left:1.2rem}nav li{break-inside:avoid;margin:.1rem 0}nav a{color:#0f3d5e}\
section:target{border-color:#0f3d5e;box-shadow:0 0 0 2px #0f3d5e33}\
p.ca{background:#fff8e5;border:1px solid #f0d890;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}\
h3{font-size:1rem;margin:.8rem 0 .3rem}.missing{color:#b42318;font-weight:600}";

/// `n` and the noun, singular or plural as `n` says: `1 version`, `2 versions`, `0 versions`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// From this many repositories on, `/` opens with an index of their names. A card is at
/// least about 11rem tall (its name, two commands, a table of one version), so a
/// 1080-pixel-high window shows about five: from six, some are out of sight when the page
/// opens, and their names should not be.
const INDEX_FROM: usize = 6;

fn human(size: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if size < 1024 {
        return format!("{size} B");
    }
    let mut value = size as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS.get(unit).unwrap_or(&"TiB"))
}

fn short(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

fn page(title: &str, summary: Markup, body: Markup) -> Pieces {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (clean(title)) }
                link rel="stylesheet" href="/ui/style.css";
            }
            body {
                header {
                    h1 { a href="/" { "chartreg" } }
                    p { (summary) }
                }
                main { (PreEscaped(TLS_NOTE)) (body) }
                footer { (build_line()) }
            }
        }
    };
    Pieces::cut(markup.into_string())
}

/// The footer: which build is running (version, content digest, the build's time from
/// `SOURCE_DATE_EPOCH`, git revision) and the link to its SBOM, so that an operator can
/// compare the running pod with the image they approved.
fn build_line() -> Markup {
    let this = crate::this_build::get();
    html! {
        p.build {
            "chartreg " (env!("CARGO_PKG_VERSION"))
            @if let Some(digest) = this.content_digest {
                ", content " code.content-digest { (digest) }
            }
            @if let Some(created) = this.created_rfc3339() {
                ", built " time datetime=(created) { (created) }
            }
            @if let Some(revision) = this.revision {
                " from revision " code { (revision) }
            }
            @if let Some(signer) = this.signer {
                ", its image signed by key " code.signer { (signer) }
            }
            ". What it holds and is made of: "
            a href="/sbom.spdx.json" type="application/spdx+json" { "SBOM (SPDX 2.3 JSON)" }
            ", "
            a href="/sbom.cdx.json" type="application/vnd.cyclonedx+json" { "CycloneDX 1.5 JSON" }
        }
    }
}

/// The commands that fetch `version` of `repository`, with the request's host.
fn commands(repository: &RepositoryView, version: &VersionView) -> Markup {
    let name = clean(&repository.name);
    let tag = clean(&version.tag);
    let short_name = name.rsplit('/').next().unwrap_or(&name).to_owned();
    let host = PreEscaped(HOST);
    let flags = PreEscaped(format!("{PLAIN_HTTP}{CA_FILE}"));
    html! {
        @if version.kind == Kind::Chart {
            @let chart_version = version.chart.as_ref().map_or(tag.clone(), |c| clean(&c.version));
            pre { code { "helm install " (short_name) " oci://" (host) "/" (name) " --version " (chart_version) (flags) } }
            pre { code { "helm pull oci://" (host) "/" (name) " --version " (chart_version) (flags) } }
        } @else {
            pre { code { "skopeo inspect" (PreEscaped(SKOPEO_TLS)) " docker://" (host) "/" (name) ":" (tag) } }
            @if let Some(upstream) = &repository.upstream {
                p {
                    "Nodes pull it as " code { (clean(&upstream.registry)) "/" (clean(&upstream.path)) ":" (tag) }
                    " through the files " code { "chartreg mirror-config" } " writes."
                }
            }
        }
    }
}

/// `from quay.io`, after the name of a repository kept for an upstream registry.
fn upstream(repository: &RepositoryView) -> Markup {
    html! {
        @if let Some(upstream) = &repository.upstream {
            " " span.upstream { "from " (clean(&upstream.registry)) }
        }
    }
}

/// The version the overview's commands name: the newest without a prerelease part (what
/// Helm takes as "latest"), else the newest.
fn newest_stable(repository: &RepositoryView) -> Option<&VersionView> {
    let stable = |v: &&VersionView| {
        crate::versions::order(&v.tag.replace('_', "+")).is_some_and(|o| o.pre.is_empty())
    };
    repository
        .versions
        .iter()
        .find(stable)
        .or(repository.versions.first())
}

fn kind(kind: Kind) -> Markup {
    html! { span.kind { (kind.label()) } }
}

/// `/`: every repository, its versions newest first, and how to get the newest.
pub fn overview(overview: &Overview, prefixes: &[String]) -> Pieces {
    let versions: usize = overview.repositories.iter().map(|r| r.versions.len()).sum();
    let summary = html! {
        (count(overview.repositories.len(), "repository", "repositories")) ", "
        (count(versions, "version", "versions")) ", served from " (PreEscaped(HOST))
    };
    let body = html! {
        @if overview.repositories.len() >= INDEX_FROM {
            nav aria-label="repositories" {
                section {
                    h2 { "Repositories" }
                    ul {
                        @for repository in &overview.repositories {
                            @let name = clean(&repository.name);
                            li {
                                a href={ "#" (name) } { (name) }
                                (kind(repository.kind)) " "
                                (count(repository.versions.len(), "version", "versions"))
                            }
                        }
                    }
                }
            }
        }
        @if !prefixes.is_empty() {
            section {
                h2 { "Classic Helm repositories" }
                p { "For tools that do not speak OCI (" code { "helm repo add" } ", " code { "helm search repo" } "):" }
                @for prefix in prefixes {
                    @let prefix = clean(prefix);
                    pre { code { "helm repo add chartreg " (PreEscaped(SCHEME)) "://" (PreEscaped(HOST)) "/" (prefix) (PreEscaped(CA_FILE)) } }
                }
            }
        }
        @for repository in &overview.repositories {
            section id=(clean(&repository.name)) {
                h2 {
                    a href={ "/ui/" (clean(&repository.name)) } { (clean(&repository.name)) }
                    (kind(repository.kind))
                    (upstream(repository))
                }
                @if let Some(newest) = newest_stable(repository) {
                    (commands(repository, newest))
                }
                table {
                    tr { th { "version" } th { "kind" } th { "digest" } th { "size" } }
                    @for v in &repository.versions {
                        tr {
                            td { code { (clean(&v.tag)) } }
                            td { (v.kind.label()) }
                            td.digest { code title=(v.digest) { (short(&v.digest)) } }
                            td { (human(v.size)) }
                        }
                    }
                }
            }
        }
    };
    page("chartreg", summary, body)
}

/// `/ui/<repository>`: each version's details.
pub fn repository(repository: &RepositoryView) -> Pieces {
    let name = clean(&repository.name);
    let summary = html! {
        (name) ", " (count(repository.versions.len(), "version", "versions")) ", served from "
        (PreEscaped(HOST))
        @if let Some(upstream) = &repository.upstream {
            "; images of " (clean(&upstream.registry)) ", pulled by nodes as "
            code { (clean(&upstream.registry)) "/" (clean(&upstream.path)) }
        }
    };
    let body = html! {
        @for v in &repository.versions {
            section {
                h2 { code { (clean(&v.tag)) } (kind(v.kind)) }
                (commands(repository, v))
                dl {
                    dt { "digest" } dd { code { (v.digest) } }
                    dt { "size" } dd { (human(v.size)) " (" (v.size) " bytes)" }
                    @if !v.platforms.is_empty() {
                        dt { "platforms" } dd { (clean(&v.platforms.join(", "))) }
                    }
                    @if let Some(chart) = &v.chart {
                        @if let Some(d) = &chart.description { dt { "description" } dd { (clean(d)) } }
                        @if let Some(a) = &chart.app_version { dt { "appVersion" } dd { (clean(a)) } }
                        @if let Some(o) = &chart.origin { dt { "fetched from" } dd { code { (clean(o)) } } }
                        @if let Some(h) = &chart.home { dt { "home" } dd { (clean(h)) } }
                        @if !chart.sources.is_empty() {
                            dt { "sources" } dd { @for s in &chart.sources { (clean(s)) br; } }
                        }
                        @if !chart.maintainers.is_empty() {
                            dt { "maintainers" }
                            dd {
                                @for m in &chart.maintainers {
                                    (clean(&m.name))
                                    @if let Some(e) = &m.email { " <" (clean(e)) ">" }
                                    @if let Some(u) = &m.url { " " (clean(u)) }
                                    br;
                                }
                            }
                        }
                        dt { "provenance" } dd { @if chart.signed { "signed (.prov)" } @else { "none" } }
                    }
                    @for a in &v.attached {
                        dt { (a.kind.label()) }
                        dd {
                            code { (a.digest) }
                            @if let Some(t) = &a.tag { " tag " code { (clean(t)) } }
                            @if let Some(t) = &a.artifact_type { " " (clean(t)) }
                        }
                    }
                    dt { "verification" } dd { (verification(v.verified.as_ref())) }
                }
                @if let Some(images) = &v.images {
                    (needed_images(images))
                }
            }
        }
    };
    page(&format!("{name} - chartreg"), summary, body)
}

/// What verified a version's signature at build: each signer on a line, then the warning a
/// failed signature gave; or that it was not verified.
fn verification(verified: Option<&Verified>) -> Markup {
    html! {
        @match verified {
            Some(verified) => {
                @for by in &verified.by {
                    "verified: " (clean(&by.to_string())) " at build" br;
                }
                @if let Some(warning) = &verified.warning {
                    span.missing { "signature failed, warned at build: " (clean(warning)) }
                }
            }
            None => { "not verified" }
        }
    }
}

/// The images a chart version needs: each held here or not, and how the build found it.
fn needed_images(images: &[ImageView]) -> Markup {
    let held = images.iter().filter(|i| i.held).count();
    html! {
        h3 { "Images" }
        @if images.is_empty() {
            p { "It needs no images (the build found none)." }
        } @else {
            p { (held_summary(images.len(), held)) }
            table {
                tr { th { "image" } th { "here" } th { "found" } }
                @for i in images {
                    tr {
                        td { code { (clean(&i.image)) } }
                        @if i.held { td { "held" } } @else { td.missing { "not held" } }
                        td { (found(&i.from)) }
                    }
                }
            }
        }
    }
}

/// Whether a node finds here all `needed` images of a chart version (`held` of them are).
fn held_summary(needed: usize, held: usize) -> String {
    let missing = needed.saturating_sub(held);
    match (missing, needed) {
        (0, 1) => "The image it needs is held here.".to_owned(),
        (0, _) => format!("All {needed} images it needs are held here."),
        (1, 1) => {
            "The image it needs is not held here: nodes must pull it from elsewhere.".to_owned()
        }
        (1, _) => format!(
            "1 of the {needed} images it needs is not held here: nodes must pull it from \
             elsewhere."
        ),
        _ => format!(
            "{missing} of the {needed} images it needs are not held here: nodes must pull them \
             from elsewhere."
        ),
    }
}

/// How the build found an image: `by rendering` (with any other ways), or `statically: ...`.
fn found(from: &[Way]) -> String {
    let others: Vec<&str> = from
        .iter()
        .filter(|w| **w != Way::Render)
        .map(|w| w.as_str())
        .collect();
    match (from.contains(&Way::Render), others.is_empty()) {
        (true, true) => "by rendering".to_owned(),
        (true, false) => format!("by rendering; also {}", others.join(", ")),
        (false, _) => format!("statically: {}", others.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::model::{RepositoryView, VersionView};
    use crate::web::pieces::tests::join;
    use rstest::rstest;

    #[rstest]
    #[case(0, "version", "versions", "0 versions")]
    #[case(1, "version", "versions", "1 version")]
    #[case(2, "version", "versions", "2 versions")]
    #[case(1, "repository", "repositories", "1 repository")]
    #[case(11, "repository", "repositories", "11 repositories")]
    fn counts_read_as_people_write_them(
        #[case] n: usize,
        #[case] one: &str,
        #[case] many: &str,
        #[case] want: &str,
    ) {
        assert_eq!(count(n, one, many), want);
    }

    fn overview_of(repositories: usize, versions: usize) -> Overview {
        let version = |i: usize| VersionView {
            tag: format!("1.0.{i}"),
            digest: format!("sha256:{i:064}"),
            size: 1,
            kind: Kind::Image,
            platforms: Vec::new(),
            chart: None,
            attached: Vec::new(),
            images: None,
            verified: None,
        };
        Overview {
            repositories: (0..repositories)
                .map(|r| RepositoryView {
                    name: format!("images/r{r}"),
                    upstream: None,
                    kind: Kind::Image,
                    versions: (0..versions).map(version).collect(),
                })
                .collect(),
        }
    }

    #[rstest]
    #[case(1, 1, "1 repository, 1 version, served from h")]
    #[case(1, 2, "1 repository, 2 versions, served from h")]
    #[case(3, 1, "3 repositories, 3 versions, served from h")]
    fn the_summary_counts_in_the_right_number(
        #[case] repositories: usize,
        #[case] versions: usize,
        #[case] want: &str,
    ) {
        let page = join(
            &overview(&overview_of(repositories, versions), &[]),
            "h",
            true,
            false,
        );
        assert!(page.contains(want), "{page}");
        let first = overview_of(repositories, versions).repositories.remove(0);
        let page = join(&repository(&first), "h", true, false);
        let want = format!(
            "images/r0, {}, served from h",
            count(versions, "version", "versions")
        );
        assert!(page.contains(&want), "{page}");
    }

    #[rstest]
    #[case(INDEX_FROM - 1, false)]
    #[case(INDEX_FROM, true)]
    fn many_repositories_open_with_an_index_of_links_to_their_cards(
        #[case] repositories: usize,
        #[case] index: bool,
    ) {
        let page = join(
            &overview(&overview_of(repositories, 1), &[]),
            "h",
            true,
            false,
        );
        for r in 0..repositories {
            assert!(
                page.contains(&format!("<section id=\"images/r{r}\">")),
                "{page}"
            );
            let link = format!("<a href=\"#images/r{r}\">images/r{r}</a>");
            assert_eq!(page.contains(&link), index, "{page}");
        }
        assert_eq!(page.contains("<nav"), index, "{page}");
        if index {
            let nav = page.find("<nav").unwrap();
            assert!(
                nav < page.find("<section id=").unwrap(),
                "the index comes first"
            );
        }
    }

    #[rstest]
    #[case(1, 1, "The image it needs is held here.")]
    #[case(3, 3, "All 3 images it needs are held here.")]
    #[case(1, 0, "The image it needs is not held here")]
    #[case(2, 1, "1 of the 2 images it needs is not held here")]
    #[case(3, 1, "2 of the 3 images it needs are not held here")]
    fn what_is_held_reads_as_people_write_it(
        #[case] needed: usize,
        #[case] held: usize,
        #[case] want: &str,
    ) {
        assert!(held_summary(needed, held).starts_with(want), "{want}");
    }

    #[rstest]
    #[case(&[Way::Render], "by rendering")]
    #[case(&[Way::Render, Way::Annotation, Way::Values], "by rendering; also annotation, values")]
    #[case(&[Way::Values], "statically: values")]
    #[case(&[Way::Annotation, Way::Values], "statically: annotation, values")]
    fn how_an_image_was_found_reads_as_rendering_or_statically(
        #[case] from: &[Way],
        #[case] want: &str,
    ) {
        assert_eq!(found(from), want);
    }

    #[test]
    fn a_verification_says_each_signer_then_the_warning_as_text() {
        use chartreg_core::content::{Evidence, Form};
        let both = Verified {
            by: vec![
                Evidence::Key {
                    key: "sha256:ab".into(),
                    subkey: None,
                    form: Form::Sig,
                },
                Evidence::Key {
                    key: "AB12".into(),
                    subkey: Some("CD34".into()),
                    form: Form::Prov,
                },
            ],
            warning: Some("bundle: <script>identity\u{1} mismatch".into()),
        };
        assert_eq!(
            verification(Some(&both)).into_string(),
            "verified: key sha256:ab (.sig) at build<br>\
             verified: key AB12 (subkey CD34) (.prov) at build<br>\
             <span class=\"missing\">signature failed, warned at build: bundle: \
             &lt;script&gt;identity\\u{1} mismatch</span>"
        );
        assert_eq!(verification(None).into_string(), "not verified");
    }

    /// A chart packed before names were checked (or imported from a bundle) whose name, version,
    /// description and image hold a screen clear, a title change, a CSI and a right-to-left
    /// override: both pages show each written out, and carry none of them.
    #[test]
    fn control_characters_in_a_chart_are_written_out() {
        use crate::web::model::{ChartView, ImageView};
        let chart = RepositoryView {
            name: "charts/ctl\u{1b}[2J".into(),
            upstream: None,
            kind: Kind::Chart,
            versions: vec![VersionView {
                tag: "1.0.0\u{1b}]0;owned\u{7}".into(),
                digest: format!("sha256:{:064}", 0),
                size: 1,
                kind: Kind::Chart,
                platforms: Vec::new(),
                chart: Some(ChartView {
                    name: "ctl\u{1b}[2J".into(),
                    version: "1.0.0\u{1b}]0;owned\u{7}".into(),
                    description: Some("clears the \u{202e}screen".into()),
                    ..ChartView::default()
                }),
                attached: Vec::new(),
                images: Some(vec![ImageView {
                    image: "quay.io/x\u{9b}y:1".into(),
                    repository: "quay.io/x".into(),
                    held: false,
                    from: vec![Way::Values],
                }]),
                verified: None,
            }],
        };
        let overview_page = join(
            &overview(
                &Overview {
                    repositories: vec![chart.clone()],
                },
                &[],
            ),
            "h",
            true,
            false,
        );
        let page = join(&repository(&chart), "h", true, false);
        for page in [&overview_page, &page] {
            assert!(
                !page.contains(|c: char| c.is_control() || c == '\u{202e}'),
                "{page:?}"
            );
            assert!(page.contains("charts/ctl\\u{1b}[2J"), "{page}");
            assert!(page.contains("1.0.0\\u{1b}]0;owned\\u{7}"), "{page}");
        }
        assert!(page.contains("clears the \\u{202e}screen"), "{page}");
        assert!(page.contains("quay.io/x\\u{9b}y:1"), "{page}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(5894), "5.8 KiB");
        assert_eq!(human(32 * 1024 * 1024), "32.0 MiB");
    }
}
