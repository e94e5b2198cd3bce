//! `deploy/chart`, the chartreg chart, with Helm 3.17 and 4.3: `helm lint --strict` passes with
//! default and other values; `helm template` renders objects that read into the Kubernetes API's
//! types (k8s-openapi) with no field left over (`serde_ignored`: a misspelt field fails), and
//! cert-manager and Prometheus Operator objects into small structs that deny unknown fields;
//! what each object says is checked; bad values fail at template time (values.schema.json, or
//! the chart's own `fail` with a message saying what to set); the NOTES Helm prints after an
//! install are checked line by line, with and without TLS.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Container, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rstest::rstest;
use serde::Deserialize;
use serde::de::DeserializeOwned;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chart() -> PathBuf {
    root().join("deploy/chart")
}

/// Helm 3 or 4 from `.tools/`; missing: fails under `CI=true`, else the test is skipped.
fn helm(name: &str) -> Option<PathBuf> {
    let bin = root().join(".tools").join(name).join("helm");
    if bin.is_file() {
        return Some(bin);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{name} is missing (scripts/install-tools.sh installs it)"
    );
    eprintln!("skipping: {name} is not installed (make tools)");
    None
}

fn run(helm: &Path, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(helm)
        .args(args)
        .env("HOME", home.path())
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .env_remove("KUBECONFIG")
        .output()
        .expect("helm runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `helm template` with `sets`, in namespace `registry`: the objects, as YAML values.
fn render(helm: &Path, sets: &[&str]) -> Vec<serde_yaml_ng::Value> {
    let chart = chart();
    let mut args = vec![
        "template",
        "demo",
        chart.to_str().unwrap(),
        "--namespace",
        "registry",
    ];
    for set in sets {
        args.push("--set");
        args.push(set);
    }
    let out = run(helm, &args);
    assert!(
        out.status.success(),
        "helm template {sets:?}: {}",
        text(&out)
    );
    let rendered = String::from_utf8(out.stdout).unwrap();
    serde_yaml_ng::Deserializer::from_str(&rendered)
        .map(|doc| serde_yaml_ng::Value::deserialize(doc).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// The one object of `kind`, read into `T` with every field known to it.
fn one<T: DeserializeOwned>(objects: &[serde_yaml_ng::Value], kind: &str) -> T {
    let mut found: Vec<T> = all(objects, kind);
    assert_eq!(found.len(), 1, "one {kind}");
    found.remove(0)
}

fn all<T: DeserializeOwned>(objects: &[serde_yaml_ng::Value], kind: &str) -> Vec<T> {
    objects
        .iter()
        .filter(|o| o["kind"].as_str() == Some(kind))
        .map(|o| {
            // Through JSON: k8s-openapi's types read JSON's shapes (quantities, int-or-string).
            let json = serde_json::to_value(o).unwrap();
            let mut ignored = Vec::new();
            let value: T = serde_ignored::deserialize(json, |path| ignored.push(path.to_string()))
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert!(
                ignored.is_empty(),
                "{kind} has fields its type does not know: {ignored:?}"
            );
            value
        })
        .collect()
}

fn kinds(objects: &[serde_yaml_ng::Value]) -> Vec<String> {
    let mut kinds: Vec<String> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("?").to_owned())
        .collect();
    kinds.sort();
    kinds
}

fn manager(deployment: &Deployment) -> Container {
    let pod = deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    assert_eq!(pod.containers.len(), 1);
    let container = pod.containers[0].clone();
    assert_eq!(container.name, "manager");
    container
}

/// cert-manager's Issuer and Certificate, as far as the chart uses them.
// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CertManagerObject {
    api_version: String,
    kind: String,
    metadata: Metadata,
    spec: CertManagerSpec,
}

// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Metadata {
    name: String,
    namespace: String,
    #[serde(default)]
    labels: std::collections::BTreeMap<String, String>,
}

// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CertManagerSpec {
    self_signed: Option<serde_json::Value>,
    ca: Option<CaIssuer>,
    #[serde(rename = "isCA")]
    is_ca: Option<bool>,
    common_name: Option<String>,
    secret_name: Option<String>,
    duration: Option<String>,
    renew_before: Option<String>,
    dns_names: Option<Vec<String>>,
    private_key: Option<PrivateKey>,
    usages: Option<Vec<String>>,
    issuer_ref: Option<IssuerRef>,
}

// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaIssuer {
    secret_name: String,
}

// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PrivateKey {
    algorithm: String,
    size: u32,
    rotation_policy: Option<String>,
}

// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IssuerRef {
    name: String,
    kind: String,
    group: String,
}

/// The Prometheus Operator's ServiceMonitor, as far as the chart uses it.
// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ServiceMonitor {
    api_version: String,
    kind: String,
    metadata: Metadata,
    spec: ServiceMonitorSpec,
}

// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceMonitorSpec {
    selector: serde_json::Value,
    endpoints: Vec<Endpoint>,
}

// Read to check the shape; not every field is asserted on.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Endpoint {
    port: String,
    path: String,
    interval: String,
    scheme: String,
    tls_config: Option<serde_json::Value>,
}

fn cert_manager(objects: &[serde_yaml_ng::Value]) -> Vec<CertManagerObject> {
    objects
        .iter()
        .filter(|o| o["apiVersion"].as_str() == Some("cert-manager.io/v1"))
        .map(|o| serde_yaml_ng::from_value(o.clone()).unwrap_or_else(|e| panic!("{o:?}: {e}")))
        .collect()
}

#[test]
fn lint_strict_passes_with_default_and_other_values() {
    for name in ["helm3", "helm4"] {
        let Some(helm) = helm(name) else { continue };
        let chart = chart();
        for sets in [
            vec![],
            vec![
                "tls.enabled=true",
                "tls.certManager.enabled=true",
                "replicas=1",
                "autoscaling.enabled=true",
                "serviceMonitor.enabled=true",
            ],
        ] {
            let mut args = vec!["lint", "--strict", chart.to_str().unwrap()];
            for set in &sets {
                args.push("--set");
                args.push(set);
            }
            let out = run(&helm, &args);
            assert!(
                out.status.success(),
                "{name} lint --strict {sets:?}: {}",
                text(&out)
            );
        }
    }
}

#[test]
fn default_values_render_what_cluster_api_needs() {
    for name in ["helm3", "helm4"] {
        let Some(helm) = helm(name) else { continue };
        let objects = render(&helm, &[]);
        assert_eq!(
            kinds(&objects),
            ["Deployment", "PodDisruptionBudget", "Service"],
            "{name}"
        );
        let deployment: Deployment = one(&objects, "Deployment");
        let spec = deployment.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(2));
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(
            pod.priority_class_name.as_deref(),
            Some("system-cluster-critical")
        );
        let psc = pod.security_context.as_ref().unwrap();
        assert_eq!(psc.run_as_non_root, Some(true));
        assert_eq!(
            (psc.run_as_user, psc.run_as_group),
            (Some(65532), Some(65532))
        );
        assert_eq!(
            psc.seccomp_profile.as_ref().unwrap().type_,
            "RuntimeDefault"
        );
        let toleration = &pod.tolerations.as_ref().unwrap()[0];
        assert_eq!(
            toleration.key.as_deref(),
            Some("node-role.kubernetes.io/control-plane")
        );
        assert_eq!(toleration.effect.as_deref(), Some("NoSchedule"));
        let preferred = &pod
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()[0];
        let expression = &preferred.preference.match_expressions.as_ref().unwrap()[0];
        assert_eq!(
            (expression.key.as_str(), expression.operator.as_str()),
            ("node-role.kubernetes.io/control-plane", "DoesNotExist")
        );
        let spread = &pod.topology_spread_constraints.as_ref().unwrap()[0];
        assert_eq!(spread.topology_key, "kubernetes.io/hostname");

        let c = manager(&deployment);
        assert_eq!(
            c.image.as_deref(),
            Some("chartreg:0.1.0"),
            "the tag defaults to appVersion"
        );
        assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
        let port = &c.ports.as_ref().unwrap()[0];
        assert_eq!(
            (port.name.as_deref(), port.container_port),
            (Some("http"), 5000)
        );
        let readiness = c.readiness_probe.as_ref().unwrap();
        let get = readiness.http_get.as_ref().unwrap();
        assert_eq!(get.path.as_deref(), Some("/readyz"));
        assert_eq!(get.scheme.as_deref(), Some("HTTP"));
        assert_eq!(readiness.period_seconds, Some(1));
        let liveness = c
            .liveness_probe
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap();
        assert_eq!(liveness.path.as_deref(), Some("/healthz"));
        let sc = c.security_context.as_ref().unwrap();
        assert_eq!(sc.read_only_root_filesystem, Some(true));
        assert_eq!(sc.allow_privilege_escalation, Some(false));
        assert_eq!(
            sc.capabilities.as_ref().unwrap().drop.as_deref(),
            Some(&["ALL".to_owned()][..])
        );
        assert!(c.volume_mounts.is_none(), "no TLS: nothing mounted");

        let service: Service = one(&objects, "Service");
        assert_eq!(service.metadata.name.as_deref(), Some("helm-repository"));
        let sport = &service.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
        assert_eq!(sport.port, 80, "plain HTTP on its own port");
        assert_eq!(sport.target_port, Some(IntOrString::Int(5000)));

        let pdb: PodDisruptionBudget = one(&objects, "PodDisruptionBudget");
        assert_eq!(
            pdb.spec.as_ref().unwrap().min_available,
            Some(IntOrString::Int(1))
        );
    }
}

#[test]
fn tls_cert_manager_autoscaling_and_monitoring_render_when_asked() {
    for name in ["helm3", "helm4"] {
        let Some(helm) = helm(name) else { continue };
        let objects = render(
            &helm,
            &[
                "tls.enabled=true",
                "tls.certManager.enabled=true",
                "autoscaling.enabled=true",
                "serviceMonitor.enabled=true",
                "image.tag=1.2.3",
                "image.repository=registry.example/chartreg",
            ],
        );
        let deployment: Deployment = one(&objects, "Deployment");
        assert_eq!(
            deployment.spec.as_ref().unwrap().replicas,
            None,
            "the autoscaler owns replicas"
        );
        let c = manager(&deployment);
        assert_eq!(c.image.as_deref(), Some("registry.example/chartreg:1.2.3"));
        let args = c.args.clone().unwrap();
        for flag in [
            "--tls-cert-file",
            "/certs/tls.crt",
            "--tls-private-key-file",
            "/certs/tls.key",
        ] {
            assert!(args.contains(&flag.to_owned()), "{args:?}");
        }
        let mount = &c.volume_mounts.as_ref().unwrap()[0];
        assert_eq!(
            (mount.mount_path.as_str(), mount.read_only),
            ("/certs", Some(true))
        );
        let pod = deployment
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap();
        let volume = &pod.volumes.as_ref().unwrap()[0];
        assert_eq!(
            volume.secret.as_ref().unwrap().secret_name.as_deref(),
            Some("helm-repository-tls")
        );
        for probe in [&c.readiness_probe, &c.liveness_probe] {
            assert_eq!(
                probe
                    .as_ref()
                    .unwrap()
                    .http_get
                    .as_ref()
                    .unwrap()
                    .scheme
                    .as_deref(),
                Some("HTTPS")
            );
        }
        let hpa: HorizontalPodAutoscaler = one(&objects, "HorizontalPodAutoscaler");
        assert_eq!(hpa.spec.as_ref().unwrap().min_replicas, Some(2));
        let monitors: Vec<ServiceMonitor> = objects
            .iter()
            .filter(|o| o["kind"].as_str() == Some("ServiceMonitor"))
            .map(|o| serde_yaml_ng::from_value(o.clone()).unwrap())
            .collect();
        assert_eq!(monitors.len(), 1);
        assert_eq!(monitors[0].api_version, "monitoring.coreos.com/v1");
        assert_eq!(monitors[0].spec.endpoints[0].scheme, "https");
        assert!(monitors[0].spec.endpoints[0].tls_config.is_some());

        let certs = cert_manager(&objects);
        let mut names: Vec<(&str, &str)> = certs
            .iter()
            .map(|o| (o.kind.as_str(), o.metadata.name.as_str()))
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                ("Certificate", "demo-chartreg"),
                ("Certificate", "demo-chartreg-ca"),
                ("Issuer", "demo-chartreg-ca"),
                ("Issuer", "demo-chartreg-selfsigned")
            ],
            "{name}"
        );
        let find = |kind: &str, name: &str| {
            certs
                .iter()
                .find(|o| o.kind == kind && o.metadata.name == name)
                .unwrap()
        };
        assert!(
            find("Issuer", "demo-chartreg-selfsigned")
                .spec
                .self_signed
                .is_some()
        );
        let ca = find("Certificate", "demo-chartreg-ca");
        assert_eq!(ca.spec.is_ca, Some(true));
        assert_eq!(
            ca.spec.issuer_ref.as_ref().unwrap().name,
            "demo-chartreg-selfsigned"
        );
        let ca_issuer = find("Issuer", "demo-chartreg-ca");
        assert_eq!(
            ca_issuer.spec.ca.as_ref().unwrap().secret_name,
            "demo-chartreg-ca"
        );
        let serving = &find("Certificate", "demo-chartreg").spec;
        assert_eq!(serving.secret_name.as_deref(), Some("helm-repository-tls"));
        assert_eq!(
            serving.dns_names.as_deref().unwrap(),
            [
                "helm-repository.registry.svc",
                "helm-repository.registry.svc.cluster.local"
            ]
        );
        assert_eq!(
            serving.issuer_ref.as_ref().unwrap().name,
            "demo-chartreg-ca"
        );
        assert!(certs.iter().all(|o| o.metadata.namespace == "registry"));
    }
}

#[test]
fn one_replica_never_blocks_a_drain_and_bad_values_fail() {
    for name in ["helm3", "helm4"] {
        let Some(helm) = helm(name) else { continue };
        let objects = render(&helm, &["replicas=1"]);
        let pdb: PodDisruptionBudget = one(&objects, "PodDisruptionBudget");
        let spec = pdb.spec.unwrap();
        assert_eq!(
            (spec.min_available, spec.max_unavailable),
            (None, Some(IntOrString::Int(1)))
        );

        let chart = chart();
        for bad in [
            "replicas=0",
            "imagee.tag=x",
            "service.port=70000",
            "tls.enabled=maybe",
        ] {
            let out = run(
                &helm,
                &["template", "demo", chart.to_str().unwrap(), "--set", bad],
            );
            assert!(
                !out.status.success(),
                "{name}: --set {bad} should fail: {}",
                text(&out)
            );
        }
    }
}

/// The chart's version, as Chart.yaml says it (the NOTES name it).
fn chart_version() -> String {
    let path = chart().join("Chart.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let chart: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    chart["version"].as_str().unwrap().to_owned()
}

/// Copies the folder `from` to `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The NOTES `helm install demo CHART --namespace registry --set SETS` prints.
///
/// Helm 4 prints them for `helm install --dry-run=client` without a cluster. Helm 3.17 asks a
/// cluster even then (helm/helm#13144), so NOTES.txt is rendered as every template of the
/// chart is: by `helm template`, on a copy of the chart with one more template that includes
/// NOTES.txt. With Helm 4 both are taken and must agree, which shows that the second way gives
/// what an install prints.
fn notes(name: &str, helm: &Path, sets: &[&str]) -> String {
    let copy = tempfile::tempdir().unwrap();
    let dir = copy.path().join("chartreg");
    copy_tree(&chart(), &dir);
    std::fs::write(
        dir.join("templates/notes-under-test.yaml"),
        "notes: {{ include \"chartreg/templates/NOTES.txt\" . | toJson }}\n",
    )
    .unwrap();
    let mut args = vec![
        "template",
        "demo",
        dir.to_str().unwrap(),
        "--namespace",
        "registry",
        "--show-only",
        "templates/notes-under-test.yaml",
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    let out = run(helm, &args);
    assert!(
        out.status.success(),
        "{name} template {sets:?}: {}",
        text(&out)
    );
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    let rendered = doc["notes"].as_str().unwrap().to_owned();

    if name == "helm4" {
        let chart = chart();
        let mut args = vec![
            "install",
            "demo",
            chart.to_str().unwrap(),
            "--namespace",
            "registry",
            "--dry-run=client",
        ];
        for set in sets {
            args.extend(["--set", set]);
        }
        let out = run(helm, &args);
        assert!(
            out.status.success(),
            "{name} install --dry-run=client {sets:?}: {}",
            text(&out)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let (_, printed) = stdout
            .split_once("\nNOTES:\n")
            .unwrap_or_else(|| panic!("{name} install printed no NOTES:\n{stdout}"));
        assert_eq!(
            printed.trim_end(),
            rendered.trim_end(),
            "{name} {sets:?}: the NOTES install prints"
        );
    }
    rendered
}

const PLAIN_NOTES: &str = "\
chartreg serves the charts and images built into it at URL
(the Service's name, which resolves inside the cluster).

What it holds:
  curl URL/v2/_catalog

Pull a chart with Helm 3 or 4: this chart, which chartreg serves itself, or any charts/NAME
in that list:
  helm pull oci://HOST/charts/chartreg --version VERSION --plain-http
";

const CERT_MANAGER_NOTES: &str = "\
chartreg serves the charts and images built into it at URL
(the Service's name, which resolves inside the cluster).

Clients trust the CA cert-manager made for it, ca.crt in the secret SECRET; save it:
  kubectl -n registry get secret SECRET -o jsonpath='{.data.ca\\.crt}' | base64 -d > ca.crt

What it holds:
  curl --cacert ca.crt URL/v2/_catalog

Pull a chart with Helm 3 or 4: this chart, which chartreg serves itself, or any charts/NAME
in that list:
  helm pull oci://HOST/charts/chartreg --version VERSION --ca-file ca.crt
";

const OWN_CA_NOTES: &str = "\
chartreg serves the charts and images built into it at URL
(the Service's name, which resolves inside the cluster).

Clients trust the CA that signed the certificate in the secret SECRET; save that CA as ca.crt.

What it holds:
  curl --cacert ca.crt URL/v2/_catalog

Pull a chart with Helm 3 or 4: this chart, which chartreg serves itself, or any charts/NAME
in that list:
  helm pull oci://HOST/charts/chartreg --version VERSION --ca-file ca.crt
";

/// The NOTES name the address clients use, with the Service's port where it is not the
/// scheme's own, and commands that work there as they are: `--plain-http` without TLS,
/// `--ca-file ca.crt` with it, and where ca.crt comes from.
#[rstest]
#[case::plain_http_on_80(&[], PLAIN_NOTES, "helm-repository.registry.svc", "http", "")]
#[case::plain_http_on_8080(&["service.port=8080"], PLAIN_NOTES, "helm-repository.registry.svc:8080", "http", "")]
#[case::plain_http_on_443(&["service.port=443"], PLAIN_NOTES, "helm-repository.registry.svc:443", "http", "")]
#[case::cert_manager_on_443(
    &["tls.enabled=true", "tls.certManager.enabled=true"],
    CERT_MANAGER_NOTES,
    "helm-repository.registry.svc",
    "https",
    "helm-repository-tls"
)]
#[case::own_secret_on_8443(
    &["tls.enabled=true", "tls.secretName=registry-cert", "service.port=8443", "service.name=charts"],
    OWN_CA_NOTES,
    "charts.registry.svc:8443",
    "https",
    "registry-cert"
)]
#[case::https_on_80(&["tls.enabled=true", "service.port=80"], OWN_CA_NOTES, "helm-repository.registry.svc:80", "https", "helm-repository-tls")]
fn notes_show_the_address_and_commands_that_work_there(
    #[values("helm3", "helm4")] name: &str,
    #[case] sets: &[&str],
    #[case] template: &str,
    #[case] host: &str,
    #[case] scheme: &str,
    #[case] secret: &str,
) {
    let Some(helm) = helm(name) else { return };
    let want = template
        .replace("URL", &format!("{scheme}://{host}"))
        .replace("HOST", host)
        .replace("SECRET", secret)
        .replace("VERSION", &chart_version());
    assert_eq!(notes(name, &helm, sets), want, "{name} {sets:?}");
}

/// The message the chart fails with when cert-manager is asked for without TLS.
const CERT_MANAGER_NEEDS_TLS: &str = "tls.certManager.enabled=true needs tls.enabled=true";

/// `tls.certManager.enabled=true` alone would serve plain HTTP and make no certificate: the
/// install fails, saying what to set (Helm 4 installs with `--dry-run=client` without a
/// cluster; Helm 3 does not, and its `template` renders as its install does). `helm lint` runs
/// templates in a mode where `fail` is reported, not fatal: it shows the message.
#[test]
fn cert_manager_without_tls_fails_saying_what_to_set() {
    for name in ["helm3", "helm4"] {
        let Some(helm) = helm(name) else { continue };
        let chart = chart();
        let chart = chart.to_str().unwrap();
        let set = ["--set", "tls.certManager.enabled=true"];
        let mut commands = vec![vec!["template", "demo", chart]];
        if name == "helm4" {
            commands.push(vec!["install", "demo", chart, "--dry-run=client"]);
        }
        for mut args in commands {
            args.extend(set);
            let out = run(&helm, &args);
            let said = text(&out);
            assert!(!out.status.success(), "{name} {args:?} should fail: {said}");
            assert!(
                said.contains(CERT_MANAGER_NEEDS_TLS) && said.contains("set tls.enabled=true"),
                "{name} {args:?} should say what to set: {said}"
            );
        }
        let mut args = vec!["lint", "--strict", chart];
        args.extend(set);
        let said = text(&run(&helm, &args));
        assert!(
            said.contains(CERT_MANAGER_NEEDS_TLS),
            "{name} {args:?} should show the message: {said}"
        );
        // With TLS it renders the certificates (checked in full elsewhere).
        let objects = render(&helm, &["tls.certManager.enabled=true", "tls.enabled=true"]);
        assert_eq!(cert_manager(&objects).len(), 4, "{name}");
    }
}

/// Ports are named (and the Service's `appProtocol` set) for what they carry, the Service
/// listens on the scheme's own port unless `service.port` says otherwise, and the probes and
/// the ServiceMonitor reach the ports by those names.
#[rstest]
#[case::plain(&[], 80, "http")]
#[case::plain_on_8080(&["service.port=8080"], 8080, "http")]
#[case::tls(&["tls.enabled=true"], 443, "https")]
#[case::tls_on_8443(&["tls.enabled=true", "service.port=8443"], 8443, "https")]
fn ports_are_named_for_what_they_carry(
    #[values("helm3", "helm4")] name: &str,
    #[case] sets: &[&str],
    #[case] port: i32,
    #[case] protocol: &str,
) {
    let Some(helm) = helm(name) else { return };
    let mut all = vec!["serviceMonitor.enabled=true"];
    all.extend_from_slice(sets);
    let objects = render(&helm, &all);
    let context = format!("{name} {sets:?}");

    let service: Service = one(&objects, "Service");
    let ports = service.spec.unwrap().ports.unwrap();
    assert_eq!(ports.len(), 1, "{context}");
    assert_eq!(ports[0].port, port, "{context}");
    assert_eq!(ports[0].name.as_deref(), Some(protocol), "{context}");
    assert_eq!(
        ports[0].app_protocol.as_deref(),
        Some(protocol),
        "{context}"
    );
    assert_eq!(
        ports[0].target_port,
        Some(IntOrString::Int(5000)),
        "{context}: by number, so that old and new pods stay endpoints through an upgrade"
    );

    let deployment: Deployment = one(&objects, "Deployment");
    let c = manager(&deployment);
    let container_ports = c.ports.as_ref().unwrap();
    assert_eq!(container_ports.len(), 1, "{context}");
    assert_eq!(
        (
            container_ports[0].name.as_deref(),
            container_ports[0].container_port
        ),
        (Some(protocol), 5000),
        "{context}"
    );
    for probe in [&c.readiness_probe, &c.liveness_probe] {
        let get = probe.as_ref().unwrap().http_get.as_ref().unwrap();
        assert_eq!(get.port, IntOrString::String(protocol.into()), "{context}");
        assert_eq!(
            get.scheme.as_deref(),
            Some(protocol.to_uppercase().as_str()),
            "{context}"
        );
    }

    let monitors: Vec<ServiceMonitor> = objects
        .iter()
        .filter(|o| o["kind"].as_str() == Some("ServiceMonitor"))
        .map(|o| serde_yaml_ng::from_value(o.clone()).unwrap())
        .collect();
    assert_eq!(monitors.len(), 1, "{context}");
    let endpoint = &monitors[0].spec.endpoints[0];
    assert_eq!(
        (endpoint.port.as_str(), endpoint.scheme.as_str()),
        (protocol, protocol),
        "{context}"
    );
}

/// The server is started with the shutdown delay and timeout of the values, and the pod's
/// grace period covers both and 5 s more, so that the kubelet never kills a pod still draining.
#[rstest]
#[case::defaults(&[], "5s", "30s", 40)]
#[case::longer(&["shutdown.delaySeconds=10", "shutdown.timeoutSeconds=120"], "10s", "120s", 135)]
#[case::none(&["shutdown.delaySeconds=0", "shutdown.timeoutSeconds=0"], "0s", "0s", 5)]
fn the_grace_period_covers_the_shutdown_delay_and_timeout(
    #[values("helm3", "helm4")] name: &str,
    #[case] sets: &[&str],
    #[case] delay: &str,
    #[case] timeout: &str,
    #[case] grace: i64,
) {
    let Some(helm) = helm(name) else { return };
    let objects = render(&helm, sets);
    let context = format!("{name} {sets:?}");
    let deployment: Deployment = one(&objects, "Deployment");
    let args = manager(&deployment).args.unwrap();
    for pair in [["--shutdown-delay", delay], ["--shutdown-timeout", timeout]] {
        assert!(
            args.windows(2).any(|w| w == pair),
            "{context}: {pair:?} in {args:?}"
        );
        assert_eq!(
            args.iter().filter(|a| a.starts_with(pair[0])).count(),
            1,
            "{context}: {} once in {args:?}",
            pair[0]
        );
    }
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    assert_eq!(
        pod.termination_grace_period_seconds,
        Some(grace),
        "{context}"
    );
}

/// A shutdown flag or variable of the server's given through extraArgs or extraEnv would make
/// the pod fail to start (a flag given twice) or be ignored (the flag wins over the variable),
/// and the grace period would not follow it: the chart fails, naming the values to set.
#[rstest]
#[case::timeout_flag(&["--set", "extraArgs={--shutdown-timeout,60s}"], "extraArgs")]
#[case::delay_flag_with_equals(&["--set", "extraArgs={--log-format,json,--shutdown-delay=7s}"], "extraArgs")]
#[case::timeout_variable(&["--set-json", r#"extraEnv=[{"name":"CHARTREG_SHUTDOWN_TIMEOUT","value":"60s"}]"#], "extraEnv")]
#[case::delay_variable(&["--set-json", r#"extraEnv=[{"name":"CHARTREG_SHUTDOWN_DELAY","value":"7s"}]"#], "extraEnv")]
fn shutdown_settings_elsewhere_than_shutdown_fail(
    #[values("helm3", "helm4")] name: &str,
    #[case] sets: &[&str],
    #[case] where_: &str,
) {
    let Some(helm) = helm(name) else { return };
    let chart = chart();
    let mut args = vec!["template", "demo", chart.to_str().unwrap()];
    args.extend_from_slice(sets);
    let out = run(&helm, &args);
    let said = text(&out);
    assert!(!out.status.success(), "{name} {sets:?} should fail: {said}");
    assert!(
        said.contains(where_)
            && said.contains("shutdown.delaySeconds")
            && said.contains("shutdown.timeoutSeconds"),
        "{name} {sets:?} should name {where_} and the values to set: {said}"
    );
}

/// Bad shutdown values fail at template time (values.schema.json).
#[rstest]
#[case::negative_delay("shutdown.delaySeconds=-1")]
#[case::timeout_with_a_unit("shutdown.timeoutSeconds=30s")]
#[case::unknown_key("shutdown.delay=5")]
fn bad_shutdown_values_fail(#[values("helm3", "helm4")] name: &str, #[case] bad: &str) {
    let Some(helm) = helm(name) else { return };
    let chart = chart();
    let out = run(
        &helm,
        &["template", "demo", chart.to_str().unwrap(), "--set", bad],
    );
    assert!(
        !out.status.success(),
        "{name}: --set {bad} should fail: {}",
        text(&out)
    );
}

/// `mirrorConfig.enabled` adds to the NOTES the one command that writes the nodes' files for
/// this release (`chartreg mirror-config ... --format kubeadm`, run in the pod), with the
/// address nodes reach it at, cert-manager's CA, and the flags the values ask for; without
/// `mirrorConfig.url` the install fails saying what to set.
#[rstest]
#[case::plain(
    &["mirrorConfig.enabled=true", "mirrorConfig.url=http://10.0.0.5:30500"],
    "kubectl -n registry exec deploy/demo-chartreg -- /chartreg mirror-config --mirror-url http://10.0.0.5:30500 --format kubeadm > chartreg-mirror.yaml"
)]
#[case::cert_manager_no_fallback(
    &["mirrorConfig.enabled=true", "mirrorConfig.url=https://registry.example:443", "mirrorConfig.noUpstreamFallback=true", "mirrorConfig.default=true", "tls.enabled=true", "tls.certManager.enabled=true"],
    "kubectl -n registry exec deploy/demo-chartreg -- /chartreg mirror-config --mirror-url https://registry.example:443 --ca-file /certs/ca.crt --no-upstream-fallback --default --format kubeadm > chartreg-mirror.yaml"
)]
fn mirror_config_notes_give_the_command_for_the_nodes(
    #[values("helm3", "helm4")] name: &str,
    #[case] sets: &[&str],
    #[case] command: &str,
) {
    let Some(helm) = helm(name) else { return };
    let printed = notes(name, &helm, sets);
    assert!(
        printed.lines().any(|l| l.trim() == command),
        "{name} {sets:?}: `{command}` in:\n{printed}"
    );
    let without = notes(name, &helm, &[]);
    assert!(!without.contains("mirror-config"), "{without}");
}

#[test]
fn mirror_config_without_a_url_fails_saying_what_to_set() {
    for name in ["helm3", "helm4"] {
        let Some(helm) = helm(name) else { continue };
        let chart = chart();
        let out = run(
            &helm,
            &[
                "template",
                "demo",
                chart.to_str().unwrap(),
                "--set",
                "mirrorConfig.enabled=true",
            ],
        );
        let said = text(&out);
        assert!(!out.status.success(), "{name}: {said}");
        assert!(
            said.contains("mirrorConfig.enabled=true needs mirrorConfig.url"),
            "{name}: {said}"
        );
        let out = run(
            &helm,
            &[
                "template",
                "demo",
                chart.to_str().unwrap(),
                "--set",
                "mirrorConfig.url=chartreg:5000",
            ],
        );
        assert!(
            !out.status.success(),
            "{name}: a URL without a scheme: {}",
            text(&out)
        );
    }
}
