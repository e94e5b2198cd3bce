//! Provenance files (`.prov`, written by `helm package --sign`): a PGP clear-signed message whose
//! second YAML document maps package file names to their sha256. `pack` checks that the package
//! it sits beside has that checksum, under the file name Helm verifies after a pull
//! (`<name>-<version>.tgz`). The signature itself is left to `helm verify` and its keyring.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Problem;
use chartreg_core::oci::Digest;

const BEGIN: &str = "-----BEGIN PGP SIGNED MESSAGE-----";
const SIGNATURE: &str = "-----BEGIN PGP SIGNATURE-----";

#[derive(Deserialize)]
struct Files {
    files: BTreeMap<String, String>,
}

/// The signed text of a clear-signed message, with dash-escaping undone.
fn signed_text(prov: &str) -> Option<String> {
    let after_begin = prov.split_once(BEGIN)?.1;
    // Armor headers ("Hash: SHA512") end at the first blank line.
    let body = after_begin.split_once("\n\n")?.1;
    let body = body.split_once(SIGNATURE)?.0;
    Some(
        body.lines()
            .map(|l| l.strip_prefix("- ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Checks that `prov` lists `package_name` with the digest `package`.
pub fn check(prov: &[u8], package_name: &str, package: &Digest) -> Result<(), Problem> {
    let malformed = |why: &str| Problem::Provenance(why.to_owned());
    let prov = std::str::from_utf8(prov).map_err(|_| malformed("not UTF-8 text"))?;
    let text = signed_text(prov).ok_or_else(|| malformed("not a PGP clear-signed message"))?;
    let files_doc = text
        .split("\n...\n")
        .nth(1)
        .ok_or_else(|| malformed("no `files:` section after the chart metadata"))?;
    let files: Files = serde_yaml_ng::from_str(files_doc)
        .map_err(|e| malformed(&format!("invalid `files:` section: {e}")))?;
    let listed = files
        .files
        .get(package_name)
        .ok_or_else(|| Problem::ProvenanceMissing(package_name.to_owned()))?;
    if listed != package.as_str() {
        return Err(Problem::ProvenanceMismatch {
            listed: listed.clone(),
            actual: package.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prov(files: &str) -> String {
        format!(
            "{BEGIN}\nHash: SHA512\n\nname: x\nkeywords:\n- - a\n\n...\nfiles:\n{files}\n{SIGNATURE}\n\nabc\n-----END PGP SIGNATURE-----\n"
        )
    }

    #[test]
    fn accepts_matching_checksum() {
        let d = Digest::sha256_of(b"pkg");
        let p = prov(&format!("  x-1.0.0.tgz: {d}"));
        assert!(check(p.as_bytes(), "x-1.0.0.tgz", &d).is_ok());
    }

    #[test]
    fn rejects_other_checksum_missing_entry_and_garbage() {
        let d = Digest::sha256_of(b"pkg");
        let other = Digest::sha256_of(b"other");
        let p = prov(&format!("  x-1.0.0.tgz: {other}"));
        assert!(matches!(
            check(p.as_bytes(), "x-1.0.0.tgz", &d),
            Err(Problem::ProvenanceMismatch { .. })
        ));
        assert!(matches!(
            check(p.as_bytes(), "y-1.0.0.tgz", &d),
            Err(Problem::ProvenanceMissing(_))
        ));
        assert!(matches!(
            check(b"hello", "x-1.0.0.tgz", &d),
            Err(Problem::Provenance(_))
        ));
    }
}
