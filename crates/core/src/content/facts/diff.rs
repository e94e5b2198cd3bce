//! Where a binary's facts differ from the facts of its content described again (`chartreg
//! verify`), over the decoded facts: the files they bind to, whether the content is served,
//! and per repository its tags (and the manifests they name), manifests (media type and the
//! file that is the body), blobs, referrers and the count of blobs nothing references.

use std::collections::{BTreeMap, BTreeSet};

use super::{BodyFacts, Facts, Found, RepositoryFacts, decode};

/// Every difference between the facts a binary was built with (`embedded`) and `expected`,
/// each naming what it is about: empty when they are the same facts.
pub(super) fn differences(embedded: &[u8], expected: &[u8]) -> Vec<String> {
    if embedded == expected {
        return Vec::new();
    }
    let expected = match decode(expected) {
        Ok(facts) => facts,
        Err(e) => return vec![format!("the content's own facts cannot be read back: {e}")],
    };
    let embedded = match decode(embedded) {
        Ok(facts) => facts,
        Err(e) => return vec![format!("the build-time facts: {e}")],
    };
    let mut found = Vec::new();
    files(&embedded, &expected, &mut found);
    match (&embedded.found, &expected.found) {
        (Found::Served(ours), Found::Served(theirs)) => {
            repositories(ours, theirs, &embedded, &expected, &mut found);
        }
        (Found::Refused { path, problem }, Found::Served(_)) => found.push(format!(
            "the build-time facts refuse content that can be served ({path}: {problem})"
        )),
        (Found::Served(_), Found::Refused { path, problem }) => found.push(format!(
            "the build-time facts serve content that cannot be served ({path}: {problem})"
        )),
        (Found::Refused { path, problem }, Found::Refused { .. }) => found.push(format!(
            "the build-time facts refuse the content for another reason ({path}: {problem})"
        )),
    }
    if found.is_empty() {
        found.push(
            "the build-time facts say the same things as the content's, written otherwise"
                .to_owned(),
        );
    }
    found
}

fn files(embedded: &Facts<'_>, expected: &Facts<'_>, found: &mut Vec<String>) {
    let ours: BTreeMap<&str, &[u8]> = embedded.files.iter().map(|f| (f.path, f.sha256)).collect();
    let theirs: BTreeMap<&str, &[u8]> = expected.files.iter().map(|f| (f.path, f.sha256)).collect();
    for (path, sha256) in &ours {
        match theirs.get(path) {
            None => found.push(format!("file {path} is described but not held")),
            Some(held) if held != sha256 => {
                found.push(format!("file {path} is described with other bytes"));
            }
            Some(_) => {}
        }
    }
    for path in theirs.keys().filter(|p| !ours.contains_key(*p)) {
        found.push(format!("file {path} is held but not described"));
    }
}

fn repositories(
    ours: &[RepositoryFacts<'_>],
    theirs: &[RepositoryFacts<'_>],
    embedded: &Facts<'_>,
    expected: &Facts<'_>,
    found: &mut Vec<String>,
) {
    let theirs: BTreeMap<&str, &RepositoryFacts<'_>> = theirs.iter().map(|r| (r.name, r)).collect();
    let ours: BTreeMap<&str, &RepositoryFacts<'_>> = ours.iter().map(|r| (r.name, r)).collect();
    for (name, repository) in &ours {
        match theirs.get(name) {
            None => found.push(format!(
                "repository {name} is served but not in the content"
            )),
            Some(other) => {
                let ours = Seen::of(repository, embedded);
                let theirs = Seen::of(other, expected);
                ours.differences(&theirs, name, found);
            }
        }
    }
    for name in theirs.keys().filter(|n| !ours.contains_key(*n)) {
        found.push(format!(
            "repository {name} is in the content but not served"
        ));
    }
}

/// A repository as a client would see it: everything by digest or name, files by path.
struct Seen<'a> {
    /// Tag -> the quoted digest of its manifest.
    tags: BTreeMap<&'a str, Option<&'a str>>,
    /// Quoted digest -> media type and file.
    manifests: BTreeMap<&'a str, (&'a str, Option<&'a str>)>,
    /// Quoted digest -> file.
    blobs: BTreeMap<&'a str, Option<&'a str>>,
    /// Subject, referring manifest's quoted digest, artifact type and annotations, as text.
    referrers: BTreeSet<String>,
    unreferenced: u32,
}

impl<'a> Seen<'a> {
    fn of(repository: &'a RepositoryFacts<'a>, facts: &'a Facts<'a>) -> Self {
        let path = |b: &BodyFacts<'a>| facts.files.get(b.file as usize).map(|f| f.path);
        let manifest = |n: u32| {
            repository
                .manifests
                .get(n as usize)
                .map(|m| m.quoted_digest)
        };
        Seen {
            tags: repository
                .tags
                .iter()
                .map(|t| (t.name, manifest(t.manifest)))
                .collect(),
            manifests: repository
                .manifests
                .iter()
                .map(|m| (m.quoted_digest, (m.media_type, path(m))))
                .collect(),
            blobs: repository
                .blobs
                .iter()
                .map(|b| (b.quoted_digest, path(b)))
                .collect(),
            referrers: repository
                .referrers
                .iter()
                .map(|r| {
                    let (subject, by) = (r.subject, manifest(r.manifest));
                    let (kind, annotations) = (r.artifact_type, &r.annotations);
                    format!("{subject} {by:?} {kind:?} {annotations:?}")
                })
                .collect(),
            unreferenced: repository.unreferenced,
        }
    }

    /// What differs between `self` (served) and `other` (the content), named.
    fn differences(&self, other: &Seen<'_>, name: &str, found: &mut Vec<String>) {
        for (tag, manifest) in &self.tags {
            match other.tags.get(tag) {
                Some(theirs) if theirs == manifest => {}
                Some(_) => found.push(format!("{name}: tag {tag} is served as another manifest")),
                None => found.push(format!(
                    "{name}: tag {tag} is served but not in the content"
                )),
            }
        }
        for tag in other.tags.keys().filter(|t| !self.tags.contains_key(*t)) {
            found.push(format!(
                "{name}: tag {tag} is in the content but not served"
            ));
        }
        for (digest, described) in &self.manifests {
            match other.manifests.get(digest) {
                None => found.push(format!(
                    "{name}: manifest {digest} is served but not in the content"
                )),
                Some(theirs) if theirs != described => found.push(format!(
                    "{name}: manifest {digest} is served otherwise than the content has it"
                )),
                Some(_) => {}
            }
        }
        for digest in other.manifests.keys() {
            if !self.manifests.contains_key(digest) {
                found.push(format!(
                    "{name}: manifest {digest} is in the content but not served"
                ));
            }
        }
        for (digest, file) in &self.blobs {
            match other.blobs.get(digest) {
                None => found.push(format!(
                    "{name}: blob {digest} is served but not in the content"
                )),
                Some(theirs) if theirs != file => found.push(format!(
                    "{name}: blob {digest} is served otherwise than the content has it"
                )),
                Some(_) => {}
            }
        }
        for digest in other.blobs.keys() {
            if !self.blobs.contains_key(digest) {
                found.push(format!(
                    "{name}: blob {digest} is in the content but not served"
                ));
            }
        }
        if self.referrers != other.referrers {
            found.push(format!(
                "{name}: the referrers served are not the content's"
            ));
        }
        if self.unreferenced != other.unreferenced {
            found.push(format!(
                "{name}: {} blob(s) are said to be referenced by no manifest, not {}",
                self.unreferenced, other.unreferenced
            ));
        }
    }
}
