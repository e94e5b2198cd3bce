//! How much of each kind of download fetch reads ([`Bounded`]): what a source may send of an
//! index, a package, a `.prov`, a manifest or a blob before it is refused, and how a refusal
//! says so.

/// What a download is, which bounds how many bytes of it are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounded {
    /// A classic repository's `index.yaml`: 256 MiB (the largest public ones, bitnami's among
    /// them, are tens of MiB).
    Index,
    /// A chart package: Helm loads no chart that decompresses to more than 100 MiB, and
    /// deflate adds at most a few bytes per 64 KiB block; 1 MiB over that.
    Package,
    /// A `.prov` (a signed Chart.yaml and the package's digest): 1 MiB.
    Provenance,
    /// An OCI manifest or index (a referrers index, a tag list too): 4 MiB, the most
    /// registries take (distribution refuses larger ones).
    Manifest,
    /// A blob: exactly the size its descriptor gives.
    Blob(u64),
}

impl Bounded {
    /// The most bytes read of it.
    pub fn bytes(self) -> u64 {
        match self {
            Bounded::Index => 256 << 20,
            Bounded::Package => crate::pack::MAX_DECOMPRESSED + (1 << 20),
            Bounded::Provenance => 1 << 20,
            Bounded::Manifest => 4 << 20,
            Bounded::Blob(size) => size,
        }
    }

    /// Why more than [`Bounded::bytes`] is refused.
    pub fn exceeded(self) -> String {
        let mib = self.bytes() >> 20;
        match self {
            Bounded::Index => {
                format!("larger than {mib} MiB, the most fetch reads of a repository index")
            }
            Bounded::Package => format!(
                "larger than {mib} MiB, the most fetch downloads of a chart package (Helm loads \
                 no chart larger than {} MiB decompressed)",
                crate::pack::MAX_DECOMPRESSED >> 20
            ),
            Bounded::Provenance => {
                format!("larger than {mib} MiB, the most fetch downloads of a provenance file")
            }
            Bounded::Manifest => format!(
                "larger than {mib} MiB, the most fetch reads of a manifest, index or tag list \
                 (registries take none larger)"
            ),
            Bounded::Blob(size) => {
                format!("more than the {size} bytes its descriptor gives")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_says_what_it_bounds() {
        assert_eq!(Bounded::Index.bytes(), 256 << 20);
        assert_eq!(Bounded::Package.bytes(), 101 << 20);
        assert_eq!(Bounded::Provenance.bytes(), 1 << 20);
        assert_eq!(Bounded::Manifest.bytes(), 4 << 20);
        for (bound, says) in [
            (
                Bounded::Index,
                "larger than 256 MiB, the most fetch reads of a repository index",
            ),
            (
                Bounded::Manifest,
                "larger than 4 MiB, the most fetch reads of a manifest, index or tag list \
                 (registries take none larger)",
            ),
            (
                Bounded::Provenance,
                "larger than 1 MiB, the most fetch downloads of a provenance file",
            ),
        ] {
            assert_eq!(bound.exceeded(), says);
        }
    }
}
