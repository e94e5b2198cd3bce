//! The images a chart's author lists in `Chart.yaml` annotations: `artifacthub.io/images`
//! (Artifact Hub's: a YAML list of `{name, image, platforms, whitelisted}`) and `helm.sh/images`
//! (the same list, or plain references), for the chart and each subchart. Operator charts list
//! there the images they deploy at run time, which no rendering sees.

use serde_yaml_ng::Value;

use super::reference::ImageRef;
use super::tree::ChartTree;

/// The annotations read, in this order.
pub const KEYS: [&str; 2] = ["artifacthub.io/images", "helm.sh/images"];

/// One image an annotation names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotated {
    pub image: ImageRef,
    /// The subchart whose `Chart.yaml` holds it (`NAME:VERSION`), if not the chart itself.
    pub subchart: Option<String>,
    /// `Chart.yaml artifacthub.io/images`, `charts/agent/Chart.yaml helm.sh/images`.
    pub at: String,
}

/// Every image the annotations of `tree` and its subcharts name; what cannot be read goes to
/// `warnings`, naming the chart, the annotation and the entry.
pub fn find(tree: &ChartTree, warnings: &mut Vec<String>) -> Vec<Annotated> {
    let mut found = Vec::new();
    walk(tree, "", None, &tree.id(), &mut found, warnings);
    found
}

fn walk(
    chart: &ChartTree,
    dir: &str,
    subchart: Option<String>,
    top: &str,
    found: &mut Vec<Annotated>,
    warnings: &mut Vec<String>,
) {
    for key in KEYS {
        let Some(text) = chart.annotations.get(key) else {
            continue;
        };
        let at = format!("{dir}Chart.yaml {key}");
        let mut warn = |what: String| warnings.push(format!("{top}: {at}: {what}"));
        let entries = match crate::yaml::value(text.as_bytes(), &mut crate::yaml::Budget::default())
        {
            Ok(Value::Sequence(entries)) => entries,
            Ok(Value::Null) => continue,
            Ok(_) => {
                warn("not a list of images".to_owned());
                continue;
            }
            Err(e) => {
                warn(format!("not YAML: {e}"));
                continue;
            }
        };
        for entry in entries {
            let reference = match &entry {
                Value::String(s) => Some(s.as_str()),
                Value::Mapping(m) => m.get("image").and_then(Value::as_str),
                _ => None,
            };
            let Some(reference) = reference else {
                warn(format!(
                    "an entry without an `image`: {}",
                    serde_yaml_ng::to_string(&entry).unwrap_or_default().trim()
                ));
                continue;
            };
            match ImageRef::parse(reference.trim()) {
                Ok(image) => found.push(Annotated {
                    image,
                    subchart: subchart.clone(),
                    at: at.clone(),
                }),
                Err(e) => warn(e.to_string()),
            }
        }
    }
    for (_, sub) in &chart.subcharts {
        walk(
            sub,
            &format!("{dir}charts/{}/", sub.name),
            Some(sub.id()),
            top,
            found,
            warnings,
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn chart(name: &str, annotations: &[(&str, &str)]) -> ChartTree {
        ChartTree {
            name: name.into(),
            version: "1.0.0".into(),
            app_version: String::new(),
            annotations: annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            values: Value::Null,
            subcharts: Vec::new(),
        }
    }

    #[test]
    fn both_annotations_of_the_chart_and_its_subcharts_are_read() {
        let mut top = chart(
            "cilium",
            &[(
                "artifacthub.io/images",
                "- name: cilium\n  image: quay.io/cilium/cilium:v1.15.0\n  platforms: [linux/amd64]\n- name: broken\n",
            )],
        );
        top.subcharts.push((
            "sub".into(),
            chart("sub", &[("helm.sh/images", "- nginx:1\n- \"{{ x }}\"\n")]),
        ));
        let mut warnings = Vec::new();
        let found = find(&top, &mut warnings);
        let got: Vec<(String, Option<String>, &str)> = found
            .iter()
            .map(|a| (a.image.to_string(), a.subchart.clone(), a.at.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "quay.io/cilium/cilium:v1.15.0".to_owned(),
                    None,
                    "Chart.yaml artifacthub.io/images"
                ),
                (
                    "docker.io/library/nginx:1".to_owned(),
                    Some("sub:1.0.0".to_owned()),
                    "charts/sub/Chart.yaml helm.sh/images"
                ),
            ]
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("cilium:1.0.0") && warnings[0].contains("name: broken"));
        assert!(warnings[1].contains("{{ x }}"), "{warnings:?}");
    }

    #[test]
    fn an_annotation_that_is_no_list_is_a_warning() {
        let mut warnings = Vec::new();
        let found = find(
            &chart("x", &[("artifacthub.io/images", "image: nginx")]),
            &mut warnings,
        );
        assert!(found.is_empty());
        assert!(warnings[0].contains("not a list"), "{warnings:?}");
    }
}
