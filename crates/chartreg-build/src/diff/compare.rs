//! What changes between two sides: versions (a repository and tag) added, removed, and
//! changed (another digest, size or signer), the bytes a rollout adds, and whether the content
//! digest or the server's version changes (a change even when every version is the same:
//! referrers no tag lists, or the server itself); written as lines for people or as JSON for
//! CI.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::side::{Row, Side};

/// One version on one side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Version {
    pub repository: String,
    pub tag: String,
    pub kind: String,
    pub digest: String,
    /// Bytes a pull downloads.
    pub size: u64,
    /// What verified its signature at build (`not verified` when nothing did).
    pub signer: String,
}

/// A version on both sides, with something different.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    pub repository: String,
    pub tag: String,
    pub old: Version,
    pub new: Version,
}

/// The side as JSON names it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Named {
    pub source: String,
    /// The server's version.
    pub version: String,
    pub content_digest: String,
    /// Who signed its image, when `--key` or `--policy` verified it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signed_by: Vec<String>,
}

/// Everything that changes from `old` to `new`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    pub old: Named,
    pub new: Named,
    pub added: Vec<Version>,
    pub removed: Vec<Version>,
    pub changed: Vec<Changed>,
    /// The pull sizes of the versions added and of the new side of those changed: what nodes
    /// may download after the rollout that they did not before (blobs shared between
    /// versions counted with each).
    pub bytes_added: u64,
    /// Whether the content digests differ.
    pub content_changed: bool,
    /// Whether the server versions differ.
    pub version_changed: bool,
}

impl Changes {
    pub fn of(old: &Side, new: &Side) -> Changes {
        let old_versions = versions(&old.rows);
        let new_versions = versions(&new.rows);
        let mut changes = Changes {
            old: named(old),
            new: named(new),
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
            bytes_added: 0,
            content_changed: old.content_digest != new.content_digest,
            version_changed: old.version != new.version,
        };
        for (key, version) in &new_versions {
            match old_versions.get(key) {
                None => changes.added.push(version.clone()),
                Some(was) if was != version => changes.changed.push(Changed {
                    repository: version.repository.clone(),
                    tag: version.tag.clone(),
                    old: was.clone(),
                    new: version.clone(),
                }),
                Some(_) => {}
            }
        }
        for (key, version) in &old_versions {
            if !new_versions.contains_key(key) {
                changes.removed.push(version.clone());
            }
        }
        changes.bytes_added = changes
            .added
            .iter()
            .map(|v| v.size)
            .chain(changes.changed.iter().map(|c| c.new.size))
            .fold(0, u64::saturating_add);
        changes
    }

    /// Whether any version is added, removed or changed.
    fn versions_change(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }

    /// Whether anything changes: a version, the content digest, or the server's version.
    pub fn any(&self) -> bool {
        self.versions_change() || self.content_changed || self.version_changed
    }

    /// The lines for people: the sides (and who signed them), per repository, in name order,
    /// `+` added, `-` removed and `~` changed versions, `~` the server when its version
    /// changes, then a summary line.
    pub fn lines(&self) -> Vec<String> {
        let side = |n: &Named| {
            format!(
                "{} (chartreg {}, content {})",
                n.source, n.version, n.content_digest
            )
        };
        let mut lines = vec![format!("{} -> {}", side(&self.old), side(&self.new))];
        for (which, n) in [("old", &self.old), ("new", &self.new)] {
            if !n.signed_by.is_empty() {
                lines.push(format!("{which}: signed by {}", n.signed_by.join(", ")));
            }
        }
        let mut entries: Vec<(&str, &str, u8, String)> = Vec::new();
        for v in &self.added {
            entries.push((&v.repository, &v.tag, 0, format!("+ {}", one(v))));
        }
        for v in &self.removed {
            entries.push((&v.repository, &v.tag, 1, format!("- {}", one(v))));
        }
        for c in &self.changed {
            entries.push((&c.repository, &c.tag, 2, format!("~ {}", changed(c))));
        }
        entries.sort();
        lines.extend(entries.into_iter().map(|(_, _, _, line)| line));
        if self.version_changed {
            lines.push(format!(
                "~ server chartreg {} -> chartreg {}",
                self.old.version, self.new.version
            ));
        }
        if self.versions_change() {
            lines.push(format!(
                "{} added, {} removed, {} changed; a rollout adds {} ({} bytes)",
                self.added.len(),
                self.removed.len(),
                self.changed.len(),
                human(self.bytes_added),
                self.bytes_added
            ));
        } else if self.any() {
            let what = match (self.content_changed, self.version_changed) {
                (true, true) => "the content digest and the server's version differ",
                (true, false) => {
                    "the content digest differs (referrers no tag lists, or other files)"
                }
                _ => "the server's version differs",
            };
            lines.push(format!(
                "changed: both serve the same versions, but {what}: a rollout changes what is served"
            ));
        } else {
            lines.push("no change: both serve the same versions, content and server".to_owned());
        }
        lines
    }
}

fn named(side: &Side) -> Named {
    Named {
        source: side.text.clone(),
        version: side.version.clone(),
        content_digest: side.content_digest.to_string(),
        signed_by: side.signed_by.iter().map(ToString::to_string).collect(),
    }
}

/// The tagged rows as versions, by repository and tag.
fn versions(rows: &[Row]) -> BTreeMap<(String, String), Version> {
    rows.iter()
        .filter_map(|r| {
            let tag = r.tag.clone()?;
            Some((
                (r.repository.clone(), tag.clone()),
                Version {
                    repository: r.repository.clone(),
                    tag,
                    kind: r.kind.clone(),
                    digest: r.digest.clone(),
                    size: r.size,
                    signer: signer(r.verified.as_ref()),
                },
            ))
        })
        .collect()
}

/// What `ls --json` says verified a version: each key or identity, a warning, or nothing.
fn signer(verified: Option<&Value>) -> String {
    let Some(record) = verified.filter(|v| !v.is_null()) else {
        return "not verified".to_owned();
    };
    let by: Vec<String> = record["by"]
        .as_array()
        .map(|by| {
            by.iter()
                .map(|e| match e["by"].as_str() {
                    Some("key") => format!("key {}", e["key"].as_str().unwrap_or("?")),
                    Some("identity") => format!(
                        "identity {} (issuer {})",
                        e["identity"].as_str().unwrap_or("?"),
                        e["issuer"].as_str().unwrap_or("?")
                    ),
                    _ => e.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    if by.is_empty() {
        format!(
            "warned: {}",
            record["warning"].as_str().unwrap_or("no reason recorded")
        )
    } else {
        format!("verified: {}", by.join(", "))
    }
}

fn one(v: &Version) -> String {
    format!(
        "{}:{}  {}  {}  {}  {}",
        v.repository,
        v.tag,
        v.kind,
        v.digest,
        human(v.size),
        v.signer
    )
}

fn changed(c: &Changed) -> String {
    let (old, new) = (&c.old, &c.new);
    let mut parts = vec![format!("{}:{}  {}", c.repository, c.tag, new.kind)];
    if old.kind != new.kind {
        parts.push(format!("kind {} -> {}", old.kind, new.kind));
    }
    if old.digest != new.digest {
        parts.push(format!("{} -> {}", old.digest, new.digest));
    }
    if old.size != new.size {
        parts.push(format!("{} -> {}", human(old.size), human(new.size)));
    }
    if old.signer != new.signer {
        parts.push(format!("{} -> {}", old.signer, new.signer));
    }
    parts.join("  ")
}

/// Bytes in binary units, one decimal (`1.5 MiB`).
fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS.get(unit).unwrap_or(&"TiB"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn row(repository: &str, tag: &str, digest: &str, size: u64, verified: Value) -> Row {
        serde_json::from_value(json!({
            "repository": repository, "tag": tag, "digest": digest, "size": size,
            "kind": "chart", "verified": verified,
        }))
        .unwrap()
    }

    fn side(rows: Vec<Row>) -> Side {
        Side {
            text: "x".into(),
            version: "0.1.0".into(),
            content_digest: chartreg_core::oci::Digest::sha256_of(b"x"),
            rows,
            signed_by: Vec::new(),
        }
    }

    #[test]
    fn added_removed_and_changed_versions() {
        let old = side(vec![
            row("charts/a", "1.0.0", "sha256:a1", 100, Value::Null),
            row("charts/b", "1.0.0", "sha256:b1", 100, Value::Null),
            row("charts/c", "1.0.0", "sha256:c1", 100, Value::Null),
        ]);
        let key = json!({"by": [{"by": "key", "key": "K1", "form": "prov"}], "warning": null});
        let new = side(vec![
            row("charts/a", "1.1.0", "sha256:a2", 2048, Value::Null),
            row("charts/b", "1.0.0", "sha256:b1", 100, key),
            row("charts/c", "1.0.0", "sha256:c1", 100, Value::Null),
        ]);
        let changes = Changes::of(&old, &new);
        assert!(changes.any());
        let lines = changes.lines();
        assert_eq!(
            &lines[1..],
            [
                "- charts/a:1.0.0  chart  sha256:a1  100 B  not verified",
                "+ charts/a:1.1.0  chart  sha256:a2  2.0 KiB  not verified",
                "~ charts/b:1.0.0  chart  not verified -> verified: key K1",
                "1 added, 1 removed, 1 changed; a rollout adds 2.1 KiB (2148 bytes)",
            ]
        );
        assert!(!Changes::of(&old, &old).any());
        assert_eq!(
            Changes::of(&old, &old).lines().last().unwrap(),
            "no change: both serve the same versions, content and server"
        );
    }

    #[rstest]
    #[case(b"y", "0.1.0", "the content digest differs", false)]
    #[case(b"x", "0.2.0", "the server's version differs", true)]
    #[case(
        b"y",
        "0.2.0",
        "the content digest and the server's version differ",
        true
    )]
    fn the_same_versions_of_other_content_or_server_are_a_change(
        #[case] content: &[u8],
        #[case] version: &str,
        #[case] says: &str,
        #[case] server_line: bool,
    ) {
        let rows = || vec![row("charts/a", "1.0.0", "sha256:a1", 100, Value::Null)];
        let old = side(rows());
        let mut new = side(rows());
        new.content_digest = chartreg_core::oci::Digest::sha256_of(content);
        new.version = version.to_owned();
        let changes = Changes::of(&old, &new);
        assert!(changes.any());
        let lines = changes.lines();
        assert!(lines.last().unwrap().contains(says), "{lines:?}");
        assert!(lines.last().unwrap().starts_with("changed: "), "{lines:?}");
        assert_eq!(
            lines
                .iter()
                .any(|l| l == &format!("~ server chartreg 0.1.0 -> chartreg {version}")),
            server_line,
            "{lines:?}"
        );
        let json = serde_json::to_value(&changes).unwrap();
        assert_eq!(json["contentChanged"], content != b"x");
        assert_eq!(json["versionChanged"], server_line);
        assert_eq!(json["new"]["version"], version);
    }

    #[rstest]
    #[case(Value::Null, "not verified")]
    #[case(json!({"by": [], "warning": "bad"}), "warned: bad")]
    #[case(
        json!({"by": [{"by": "identity", "identity": "me@x", "issuer": "https://i"}]}),
        "verified: identity me@x (issuer https://i)"
    )]
    fn signers(#[case] verified: Value, #[case] want: &str) {
        assert_eq!(signer(Some(&verified)), want);
    }
}
