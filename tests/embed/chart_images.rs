//! A binary built with content whose charts' images pack listed (`chart-images.json`):
//! `chartreg ls --json` gives each chart version's row the images it needs, held or not, the
//! chart's page served to curl lists them, and
//! `chartreg verify` accepts the list; a list broken after packing builds with a warning and
//! is refused at start-up, naming the file.

use super::*;

#[test]
fn ls_shows_the_images_each_chart_version_needs_and_a_broken_list_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let content = common::images_content(&tmp.path().join("src"), "{}");
    let assets = tmp.path().join("assets");
    let packed = common::pack_images(&content.config, &assets, None, false);
    assert!(packed.status.success(), "{}", common::describe(&packed));
    assert!(assets.join("chart-images.json").is_file());
    let bin = build_with(&assets);

    let out = Command::new(&bin).args(["ls", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", common::describe(&out));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let app = rows
        .iter()
        .find(|r| r["repository"] == "charts/app")
        .expect("the chart's row");
    assert_eq!(
        app["images"],
        serde_json::json!([
            {
                "image": "docker.io/library/busybox:1.36",
                "repository": "docker.io/library/busybox",
                "held": false,
                "from": ["values"],
            },
            {
                "image": format!("quay.io/example/agent:v0@{}", content.agent_digest),
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
    let agent = rows
        .iter()
        .find(|r| r["repository"] == "quay.io/example/agent")
        .expect("the image's row");
    assert!(agent.get("images").is_none(), "{agent}");
    // The chart's page, served by the binary, to curl.
    if let Some(curl) = common::tool("curl") {
        let server = common::Process::start_with(&bin, &[]);
        let page = common::curl(
            &curl,
            "GET",
            &format!("{}/ui/charts/app", server.url()),
            &[],
        );
        assert_eq!(page.status, 200);
        let html = page.body_text();
        assert!(
            html.contains("<h3>Images</h3>")
                && html.contains("1 of the 3 images it needs is not held here")
                && html.contains(r#"<td class="missing">not held</td>"#),
            "{html}"
        );
    }
    let verify = Command::new(&bin).arg("verify").output().unwrap();
    assert!(verify.status.success(), "{}", common::describe(&verify));

    fs::write(assets.join("chart-images.json"), "{\"charts\": 1}").unwrap();
    let (bin, cargo) = {
        let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
        build_logged(&assets, &[])
    };
    assert!(
        cargo.contains("the content cannot be served: chart-images.json"),
        "{cargo}"
    );
    refuses_to_start_with(&bin, "chart-images.json", "invalid JSON", "invalid JSON");
}
