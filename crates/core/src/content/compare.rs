//! Where two registries differ, as a client could see it: repositories, tags and what they
//! name, manifests (bytes, media type, ETag), blobs, referrers. `chartreg verify` compares what
//! start-up builds from the build-time facts with the content loaded in full.

use super::{Registry, Repository};

impl Registry {
    /// Every difference between `self` (what is served) and `other` (the content), named.
    pub fn differences(&self, other: &Registry) -> Vec<String> {
        let mut found = Vec::new();
        let (ours, theirs) = (self.catalog.names(), other.catalog.names());
        for name in ours.iter().filter(|n| !theirs.contains(n)) {
            found.push(format!(
                "repository {name} is served but not in the content"
            ));
        }
        for name in theirs.iter().filter(|n| !ours.contains(n)) {
            found.push(format!(
                "repository {name} is in the content but not served"
            ));
        }
        for name in ours.iter().filter(|n| theirs.contains(n)) {
            if let (Some(a), Some(b)) = (self.repositories.get(name), other.repositories.get(name))
            {
                a.differences(b, &mut found);
            }
        }
        if self.summary != other.summary {
            found.push(format!(
                "the counts differ: {:?} served, {:?} in the content",
                self.summary, other.summary
            ));
        }
        found
    }
}

impl Repository {
    fn differences(&self, other: &Repository, found: &mut Vec<String>) {
        let name = self.name();
        for (tag, hash) in &self.tags {
            match other.tags.get(tag) {
                Some(theirs) if theirs == hash => {}
                _ => found.push(format!("{name}: tag {tag} is served as another manifest")),
            }
        }
        for tag in other.tags.keys().filter(|t| !self.tags.contains_key(*t)) {
            found.push(format!(
                "{name}: tag {tag} is in the content but not served"
            ));
        }
        for (hash, m) in &self.manifests {
            match other.manifests.get(hash) {
                None => found.push(format!(
                    "{name}: manifest {} is served but not in the content",
                    m.digest
                )),
                Some(o)
                    if o.data != m.data
                        || o.media_type != m.media_type
                        || o.quoted_digest != m.quoted_digest
                        || o.digest != m.digest =>
                {
                    found.push(format!(
                        "{name}: manifest {} is served otherwise than the content has it",
                        m.digest
                    ));
                }
                Some(_) => {}
            }
        }
        for (hash, m) in &other.manifests {
            if !self.manifests.contains_key(hash) {
                found.push(format!(
                    "{name}: manifest {} is in the content but not served",
                    m.digest
                ));
            }
        }
        for (hash, b) in &self.blobs {
            match other.blobs.get(hash) {
                None => found.push(format!(
                    "{name}: blob {} is served but not in the content",
                    b.digest
                )),
                Some(o)
                    if o.data != b.data
                        || o.digest != b.digest
                        || o.quoted_digest != b.quoted_digest =>
                {
                    found.push(format!(
                        "{name}: blob {} is served otherwise than the content has it",
                        b.digest
                    ));
                }
                Some(_) => {}
            }
        }
        for (hash, b) in &other.blobs {
            if !self.blobs.contains_key(hash) {
                found.push(format!(
                    "{name}: blob {} is in the content but not served",
                    b.digest
                ));
            }
        }
        let mut ours: Vec<String> = self.referrers.iter().map(|r| format!("{r:?}")).collect();
        let mut theirs: Vec<String> = other.referrers.iter().map(|r| format!("{r:?}")).collect();
        ours.sort();
        theirs.sort();
        if ours != theirs {
            found.push(format!(
                "{name}: the referrers served are not the content's"
            ));
        }
    }
}
