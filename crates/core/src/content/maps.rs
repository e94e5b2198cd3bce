//! The hash maps of the content model: keyed by names (foldhash) and by sha256 hashes (no
//! hashing at all: a sha256 is uniformly distributed already).

use std::hash::{BuildHasherDefault, Hasher};

/// Hash maps keyed by names and digests, with a fast hasher (foldhash, already used by
/// actix-web): lookups are on every request; keys come from trusted content, and requests
/// only ever read the maps.
pub(super) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Maps keyed by sha256 hashes (manifests and blobs, found by digest). The hashes are uniformly
/// distributed already, so their first eight bytes are the hash-map hash: no hashing at all.
pub(super) type Sha256Map<V> =
    std::collections::HashMap<[u8; 32], V, BuildHasherDefault<Sha256Prefix>>;

#[derive(Default)]
pub(super) struct Sha256Prefix(u64);

impl Hasher for Sha256Prefix {
    fn finish(&self) -> u64 {
        self.0
    }

    /// An array hashes as its length, then its bytes: the length is the same for every key.
    fn write_usize(&mut self, _length: usize) {}

    fn write(&mut self, bytes: &[u8]) {
        if let Some(prefix) = bytes.first_chunk::<8>() {
            self.0 = u64::from_le_bytes(*prefix);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn sha256_keys_hash_to_their_first_eight_bytes() {
        let hasher = BuildHasherDefault::<Sha256Prefix>::default();
        let mut key = [7u8; 32];
        key[..8].copy_from_slice(&42u64.to_le_bytes());
        assert_eq!(hasher.hash_one(key), 42);
        key[0] = 43;
        assert_eq!(hasher.hash_one(key), 43);
    }
}
