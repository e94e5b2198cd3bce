//! What operators rely on: health and readiness, Prometheus metrics, caching headers and
//! conditional requests, request limits, and structured logs.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod app;
#[path = "../common/mod.rs"]
mod common;
mod server;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::{Method, StatusCode};
use actix_web::test::{self, TestRequest};
use actix_web::web;
use chartreg::http::{IMMUTABLE, Ops, REVALIDATE, app_with};
use chartreg::metrics::{BuildInfo, Metrics};
use rstest::rstest;

struct Reply {
    status: StatusCode,
    headers: actix_web::http::header::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Sends requests in order to one app; returns the replies and the app's metrics.
async fn exchange(ready: bool, requests: Vec<TestRequest>) -> (Vec<Reply>, Arc<Metrics>) {
    let registry = common::assets_registry();
    let metrics = Arc::new(Metrics::new(
        &chartreg::http::LABELS,
        registry.summary(),
        BuildInfo {
            version: "test".into(),
            revision: "r1".into(),
            content_digest: "sha256:c0".into(),
            created: "2026-12-06T00:00:00Z".into(),
            signer: "none".into(),
        },
    ));
    let ops = Ops::new(metrics.clone(), 1024, true);
    ops.set_ready(ready);
    let app = test::init_service(app_with(web::Data::new(registry), web::Data::new(ops))).await;
    let mut replies = Vec::new();
    for req in requests {
        let res = test::call_service(&app, req.to_request()).await;
        let status = res.status();
        let headers = res.headers().clone();
        let body = test::read_body(res).await.to_vec();
        replies.push(Reply {
            status,
            headers,
            body,
        });
    }
    (replies, metrics)
}

fn get(uri: &str) -> TestRequest {
    TestRequest::get().uri(uri)
}

fn digest_of(repository: &str, tag: &str) -> String {
    common::assets_registry()
        .repository(&repository.parse().unwrap())
        .unwrap()
        .tag_digest(tag)
        .unwrap()
        .to_string()
}

fn chart_layer(tag: &str) -> String {
    let registry = common::assets_registry();
    let repo = registry
        .repository(&"charts/hello".parse().unwrap())
        .unwrap();
    let m = repo.manifest(&tag.parse().unwrap()).unwrap();
    let m: serde_json::Value = serde_json::from_slice(&m.data).unwrap();
    m["layers"][0]["digest"].as_str().unwrap().to_owned()
}
