//! The node files as a Cluster API `KubeadmConfigTemplate`: Cluster API lays a machine's files
//! from its bootstrap template (`spec.template.spec.files`), so these wire every node a cluster
//! creates.

use serde::Serialize;

use super::{MirrorError, NodeFile};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Template<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata<'a>,
    spec: TemplateSpec<'a>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
}

#[derive(Serialize)]
struct TemplateSpec<'a> {
    template: InnerTemplate<'a>,
}

#[derive(Serialize)]
struct InnerTemplate<'a> {
    spec: FilesSpec<'a>,
}

#[derive(Serialize)]
struct FilesSpec<'a> {
    files: Vec<KubeadmFile<'a>>,
}

#[derive(Serialize)]
struct KubeadmFile<'a> {
    path: &'a str,
    owner: &'static str,
    permissions: &'static str,
    content: std::borrow::Cow<'a, str>,
}

/// The files as a Cluster API `KubeadmConfigTemplate` (bootstrap.cluster.x-k8s.io/v1beta1)
/// holding only `spec.template.spec.files`: applied as it is, or its `files` merged into the
/// template a cluster's machine deployments use.
pub fn kubeadm_config_template(
    files: &[NodeFile],
    name: &str,
    namespace: Option<&str>,
) -> Result<String, MirrorError> {
    let template = Template {
        api_version: "bootstrap.cluster.x-k8s.io/v1beta1",
        kind: "KubeadmConfigTemplate",
        metadata: Metadata { name, namespace },
        spec: TemplateSpec {
            template: InnerTemplate {
                spec: FilesSpec {
                    files: files
                        .iter()
                        .map(|f| KubeadmFile {
                            path: &f.path,
                            owner: "root:root",
                            permissions: "0644",
                            content: String::from_utf8_lossy(&f.content),
                        })
                        .collect(),
                },
            },
        },
    };
    Ok(format!(
        "# Written by `chartreg mirror-config --format kubeadm`: the files that make nodes pull\n# through chartreg.\n{}",
        serde_yaml_ng::to_string(&template)?
    ))
}
