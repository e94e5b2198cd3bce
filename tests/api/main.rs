//! Every endpoint, status, header and error code of the read API, in-process (actix's test
//! service) over the committed assets and over generated content; plus HEAD and Content-Length
//! on a real socket, where actix strips HEAD bodies.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod blobs;
#[path = "../common/mod.rs"]
mod common;
mod listings;
mod manifests;
mod namespaces;
mod pages;
mod referrers;
mod requests;
mod sbom;
mod verified;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use actix_web::dev::ServiceResponse;
use actix_web::http::{Method, StatusCode, header};
use actix_web::test::{self, TestRequest};
use actix_web::web;
use bytes::Bytes;
use chartreg_core::content::{HeldFile, Registry};
use chartreg_core::oci::layout::{Annotations, Descriptor, ImageManifest};
use chartreg_core::oci::media_type;
use chartreg_core::tree::LayoutBuilder;
use rstest::rstest;
use serde_json::{Value, json};

const HELLO: &str = "charts/hello";
const HELLO_TAGS: [&str; 5] = ["0.1.0", "0.2.0", "1.0.0", "1.0.1_build.7", "1.1.0-rc.1"];

/// Sends one request to the app over `registry` and returns status, headers and body.
async fn call(registry: Registry, method: Method, uri: &str, headers: &[(&str, &str)]) -> Reply {
    let app = test::init_service(chartreg::http::app(web::Data::new(registry))).await;
    let mut req = TestRequest::default().method(method).uri(uri);
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let res: ServiceResponse<_> = test::call_service(&app, req.to_request()).await;
    let status = res.status();
    let headers = res.headers().clone();
    let body = test::read_body(res).await;
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(uri: &str) -> Reply {
    call(common::assets_registry(), Method::GET, uri, &[]).await
}

struct Reply {
    status: StatusCode,
    headers: header::HeaderMap,
    body: Bytes,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts the spec's error envelope with `code`, and returns its message.
    fn assert_error(&self, status: StatusCode, code: &str) -> String {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.header("content-type"), Some("application/json"));
        assert_eq!(
            self.header("docker-distribution-api-version"),
            Some("registry/2.0")
        );
        let v = self.json();
        let errors = v["errors"].as_array().expect("errors array");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0]["code"], code, "{v}");
        let message = errors[0]["message"].as_str().expect("message").to_owned();
        assert!(!message.is_empty());
        message
    }
}

/// The index.json descriptor of `tag` in a committed layout.
fn tagged(repository: &str, tag: &str) -> Descriptor {
    let index = std::fs::read(
        common::root()
            .join("assets")
            .join(repository)
            .join("index.json"),
    )
    .unwrap();
    let index: chartreg_core::oci::layout::ImageIndex = serde_json::from_slice(&index).unwrap();
    index
        .manifests
        .into_iter()
        .find(|d| {
            d.annotations
                .get("org.opencontainers.image.ref.name")
                .map(String::as_str)
                == Some(tag)
        })
        .unwrap_or_else(|| panic!("{repository}:{tag} is in assets"))
}

fn blob_bytes(repository: &str, digest: &str) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").unwrap();
    std::fs::read(
        common::root()
            .join("assets")
            .join(repository)
            .join("blobs/sha256")
            .join(hex),
    )
    .unwrap()
}

fn manifest_of(repository: &str, tag: &str) -> ImageManifest {
    let d = tagged(repository, tag);
    serde_json::from_slice(&blob_bytes(repository, d.digest.as_str())).unwrap()
}
