//! An image's signatures, found in the OCI image layout that holds it, and what checking them
//! against the policy comes to.
//!
//! For each tagged image of the layout (a tag a node pulls; cosign's `sha256-<hex>.*` tags are
//! its signatures, not images), the signatures over its digest are:
//! - the legacy form: the manifest tagged `sha256-<hex>.sig`, each simple-signing layer one
//!   signature (`cosign`);
//! - the bundle form: every manifest of the layout whose `subject` is the image and whose
//!   artifact type is the Sigstore bundle's, its one layer the bundle (`bundle`).
//!
//! The image is verified when one of them verifies (as `cosign verify` accepts an image one
//! signature of which verifies); unsigned when there is none (attestations do not count);
//! otherwise it failed, for each signature's reason. A failure is refused or warned about when a
//! `require` pattern names the repository; otherwise a signature that fails is a warning.
//!
//! An index `fetch --platform` cut down to some platforms is checked by the signatures over the
//! index upstream serves, when it stands for it ([`crate::cut`]).
//!
//! The layout, or the server's content, is read through a [`Store`].

use std::collections::BTreeMap;
use std::path::Path;

use chartreg_core::content::{Evidence, Form, UpstreamIndex};
use chartreg_core::oci::Digest;

use crate::bundle;
use crate::cosign::{self, CERTIFICATE_ANNOTATION, SIGNATURE_ANNOTATION, SIMPLE_SIGNING};
use crate::cut::upstream_of;
use crate::policy::{Checked, ImagePolicy};
use crate::reason::SigReason;
use crate::section::Mode;
use crate::store::{LayoutError, LayoutStore, Store, manifest};

/// The Sigstore bundle's media type: a referrer's artifact type and its layer's.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// What checking one tagged image came to.
#[derive(Debug, Clone)]
pub struct ImageChecked {
    pub repository: String,
    pub tag: String,
    pub digest: Digest,
    /// When the tag's index keeps some platforms of upstream's: that index.
    pub upstream: Option<UpstreamIndex>,
    pub checked: Checked<Vec<Evidence>>,
}

/// Whether `tag` is one of cosign's tags for the manifest `sha256-<hex>` (its signatures,
/// attestations, SBOMs, or the referrers index of registries without the referrers API).
pub fn is_cosign_tag(tag: &str) -> bool {
    let Some(rest) = tag.strip_prefix("sha256-") else {
        return false;
    };
    let hex = rest.split_once('.').map_or(rest, |(hex, _)| hex);
    hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks every tagged image of the layout `dir` (only `tag`, when given) served as
/// `repository` against `policy`.
pub fn check_layout(
    policy: &ImagePolicy,
    repository: &str,
    dir: &Path,
    tag: Option<&str>,
) -> Result<Vec<ImageChecked>, LayoutError> {
    check_store(policy, repository, &LayoutStore { dir }, tag)
}

/// Checks every tagged image of `store` (only `tag`, when given), served as `repository`,
/// against `policy`.
pub fn check_store(
    policy: &ImagePolicy,
    repository: &str,
    store: &dyn Store,
    tag: Option<&str>,
) -> Result<Vec<ImageChecked>, LayoutError> {
    let entries = store.entries()?;
    let tagged: Vec<(String, Digest)> = entries
        .iter()
        .filter_map(|(t, d)| Some((t.clone()?, d.clone())))
        .collect();
    // Every manifest with a subject, by its subject: the bundle referrers among them.
    let mut bundles: BTreeMap<Digest, Vec<Digest>> = BTreeMap::new();
    for (_, digest) in &entries {
        let tagged_image = tagged.iter().any(|(t, d)| d == digest && !is_cosign_tag(t));
        if tagged_image {
            continue;
        }
        let m = manifest(store, digest)?;
        let is_bundle = m.artifact_type.as_deref() == Some(BUNDLE_MEDIA_TYPE)
            || m.config.as_ref().map(|c| c.media_type.as_str()) == Some(BUNDLE_MEDIA_TYPE);
        if let (true, Some(subject)) = (is_bundle, m.subject) {
            bundles
                .entry(subject.digest)
                .or_default()
                .push(digest.clone());
        }
    }
    let mut checked = Vec::new();
    for (name, digest) in &tagged {
        if is_cosign_tag(name) || tag.is_some_and(|t| t != name) {
            continue;
        }
        let upstream = upstream_of(store, name, digest)?;
        // The digest the signatures are over: upstream's, for an index cut from it.
        let signed = upstream.as_ref().map_or(digest, |(u, _)| u).clone();
        let signed = &signed;
        let mut signers = Vec::new();
        let mut failures = Vec::new();
        let sig_tag = format!("sha256-{}.sig", signed.encoded());
        if let Some((_, sig)) = tagged.iter().find(|(t, _)| *t == sig_tag) {
            for layer in manifest(store, sig)?.layers {
                if layer.media_type != SIMPLE_SIGNING {
                    continue;
                }
                let payload = store.read(&layer.digest)?;
                match cosign::check_simple_signing(
                    &policy.keys,
                    signed,
                    &payload,
                    layer
                        .annotations
                        .get(SIGNATURE_ANNOTATION)
                        .map(String::as_str),
                    layer
                        .annotations
                        .get(CERTIFICATE_ANNOTATION)
                        .map(String::as_str),
                ) {
                    Ok(key) => signers.push(Evidence::Key {
                        key,
                        subkey: None,
                        form: Form::Sig,
                    }),
                    Err(reason) => failures.push(reason),
                }
            }
        }
        for referrer in bundles.get(signed).into_iter().flatten() {
            for layer in manifest(store, referrer)?.layers {
                if layer.media_type != BUNDLE_MEDIA_TYPE {
                    continue;
                }
                match bundle::check_bundle(policy, signed, &store.read(&layer.digest)?) {
                    Ok(Some(signer)) => signers.push(signer),
                    Ok(None) => {}
                    Err(reason) => failures.push(reason),
                }
            }
        }
        let (upstream, not_cut) = match upstream {
            Some((_, Ok(index))) => (Some(index), None),
            Some((_, Err(reason))) => (None, Some(reason)),
            None => (None, None),
        };
        let outcome = if let Some(reason) = not_cut {
            Err(reason)
        } else if !signers.is_empty() {
            Ok(signers)
        } else if failures.is_empty() {
            Err(SigReason::Unsigned)
        } else if failures.len() == 1 {
            Err(failures.remove(0))
        } else {
            Err(SigReason::Several(failures))
        };
        let what = if signed == digest {
            format!("image {repository}:{name} ({digest})")
        } else {
            format!("image {repository}:{name} ({digest}, platforms of upstream's {signed})")
        };
        checked.push(ImageChecked {
            repository: repository.to_owned(),
            tag: name.clone(),
            digest: digest.clone(),
            upstream,
            checked: decide(policy.rule(repository), policy.mode, &what, outcome),
        });
    }
    Ok(checked)
}

/// What an outcome comes to under a `require` rule (if one names the artifact) and the mode.
fn decide(
    rule: Option<&str>,
    mode: Mode,
    what: &str,
    outcome: Result<Vec<Evidence>, SigReason>,
) -> Checked<Vec<Evidence>> {
    match (outcome, rule) {
        (Ok(signers), _) => Checked::Verified(signers),
        (Err(SigReason::Unsigned), None) => Checked::NotSigned,
        (Err(reason), Some(rule)) => Checked::Failed {
            refuse: mode == Mode::Require,
            line: format!("{what}: rule images.require \"{rule}\": {reason}"),
        },
        (Err(reason), None) => Checked::Failed {
            refuse: false,
            line: format!("{what}: signed, not required, and {reason}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    #[rstest]
    #[case(
        "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig",
        true
    )]
    #[case(
        "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        true
    )]
    #[case(
        "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.att",
        true
    )]
    #[case("sha256-0123.sig", false)]
    #[case("v1.0", false)]
    #[case("sha256-latest", false)]
    fn cosign_tags(#[case] tag: &str, #[case] cosign: bool) {
        assert_eq!(super::is_cosign_tag(tag), cosign);
    }
}
