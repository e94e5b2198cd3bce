//! The images each chart version needs, found by rendering with Helm 3 and 4 (`pack --helm`):
//! the list pack writes says Helm rendered the chart and found each image (the values found
//! them too), the chart's page says "by rendering", and a `--check` with no Helm names the list
//! stale, saying Helm rendered other charts then.

use super::*;
use chartreg::web::{Origin, Web};
use chartreg_core::content::Registry;

#[rstest]
fn pack_finds_the_images_by_rendering_and_the_page_says_so(
    #[values("helm3", "helm4")] helm: &'static str,
) {
    let Some(helm) = Helm::new(helm) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let content = common::images_content(&dir.path().join("src"), "{closure: warn}");
    let out = dir.path().join("assets");
    let r = common::pack_images(&content.config, &out, Some(&helm.bin), false);
    assert!(r.status.success(), "{}", describe(&r));
    let warned = String::from_utf8_lossy(&r.stderr);
    assert!(
        warned.contains("images.closure: chart app 1.0.0 needs docker.io/library/busybox:1.36"),
        "{warned}"
    );

    let list: Value =
        serde_json::from_slice(&std::fs::read(out.join("chart-images.json")).unwrap()).unwrap();
    let app = &list["charts"]["charts/app"]["1.0.0"];
    assert_eq!(app["rendered"], true, "{list}");
    let found: Vec<(&str, &Value)> = app["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["image"].as_str().unwrap(), &i["from"]))
        .collect();
    assert_eq!(found.len(), 3, "{list}");
    for (image, from) in found {
        assert_eq!(from, &serde_json::json!(["render", "values"]), "{image}");
    }

    let registry = Registry::from_files(common::files_in(&out)).unwrap();
    let web = Web::of(&registry).unwrap();
    let origin = Origin {
        host: "h",
        https: false,
        tls: false,
    };
    let page = web.repository("charts/app").unwrap().html.join(&origin);
    let page = String::from_utf8_lossy(&page);
    assert!(page.contains("by rendering; also values"), "{page}");
    assert!(!page.contains("statically"), "{page}");

    // Checked where no Helm renders: the images are found statically, the list differs.
    let r = common::pack_images(&content.config, &out, None, true);
    assert!(!r.status.success(), "{}", describe(&r));
    let said = String::from_utf8_lossy(&r.stderr);
    assert!(
        said.contains(
            "chart-images.json (Helm rendered 0 chart versions now and 1 when it was written"
        ),
        "{said}"
    );
}
