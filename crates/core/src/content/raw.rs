//! Borrowed views of the layout JSON that loading reads: `index.json` and manifests.
//!
//! Loading reads every manifest once at start-up. These views take only what loading needs,
//! borrow strings from the file instead of copying them, and check the rest (annotations are
//! string maps) without keeping it; digests become [`Digest`]s that share the file's bytes
//! (see [`crate::oci::Digest::from_shared`]). The owned types in [`crate::oci::layout`] stay the model for
//! everything else (writing layouts, the referrers API).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

use crate::oci::layout::REF_NAME;

/// Parses JSON that is almost always valid UTF-8: checked in one pass over the whole text, so
/// that each string in it need not be checked again (`serde_json::from_slice` checks every
/// string on its own, which cost a tenth of loading). Invalid UTF-8 gets `from_slice`'s error,
/// with its position.
pub(super) fn from_json<'a, T: Deserialize<'a>>(data: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(data) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(data),
    }
}

/// A descriptor: what loading needs of it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawDescriptor<'a> {
    #[serde(borrow)]
    pub media_type: Cow<'a, str>,
    #[serde(borrow)]
    pub digest: Cow<'a, str>,
    pub size: u64,
    #[serde(default, borrow)]
    pub annotations: RefName<'a>,
}

/// An image manifest (OCI or Docker schema 2).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawImage<'a> {
    pub schema_version: u32,
    #[serde(default, borrow)]
    pub media_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub config: RawDescriptor<'a>,
    #[serde(borrow)]
    pub layers: Vec<RawDescriptor<'a>>,
    /// Only whether there is one: a manifest with a subject is read again in full.
    #[serde(default, borrow)]
    pub subject: Option<RawDescriptor<'a>>,
    /// Checked to be a string map, not kept.
    #[serde(default, borrow, rename = "annotations")]
    _annotations: RefName<'a>,
}

/// An image index (OCI or Docker manifest list), and `index.json` itself.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawIndex<'a> {
    pub schema_version: u32,
    #[serde(default, borrow)]
    pub media_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub manifests: Vec<RawDescriptor<'a>>,
    #[serde(default, borrow)]
    pub subject: Option<RawDescriptor<'a>>,
    /// Checked to be a string map, not kept.
    #[serde(default, borrow, rename = "annotations")]
    _annotations: RefName<'a>,
}

/// An annotations object, checked to map strings to strings, of which only
/// `org.opencontainers.image.ref.name` is kept.
#[derive(Debug, Default)]
pub(super) struct RefName<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for RefName<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Strings<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Strings<'a> {
            type Value = RefName<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings to strings")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<RefName<'a>, M::Error> {
                let mut ref_name = None;
                while let Some((key, value)) = map.next_entry::<Text<'de>, Text<'de>>()? {
                    if key.0 == REF_NAME {
                        ref_name = Some(value.0);
                    }
                }
                Ok(RefName(ref_name))
            }
        }
        d.deserialize_map(Strings(PhantomData))
    }
}

/// A string, borrowed unless it had escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Chars;
        impl<'de> Visitor<'de> for Chars {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(Chars)
    }
}
