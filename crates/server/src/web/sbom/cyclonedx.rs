//! The SBOM as a CycloneDX 1.5 JSON BOM (not 1.6, nor 1.5's object of tools: the trivy the
//! tests run, cdxgen's plugin 1.8.0, reads neither): chartreg the metadata's component, what it serves and
//! the crates it is made of its components (a platform's manifest within its index, what is
//! attached to a version within that version); `dependencies` the crates' real graph, from
//! chartreg down (each crate listed, an empty `dependsOn` where a crate depends on none). A
//! licence that is no SPDX expression is written as its name. Each
//! component's `bom-ref` comes from its position (`chart-3`); its sha256 is a hash, its
//! licence an expression, a chart's origin a `distribution` reference (a crate's too), its
//! `home` a `website` one, and where it came from and what verified it are `chartreg:source`
//! and `chartreg:signature` properties. The serial number is a UUID (version 8: the layout is
//! chartreg's own) made of the sha256 of the BOM written without it.

use serde::Serialize;

use chartreg_core::oci::Digest;

use super::{CHARTREG, Inventory, Item, Relation, Role, VERSION, indented};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Bom {
    bom_format: &'static str,
    spec_version: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    serial_number: String,
    version: u32,
    metadata: Metadata,
    components: Vec<Component>,
    dependencies: Vec<Dependency>,
}

#[derive(Serialize)]
struct Metadata {
    timestamp: String,
    /// The list form (1.5 deprecates it for an object, which the trivy the tests run does not
    /// read yet).
    tools: Vec<Tool>,
    component: Component,
}

#[derive(Serialize)]
struct Tool {
    vendor: &'static str,
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Component {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "bom-ref")]
    bom_ref: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hashes: Vec<Hash>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    licenses: Vec<License>,
    #[serde(skip_serializing_if = "Option::is_none")]
    purl: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    external_references: Vec<Reference>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    properties: Vec<Property>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    components: Vec<Component>,
}

#[derive(Serialize)]
struct Hash {
    alg: &'static str,
    content: String,
}

/// An SPDX expression, or a licence declared in words that are none.
#[derive(Serialize)]
#[serde(untagged)]
enum License {
    Expression { expression: String },
    Named { license: Named },
}

#[derive(Serialize)]
struct Named {
    name: String,
}

#[derive(Serialize)]
struct Reference {
    #[serde(rename = "type")]
    kind: &'static str,
    url: String,
}

#[derive(Serialize)]
struct Property {
    name: &'static str,
    value: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Dependency {
    #[serde(rename = "ref")]
    of: String,
    depends_on: Vec<String>,
}

/// The `bom-ref` of the item at `at`.
fn bom_ref(inventory: &Inventory, at: usize) -> String {
    let word = match inventory.items.get(at).map(|i| i.role) {
        Some(Role::Chartreg) | None => return "chartreg".to_owned(),
        Some(Role::Chart) => "chart",
        Some(Role::Image) => "image",
        Some(Role::Platform) => "platform",
        Some(Role::Attached) => "attached",
        Some(Role::Crate) => "crate",
    };
    format!("{word}-{at}")
}

/// The item at `at` as a component, with the items within it.
fn component(inventory: &Inventory, within: &[Vec<usize>], at: usize, item: &Item) -> Component {
    let mut references = Vec::new();
    if let Some(url) = &item.download {
        references.push(Reference {
            kind: "distribution",
            url: url.clone(),
        });
    }
    if let Some(url) = &item.homepage {
        references.push(Reference {
            kind: "website",
            url: url.clone(),
        });
    }
    let mut properties = Vec::new();
    if let Some(source) = &item.source {
        properties.push(Property {
            name: "chartreg:source",
            value: source.clone(),
        });
    }
    if let Some(comment) = &item.comment {
        properties.push(Property {
            name: match item.role {
                Role::Chart | Role::Image => "chartreg:signature",
                _ => "chartreg:comment",
            },
            value: comment.clone(),
        });
    }
    Component {
        kind: match item.role {
            Role::Chartreg | Role::Chart => "application",
            Role::Image | Role::Platform => "container",
            Role::Attached => "file",
            Role::Crate => "library",
        },
        bom_ref: bom_ref(inventory, at),
        name: item.name.clone(),
        version: item.version.clone(),
        hashes: item
            .sha256
            .iter()
            .map(|hex| Hash {
                alg: "SHA-256",
                content: hex.clone(),
            })
            .collect(),
        licenses: match (&item.license, &item.declared) {
            (Some(expression), _) => vec![License::Expression {
                expression: expression.clone(),
            }],
            (None, Some(name)) => vec![License::Named {
                license: Named { name: name.clone() },
            }],
            (None, None) => Vec::new(),
        },
        purl: item.purl.clone(),
        external_references: references,
        properties,
        components: within
            .get(at)
            .into_iter()
            .flatten()
            .filter_map(|&inner| {
                let item = inventory.items.get(inner)?;
                Some(component(inventory, within, inner, item))
            })
            .collect(),
    }
}

/// `inventory` as a CycloneDX 1.5 JSON BOM.
pub(super) fn written(inventory: &Inventory) -> Vec<u8> {
    // What lies within each item, in order.
    let mut within: Vec<Vec<usize>> = vec![Vec::new(); inventory.items.len()];
    for (at, item) in inventory.items.iter().enumerate() {
        if let Some(outer) = item.within.and_then(|o| within.get_mut(o)) {
            outer.push(at);
        }
    }
    let mut components = Vec::new();
    let mut metadata_component = None;
    for (at, item) in inventory.items.iter().enumerate() {
        if item.within.is_some() {
            continue;
        }
        let made = component(inventory, &within, at, item);
        if at == CHARTREG {
            metadata_component = Some(made);
        } else {
            components.push(made);
        }
    }
    // chartreg and every crate: the whole graph is known, so a crate with no entry in
    // `dependsOn` truly has none.
    let mut depends_on: Vec<Vec<usize>> = vec![Vec::new(); inventory.items.len()];
    for relation in &inventory.relations {
        if let Relation::DependsOn(from, to) = *relation
            && let Some(list) = depends_on.get_mut(from)
        {
            list.push(to);
        }
    }
    let dependencies = inventory
        .items
        .iter()
        .zip(depends_on)
        .enumerate()
        .filter(|(_, (item, _))| matches!(item.role, Role::Chartreg | Role::Crate))
        .map(|(at, (_, to))| Dependency {
            of: bom_ref(inventory, at),
            depends_on: to.into_iter().map(|to| bom_ref(inventory, to)).collect(),
        })
        .collect();
    let mut bom = Bom {
        bom_format: "CycloneDX",
        spec_version: "1.5",
        serial_number: String::new(),
        version: 1,
        metadata: Metadata {
            timestamp: inventory.created.clone(),
            tools: vec![Tool {
                vendor: "chartreg",
                name: "chartreg",
                version: VERSION,
            }],
            component: metadata_component
                .unwrap_or_else(|| unreachable!("the inventory starts with chartreg")),
        },
        components,
        dependencies,
    };
    let unnamed = indented(&bom);
    bom.serial_number = format!("urn:uuid:{}", uuid(&Digest::sha256_of(&unnamed)));
    indented(&bom)
}

/// A UUID made of `digest`'s first 16 bytes, marked version 8 (a layout of its maker's own)
/// and RFC 9562's variant.
fn uuid(digest: &Digest) -> String {
    let hex = digest.as_str().trim_start_matches("sha256:");
    let mut digits: Vec<char> = hex.chars().take(32).collect();
    if let Some(version) = digits.get_mut(12) {
        *version = '8';
    }
    if let Some(variant) = digits.get_mut(16) {
        let bits = variant.to_digit(16).unwrap_or(0);
        *variant = char::from_digit((bits & 0x3) | 0x8, 16).unwrap_or('8');
    }
    let part = |from: usize, to: usize| {
        digits
            .get(from..to)
            .unwrap_or_default()
            .iter()
            .collect::<String>()
    };
    format!(
        "{}-{}-{}-{}-{}",
        part(0, 8),
        part(8, 12),
        part(12, 16),
        part(16, 20),
        part(20, 32)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serial_number_is_a_version_8_uuid_of_the_digest() {
        let digest = Digest::sha256_of(b"bom");
        let uuid = uuid(&digest);
        let hex = digest.as_str().trim_start_matches("sha256:");
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.replace('-', "").len(), 32);
        assert_eq!(&uuid[..8], &hex[..8]);
        assert_eq!(uuid.as_bytes()[14], b'8');
        assert!(
            matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'),
            "{uuid}"
        );
    }
}
