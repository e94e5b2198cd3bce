//! chartreg's image under a real container runtime, as a cluster runs it: containerd 1.6 and
//! runc (a containerd of the test's own, `ctr run`), with what the deploy chart sets (module
//! `pod`: read off `helm template deploy/chart`), serving HTTPS with the chart's certificate
//! mount. `run`: the image's user, capabilities, seccomp and read-only root as the process has
//! them; its probes; Helm 3 and 4 and containerd pulling through it; a 1 GiB blob served
//! byte-exact under the chart's memory limit; SIGTERM as the kubelet sends it. `rollout`: two
//! replicas behind haproxy (the Service), each replaced in turn by a newer image while clients
//! pull, with no failed pull.
//!
//! Under CI=true a missing containerd, ctr, runc, Helm, curl or haproxy fails the tests.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;

mod https;
mod images;
mod node;
mod pod;
mod rollout;
mod run;
