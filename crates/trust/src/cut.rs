//! An index `fetch --platform` cut down to some platforms: a new index, with a digest nobody
//! signed. Its entry in the layout names the index upstream serves ([`UPSTREAM_DIGEST`] in
//! `chartreg_core`), whose bytes the store holds ([`Store::upstream`]). It is checked by the
//! signatures over upstream's index when it stands for it: each of its manifests is one
//! upstream's lists, as upstream lists it (digest, size, media type, platform), so the
//! signatures vouch for every platform kept. The index upstream serves goes into the record
//! (`UpstreamIndex`), which `chartreg verify` checks the served one against again.
//!
//! [`UPSTREAM_DIGEST`]: chartreg_core::oci::layout::UPSTREAM_DIGEST

use chartreg_core::content::UpstreamIndex;
use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::ImageIndex;

use crate::reason::SigReason;
use crate::store::{LayoutError, Store};

/// Upstream's index digest, and the index when it stands for the one cut from it (else why not).
type Upstream = (Digest, Result<UpstreamIndex, SigReason>);

/// For the index tagged `tag` (`digest`) when it keeps some platforms of upstream's: that
/// index's digest, and the index when each manifest of `digest` is one it lists, as it lists
/// it (else why it cannot stand for it).
pub(crate) fn upstream_of(
    store: &dyn Store,
    tag: &str,
    digest: &Digest,
) -> Result<Option<Upstream>, LayoutError> {
    let Some(upstream) = store.upstream(tag)? else {
        return Ok(None);
    };
    let listed = store.read(&upstream)?;
    let cut = store.read(digest)?;
    let index = cut_from(&upstream, listed, &cut);
    Ok(Some((upstream, index)))
}

fn cut_from(upstream: &Digest, listed: Vec<u8>, cut: &[u8]) -> Result<UpstreamIndex, SigReason> {
    let not_index = |source| SigReason::NotIndex {
        upstream: Box::new(upstream.clone()),
        source,
    };
    let cut: ImageIndex = serde_json::from_slice(cut).map_err(not_index)?;
    let text = String::from_utf8(listed).map_err(|source| SigReason::IndexNotUtf8 {
        upstream: Box::new(upstream.clone()),
        source,
    })?;
    let listed: ImageIndex = serde_json::from_str(&text).map_err(not_index)?;
    if let Some(m) = cut.manifests.iter().find(|m| !listed.manifests.contains(m)) {
        return Err(SigReason::NotUpstreams {
            upstream: Box::new(upstream.clone()),
            manifest: Box::new(m.digest.clone()),
        });
    }
    Ok(UpstreamIndex {
        digest: upstream.clone(),
        index: text,
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    const AMD64: &str = r#"{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","size":10,"platform":{"architecture":"amd64","os":"linux"}}"#;
    const ARM64: &str = r#"{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","size":10,"platform":{"architecture":"arm64","os":"linux"}}"#;

    fn index(manifests: &[&str]) -> String {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{}]}}"#,
            manifests.join(",")
        )
    }

    /// An index cut from upstream's stands for it only when each of its manifests is one
    /// upstream's lists, as upstream lists it.
    #[rstest]
    #[case::one_platform(index(&[AMD64]), Ok(()))]
    #[case::every_platform(index(&[ARM64, AMD64]), Ok(()))]
    #[case::relabelled(index(&[&AMD64.replace("amd64", "arm64")]), Err("does not list sha256:aaaa"))]
    #[case::another_size(index(&[&AMD64.replace("\"size\":10", "\"size\":11")]), Err("does not list sha256:aaaa"))]
    #[case::another_manifest(index(&[&AMD64.replace(&"a".repeat(64), &"c".repeat(64))]), Err("does not list sha256:cccc"))]
    #[case::not_an_index("{".to_owned(), Err("is not an index"))]
    fn cut_from_upstream(#[case] cut: String, #[case] expect: Result<(), &str>) {
        let listed = index(&[AMD64, ARM64]);
        let upstream = chartreg_core::oci::Digest::sha256_of(listed.as_bytes());
        match (
            super::cut_from(&upstream, listed.clone().into_bytes(), cut.as_bytes()),
            expect,
        ) {
            (Ok(kept), Ok(())) => {
                assert_eq!(kept.digest, upstream);
                assert_eq!(kept.index, listed);
            }
            (Err(reason), Err(want)) => {
                let said = reason.to_string();
                assert!(said.contains(want), "`{want}` not in {said}");
            }
            (got, want) => panic!("{got:?}, expected {want:?}"),
        }
    }
}
