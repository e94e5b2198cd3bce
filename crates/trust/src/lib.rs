//! Signatures checked against a policy (the content file's `verify:`): what must be signed, by
//! whom, and what a failure comes to. The build tool checks at fetch and pack; the server's
//! `chartreg verify` checks again with the policy the content embeds (`policy`'s record).
//! - Charts: each chart's `.prov` is checked against the policy's keyring ([`prov`],
//!   [`keyring`]) when pack reads it.
//! - Images: each tagged image of a layout, by its cosign signatures: the legacy `.sig` tag
//!   ([`cosign`]) and Sigstore bundle referrers ([`bundle`]), found in the layout or the
//!   server's content ([`store`], [`image`]; an index cut to some platforms by upstream's:
//!   [`cut`]), checked with the policy's keys and keyless rules (sigstore-verify's verifiers
//!   over the policy's trusted roots: [`verifier`], computing with ring: [`provider`]); why a
//!   signature does not verify is a [`reason::SigReason`].
//!
//! An artifact whose name a `require` pattern ([`patterns`]) matches must verify, else pack
//! refuses it (`mode: require`) or warns (`mode: warn`); one no pattern names is checked when it
//! is signed, and a signature that fails is a warning.
//!
//! The policy itself ([`policy`]) is read from the content file's section ([`section`]) or from
//! the record the content embeds; its rules name artifacts by [`patterns`].
//!
//! Dependencies point one way, from the checks down to what they check with:
//! - `image` (a layout's images) -> `bundle`, `cosign`, `cut`, `policy`, `store`;
//! - `bundle` -> `policy` (the images' keys, keyless rules and verifiers);
//! - `policy` (and [`check_chart`]) -> `cosign` (its keys), `keyring`, `prov`, `section`,
//!   `verifier`;
//! - the image checkers (`image`, `bundle`, `cosign`, `cut`) -> `reason`; `cut` -> `store`;
//!   `verifier`, `bundle`, `cosign` -> `provider`.
//!
//! ```yaml
//! verify:
//!   mode: require              # or warn
//!   charts:
//!     keyring: keys/pubring.gpg
//!     require: ["*"]           # chart name patterns that must be signed
//!   images:
//!     keys: [keys/cosign.pub]
//!     trustedRoot: keys/trusted_root.json   # optional: key-signed bundles' log entries
//!     keyless:
//!       - {identity: "https://github.com/ORG/REPO/.github/workflows/release.yaml@refs/tags/*",
//!          issuer: "https://token.actions.githubusercontent.com", trustedRoot: keys/trusted_root.json}
//!     require: ["quay.io/*"]   # repository patterns that must be signed
//! ```

#![forbid(unsafe_code)]

pub mod bundle;
pub mod cosign;
pub mod cut;
pub mod image;
pub mod keyring;
pub mod patterns;
pub mod policy;
pub mod prov;
pub mod provider;
pub mod reason;
pub mod section;
pub mod store;
pub mod verifier;

pub use cosign::{CosignKey, KeyError};
pub use image::{ImageChecked, check_layout, check_store};
pub use keyring::{Keyring, KeyringError};
pub use policy::{
    ChartPolicy, Checked, ImagePolicy, KeylessRule, Policy, PolicyError, check_chart,
};
pub use prov::{Reason, Signer};
pub use reason::SigReason;
pub use section::{ChartsSection, ImagesSection, KeylessSection, Mode, VerifySection};
pub use store::{LayoutError, LayoutStore, Store};
pub use verifier::RootError;
