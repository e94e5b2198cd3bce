//! What must hold of a folder at rest, whatever call a kill hit, read from the disk as a
//! reviewer, `git add` or `pack` would find it:
//!
//! - [`lock_holds`]: the lock parses (as the tool reads it), and every file and tag it names
//!   is there with exactly the locked digest: each chart package (and its `.prov`) by its
//!   sha256; each image by its layout's `index.json`, which tags the locked digest; and every
//!   blob that tagged manifest reaches is in the layout with its digest.
//! - [`layouts_hold`]: every OCI image layout under a folder (pack's output, an image's
//!   layout) is whole: each manifest its `index.json` lists reaches only blobs it holds.

use std::fs;
use std::path::Path;

use chartreg_build::lock::Lock;
use chartreg_core::oci::layout::REF_NAME;
use serde_json::Value;

use super::common;

/// The lock at `work/lock` and what it pins (see the module doc); how many files and tags
/// were checked.
pub fn lock_holds(work: &Path, lock: &str) -> Result<usize, String> {
    let path = work.join(lock);
    let read = Lock::read(&path).map_err(|e| format!("the lock does not parse: {e}"))?;
    let read = read.ok_or_else(|| format!("no lock at {lock}"))?;
    let folder = path.parent().unwrap_or(work);
    let mut checked = 0;
    for (key, chart) in &read.charts {
        let file = folder.join(&chart.file);
        let data = fs::read(&file).map_err(|e| format!("chart {key}: {}: {e}", chart.file))?;
        let got = common::sha256(&data);
        if got != format!("sha256:{}", chart.sha256) {
            return Err(format!(
                "chart {key}: {} is {got}, the lock pins sha256:{}",
                chart.file, chart.sha256
            ));
        }
        checked += 1;
        if let Some(pinned) = &chart.provenance_sha256 {
            let prov = format!("{}.prov", chart.file);
            let data =
                fs::read(folder.join(&prov)).map_err(|e| format!("chart {key}: {prov}: {e}"))?;
            let got = common::sha256(&data);
            if got != format!("sha256:{pinned}") {
                return Err(format!(
                    "chart {key}: {prov} is {got}, the lock pins sha256:{pinned}"
                ));
            }
            checked += 1;
        }
    }
    for (key, image) in &read.images {
        let layout = folder.join(&image.layout);
        let index = index_of(&layout).map_err(|e| format!("image {key}: {e}"))?;
        let tag = key
            .rsplit_once(':')
            .filter(|(_, tag)| !tag.contains('/') && !key.contains('@'))
            .map(|(_, tag)| tag);
        let manifests = index["manifests"].as_array().cloned().unwrap_or_default();
        let found = manifests.iter().find(|d| match tag {
            Some(tag) => d["annotations"][REF_NAME] == tag,
            None => d["digest"] == image.digest.as_str(),
        });
        let Some(descriptor) = found else {
            return Err(format!("image {key}: {} has no tag {tag:?}", image.layout));
        };
        if descriptor["digest"] != image.digest.as_str() {
            return Err(format!(
                "image {key}: {} tags {}, the lock pins {}",
                image.layout, descriptor["digest"], image.digest
            ));
        }
        checked += reaches(&layout, descriptor).map_err(|e| format!("image {key}: {e}"))?;
    }
    Ok(checked)
}

/// Every layout under `dir` (a folder holding `oci-layout`) is whole (see the module doc); how
/// many blobs were checked.
pub fn layouts_hold(dir: &Path) -> Result<usize, String> {
    let mut checked = 0;
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        if folder.join("oci-layout").is_file() {
            let index = index_of(&folder)?;
            for descriptor in index["manifests"].as_array().into_iter().flatten() {
                checked += reaches(&folder, descriptor)?;
            }
            continue;
        }
        for entry in fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))? {
            let entry = entry.map_err(|e| format!("{}: {e}", folder.display()))?;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    Ok(checked)
}

/// The layout's `index.json`, parsed.
fn index_of(layout: &Path) -> Result<Value, String> {
    let path = layout.join("index.json");
    let data = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&data).map_err(|e| format!("{}: {e}", path.display()))
}

/// The blob `descriptor` names is in `layout` with its digest, and so is every blob it
/// reaches (an index's manifests, a manifest's config and layers); how many blobs.
fn reaches(layout: &Path, descriptor: &Value) -> Result<usize, String> {
    let digest = descriptor["digest"]
        .as_str()
        .ok_or_else(|| format!("{}: a descriptor without a digest", layout.display()))?;
    let hex = digest
        .strip_prefix("sha256:")
        .ok_or_else(|| format!("{}: {digest} is no sha256 digest", layout.display()))?;
    let path = layout.join("blobs/sha256").join(hex);
    let data = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if common::sha256(&data) != digest {
        return Err(format!("{} does not hold {digest}", path.display()));
    }
    let media_type = descriptor["mediaType"].as_str().unwrap_or_default();
    if !(media_type.contains("manifest") || media_type.contains("index")) {
        return Ok(1);
    }
    let document: Value =
        serde_json::from_slice(&data).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut count = 1;
    for child in document["manifests"].as_array().into_iter().flatten() {
        count += reaches(layout, child)?;
    }
    let blobs = document["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(Some(&document["config"]).filter(|c| c.is_object()));
    for blob in blobs {
        count += reaches(layout, blob)?;
    }
    Ok(count)
}
