//! Instruction count of serving a manifest by tag as content grows: builds an in-memory
//! registry with `--tags N` tags in one repository (and `--repositories M` more repositories),
//! then answers `--requests R` GETs of one manifest by tag through the whole actix application
//! (middleware, routing, lookup, response), in `serve_requests`.
//!
//! Run it under callgrind with collection limited to that function, so that set-up does not
//! count and the result does not depend on machine noise:
//!
//!     valgrind --tool=callgrind --toggle-collect='*serve_requests*' \
//!         target/release/examples/lookup_cost --tags 10000 --requests 2000
//!
//! (`bench/lookup-flatness.sh` does this for 10 and 10,000 tags and compares.)

use actix_web::test::{self, TestRequest};
use actix_web::web;
use chartreg_core::content::{HeldFile, Registry};
use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::oci::media_type;
use chartreg_core::tree::LayoutBuilder;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn registry(tags: usize, repositories: usize) -> Result<Registry, Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    let mut layout = LayoutBuilder::new("bench/app");
    for i in 0..tags {
        let config = layout.blob(
            media_type::HELM_CONFIG,
            format!("{{\"n\":{i}}}").into_bytes(),
        );
        let chart = layout.blob(media_type::HELM_CHART, format!("chart {i}").into_bytes());
        let d = layout.manifest(
            media_type::OCI_MANIFEST,
            &ImageManifest::new(config, vec![chart]),
        );
        layout.list(d, Some(&format!("1.0.{i}")));
    }
    files.extend(layout.into_files()?);
    for r in 0..repositories {
        let mut layout = LayoutBuilder::new(&format!("bench/r{r:05}"));
        let config = layout.blob(
            media_type::HELM_CONFIG,
            format!("{{\"r\":{r}}}").into_bytes(),
        );
        let d = layout.manifest(
            media_type::OCI_MANIFEST,
            &ImageManifest::new(config, vec![]),
        );
        layout.list(d, Some("1.0.0"));
        files.extend(layout.into_files()?);
    }
    Ok(Registry::from_files(
        files.into_iter().map(|(p, b)| HeldFile::new(p, b)),
    )?)
}

/// The measured part: `requests` GETs through the application, run to completion on `rt`.
#[inline(never)]
fn serve_requests<S, B>(rt: &actix_web::rt::Runtime, app: &S, uri: &str, requests: usize) -> usize
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
{
    rt.block_on(async {
        let mut ok = 0;
        for _ in 0..requests {
            let res = test::call_service(app, TestRequest::get().uri(uri).to_request()).await;
            ok += usize::from(res.status().is_success());
        }
        ok
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tags = arg("--tags", 10);
    let repositories = arg("--repositories", 0);
    let requests = arg("--requests", 1000);
    let registry = registry(tags, repositories)?;
    let rt = actix_web::rt::Runtime::new()?;
    let app = rt.block_on(test::init_service(chartreg::http::app(web::Data::new(
        registry,
    ))));
    let uri = format!("/v2/bench/app/manifests/1.0.{}", tags / 2);
    let ok = serve_requests(&rt, &app, &uri, requests);
    if ok != requests {
        return Err(format!("{} of {requests} requests failed", requests - ok).into());
    }
    println!("{tags} tags, {repositories} extra repositories: {requests} requests served");
    Ok(())
}
