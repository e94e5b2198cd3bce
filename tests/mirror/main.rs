//! The nodes' mirror (issue 27), with a node's real image puller: containerd of the test's own
//! (`scripts/containerd.sh`, driven with ctr through `hosts.toml` files as a node's
//! `/etc/containerd/certs.d`), two upstream registries holding the same repository path with
//! different bytes, and a recorder that tells whether a request left for an upstream.
//!
//! These tests prove the harness: containerd pulls and unpacks from chartreg and from each
//! upstream, resolves the digests the registries serve, honours hosts.toml, and a pull nothing
//! answers fails in time, counted by the recorder. The hosts.toml files here are written by hand;
//! `chartreg mirror-config` writes them for a cluster.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;
mod nodes;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    Containerd, DEMO_APP, InProcess, MULTI, MULTI_PLATFORMS, Recorder, TwoUpstreams,
    assets_registry, assets_tag_digest, describe, describe_pull, host_arch,
};

/// Writes `DIR/REGISTRY/hosts.toml`: pulls of `registry` go to `host`, then `server` (plain
/// HTTP URLs). containerd 1.6 ignores a hosts.toml without a `[host]` table (it logs "invalid
/// `host` tree" and pulls from the registry named), so there always is one.
fn hosts_toml(dir: &Path, registry: &str, server: &str, host: &str) {
    let folder = dir.join(registry);
    std::fs::create_dir_all(&folder).expect("hosts folder");
    std::fs::write(
        folder.join("hosts.toml"),
        format!(
            "server = \"{server}\"\n\n[host.\"{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    )
    .expect("write hosts.toml");
}

/// A registry's hosts.toml that sends its pulls to itself over plain HTTP.
fn direct(dir: &Path, host: &str) {
    let url = format!("http://{host}");
    hosts_toml(dir, host, &url, &url);
}

/// containerd pulls the sample image from chartreg (in-process, plain HTTP, named as itself in
/// hosts.toml) by tag and by digest, gets the digest chartreg serves and unpacks it with the
/// native snapshotter.
#[test]
fn containerd_pulls_the_sample_from_chartreg_by_tag_and_by_digest() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let server = InProcess::start(assets_registry());
    let hosts = tempfile::tempdir().expect("temp dir");
    direct(hosts.path(), &server.host());
    let served = assets_tag_digest("images/sample", "v1");
    assert!(
        containerd.native_snapshots().is_empty(),
        "a new containerd has no snapshots"
    );

    for reference in [
        format!("{}/images/sample:v1", server.host()),
        format!("{}/images/sample@{served}", server.host()),
    ] {
        containerd.pull_ok(&reference, hosts.path(), &[]);
        assert_eq!(
            containerd.image_digest(&reference).as_deref(),
            Some(served.as_str()),
            "the digest ctr resolved {reference} to"
        );
        assert!(
            containerd.unpacked(&reference),
            "{reference} is unpacked on the native snapshotter: {}",
            containerd.ctr_ok(&["images", "check", "--snapshotter", "native"])
        );
    }
    assert!(!containerd.native_snapshots().is_empty());
}

/// Each upstream's `nutanix/demo-app:v1` is pulled from that upstream with its own digest (the
/// two differ, so a mirror that mixes them up shows); the multi-platform image is pulled for one
/// other platform (only its manifest fetched, its layer unpacked) and for all.
#[test]
fn containerd_pulls_each_upstreams_own_image_and_every_platform() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let Some(upstreams) = TwoUpstreams::start() else {
        return;
    };
    let hosts = tempfile::tempdir().expect("temp dir");
    for upstream in [&upstreams.a, &upstreams.b] {
        direct(hosts.path(), &upstream.host());
    }

    // The multi-platform image first, while the native snapshotter holds nothing else.
    let multi = upstreams.a.reference(MULTI);
    let arm64 = upstreams.a.platform(MULTI, "linux/arm64");
    let amd64 = upstreams.a.platform(MULTI, "linux/amd64");
    containerd.pull_ok(&multi, hosts.path(), &["--platform", "linux/arm64"]);
    assert_eq!(
        containerd.image_digest(&multi).as_deref(),
        Some(upstreams.a.digest(MULTI)),
        "a platform's pull names the index"
    );
    let content = containerd.content_digests();
    assert!(content.contains(&arm64.manifest), "arm64 manifest fetched");
    assert!(
        !content.contains(&amd64.manifest),
        "amd64 manifest not fetched for --platform linux/arm64"
    );
    assert_eq!(
        containerd.native_snapshots(),
        vec![arm64.chain_id.clone()],
        "the arm64 layer unpacked, nothing else"
    );

    containerd.pull_ok(&multi, hosts.path(), &["--all-platforms"]);
    let content = containerd.content_digests();
    let snapshots = containerd.native_snapshots();
    for platform in MULTI_PLATFORMS {
        let image = upstreams.a.platform(MULTI, platform);
        assert!(content.contains(&image.manifest), "{platform} manifest");
        assert!(snapshots.contains(&image.chain_id), "{platform} unpacked");
    }
    assert!(containerd.unpacked(&multi));

    for upstream in [&upstreams.a, &upstreams.b] {
        let reference = upstream.reference(DEMO_APP);
        containerd.pull_ok(&reference, hosts.path(), &[]);
        assert_eq!(
            containerd.image_digest(&reference).as_deref(),
            Some(upstream.digest(DEMO_APP)),
            "the digest ctr resolved {reference} to"
        );
        assert!(containerd.unpacked(&reference), "{reference} unpacked");
        let platform = format!("linux/{}", host_arch());
        assert!(
            containerd
                .native_snapshots()
                .contains(&upstream.platform(DEMO_APP, &platform).chain_id),
            "{reference}'s own layer unpacked"
        );
    }
    assert_ne!(
        upstreams.a.digest(DEMO_APP),
        upstreams.b.digest(DEMO_APP),
        "the two upstreams hold different {DEMO_APP}"
    );
}

/// The images file lists everything the two upstreams hold, in the form `chartreg-build fetch
/// --images-file` takes: fetch takes all three images, its lock pins each upstream digest.
#[test]
fn the_images_file_lists_what_the_upstreams_hold() {
    let Some(upstreams) = TwoUpstreams::start() else {
        return;
    };
    let work = tempfile::tempdir().expect("temp dir");
    let lock = work.path().join("fetched/chartreg.lock");
    let out = common::output_of(
        Command::new(common::chartreg_build_bin())
            .arg("fetch")
            .arg("--images-file")
            .arg(&upstreams.images_file)
            .arg("--lock")
            .arg(&lock)
            .current_dir(work.path()),
        "chartreg-build fetch",
    );
    assert!(
        out.status.success(),
        "fetch --images-file {}:\n{}\n{}",
        upstreams.images_file.display(),
        std::fs::read_to_string(&upstreams.images_file).unwrap_or_default(),
        describe(&out)
    );
    let lock = std::fs::read_to_string(&lock).expect("the lock");
    for (upstream, repository) in [
        (&upstreams.a, DEMO_APP),
        (&upstreams.a, MULTI),
        (&upstreams.b, DEMO_APP),
    ] {
        let digest = upstream.digest(repository);
        assert!(
            lock.contains(digest),
            "{} ({digest}) in the lock:\n{lock}",
            upstream.reference(repository)
        );
    }
}

/// A pull that only the recorder could answer fails within ctr's timeout, and the recorder
/// counted the attempt: so a count of 0 after a pull means no request went its way. Also proves
/// that ctr honours hosts.toml: chartreg's own name, sent to the recorder, is not pulled.
#[test]
fn a_pull_only_the_recorder_could_answer_fails_in_time_and_is_counted() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let recorder = Recorder::start();
    let server = InProcess::start(assets_registry());
    let hosts = tempfile::tempdir().expect("temp dir");
    let recorder_url = format!("http://{}", recorder.host());
    direct(hosts.path(), &recorder.host());
    hosts_toml(hosts.path(), &server.host(), &recorder_url, &recorder_url);
    assert_eq!(recorder.connections(), 0);
    let timeout = Duration::from_secs(3);

    for reference in [
        format!("{}/x:1", recorder.host()),
        format!("{}/images/sample:v1", server.host()),
    ] {
        let counted_before = recorder.connections();
        let started = Instant::now();
        let out = containerd.pull_within(&reference, hosts.path(), &[], timeout);
        let took = started.elapsed();
        assert!(
            !out.status.success(),
            "{reference} pulled, though only the recorder was configured: {}",
            describe_pull(&out)
        );
        assert!(
            took < timeout + Duration::from_secs(5),
            "{reference}: ctr gave up after {took:?}, not about {timeout:?}"
        );
        assert!(
            recorder.connections() > counted_before,
            "the recorder counted no connection for {reference}: {}",
            describe_pull(&out)
        );
        assert_eq!(containerd.image_digest(&reference), None);
    }
}
