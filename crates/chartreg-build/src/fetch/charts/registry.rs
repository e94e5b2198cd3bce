//! A chart pushed to an OCI registry: by reference (`oci://HOST/REPO:TAG` in `chartURLs`), or
//! from an OCI repository's entry (`repoURL: oci://...`, its version found among the tags):
//! the manifest read as a Helm chart's, its chart and provenance layers, within their bounds,
//! taken as files and read as the chart they must be.

use chartreg_core::oci::layout::{Descriptor, ImageManifest};
use chartreg_core::oci::media_type;

use crate::fetch::lists::ChartRepository;
use crate::fetch::options::Options;
use crate::fetch::problem::Document;
use crate::fetch::problem::Problem;
use crate::fetch::transport::{Bounded, existing_sha256};
use crate::fetch::{oci, versions};
use crate::lock::LockedChart;

use super::arrival::{Pending, arriving, check_name, hex};

/// Whether the version `tag` names (an OCI tag: `+` written `_`) is `version`.
fn tag_is_version(tag: &str, version: &str) -> bool {
    tag == version.replace('+', "_")
        || chartreg_core::oci::version::order(&tag.replace('_', "+"))
            .is_some_and(|t| chartreg_core::oci::version::order(version) == Some(t))
}

/// A layer's descriptor, refused when it says the layer is larger than `bound` allows.
fn within(layer: &Descriptor, bound: Bounded) -> Result<(), Problem> {
    if layer.size > bound.bytes() {
        return Err(Problem::TooLarge {
            from: format!("layer {} ({} bytes)", layer.digest, layer.size),
            bound,
        });
    }
    Ok(())
}

/// A version of a chart in an OCI repository (`repoURL: oci://HOST/PATH`): the tag
/// `PATH/CHART:VERSION`, or, for a range, the newest tag that meets it, reached with the
/// entry's credentials and `tlsVerify`. The package must be that chart, at that version.
pub(super) async fn fetch_from_oci_repository(
    config: &ChartRepository,
    chart: &str,
    version: &str,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    let Some((host, path)) = config.oci() else {
        return Err(Problem::NotOci {
            repo_url: config.repo_url.clone(),
        });
    };
    check_name(chart)?;
    let registry = oci::Registry::new(
        host,
        &options.transport,
        config.tls_verify,
        config.username.as_deref(),
        config.password.as_deref(),
    )?;
    let repository = if path.is_empty() {
        chart.to_owned()
    } else {
        format!("{path}/{chart}")
    };
    // Locked, the lock names the tag; else the version is found among the tags as in a
    // classic repository's index (exactly, `v` prefix or not, or the newest in a range); a
    // registry that does not list tags is asked for the tag as `helm push` writes it.
    let tag = match pinned.and_then(|p| p.url.rsplit_once(':')) {
        Some((_, tag)) => tag.to_owned(),
        None => match registry.tags(&repository).await {
            Ok(tags) if !tags.is_empty() => {
                versions::find(version, tags.iter().map(String::as_str))
                    .map_err(|nearest| Problem::NoSuchVersion {
                        asked: version.to_owned(),
                        nearest,
                    })?
                    .to_owned()
            }
            _ => version.replace('+', "_"),
        },
    };
    fetch_oci(&registry, &repository, &tag, Some(chart), options, pinned).await
}

/// A chart pushed to an OCI registry: its chart layer (and provenance layer) as files; when
/// `chart` is given (an OCI repository's entry), the package must be that chart at the version
/// the tag names.
///
/// Credentials and `tlsVerify` for the registry come from the images file's entry for its host.
pub(super) async fn fetch_oci(
    registry: &oci::Registry,
    repository: &str,
    tag: &str,
    chart: Option<&str>,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    let host = &registry.host;
    let (data, digest) = match registry.manifest(repository, tag).await {
        Err(Problem::NotFound) => {
            // Which tags there are, to say which were meant (the repository may not exist).
            let tags = registry.tags(repository).await.unwrap_or_default();
            if tags.is_empty() {
                return Err(Problem::NotFound);
            }
            let asked = tag.replace('_', "+");
            return Err(Problem::NoSuchVersion {
                nearest: versions::nearest(&asked, tags.iter().map(String::as_str)),
                asked,
            });
        }
        other => other?,
    };
    let manifest: ImageManifest = serde_json::from_slice(&data)
        .map_err(|e| Problem::not_json(Document::Manifest(digest.clone()), e))?;
    if manifest.config.media_type != media_type::HELM_CONFIG {
        return Err(Problem::NotHelmChart {
            digest,
            config: manifest.config.media_type,
        });
    }
    let layer = |kind: &str| manifest.layers.iter().find(|l| l.media_type == kind);
    let chart_layer = layer(media_type::HELM_CHART).ok_or_else(|| Problem::NoChartLayer {
        digest: digest.clone(),
    })?;
    if let Some(pinned) = pinned
        && pinned.sha256 != chart_layer.digest.encoded()
    {
        return Err(Problem::Repushed {
            locked: format!(
                "sha256:{} (manifest {})",
                pinned.sha256,
                pinned.manifest.as_deref().unwrap_or("?")
            ),
            now: format!("{} (manifest {digest})", chart_layer.digest),
        });
    }
    within(chart_layer, Bounded::Package)?;
    let prov_layer = layer(media_type::HELM_PROVENANCE);
    if let Some(prov) = prov_layer {
        within(prov, Bounded::Provenance)?;
    }
    // The file is named after the chart in the package: downloaded beside, read, then put
    // in place once verified.
    let out = options.charts_dir(pinned);
    let staged = out.join(format!(".{}.oci-download", chart_layer.digest.encoded()));
    registry.blob(repository, chart_layer, &staged).await?;
    let (mut arrival, name, version) = arriving(staged, &out)?;
    if let Some(chart) = chart {
        let asked = tag.replace('_', "+");
        arrival.expect(
            chart,
            &asked,
            |found| tag_is_version(tag, found),
            "the registry",
        )?;
    }
    let provenance_sha256 = match prov_layer {
        Some(prov) => {
            let prov_target = arrival.prov_target();
            if existing_sha256(&prov_target).map(hex).as_deref() == Some(prov.digest.encoded()) {
                arrival.prov = Some(prov_target);
            } else {
                let staged = out.join(format!(".{}.oci-download", prov.digest.encoded()));
                let downloaded = registry.blob(repository, prov, &staged).await;
                arrival.prov = Some(staged);
                arrival.or_discard(downloaded)?;
            }
            Some(prov.digest.encoded().to_owned())
        }
        None => None,
    };
    let sha256 = chart_layer.digest.encoded().to_owned();
    let verified = arrival.verify(options, &name, &version, &sha256, pinned)?;
    Ok(Pending {
        locked: LockedChart {
            name,
            version,
            url: format!("oci://{host}/{repository}:{tag}"),
            sha256,
            provenance_sha256,
            manifest: Some(digest),
            file: options.recorded(&arrival.target),
            verified,
        },
        arrival,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_versions_as_helm_push_writes_them() {
        assert!(tag_is_version("1.0.0", "1.0.0"));
        assert!(tag_is_version("1.0.0_build.1", "1.0.0+build.1"));
        assert!(tag_is_version("v1.0.0", "1.0.0"));
        assert!(!tag_is_version("1.0.1", "1.0.0"));
        assert!(!tag_is_version("latest", "1.0.0"));
    }

    #[test]
    fn a_layer_larger_than_its_kind_is_refused_before_it_is_downloaded() {
        let digest: chartreg_core::oci::Digest = chartreg_core::oci::Digest::sha256_of(b"x");
        let big = Descriptor::new(media_type::HELM_CHART, digest.clone(), 1 << 40);
        let e = within(&big, Bounded::Package).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "layer {digest} (1099511627776 bytes): larger than 101 MiB, the most fetch downloads of a chart package (Helm loads no chart larger than 100 MiB decompressed)"
            )
        );
        within(
            &Descriptor::new(media_type::HELM_CHART, digest, 1000),
            Bounded::Package,
        )
        .unwrap();
    }
}
