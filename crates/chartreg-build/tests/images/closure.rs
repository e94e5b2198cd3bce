//! pack's closure check over the `web` chart: with `images.closure: require` pack fails,
//! naming the chart, its version and each image the content does not hold (by the repository
//! nodes ask for: a layout served under another name does not count; a digest-pinned reference
//! needs that digest), and passes once layouts hold them all; `warn` packs and prints the same
//! as `warning:` lines; without `images:` nothing is checked.
//!
//! The pinned busybox: the chart pins a digest no layout made here can have, so the test makes
//! a busybox layout, then pins the chart's initContainer to that layout's manifest digest with
//! a values file named in the content file's `images.values` (as a team pins an image it
//! mirrored).

use super::*;

/// Writes under `images/NAME` an OCI layout of one small image (one tar layer holding
/// `etc/NAME`) tagged `tag`; its manifest digest.
fn image_layout(work: &Work, name: &str, tag: &str) -> String {
    let mut layer = tar::Builder::new(Vec::new());
    let text = format!("{name} {tag}\n");
    let mut header = tar::Header::new_gnu();
    header.set_size(text.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    layer
        .append_data(&mut header, format!("etc/{name}"), text.as_bytes())
        .expect("tar entry");
    let layer = layer.into_inner().expect("tar");
    let config = format!(
        r#"{{"architecture":"amd64","os":"linux","config":{{}},"rootfs":{{"type":"layers","diff_ids":["{}"]}}}}"#,
        common::sha256(&layer)
    );
    let layout = common::generated_layout(
        name,
        tag,
        (
            "application/vnd.oci.image.config.v1+json",
            config.as_bytes(),
        ),
        &[("application/vnd.oci.image.layer.v1.tar", &layer)],
    );
    for file in &layout.files {
        let path = work.path("images").join(&*file.path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("layout folder");
        std::fs::write(&path, &file.data).expect("layout file");
    }
    layout.manifest_digest
}

/// A `layouts:` entry serving `images/NAME` as docker.io's `library/NAME:TAG`.
fn docker_hub(name: &str, tag: &str) -> String {
    format!(
        "  - from: images/{name}\n    repository: library/{name}\n    tag: \"{tag}\"\n    namespace: docker.io\n"
    )
}

/// `pack --config content.yaml --out OUT` with `content` as the content file.
fn pack(work: &Work, helm: &HelmFrom, content: &str, out: &str) -> Output {
    let config = work.write("content.yaml", content);
    work.run("pack", helm, &["--config", arg(&config), "--out", out])
}

#[test]
fn require_warn_and_nothing() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    let charts = "charts:\n  from: [charts/web]\n";

    // No `images:`: nothing is checked.
    let out = pack(&work, &helm, charts, "assets-unchecked");
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(NGINX), "nothing checked: {stderr}");

    // require, nothing held; nginx's layout served outside docker.io's namespace (as
    // `library/nginx`) does not hold docker.io's nginx.
    image_layout(&work, "nginx", "1.25.3");
    let out = pack(
        &work,
        &helm,
        &format!(
            "{charts}images:\n  closure: require\nlayouts:\n  - from: images/nginx\n    repository: library/nginx\n"
        ),
        "assets-refused",
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for named in ["web", "1.0.0", NGINX, ALPINE, BUSYBOX] {
        assert!(stderr.contains(named), "names {named}: {stderr}");
    }
    assert!(
        !work.path("assets-refused/charts/web").exists(),
        "a refused run writes nothing"
    );

    // nginx and alpine held in docker.io's namespace; busybox's layout tags 1.36 but not the
    // pinned digest: only busybox is missing.
    image_layout(&work, "alpine", "3.20");
    let busybox = image_layout(&work, "busybox", "1.36");
    assert_ne!(busybox, PINNED);
    let layouts = format!(
        "layouts:\n{}{}{}",
        docker_hub("nginx", "1.25.3"),
        docker_hub("alpine", "3.20"),
        docker_hub("busybox", "1.36")
    );
    let out = pack(
        &work,
        &helm,
        &format!("{charts}images:\n  closure: require\n{layouts}"),
        "assets-pinned",
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for named in ["web", "1.0.0", BUSYBOX] {
        assert!(stderr.contains(named), "names {named}: {stderr}");
    }
    for held in [NGINX, ALPINE] {
        assert!(!stderr.contains(held), "{held} is held: {stderr}");
    }

    // The chart pinned to the digest the layout holds: every needed image is held.
    work.write(
        "values/web-pins.yaml",
        &format!("initImage: \"busybox:1.36@{busybox}\"\n"),
    );
    let out = pack(
        &work,
        &helm,
        &format!(
            "{charts}images:\n  closure: require\n  values:\n    web: [values/web-pins.yaml]\n{layouts}"
        ),
        "assets",
    );
    assert!(out.status.success(), "{}", describe(&out));
    for repository in [
        "charts/web",
        "docker.io/library/nginx",
        "docker.io/library/alpine",
        "docker.io/library/busybox",
    ] {
        assert!(
            work.path("assets")
                .join(repository)
                .join("index.json")
                .is_file(),
            "{repository} is packed"
        );
    }
    // And `images` agrees that the pinned reference is the one web needs.
    let config = work.path("content.yaml");
    let (listed, _) = work.listed(&helm, &["--config", arg(&config)]);
    let pinned = format!("docker.io/library/busybox:1.36@{busybox}");
    assert!(entry(&listed, &pinned).needed, "{:#?}", summary(&listed));

    // warn, nothing held: packed, each missing image a `warning:` line.
    let out = pack(
        &work,
        &helm,
        &format!("{charts}images:\n  closure: warn\n"),
        "assets-warned",
    );
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for image in [NGINX, ALPINE, BUSYBOX] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains("warning:") && l.contains(image)),
            "a warning: line names {image}: {stderr}"
        );
    }
    assert!(
        stderr.contains("web") && stderr.contains("1.0.0"),
        "{stderr}"
    );
    assert!(work.path("assets-warned/charts/web/index.json").is_file());
}

/// Layouts an earlier pack wrote into the output, and no longer given, are kept there: they
/// hold images for the check as the layouts given in the run do (read from disk), by tag and
/// by the pinned digest.
#[test]
fn layouts_kept_from_an_earlier_pack_count() {
    let Some(helm) = HelmFrom::flag("helm3") else {
        return;
    };
    let work = Work::new();
    let charts = "charts:\n  from: [charts/web]\n";
    image_layout(&work, "nginx", "1.25.3");
    image_layout(&work, "alpine", "3.20");
    let busybox = image_layout(&work, "busybox", "1.36");
    let layouts = format!(
        "layouts:\n{}{}{}",
        docker_hub("nginx", "1.25.3"),
        docker_hub("alpine", "3.20"),
        docker_hub("busybox", "1.36")
    );
    let out = pack(&work, &helm, &format!("{charts}{layouts}"), "assets");
    assert!(out.status.success(), "{}", describe(&out));

    // Not pinned to the layout's digest: busybox alone is missing.
    let out = pack(
        &work,
        &helm,
        &format!("{charts}images:\n  closure: require\n"),
        "assets",
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(BUSYBOX), "{stderr}");
    for held in [NGINX, ALPINE] {
        assert!(!stderr.contains(held), "{held} is held: {stderr}");
    }

    work.write(
        "values/web-pins.yaml",
        &format!("initImage: \"busybox:1.36@{busybox}\"\n"),
    );
    let out = pack(
        &work,
        &helm,
        &format!(
            "{charts}images:\n  closure: require\n  values:\n    web: [values/web-pins.yaml]\n"
        ),
        "assets",
    );
    assert!(out.status.success(), "{}", describe(&out));
}
