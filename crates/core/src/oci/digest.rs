//! Content digests: `algorithm:encoded`, validated against the OCI grammar, with the
//! registered algorithms (sha256, sha512) held to their exact lowercase-hex length.

use std::fmt;
use std::str::FromStr;

use bytes::Bytes;
use bytestring::ByteString;
use sha2::{Digest as _, Sha256};

/// A syntactically valid digest such as `sha256:6c3c…`. Only sha256 content is ever stored,
/// but any valid digest can be asked for (and is then simply unknown).
///
/// The text is held as a shared string (always ASCII) so that it can be handed out, e.g. as a
/// header value, without copying; a sha256 digest also holds its hash, decoded once when it is
/// parsed (lookups are by hash: decoding again on every lookup cost 1% of a blob request).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    text: ByteString,
    sha256: Option<[u8; 32]>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DigestError {
    #[error("a digest is `algorithm:encoded`; `{0}` has no `:`")]
    MissingSeparator(String),
    #[error("invalid digest algorithm `{0}`")]
    InvalidAlgorithm(String),
    #[error("invalid encoded part `{0}` for a digest")]
    InvalidEncoded(String),
    #[error("a {algorithm} digest is {expected} lowercase hex characters; got `{encoded}`")]
    InvalidHex {
        algorithm: &'static str,
        expected: usize,
        encoded: String,
    },
}

/// The sha256 of `data`, as bytes.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

impl Digest {
    /// The sha256 digest of `data`.
    pub fn sha256_of(data: &[u8]) -> Self {
        Self::from_sha256(sha256(data))
    }

    /// The digest for a known sha256 value.
    pub fn from_sha256(hash: [u8; 32]) -> Self {
        Digest {
            text: ByteString::from(format!("sha256:{}", hex::encode(hash))),
            sha256: Some(hash),
        }
    }

    #[inline]
    pub fn algorithm(&self) -> &str {
        self.as_str().split_once(':').map_or("", |(a, _)| a)
    }

    #[inline]
    pub fn encoded(&self) -> &str {
        self.as_str().split_once(':').map_or("", |(_, e)| e)
    }

    #[inline]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The hash of a sha256 digest.
    #[inline]
    pub fn sha256(&self) -> Option<[u8; 32]> {
        self.sha256
    }

    /// The digest text as shared bytes (no copy).
    #[inline]
    pub fn to_bytes(&self) -> Bytes {
        self.text.as_bytes().clone()
    }
}

/// `sha256:` and 64 hex characters.
const SHA256_LEN: usize = 71;

/// The 32 bytes that 64 lowercase hex characters (a sha256 digest's encoded part) stand for.
/// (A hand-made decoding table was measured against the hex crate on the request path and did
/// not pay: within 1% either way.)
pub fn decode_sha256(hex: &[u8]) -> Option<[u8; 32]> {
    if !hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut hash = [0; 32];
    hex::decode_to_slice(hex, &mut hash).ok()?;
    Some(hash)
}

/// The common case, checked in one pass: `sha256:` and 64 lowercase hex characters.
/// The hash of `sha256:` and 64 lowercase hex characters.
fn sha256_of_text(s: &str) -> Option<[u8; 32]> {
    if s.len() != SHA256_LEN {
        return None;
    }
    decode_sha256(s.strip_prefix("sha256:")?.as_bytes())
}

/// `[a-z0-9]+([+._-][a-z0-9]+)*`
fn valid_algorithm(s: &str) -> bool {
    s.split(['+', '.', '_', '-']).all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

fn lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Checks `s` against the digest grammar (see the type's doc).
/// Checks `s`; returns its hash if it is a sha256 digest.
fn validate(s: &str) -> Result<Option<[u8; 32]>, DigestError> {
    if let Some(hash) = sha256_of_text(s) {
        return Ok(Some(hash));
    }
    let (algorithm, encoded) = s
        .split_once(':')
        .ok_or_else(|| DigestError::MissingSeparator(s.to_owned()))?;
    if !valid_algorithm(algorithm) {
        return Err(DigestError::InvalidAlgorithm(algorithm.to_owned()));
    }
    if encoded.is_empty()
        || !encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b'_' | b'-'))
    {
        return Err(DigestError::InvalidEncoded(encoded.to_owned()));
    }
    let expected = match algorithm {
        "sha256" => Some(("sha256", 64)),
        "sha512" => Some(("sha512", 128)),
        _ => None,
    };
    if let Some((algorithm, expected)) = expected
        && !lower_hex(encoded, expected)
    {
        return Err(DigestError::InvalidHex {
            algorithm,
            expected,
            encoded: encoded.to_owned(),
        });
    }
    // A sha256 digest that is not lowercase hex was refused above.
    Ok(None)
}

impl Digest {
    /// The digest `text` is known to be, without checking it again: `sha256:` and the lowercase
    /// hex of a hash, compared as bytes by the caller (the build-time facts' reader).
    pub(crate) fn from_known_sha256(text: ByteString, hash: [u8; 32]) -> Self {
        debug_assert_eq!(sha256_of_text(&text), Some(hash), "{text}");
        Digest {
            text,
            sha256: Some(hash),
        }
    }

    /// Parses a digest held as a shared string (a slice of the manifest it was read from), which
    /// the digest then keeps instead of a copy.
    pub fn from_shared(text: ByteString) -> Result<Self, DigestError> {
        let sha256 = validate(&text)?;
        Ok(Digest { text, sha256 })
    }
}

impl FromStr for Digest {
    type Err = DigestError;

    #[inline]
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let sha256 = validate(s)?;
        Ok(Digest {
            text: ByteString::from(s),
            sha256,
        })
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// Parses the string where the deserializer has it, without an owned copy first.
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Digest;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a digest string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Digest, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const HEX64: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[rstest]
    #[case::sha256(&format!("sha256:{HEX64}"))]
    #[case::sha512(&format!("sha512:{}", "0".repeat(128)))]
    #[case::other_algorithm("multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8")]
    #[case::separators("a.b_c-d+e:x=y_z-1")]
    fn valid(#[case] s: &str) {
        let d: Digest = s.parse().unwrap();
        assert_eq!(d.as_str(), s);
        assert_eq!(format!("{}:{}", d.algorithm(), d.encoded()), s);
    }

    #[rstest]
    #[case::empty("")]
    #[case::no_colon("sha256")]
    #[case::empty_algorithm(&format!(":{HEX64}"))]
    #[case::upper_algorithm(&format!("SHA256:{HEX64}"))]
    #[case::trailing_separator(&format!("sha256+:{HEX64}"))]
    #[case::empty_encoded("sha256:")]
    #[case::short_hex("sha256:abc")]
    #[case::upper_hex(&format!("sha256:{}", HEX64.to_uppercase()))]
    #[case::long_hex(&format!("sha256:{HEX64}0"))]
    #[case::bad_char("foo:a/b")]
    #[case::sha512_short(&format!("sha512:{HEX64}"))]
    #[case::two_colons(&format!("sha256:{HEX64}:x"))]
    fn invalid(#[case] s: &str) {
        assert!(s.parse::<Digest>().is_err(), "{s} should be rejected");
    }

    #[rstest]
    #[case::valid(HEX64, true)]
    #[case::digits_and_letters(&"0123456789abcdef".repeat(4), true)]
    #[case::upper(&HEX64.to_uppercase(), false)]
    #[case::short(&HEX64[1..], false)]
    #[case::long(&format!("{HEX64}0"), false)]
    #[case::letter_after_f(&format!("g{}", &HEX64[1..]), false)]
    #[case::slash_last(&format!("{}/", &HEX64[..63]), false)]
    #[case::high_byte_first(&"\u{e9}".repeat(32), false)]
    fn decodes_sha256_hex(#[case] hex: &str, #[case] valid: bool) {
        let decoded = decode_sha256(hex.as_bytes());
        assert_eq!(decoded.is_some(), valid, "{hex}");
        if let Some(hash) = decoded {
            assert_eq!(::hex::encode(hash), hex);
        }
    }

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(
            Digest::sha256_of(b"").to_string(),
            format!("sha256:{HEX64}")
        );
    }
}
