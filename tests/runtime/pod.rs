//! What the deploy chart asks of the runtime, read off the chart itself: `helm template
//! deploy/chart --set tls.enabled=true` (HTTPS, as production serves), its Deployment's one
//! container. The tests run the image with these settings, so a change to the chart's values
//! changes what they run.

use std::process::Command;
use std::time::Duration;

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::common;

/// The container spec and pod settings the chart renders.
#[derive(Debug, Clone)]
pub struct Pod {
    /// The container's args (the image's entrypoint is the command).
    pub args: Vec<String>,
    /// The address `--listen` is given, and the port of the probes.
    pub listen: String,
    pub readiness_path: String,
    pub liveness_path: String,
    /// `HTTPS` with TLS on.
    pub probe_scheme: String,
    /// `resources.limits.memory`, in bytes.
    pub memory_limit: u64,
    pub grace: Duration,
    pub run_as_user: u64,
    pub run_as_group: u64,
    pub read_only_root: bool,
    pub drop_all_capabilities: bool,
    pub no_new_privileges: bool,
    pub runtime_default_seccomp: bool,
    /// Where the certificate secret is mounted.
    pub certs_mount: String,
    /// The Deployment's rolling update: pods stopped before their replacement is ready, and
    /// pods started beyond the replica count (integers).
    pub max_unavailable: u64,
    pub max_surge: u64,
    /// The readiness probe's period and failure threshold (Kubernetes' default 3 when unset).
    pub readiness_period: Duration,
    pub readiness_failures: u64,
}

impl Pod {
    /// Renders the chart with `helm` (Helm 3 or 4); `None` (skipped) when it is missing.
    pub fn from_chart() -> Option<Pod> {
        let helm = common::tool("helm4")?;
        let home = tempfile::tempdir().expect("temp dir");
        let chart = common::root().join("deploy/chart");
        let mut cmd = Command::new(helm);
        cmd.arg("template")
            .arg("chartreg")
            .arg(&chart)
            .args(["--set", "tls.enabled=true"]);
        common::isolate_helm(&mut cmd, home.path());
        let out = common::output_of(&mut cmd, "helm template deploy/chart");
        assert!(
            out.status.success(),
            "helm template deploy/chart: {}",
            common::describe(&out)
        );
        let text = String::from_utf8(out.stdout).expect("UTF-8 manifests");
        Some(Pod::of(&text))
    }

    /// The Deployment among `manifests`.
    fn of(manifests: &str) -> Pod {
        let deployment = serde_yaml_ng::Deserializer::from_str(manifests)
            .map(|doc| Value::deserialize(doc).expect("a YAML document"))
            .find(|doc| doc["kind"].as_str() == Some("Deployment"))
            .expect("the chart renders a Deployment");
        let pod = &deployment["spec"]["template"]["spec"];
        let containers = pod["containers"].as_sequence().expect("containers");
        assert_eq!(containers.len(), 1, "one container");
        let c = &containers[0];
        let args: Vec<String> = c["args"]
            .as_sequence()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("string args").to_owned())
            .collect();
        let listen = args
            .iter()
            .skip_while(|a| *a != "--listen")
            .nth(1)
            .expect("--listen ADDRESS")
            .clone();
        let text = |v: &Value, what: &str| -> String {
            v.as_str()
                .unwrap_or_else(|| panic!("{what} in the chart's Deployment"))
                .to_owned()
        };
        let security = &c["securityContext"];
        let pod_security = &pod["securityContext"];
        let drop: Vec<&str> = security["capabilities"]["drop"]
            .as_sequence()
            .map(|d| d.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let certs_mount = c["volumeMounts"]
            .as_sequence()
            .and_then(|mounts| mounts.iter().find(|m| m["name"].as_str() == Some("certs")))
            .map(|m| text(&m["mountPath"], "the certs mount"))
            .expect("the certs volume mount (tls.enabled=true)");
        Pod {
            listen,
            readiness_path: text(&c["readinessProbe"]["httpGet"]["path"], "readiness path"),
            liveness_path: text(&c["livenessProbe"]["httpGet"]["path"], "liveness path"),
            probe_scheme: text(&c["readinessProbe"]["httpGet"]["scheme"], "probe scheme"),
            memory_limit: quantity(&text(&c["resources"]["limits"]["memory"], "memory limit")),
            grace: Duration::from_secs(
                pod["terminationGracePeriodSeconds"]
                    .as_u64()
                    .expect("terminationGracePeriodSeconds"),
            ),
            run_as_user: security["runAsUser"].as_u64().expect("runAsUser"),
            run_as_group: security["runAsGroup"].as_u64().expect("runAsGroup"),
            read_only_root: security["readOnlyRootFilesystem"].as_bool() == Some(true),
            drop_all_capabilities: drop == ["ALL"],
            no_new_privileges: security["allowPrivilegeEscalation"].as_bool() == Some(false),
            runtime_default_seccomp: pod_security["seccompProfile"]["type"].as_str()
                == Some("RuntimeDefault")
                || security["seccompProfile"]["type"].as_str() == Some("RuntimeDefault"),
            certs_mount,
            max_unavailable: deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"]
                .as_u64()
                .expect("maxUnavailable as a number"),
            max_surge: deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
                .as_u64()
                .expect("maxSurge as a number"),
            readiness_period: Duration::from_secs(
                c["readinessProbe"]["periodSeconds"].as_u64().unwrap_or(10),
            ),
            readiness_failures: c["readinessProbe"]["failureThreshold"]
                .as_u64()
                .unwrap_or(3),
            args,
        }
    }

    /// The args with `--listen` on `address` instead (the containers share the host's network
    /// here, where each pod has its own: the one setting changed).
    pub fn args_listening_on(&self, address: &str) -> Vec<String> {
        self.args
            .iter()
            .map(|a| {
                if *a == self.listen {
                    address.to_owned()
                } else {
                    a.clone()
                }
            })
            .collect()
    }
}

/// A Kubernetes memory quantity (`512Mi`, `1Gi`, `268435456`) in bytes.
fn quantity(text: &str) -> u64 {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number.parse().expect("a memory quantity");
    n * match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        other => panic!("memory unit {other} not handled"),
    }
}
