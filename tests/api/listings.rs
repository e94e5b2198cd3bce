//! Tags lists and the catalog, whole and paged with `Link`.

use super::*;

/// The sample content's repositories, in byte order.
const ALL_REPOSITORIES: [&str; 4] = [
    "charts/chartreg",
    "charts/hello",
    "charts/motd",
    "images/sample",
];

#[actix_web::test]
async fn tags_list_is_complete_and_sorted() {
    let r = get("/v2/charts/hello/tags/list").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.header("link").is_none());
    assert_eq!(r.json(), json!({"name": HELLO, "tags": HELLO_TAGS}));
}

#[rstest]
#[case::first_page("n=2", &["0.1.0", "0.2.0"], Some("</v2/charts/hello/tags/list?n=2&last=0.2.0>; rel=\"next\""))]
#[case::middle_page("n=2&last=0.2.0", &["1.0.0", "1.0.1_build.7"], Some("</v2/charts/hello/tags/list?n=2&last=1.0.1_build.7>; rel=\"next\""))]
#[case::last_page_exact("n=1&last=1.0.1_build.7", &["1.1.0-rc.1"], None)]
#[case::last_page_short("n=2&last=1.0.1_build.7", &["1.1.0-rc.1"], None)]
#[case::exact_size("n=5", &HELLO_TAGS, None)]
#[case::zero("n=0", &[], None)]
#[case::last_past_end("last=9", &[], None)]
#[case::last_past_end_with_n("n=3&last=zzz", &[], None)]
#[case::empty_last("n=1&last=", &["0.1.0"], Some("</v2/charts/hello/tags/list?n=1&last=0.1.0>; rel=\"next\""))]
#[case::last_only("last=1.0.0", &["1.0.1_build.7", "1.1.0-rc.1"], None)]
#[case::last_between("last=0.15", &["0.2.0", "1.0.0", "1.0.1_build.7", "1.1.0-rc.1"], None)]
#[actix_web::test]
async fn tags_list_pages(#[case] query: &str, #[case] tags: &[&str], #[case] link: Option<&str>) {
    let r = get(&format!("/v2/charts/hello/tags/list?{query}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json(), json!({"name": HELLO, "tags": tags}));
    assert_eq!(r.header("link"), link);
}

#[actix_web::test]
async fn following_links_visits_every_tag_once() {
    let mut uri = "/v2/charts/hello/tags/list?n=2".to_owned();
    let mut seen = Vec::new();
    loop {
        let r = get(&uri).await;
        assert_eq!(r.status, StatusCode::OK);
        let page: Vec<String> = serde_json::from_value(r.json()["tags"].clone()).unwrap();
        assert!(!page.is_empty(), "a Link never points at an empty page");
        seen.extend(page);
        match r.header("link") {
            Some(link) => {
                uri = link
                    .trim_start_matches('<')
                    .split('>')
                    .next()
                    .unwrap()
                    .to_owned()
            }
            None => break,
        }
    }
    assert_eq!(seen, HELLO_TAGS);
}

#[rstest]
#[case::all("", &ALL_REPOSITORIES, None)]
#[case::first("n=1", &["charts/chartreg"], Some("</v2/_catalog?n=1&last=charts/chartreg>; rel=\"next\""))]
#[case::second("n=1&last=charts/hello", &["charts/motd"], Some("</v2/_catalog?n=1&last=charts/motd>; rel=\"next\""))]
#[case::last_page("n=2&last=charts/hello", &["charts/motd", "images/sample"], None)]
#[case::zero("n=0", &[], None)]
#[case::past_end("last=zzz", &[], None)]
#[case::empty_last("last=", &ALL_REPOSITORIES, None)]
#[actix_web::test]
async fn catalog_lists_repositories(
    #[case] query: &str,
    #[case] repositories: &[&str],
    #[case] link: Option<&str>,
) {
    let r = get(&format!("/v2/_catalog?{query}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json(), json!({ "repositories": repositories }));
    assert_eq!(r.header("link"), link);
}
