//! Build-time facts: what loading found the embedded content to be, written down by build.rs
//! (which compiles this module and `load` by path and loads the content itself), so that
//! start-up builds the registry without reading any JSON or checking anything twice.
//!
//! Facts name bytes, they never copy them: every body and string the registry holds is a
//! slice of one of the input files, written as (file, start, length); the few strings that lie
//! in no file (a digest from a JSON string with escapes, repository and tag names) are kept in
//! the facts. Facts are bound to the content they describe: they hold every file's sha256, and
//! [`read`] refuses them ([`Stale`]) unless the files it is given have exactly those, in that
//! order. What is read back is checked as far as it can be without the JSON: every digest must
//! name the sha256 of the file it is the digest of, names and tags must be valid. So facts can
//! only make start-up faster: when they do not fit, start-up loads and checks everything.
//! Content with referrers is not written down (a referrer's descriptor is a whole JSON
//! document): such content is checked at start-up.
//!
//! Format (little-endian `u32`s unless said otherwise):
//! `MAGIC`, the length of the string area and the area; the file count and each file's
//! sha256; the summary (five `u64`s); the repository count, then for each repository its name,
//! its unreferenced blob count, its manifests (count, then each: file, media type, digest,
//! quoted digest), its blobs (count, then each: file, digest, quoted digest) and its tags in
//! byte order (count, then each: name, position of its manifest). Bytes are (file, start,
//! length); file [`IN_FACTS`] means the string area.

use bytes::Bytes;
use bytestring::ByteString;

use super::{Blob, ContentFile, HashMap, Listing, Manifest, Registry, Repository, Sha256Map};
use crate::oci::{Digest, RepositoryName, Tag};

const MAGIC: &[u8; 8] = b"CRFACTS1";
/// The file number of bytes kept in the facts' own string area.
const IN_FACTS: u32 = u32::MAX;

/// Facts that do not describe the files at hand (or are no facts at all).
#[derive(Debug, thiserror::Error)]
#[error("the build-time facts do not describe this content: {0}")]
pub struct Stale(String);

fn stale<T>(why: impl Into<String>) -> Result<T, Stale> {
    Err(Stale(why.into()))
}

/// The facts of `registry`, loaded from `files` (every byte string it holds a slice of one of
/// them); `None` for content they cannot describe (referrers, a file without its sha256,
/// sizes beyond `u32`).
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
        w.bytes(repository.name.as_bytes())?;
        w.count(repository.unreferenced)?;
        // In digest order, so that facts of the same content are the same bytes.
        let mut manifests: Vec<_> = repository.manifests.iter().collect();
        manifests.sort_unstable_by_key(|(hash, _)| **hash);
        w.count(manifests.len())?;
        for (_, m) in &manifests {
            w.file(&m.data)?;
            w.bytes(m.media_type.as_bytes())?;
            w.bytes(m.digest.as_str().as_bytes())?;
            w.bytes(&m.quoted_digest)?;
        }
        let mut blobs: Vec<_> = repository.blobs.iter().collect();
        blobs.sort_unstable_by_key(|(hash, _)| **hash);
        w.count(blobs.len())?;
        for (_, b) in blobs {
            w.file(&b.data)?;
            w.bytes(b.digest.as_str().as_bytes())?;
            w.bytes(&b.quoted_digest)?;
        }
        w.count(repository.tags().len())?;
        for tag in repository.tags() {
            let hash = repository.tags.get(tag)?;
            let position = manifests.binary_search_by_key(&hash, |(h, _)| h).ok()?;
            w.bytes(tag.as_bytes())?;
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
    /// Each non-empty file's bytes as (address, length, file number), by address.
    spans: Vec<(usize, usize, u32)>,
    strings: Vec<u8>,
    body: Vec<u8>,
}

impl<'f> Writer<'f> {
    fn new(files: &'f [ContentFile]) -> Option<Self> {
        let mut spans = Vec::with_capacity(files.len());
        for (i, file) in files.iter().enumerate() {
            if !file.data.is_empty() {
                spans.push((
                    file.data.as_ptr() as usize,
                    file.data.len(),
                    i.try_into().ok()?,
                ));
            }
        }
        spans.sort_unstable();
        Some(Writer {
            files,
            spans,
            strings: Vec::new(),
            body: Vec::new(),
        })
    }

    fn count(&mut self, n: usize) -> Option<()> {
        self.body
            .extend_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
        Some(())
    }

    /// The file and offset `bytes` lie at.
    fn locate(&self, bytes: &[u8]) -> Option<(u32, usize)> {
        let address = bytes.as_ptr() as usize;
        let after = self
            .spans
            .partition_point(|&(start, _, _)| start <= address);
        let &(start, len, file) = self.spans.get(after.checked_sub(1)?)?;
        (address + bytes.len() <= start + len).then_some((file, address - start))
    }

    /// Bytes that are a whole file.
    fn file(&mut self, data: &Bytes) -> Option<()> {
        let (file, start) = self.locate(data)?;
        if start != 0 || self.files[file as usize].data.len() != data.len() {
            return None;
        }
        self.count(file as usize)
    }

    /// Bytes that are a slice of a file, or else kept in the string area.
    fn bytes(&mut self, bytes: &[u8]) -> Option<()> {
        let (file, start) = match self.locate(bytes).filter(|_| !bytes.is_empty()) {
            Some(found) => found,
            None => {
                self.strings.extend_from_slice(bytes);
                (IN_FACTS, self.strings.len() - bytes.len())
            }
        };
        self.count(file as usize)?;
        self.count(start)?;
        self.count(bytes.len())
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
        facts,
        at: facts.len() - rest.len(),
        strings: 0..0,
        files,
    };
    let area = r.count()?;
    let start = r.at;
    r.take(area)?;
    r.strings = start..r.at;

    if r.count()? != files.len() {
        return stale(format!(
            "they describe other files than the {}",
            files.len()
        ));
    }
    let hashes = r.take(32 * files.len())?;
    for (file, recorded) in files.iter().zip(hashes.chunks_exact(32)) {
        if file.sha256.as_ref().map(|h| &h[..]) != Some(recorded) {
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
        names.push(repository.name.clone());
        registry
            .repositories
            .insert(repository.name.clone(), repository);
    }
    if registry.repositories.len() != repositories {
        return stale("a repository is named twice");
    }
    registry.catalog = Listing::catalog(names);
    Ok(registry)
}

struct Reader<'a> {
    facts: &'a Bytes,
    at: usize,
    strings: std::ops::Range<usize>,
    files: &'a [ContentFile],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Stale> {
        let Some(taken) = self
            .at
            .checked_add(n)
            .and_then(|end| self.facts.get(self.at..end))
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

    /// A whole file, and its sha256.
    fn file(&mut self) -> Result<(&Bytes, [u8; 32]), Stale> {
        let n = self.count()?;
        match self.files.get(n) {
            Some(ContentFile {
                data,
                sha256: Some(hash),
                ..
            }) => Ok((data, *hash)),
            _ => stale("they name a file that is not there"),
        }
    }

    fn bytes(&mut self) -> Result<Bytes, Stale> {
        let (file, start, len) = (self.count()?, self.count()?, self.count()?);
        let source = if file == IN_FACTS as usize {
            self.facts.slice(self.strings.clone())
        } else {
            match self.files.get(file) {
                Some(f) => f.data.clone(),
                None => return stale("they name a file that is not there"),
            }
        };
        match start.checked_add(len).filter(|&end| end <= source.len()) {
            Some(end) => Ok(source.slice(start..end)),
            None => stale("a slice lies beyond its file"),
        }
    }

    fn text(&mut self) -> Result<ByteString, Stale> {
        ByteString::try_from(self.bytes()?).or_else(|_| stale("a string is not UTF-8"))
    }

    /// The digest of the file whose sha256 is `hash`.
    fn digest(&mut self, hash: &[u8; 32]) -> Result<Digest, Stale> {
        match Digest::from_shared(self.text()?) {
            Ok(digest) if digest.sha256().as_ref() == Some(hash) => Ok(digest),
            _ => stale("a digest does not name its content"),
        }
    }

    fn repository(&mut self) -> Result<Repository, Stale> {
        let name = self.text()?.to_string();
        if name.parse::<RepositoryName>().is_err() {
            return stale("a repository name is not valid");
        }
        let unreferenced = self.count()?;
        let count = self.count()?;
        let mut manifests = Sha256Map::with_capacity_and_hasher(count, Default::default());
        let mut positions = Vec::with_capacity(count);
        for _ in 0..count {
            let (data, hash) = self.file()?;
            let data = data.clone();
            let media_type = self.text()?;
            let digest = self.digest(&hash)?;
            let quoted_digest = self.bytes()?;
            manifests.insert(
                hash,
                Manifest {
                    media_type,
                    digest,
                    quoted_digest,
                    data,
                },
            );
            positions.push(hash);
        }
        let count = self.count()?;
        let mut blobs = Sha256Map::with_capacity_and_hasher(count, Default::default());
        for _ in 0..count {
            let (data, hash) = self.file()?;
            let data = data.clone();
            let digest = self.digest(&hash)?;
            let quoted_digest = self.bytes()?;
            blobs.insert(
                hash,
                Blob {
                    digest,
                    quoted_digest,
                    data,
                },
            );
        }
        let count = self.count()?;
        let mut tags = HashMap::with_capacity_and_hasher(count, Default::default());
        let mut names = Vec::with_capacity(count);
        for _ in 0..count {
            let tag = self.text()?.to_string();
            if tag.parse::<Tag>().is_err() {
                return stale("a tag is not valid");
            }
            if names.last().is_some_and(|last: &String| *last >= tag) {
                return stale("the tags are not in order");
            }
            let Some(hash) = positions.get(self.count()?) else {
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
