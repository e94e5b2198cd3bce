//! Build-time facts: what loading found the embedded content to be, written down by build.rs
//! (which loads the content itself with this crate, a build-dependency), so that
//! start-up builds the registry without reading any JSON or checking anything twice.
//!
//! Facts name bodies, they never copy them: each manifest and blob body is one of the input
//! files, written as its number. The strings the registry keeps (digests with their quotes,
//! media types, repository names, tags) are copied into the facts' string area, each distinct
//! string once: start-up reads them in one sequential pass, where the same strings in the JSON
//! lie all over the binary, a page each. Facts are bound to the content they describe: they
//! hold every file's sha256, and [`read`] refuses them ([`Stale`]) unless the files it is given
//! have exactly those, in that order. What is read back is checked as far as it can be without
//! the JSON: every digest must name the sha256 of the file it is the digest of, names and tags
//! must be valid, tags and repositories in order (each once). So facts can only make start-up
//! faster: when they do not fit, start-up loads and checks everything. Content with referrers
//! is not written down (a referrer's descriptor is a whole JSON document): such content is
//! checked at start-up.
//!
//! Format (little-endian `u32`s unless said otherwise): `MAGIC`, the length of the string
//! area and the area; the file count and each file's sha256; the summary (five `u64`s); the
//! repository count, then for each repository its name, its unreferenced blob count, its
//! manifests (count, then each: file, media type, quoted digest), its blobs (count, then each:
//! file, quoted digest) and its tags in byte order (count, then each: name, position of its
//! manifest). A string is its start in the string area and its length.

use bytes::Bytes;
use bytestring::ByteString;

use super::{Blob, ContentFile, HashMap, Listing, Manifest, Registry, Repository, Sha256Map};
use crate::oci::{Digest, RepositoryName, Tag};

const MAGIC: &[u8; 8] = b"CRFACTS2";

/// Facts that do not describe the files at hand (or are no facts at all).
#[derive(Debug, thiserror::Error)]
#[error("the build-time facts do not describe this content: {0}")]
pub struct Stale(String);

fn stale<T>(why: impl Into<String>) -> Result<T, Stale> {
    Err(Stale(why.into()))
}

/// The facts of `registry`, loaded from `files` (every body it holds is one of them); `None`
/// for content they cannot describe (referrers, a file without its sha256, sizes beyond
/// `u32`).
pub fn write(registry: &Registry, files: &[ContentFile]) -> Option<Vec<u8>> {
    let mut w = Writer::new(files)?;
    w.count(files.len())?;
    for file in files {
        w.body.extend_from_slice(&file.sha256?);
    }
    let s = registry.summary;
    for n in [s.repositories, s.tags, s.manifests, s.blobs] {
        w.body.extend_from_slice(&(n as u64).to_le_bytes());
    }
    w.body.extend_from_slice(&s.bytes.to_le_bytes());
    w.count(registry.repositories.len())?;
    for repository in registry.repositories() {
        if !repository.referrers.is_empty() {
            return None;
        }
        w.string(repository.name.as_bytes())?;
        w.count(repository.unreferenced)?;
        // In digest order, so that facts of the same content are the same bytes.
        let mut manifests: Vec<_> = repository.manifests.iter().collect();
        manifests.sort_unstable_by_key(|(hash, _)| **hash);
        w.count(manifests.len())?;
        for (_, m) in &manifests {
            w.file(&m.data)?;
            w.string(m.media_type.as_bytes())?;
            w.quoted(&m.digest, &m.quoted_digest)?;
        }
        let mut blobs: Vec<_> = repository.blobs.iter().collect();
        blobs.sort_unstable_by_key(|(hash, _)| **hash);
        w.count(blobs.len())?;
        for (_, b) in blobs {
            w.file(&b.data)?;
            w.quoted(&b.digest, &b.quoted_digest)?;
        }
        w.count(repository.tags().len())?;
        for tag in repository.tags() {
            let hash = repository.tags.get(tag)?;
            let position = manifests.binary_search_by_key(&hash, |(h, _)| h).ok()?;
            w.string(tag.as_bytes())?;
            w.count(position)?;
        }
    }
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + w.strings.len() + w.body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&u32::try_from(w.strings.len()).ok()?.to_le_bytes());
    out.extend_from_slice(&w.strings);
    out.extend_from_slice(&w.body);
    Some(out)
}

struct Writer<'f> {
    files: &'f [ContentFile],
    /// Each non-empty file's number, by the address of its bytes.
    by_address: HashMap<usize, u32>,
    strings: Vec<u8>,
    /// Where each string is in `strings`.
    written: HashMap<Vec<u8>, u32>,
    body: Vec<u8>,
}

impl<'f> Writer<'f> {
    fn new(files: &'f [ContentFile]) -> Option<Self> {
        let mut by_address = HashMap::default();
        for (i, file) in files.iter().enumerate() {
            if !file.data.is_empty() {
                by_address.insert(file.data.as_ptr() as usize, i.try_into().ok()?);
            }
        }
        Some(Writer {
            files,
            by_address,
            strings: Vec::new(),
            written: HashMap::default(),
            body: Vec::new(),
        })
    }

    fn count(&mut self, n: usize) -> Option<()> {
        self.body
            .extend_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
        Some(())
    }

    /// Bytes that are a whole file (an empty body: the first empty file, they are all alike).
    fn file(&mut self, data: &Bytes) -> Option<()> {
        let file = if data.is_empty() {
            self.files.iter().position(|f| f.data.is_empty())?
        } else {
            let file = *self.by_address.get(&(data.as_ptr() as usize))? as usize;
            (self.files[file].data.len() == data.len()).then_some(file)?
        };
        self.count(file)
    }

    /// A string, in the string area.
    fn string(&mut self, text: &[u8]) -> Option<()> {
        let start = match self.written.get(text) {
            Some(&start) => start,
            None => {
                let start = u32::try_from(self.strings.len()).ok()?;
                self.strings.extend_from_slice(text);
                self.written.insert(text.to_vec(), start);
                start
            }
        };
        self.count(start as usize)?;
        self.count(text.len())
    }

    /// A digest, as its quoted form (which holds it).
    fn quoted(&mut self, digest: &Digest, quoted: &[u8]) -> Option<()> {
        let inner = quoted.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        (inner == digest.as_str().as_bytes()).then_some(())?;
        self.string(quoted)
    }
}

/// The registry the facts describe, built from `files` (which must be the files the facts
/// were written from, in the same order, with their sha256).
pub fn read(facts: &Bytes, files: &[ContentFile]) -> Result<Registry, Stale> {
    if facts.is_empty() {
        return stale("the build wrote none");
    }
    let Some(rest) = facts.strip_prefix(MAGIC) else {
        return stale("not facts of this version");
    };
    let mut r = Reader {
        at: facts.len() - rest.len(),
        ctx: Ctx {
            facts,
            strings: 0..0,
            files,
        },
    };
    let area = r.count()?;
    let start = r.at;
    r.take(area)?;
    r.ctx.strings = start..r.at;

    if r.count()? != files.len() {
        return stale(format!(
            "they describe other files than the {}",
            files.len()
        ));
    }
    let hashes = r.take(32 * files.len())?;
    for (file, recorded) in files.iter().zip(hashes.chunks_exact(32)) {
        if file.sha256.as_ref() != recorded.first_chunk::<32>() {
            return stale(format!("{} is not the file they describe", file.path));
        }
    }
    let mut summary = [0u64; 5];
    for n in &mut summary {
        *n = u64::from_le_bytes(r.array()?);
    }
    let as_count = |n: u64| usize::try_from(n).or_else(|_| stale("a count is too large"));
    let mut registry = Registry::default();
    registry.summary.repositories = as_count(summary[0])?;
    registry.summary.tags = as_count(summary[1])?;
    registry.summary.manifests = as_count(summary[2])?;
    registry.summary.blobs = as_count(summary[3])?;
    registry.summary.bytes = summary[4];

    let repositories = r.count()?;
    let mut names = Vec::with_capacity(repositories);
    for _ in 0..repositories {
        let repository = r.repository()?;
        // The catalog lists them in byte order, each once, as the tags of a repository.
        if names
            .last()
            .is_some_and(|last: &String| *last >= repository.name)
        {
            return stale("the repositories are not in order");
        }
        names.push(repository.name.clone());
        registry
            .repositories
            .insert(repository.name.clone(), repository);
    }
    registry.catalog = Listing::catalog(names);
    Ok(registry)
}

/// Bytes of one manifest, blob and tag in the facts.
const MANIFEST_BYTES: usize = 20;
const BLOB_BYTES: usize = 12;
const TAG_BYTES: usize = 12;
/// Blobs in a repository from which they are read on a thread of their own.
const PARALLEL_FROM: usize = 4096;

/// What every part of the facts is read with.
#[derive(Clone)]
struct Ctx<'a> {
    facts: &'a Bytes,
    strings: std::ops::Range<usize>,
    files: &'a [ContentFile],
}

/// Reads the facts from the start, a field at a time.
struct Reader<'a> {
    at: usize,
    ctx: Ctx<'a>,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Stale> {
        let facts: &'a Bytes = self.ctx.facts;
        let Some(taken) = self
            .at
            .checked_add(n)
            .and_then(|end| facts.get(self.at..end))
        else {
            return stale("they end early");
        };
        self.at += n;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Stale> {
        let taken = self.take(N)?;
        Ok(taken.try_into().unwrap_or([0; N]))
    }

    fn count(&mut self) -> Result<usize, Stale> {
        Ok(u32::from_le_bytes(self.array()?) as usize)
    }

    /// A count, then that many records of `size` bytes.
    fn records(&mut self, size: usize) -> Result<Vec<&'a [u8]>, Stale> {
        let count = self.count()?;
        Ok(self
            .take(count.saturating_mul(size))?
            .chunks_exact(size)
            .collect())
    }

    fn repository(&mut self) -> Result<Repository, Stale> {
        let ctx = self.ctx.clone();
        let (start, len) = (self.count()?, self.count()?);
        let name = ctx.text(start, len)?.to_string();
        if name.parse::<RepositoryName>().is_err() {
            return stale("a repository name is not valid");
        }
        let unreferenced = self.count()?;
        let manifest_records = self.records(MANIFEST_BYTES)?;
        let blob_records = self.records(BLOB_BYTES)?;
        let tag_records = self.records(TAG_BYTES)?;

        // Blobs are the most records: a thread of their own when there are many, while this one
        // reads manifests and tags.
        let (manifests, blobs) = std::thread::scope(|scope| {
            let blobs = (blob_records.len() >= PARALLEL_FROM)
                .then(|| scope.spawn(|| ctx.blobs(&blob_records)));
            let manifests = ctx.manifests(&manifest_records);
            let blobs = match blobs {
                // A panic there is a bug: let it surface as one.
                Some(thread) => thread
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
                None => ctx.blobs(&blob_records),
            };
            (manifests, blobs)
        });
        let ((manifests, positions), blobs) = (manifests?, blobs?);
        let mut tags = HashMap::with_capacity_and_hasher(tag_records.len(), Default::default());
        let mut names: Vec<String> = Vec::with_capacity(tag_records.len());
        for record in tag_records {
            let (tag, position) = ctx.tag(record)?;
            if names.last().is_some_and(|last| *last >= tag) {
                return stale("the tags are not in order");
            }
            let Some(hash) = positions.get(position) else {
                return stale("a tag names a manifest that is not there");
            };
            tags.insert(tag.clone(), *hash);
            names.push(tag);
        }
        let tag_list = Listing::tags(&name, names);
        Ok(Repository {
            name,
            tags,
            tag_list,
            manifests,
            blobs,
            referrers: HashMap::default(),
            unreferenced,
        })
    }
}

/// The `n`th `u32` of a record.
fn field(record: &[u8], n: usize) -> usize {
    let bytes = record.get(4 * n..4 * n + 4).unwrap_or_default();
    u32::from_le_bytes(bytes.try_into().unwrap_or_default()) as usize
}

impl Ctx<'_> {
    /// The manifests, and the hash of each in record order (tags name them by position).
    fn manifests(&self, records: &[&[u8]]) -> Result<(Sha256Map<Manifest>, Vec<[u8; 32]>), Stale> {
        let mut manifests = Sha256Map::with_capacity_and_hasher(records.len(), Default::default());
        let mut positions = Vec::with_capacity(records.len());
        for record in records {
            let (hash, manifest) = self.manifest(record)?;
            manifests.insert(hash, manifest);
            positions.push(hash);
        }
        Ok((manifests, positions))
    }

    fn blobs(&self, records: &[&[u8]]) -> Result<Sha256Map<Blob>, Stale> {
        let mut blobs = Sha256Map::with_capacity_and_hasher(records.len(), Default::default());
        for record in records {
            let (hash, blob) = self.blob(record)?;
            blobs.insert(hash, blob);
        }
        Ok(blobs)
    }

    fn manifest(&self, record: &[u8]) -> Result<([u8; 32], Manifest), Stale> {
        let (data, hash) = self.file(field(record, 0))?;
        let media_type = self.text(field(record, 1), field(record, 2))?;
        let (digest, quoted_digest) = self.quoted(field(record, 3), field(record, 4), &hash)?;
        let manifest = Manifest {
            media_type,
            digest,
            quoted_digest,
            data,
        };
        Ok((hash, manifest))
    }

    fn blob(&self, record: &[u8]) -> Result<([u8; 32], Blob), Stale> {
        let (data, hash) = self.file(field(record, 0))?;
        let (digest, quoted_digest) = self.quoted(field(record, 1), field(record, 2), &hash)?;
        let blob = Blob {
            digest,
            quoted_digest,
            data,
        };
        Ok((hash, blob))
    }

    /// A tag and the position of its manifest.
    fn tag(&self, record: &[u8]) -> Result<(String, usize), Stale> {
        let tag = self.text(field(record, 0), field(record, 1))?.to_string();
        if tag.parse::<Tag>().is_err() {
            return stale("a tag is not valid");
        }
        Ok((tag, field(record, 2)))
    }

    /// File `n`, and its sha256.
    fn file(&self, n: usize) -> Result<(Bytes, [u8; 32]), Stale> {
        match self.files.get(n) {
            Some(ContentFile {
                data,
                sha256: Some(hash),
                ..
            }) => Ok((data.clone(), *hash)),
            _ => stale("they name a file that is not there"),
        }
    }

    /// The string of `len` bytes at `start` in the string area.
    fn text(&self, start: usize, len: usize) -> Result<ByteString, Stale> {
        let Some(end) = start
            .checked_add(len)
            .filter(|&end| end <= self.strings.len())
        else {
            return stale("a string lies beyond the string area");
        };
        let bytes = self
            .facts
            .slice(self.strings.start + start..self.strings.start + end);
        ByteString::try_from(bytes).or_else(|_| stale("a string is not UTF-8"))
    }

    /// The quoted digest of the file whose sha256 is `hash`, and the digest it holds.
    fn quoted(&self, start: usize, len: usize, hash: &[u8; 32]) -> Result<(Digest, Bytes), Stale> {
        let quoted = self.text(start, len)?;
        let digest = quoted
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
            .map(|inner| quoted.slice_ref(inner))
            .map(Digest::from_shared);
        match digest {
            Some(Ok(digest)) if digest.sha256().as_ref() == Some(hash) => {
                Ok((digest, quoted.into_bytes()))
            }
            _ => stale("a digest does not name its content"),
        }
    }
}
