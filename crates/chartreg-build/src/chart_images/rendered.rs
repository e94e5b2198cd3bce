//! The images in a chart's rendered manifests (`helm template` output: YAML documents, each
//! after a `# Source: CHART/templates/FILE` line): every `image` of the containers,
//! initContainers and ephemeralContainers of each pod spec, in the kinds that hold one: Pod
//! (`spec`), Deployment, DaemonSet, StatefulSet, ReplicaSet, Job (`spec.template.spec`) and
//! CronJob (`spec.jobTemplate.spec.template.spec`). This is what the cluster will pull with
//! those values, for the parts those values enable; what an operator deploys later is not in
//! it.

use serde_yaml_ng::Value;

use super::reference::ImageRef;

/// One image in one pod spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub image: ImageRef,
    /// The template file (`platform/charts/agent/templates/sts.yaml`).
    pub source: String,
    /// `platform/templates/controller.yaml: Deployment platform-controller, containers controller`.
    pub at: String,
}

/// What a rendering held that is not an image reference, naming where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {problem}")]
pub struct RenderedProblem {
    pub at: String,
    pub problem: String,
}

const POD_KINDS: [&str; 7] = [
    "Pod",
    "Deployment",
    "DaemonSet",
    "StatefulSet",
    "ReplicaSet",
    "Job",
    "CronJob",
];
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// Every image in the pod specs of `manifests`; an image value that is no reference is a
/// problem naming its document and container (the chart would fail to pull it).
pub fn find(manifests: &str) -> (Vec<Rendered>, Vec<RenderedProblem>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    // What the chart's templates write is as hostile as the chart: its aliases expand within
    // the bounds a chart's own YAML has, shared by all its documents.
    let mut budget = crate::yaml::Budget::default();
    for (source, text) in documents(manifests) {
        let doc: Value = match crate::yaml::value(text.as_bytes(), &mut budget) {
            Ok(doc) => doc,
            Err(e) => {
                problems.push(RenderedProblem {
                    at: source.to_owned(),
                    problem: format!("not YAML: {e}"),
                });
                continue;
            }
        };
        let Some(kind) = doc.get("kind").and_then(Value::as_str) else {
            continue;
        };
        if !POD_KINDS.contains(&kind) {
            continue;
        }
        let name = doc
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let spec = match kind {
            "Pod" => doc.get("spec"),
            "CronJob" => path(&doc, &["spec", "jobTemplate", "spec", "template", "spec"]),
            _ => path(&doc, &["spec", "template", "spec"]),
        };
        let Some(spec) = spec else { continue };
        for list in CONTAINER_LISTS {
            let Some(Value::Sequence(containers)) = spec.get(list) else {
                continue;
            };
            for container in containers {
                let container_name = container.get("name").and_then(Value::as_str).unwrap_or("");
                let at = format!("{source}: {kind} {name}, {list} {container_name}");
                match container.get("image").and_then(Value::as_str) {
                    Some(reference) => match ImageRef::parse(reference.trim()) {
                        Ok(image) => found.push(Rendered {
                            image,
                            source: source.to_owned(),
                            at,
                        }),
                        Err(e) => problems.push(RenderedProblem {
                            at,
                            problem: e.to_string(),
                        }),
                    },
                    None => problems.push(RenderedProblem {
                        at,
                        problem: "no image".to_owned(),
                    }),
                }
            }
        }
    }
    (found, problems)
}

fn path<'v>(value: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().try_fold(value, |v, k| v.get(*k))
}

/// The documents of a multi-document YAML stream, each with the template it came from (the
/// `# Source:` comment Helm writes above it; empty when there is none).
fn documents(manifests: &str) -> Vec<(&str, &str)> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in manifests.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(&manifests[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    docs.push(&manifests[start..]);
    docs.into_iter()
        .filter(|d| !d.trim().is_empty())
        .map(|d| {
            let source = d
                .lines()
                .find_map(|l| l.strip_prefix("# Source: "))
                .unwrap_or("")
                .trim();
            (source, d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = r#"---
# Source: platform/templates/sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: platform
---
# Source: platform/templates/controller.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: platform-controller
spec:
  template:
    spec:
      initContainers:
        - name: migrate
          image: "busybox:1.36"
      containers:
        - name: controller
          image: quay.io/example/controller:2.4.1
        - name: broken
          image: ":bad"
---
# Source: platform/templates/backup.yaml
apiVersion: batch/v1
kind: CronJob
metadata:
  name: backup
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: backup
              image: registry.k8s.io/example/backup:v0.3
---
# Source: platform/charts/agent/templates/pod.yaml
apiVersion: v1
kind: Pod
metadata:
  name: debug
spec:
  containers: []
  ephemeralContainers:
    - name: shell
      image: nginx
"#;

    #[test]
    fn every_pod_spec_of_every_kind() {
        let (found, problems) = find(OUTPUT);
        let got: Vec<(String, &str)> = found
            .iter()
            .map(|r| (r.image.to_string(), r.at.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "quay.io/example/controller:2.4.1".to_owned(),
                    "platform/templates/controller.yaml: Deployment platform-controller, containers controller"
                ),
                (
                    "docker.io/library/busybox:1.36".to_owned(),
                    "platform/templates/controller.yaml: Deployment platform-controller, initContainers migrate"
                ),
                (
                    "registry.k8s.io/example/backup:v0.3".to_owned(),
                    "platform/templates/backup.yaml: CronJob backup, containers backup"
                ),
                (
                    "docker.io/library/nginx:latest".to_owned(),
                    "platform/charts/agent/templates/pod.yaml: Pod debug, ephemeralContainers shell"
                ),
            ]
        );
        assert_eq!(found[3].source, "platform/charts/agent/templates/pod.yaml");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].to_string().contains("containers broken"));
    }
}
