//! The pages for people and the classic Helm repository, in-process: content types, the
//! Content-Security-Policy, `Vary: Accept` and JSON, the host spliced in escaped, the index
//! as `helm repo index` writes it, packages as the chart layers' bytes, ETags and 304s, and
//! hostile chart metadata shown as text; the commands' flags over plain HTTP, chartreg's TLS and a
//! TLS proxy; counts in the singular for one; an index of the repositories when there are many.

use super::*;

const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn text(r: &Reply) -> String {
    String::from_utf8(r.body.to_vec()).expect("UTF-8")
}

#[actix_web::test]
async fn the_overview_lists_every_repository_and_version_with_commands() {
    let r = call(
        common::assets_registry(),
        Method::GET,
        "/",
        &[("Host", "regist.ry:5000")],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    assert_eq!(r.header("vary"), Some("Accept"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let html = text(&r);
    assert!(!html.contains("<script"), "no scripts: {html}");
    for repository in common::assets_registry().repositories() {
        assert!(
            html.contains(&format!("href=\"/ui/{}\"", repository.name())),
            "{}",
            repository.name()
        );
        // cosign's tag-schema signatures are shown with what they sign, on its page.
        for tag in repository
            .tags()
            .into_iter()
            .filter(|t| !t.starts_with("sha256-"))
        {
            assert!(
                html.contains(&format!("<code>{tag}</code>")),
                "{}:{tag}",
                repository.name()
            );
        }
    }
    assert!(
        html.contains(
            "helm pull oci://regist.ry:5000/charts/hello --version 1.0.1+build.7 --plain-http"
        ),
        "the newest stable version, with the request's host: {html}"
    );
    assert!(
        html.contains("helm repo add chartreg http://regist.ry:5000/charts"),
        "{html}"
    );
    // Newest first.
    let hello = html.split("href=\"/ui/charts/hello\"").nth(1).unwrap();
    let hello = hello.split("<section").next().unwrap();
    let at = |tag: &str| hello.find(&format!("<code>{tag}</code>")).expect(tag);
    assert!(at("1.1.0-rc.1") < at("1.0.0") && at("1.0.0") < at("0.1.0"));
}

#[actix_web::test]
async fn the_host_is_text_and_never_markup() {
    let r = call(
        common::assets_registry(),
        Method::GET,
        "/",
        &[("Host", "<script>x</script>")],
    )
    .await;
    let html = text(&r);
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"), "{html}");
}

#[actix_web::test]
async fn json_is_the_same_information() {
    let r = call(
        common::assets_registry(),
        Method::GET,
        "/",
        &[("Accept", "application/json")],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("vary"), Some("Accept"));
    let v = r.json();
    let hello = v["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == HELLO)
        .expect("hello");
    assert_eq!(hello["kind"], "chart");
    let tags: Vec<&str> = hello["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["tag"].as_str().unwrap())
        .collect();
    assert_eq!(
        tags,
        ["1.1.0-rc.1", "1.0.1_build.7", "1.0.0", "0.2.0", "0.1.0"]
    );
    let d = tagged(HELLO, "1.0.0");
    let v100 = &hello["versions"][2];
    assert_eq!(v100["digest"], d.digest.as_str());
    assert_eq!(v100["chart"]["version"], "1.0.0");

    let r = call(
        common::assets_registry(),
        Method::GET,
        "/ui/images/sample",
        &[("Accept", "application/json")],
    )
    .await;
    let v = r.json();
    assert_eq!(v["name"], "images/sample");
    let v1 = v["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["tag"] == "v1")
        .expect("v1");
    assert_eq!(v1["kind"], "image-index");
    assert!(v1["platforms"].as_array().unwrap().len() >= 2, "{v1}");
    let kinds: Vec<&str> = v1["attached"]
        .as_array()
        .expect("attached")
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"signature") && kinds.contains(&"sbom"),
        "{kinds:?}"
    );
}

#[actix_web::test]
async fn a_repository_page_shows_each_versions_details() {
    let r = get("/ui/charts/motd").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    let html = text(&r);
    let d = tagged("charts/motd", "1.0.0");
    assert!(html.contains(d.digest.as_str()), "{html}");
    assert!(html.contains("A message of the day"), "{html}");
    assert!(html.contains("signed (.prov)"), "{html}");
    assert!(html.contains("Chartreg Maintainers"), "{html}");
    let sample = text(&get("/ui/images/sample").await);
    for tag in common::assets_registry()
        .repositories()
        .find(|r| r.name() == "images/sample")
        .unwrap()
        .tags()
    {
        assert!(
            sample.contains(&format!("<code>{tag}</code>")),
            "images/sample:{tag}"
        );
    }
    let style = get("/ui/style.css").await;
    assert_eq!(style.status, StatusCode::OK);
    assert_eq!(
        style.header("content-type"),
        Some("text/css; charset=utf-8")
    );
    assert!(text(&style).contains("body{"));
}

/// A chart whose metadata is hostile markup, packed from a folder.
pub(super) fn hostile_registry() -> Registry {
    let dir = tempfile::tempdir().unwrap();
    let folder = common::chart_folder(dir.path(), "evil", "1.0.0");
    std::fs::write(
        folder.join("Chart.yaml"),
        "apiVersion: v2\nname: evil\nversion: 1.0.0\ndescription: \"<script>alert('x')</script> & <b>bold</b>\"\nhome: \"javascript:alert(1)\"\nmaintainers:\n  - name: \"<img src=x onerror=alert(1)>\"\n",
    )
    .unwrap();
    common::packed(&[folder.to_str().unwrap()]).1
}

#[actix_web::test]
async fn hostile_chart_metadata_is_shown_as_text() {
    for uri in ["/", "/ui/charts/evil"] {
        let r = call(hostile_registry(), Method::GET, uri, &[]).await;
        let html = text(&r);
        assert!(!html.contains("<script"), "{uri}: {html}");
        assert!(!html.contains("<img"), "{uri}: {html}");
        assert!(!html.contains("<b>"), "{uri}: {html}");
        if uri != "/" {
            assert!(
                html.contains(
                    "&lt;script&gt;alert('x')&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
                ),
                "{html}"
            );
            assert!(!html.contains("href=\"javascript"), "{html}");
        }
    }
}

#[actix_web::test]
async fn the_classic_index_is_what_helm_repo_index_writes() {
    let r = get("/charts/index.yaml").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/yaml"));
    let etag = r.header("etag").expect("an ETag").to_owned();
    assert_eq!(etag, format!("\"{}\"", common::sha256(&r.body)));
    let index: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&r.body).unwrap();
    assert_eq!(index["apiVersion"], "v1");
    let hello = index["entries"]["hello"]
        .as_sequence()
        .expect("hello entries");
    let versions: Vec<&str> = hello
        .iter()
        .map(|e| e["version"].as_str().unwrap())
        .collect();
    assert_eq!(
        versions,
        ["1.1.0-rc.1", "1.0.1+build.7", "1.0.0", "0.2.0", "0.1.0"]
    );
    for entry in hello {
        let version = entry["version"].as_str().unwrap();
        let file = format!("hello-{version}.tgz");
        assert_eq!(entry["urls"][0].as_str(), Some(file.as_str()));
        let package = common::read(&common::root().join("charts").join(&file));
        assert_eq!(
            entry["digest"].as_str().map(|d| format!("sha256:{d}")),
            Some(common::sha256(&package))
        );
        assert!(entry["created"].as_str().is_some());
        let served = get(&format!("/charts/{file}")).await;
        assert_eq!(served.status, StatusCode::OK);
        assert_eq!(served.header("content-type"), Some("application/gzip"));
        assert!(served.body == package, "{file} is the package's bytes");
    }
    assert!(
        index["entries"].get("sample").is_none(),
        "only charts are listed"
    );
    let generated = index["generated"].as_str().unwrap();
    assert!(
        hello
            .iter()
            .all(|e| e["created"].as_str().unwrap() <= generated)
    );

    let prov = get("/charts/motd-1.0.0.tgz.prov").await;
    assert_eq!(prov.status, StatusCode::OK);
    assert!(prov.body == common::read(&common::root().join("charts/motd-1.0.0.tgz.prov")));
    assert_eq!(
        get("/charts/hello-1.0.0.tgz.prov").await.status,
        StatusCode::NOT_FOUND
    );

    let again = call(
        common::assets_registry(),
        Method::GET,
        "/charts/index.yaml",
        &[("If-None-Match", &etag)],
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    let head = call(
        common::assets_registry(),
        Method::HEAD,
        "/charts/index.yaml",
        &[],
    )
    .await;
    assert_eq!(head.status, StatusCode::OK);
    let post = call(
        common::assets_registry(),
        Method::POST,
        "/charts/index.yaml",
        &[],
    )
    .await;
    post.assert_error(StatusCode::NOT_FOUND, "UNSUPPORTED");
}

/// A chart (`charts/one`, one version) and `images` one-tag image repositories.
fn chart_and_images(images: usize) -> Registry {
    let dir = tempfile::tempdir().unwrap();
    let folder = common::chart_folder(dir.path(), "one", "1.0.0");
    let (out, _) = common::packed(&[folder.to_str().unwrap()]);
    let mut files = common::files_in(out.path());
    for i in 0..images {
        let layout = common::generated_layout(
            &format!("images/r{i}"),
            "v1",
            ("application/vnd.oci.image.config.v1+json", b"{}"),
            &[(
                "application/vnd.oci.image.layer.v1.tar",
                format!("{i}").as_bytes(),
            )],
        );
        files.extend(layout.files);
    }
    Registry::from_files(files).unwrap()
}

#[actix_web::test]
async fn the_commands_take_the_flags_the_connection_calls_for() {
    let host = [("Host", "regist.ry:5000")];
    let plain = text(&call(chart_and_images(1), Method::GET, "/", &host).await);
    for want in [
        "helm repo add chartreg http://regist.ry:5000/charts</code>",
        "helm pull oci://regist.ry:5000/charts/one --version 1.0.0 --plain-http</code>",
        "helm install one oci://regist.ry:5000/charts/one --version 1.0.0 --plain-http</code>",
        "skopeo inspect --tls-verify=false docker://regist.ry:5000/images/r0:v1</code>",
    ] {
        assert!(plain.contains(want), "over plain HTTP, {want}: {plain}");
    }
    assert!(!plain.contains("ca.crt"), "{plain}");

    // Over chartreg's own TLS (what its listener says of the connection): tests/tls/pages.rs.

    // Behind a proxy that terminates TLS, chartreg knows no CA file to name.
    let proxied = text(
        &call(
            chart_and_images(1),
            Method::GET,
            "/",
            &[("Host", "regist.ry"), ("X-Forwarded-Proto", "https")],
        )
        .await,
    );
    for want in [
        "helm repo add chartreg https://regist.ry/charts</code>",
        "helm pull oci://regist.ry/charts/one --version 1.0.0</code>",
        "skopeo inspect docker://regist.ry/images/r0:v1</code>",
    ] {
        assert!(proxied.contains(want), "behind a proxy, {want}: {proxied}");
    }
    assert!(!proxied.contains("ca.crt"), "{proxied}");
}

#[actix_web::test]
async fn one_of_a_thing_is_counted_in_the_singular() {
    let overview = text(&call(chart_and_images(0), Method::GET, "/", &[]).await);
    assert!(
        overview.contains("1 repository, 1 version, served from"),
        "{overview}"
    );
    let page = text(&call(chart_and_images(0), Method::GET, "/ui/charts/one", &[]).await);
    assert!(
        page.contains("charts/one, 1 version, served from"),
        "{page}"
    );
    let overview = text(&call(chart_and_images(1), Method::GET, "/", &[]).await);
    assert!(
        overview.contains("2 repositories, 2 versions, served from"),
        "{overview}"
    );
}

#[actix_web::test]
async fn many_repositories_open_with_an_index_of_their_names() {
    let r = call(chart_and_images(5), Method::GET, "/", &[]).await;
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    let html = text(&r);
    assert!(!html.contains("<script"), "{html}");
    let index = html.find("<nav").expect("an index");
    for name in ["charts/one", "images/r0", "images/r4"] {
        let link = html
            .find(&format!("<a href=\"#{name}\">{name}</a>"))
            .unwrap_or_else(|| panic!("{name} in the index: {html}"));
        let card = html
            .find(&format!("<section id=\"{name}\">"))
            .unwrap_or_else(|| panic!("{name}'s card: {html}"));
        assert!(index < link && link < card, "{name}: index first");
    }
    assert!(html.contains("1 version</li>"), "{html}");
    // A few repositories fit on the screen: no index.
    let few = text(&call(chart_and_images(4), Method::GET, "/", &[]).await);
    assert!(!few.contains("<nav"), "{few}");
}

/// The content of `common::images_content` (`images: {closure: warn}`: pack warns of the image
/// it does not hold, and packs), packed with no Helm (the images found statically), and the
/// digest the chart pins.
fn images_registry() -> (Registry, String) {
    let dir = tempfile::tempdir().unwrap();
    let content = common::images_content(dir.path(), "{closure: warn}");
    let (_out, registry) = common::packed_images(&content.config, None);
    (registry, content.agent_digest)
}

#[actix_web::test]
async fn a_chart_versions_page_lists_the_images_it_needs_held_or_not() {
    let (registry, digest) = images_registry();
    let html = text(&call(registry, Method::GET, "/ui/charts/app", &[]).await);
    assert!(html.contains("<h3>Images</h3>"), "{html}");
    assert!(
        html.contains("1 of the 3 images it needs is not held here"),
        "{html}"
    );
    let row = |image: &str| {
        let at = html
            .find(&format!("<td><code>{image}</code></td>"))
            .unwrap_or_else(|| panic!("{image}: {html}"));
        html[at..].split("</tr>").next().unwrap().to_owned()
    };
    let agent = row("quay.io/example/agent:v1");
    assert!(
        agent.contains("<td>held</td>") && agent.contains("statically: values"),
        "{agent}"
    );
    let pinned = row(&format!("quay.io/example/agent:v0@{digest}"));
    assert!(
        pinned.contains("<td>held</td>"),
        "pulled by digest: {pinned}"
    );
    let busybox = row("docker.io/library/busybox:1.36");
    assert!(
        busybox.contains(r#"<td class="missing">not held</td>"#),
        "{busybox}"
    );
    // A repository without the list shows no images part.
    let agent_page = text(
        &call(
            images_registry().0,
            Method::GET,
            "/ui/quay.io/example/agent",
            &[],
        )
        .await,
    );
    assert!(!agent_page.contains("<h3>Images</h3>"), "{agent_page}");
    for uri in ["/ui/charts/hello", "/ui/charts/motd"] {
        let page = text(&get(uri).await);
        assert!(!page.contains("<h3>Images</h3>"), "{uri}: {page}");
    }
}

#[actix_web::test]
async fn the_json_of_a_chart_version_carries_its_images() {
    let (registry, digest) = images_registry();
    let r = call(
        registry,
        Method::GET,
        "/ui/charts/app",
        &[("Accept", "application/json")],
    )
    .await;
    let v = r.json();
    assert_eq!(
        v["versions"][0]["images"],
        json!([
            {
                "image": "docker.io/library/busybox:1.36",
                "repository": "docker.io/library/busybox",
                "held": false,
                "from": ["values"],
            },
            {
                "image": format!("quay.io/example/agent:v0@{digest}"),
                "repository": "quay.io/example/agent",
                "held": true,
                "from": ["values"],
            },
            {
                "image": "quay.io/example/agent:v1",
                "repository": "quay.io/example/agent",
                "held": true,
                "from": ["values"],
            },
        ])
    );
    // The overview's JSON is the same information.
    let (registry, _) = images_registry();
    let overview = call(
        registry,
        Method::GET,
        "/",
        &[("Accept", "application/json")],
    )
    .await
    .json();
    let app = overview["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "charts/app")
        .unwrap();
    assert_eq!(app["versions"][0]["images"], v["versions"][0]["images"]);
    // Content without the list: no `images` key anywhere.
    let plain = call(
        common::assets_registry(),
        Method::GET,
        "/",
        &[("Accept", "application/json")],
    )
    .await;
    assert!(
        !String::from_utf8_lossy(&plain.body).contains("\"images\""),
        "no images key"
    );
}

/// `chartreg ls --json` prints these rows (the binary's listing of this content is in
/// tests/embed): a chart version's row carries its images, no other row has the key.
#[test]
fn ls_rows_of_chart_versions_carry_their_images() {
    let (registry, _) = images_registry();
    let rows = serde_json::to_value(chartreg::inspect::rows(&registry).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let app = rows
        .iter()
        .find(|r| r["repository"] == "charts/app")
        .unwrap();
    let held: Vec<(&str, bool)> = app["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["image"].as_str().unwrap(), i["held"].as_bool().unwrap()))
        .collect();
    assert_eq!(held.len(), 3, "{app}");
    assert!(
        held.contains(&("docker.io/library/busybox:1.36", false)),
        "{app}"
    );
    assert!(held.contains(&("quay.io/example/agent:v1", true)), "{app}");
    for row in rows.iter().filter(|r| r["repository"] != "charts/app") {
        assert!(row.get("images").is_none(), "{row}");
    }
}
