//! The benchmark's control: the least an actix-web server can do to answer the registry's read
//! requests, so that `make bench` shows what actix-web itself costs next to nginx on this
//! machine, apart from everything chartreg does on top (parsing and validating names,
//! digests and pagination, caching headers, the access log, metrics, middleware).
//!
//!     cargo run --release --example bare_actix -- SITE ADDRESS
//!
//! SITE is the static `/v2/` tree that `bench/nginx_site.py` writes for nginx (`SITE/html`,
//! `SITE/dcd-map.conf`). Every file is read once at start-up and leaked into a `&'static [u8]`;
//! a request is one hash-map lookup by path (the query string is ignored, as nginx does) and
//! an answer made of those bytes and header values made at start-up: Content-Type,
//! Docker-Content-Digest and Docker-Distribution-API-Version, like nginx's location rules.
//! Bodies larger than 1 MiB go out as 1 MiB static slices (as chartreg sends them). One
//! worker per CPU the process may use, as chartreg.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};

use actix_web::body::SizedStream;
use actix_web::http::header::{CONTENT_TYPE, HeaderName, HeaderValue, InvalidHeaderValue};
use actix_web::web::{Bytes, Data};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

const CHUNK: usize = 1024 * 1024;

struct Answer {
    body: &'static [u8],
    content_type: HeaderValue,
    digest: Option<HeaderValue>,
}

type Site = HashMap<String, Answer>;

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The `<uri> <digest>;` lines of nginx's `map $uri $dcd { ... }`.
fn tag_digests(map: &str) -> HashMap<String, String> {
    map.lines()
        .filter_map(|line| {
            let (uri, digest) = line.trim().strip_suffix(';')?.split_once(' ')?;
            uri.starts_with('/')
                .then(|| (uri.to_owned(), digest.trim().to_owned()))
        })
        .collect()
}

/// Why the site cannot be served, naming the file or URI it is about.
#[derive(Debug)]
enum LoadError {
    Read(PathBuf, std::io::Error),
    Outside(PathBuf),
    Digest(String, InvalidHeaderValue),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Read(path, e) => write!(f, "{}: {e}", path.display()),
            LoadError::Outside(path) => write!(f, "{}: not under the site", path.display()),
            LoadError::Digest(uri, e) => write!(f, "{uri}: {e}"),
        }
    }
}

impl std::error::Error for LoadError {}

fn load(site: &Path) -> Result<Site, LoadError> {
    let html = site.join("html");
    let map_file = site.join("dcd-map.conf");
    let map = std::fs::read_to_string(&map_file).map_err(|e| LoadError::Read(map_file, e))?;
    let by_tag = tag_digests(&map);
    let mut files = Vec::new();
    walk(&html, &mut files).map_err(|e| LoadError::Read(html.clone(), e))?;
    let mut answers = Site::new();
    for file in files {
        let relative = file
            .strip_prefix(&html)
            .map_err(|_| LoadError::Outside(file.clone()))?
            .to_string_lossy()
            .replace(std::path::MAIN_SEPARATOR, "/");
        let uri = match relative.as_str() {
            "v2/index.json" => "/v2/".to_owned(),
            other => format!("/{other}"),
        };
        let body: &'static [u8] = std::fs::read(&file)
            .map_err(|e| LoadError::Read(file.clone(), e))?
            .leak();
        let (content_type, digest) = if uri.contains("/manifests/") {
            let digest = match uri.rsplit_once("/manifests/") {
                Some((_, reference)) if reference.starts_with("sha256:") => {
                    Some(reference.to_owned())
                }
                _ => by_tag.get(&uri).cloned(),
            };
            ("application/vnd.oci.image.manifest.v1+json", digest)
        } else if let Some((_, digest)) = uri.rsplit_once("/blobs/") {
            ("application/octet-stream", Some(digest.to_owned()))
        } else {
            ("application/json", None)
        };
        let digest = digest
            .map(|d| HeaderValue::from_str(&d).map_err(|e| LoadError::Digest(uri.clone(), e)))
            .transpose()?;
        answers.insert(
            uri,
            Answer {
                body,
                content_type: HeaderValue::from_static(content_type),
                digest,
            },
        );
    }
    Ok(answers)
}

const API_VERSION: HeaderName = HeaderName::from_static("docker-distribution-api-version");
const DIGEST: HeaderName = HeaderName::from_static("docker-content-digest");

async fn answer(req: HttpRequest, site: Data<Site>) -> HttpResponse {
    let Some(found) = site.get(req.path()) else {
        let body = site.get("/_404.json").map_or(&b"{}"[..], |a| a.body);
        return HttpResponse::NotFound()
            .insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")))
            .insert_header((API_VERSION, HeaderValue::from_static("registry/2.0")))
            .body(Bytes::from_static(body));
    };
    let mut response = HttpResponse::Ok();
    response
        .insert_header((CONTENT_TYPE, found.content_type.clone()))
        .insert_header((API_VERSION, HeaderValue::from_static("registry/2.0")));
    if let Some(digest) = &found.digest {
        response.insert_header((DIGEST, digest.clone()));
    }
    if found.body.len() <= CHUNK {
        return response.body(Bytes::from_static(found.body));
    }
    let body = found.body;
    let chunks = body
        .chunks(CHUNK)
        .map(|chunk| Ok::<_, Infallible>(Bytes::from_static(chunk)));
    response.body(SizedStream::new(
        body.len() as u64,
        futures_util::stream::iter(chunks),
    ))
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [site, address] = args.as_slice() else {
        eprintln!("usage: bare_actix SITE ADDRESS");
        std::process::exit(2);
    };
    let site = Data::new(load(Path::new(site)).map_err(std::io::Error::other)?);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(site.clone())
                .default_service(web::to(answer))
        })
        .workers(workers)
        .bind(address.as_str())?;
        for addr in server.addrs() {
            eprintln!("bare_actix listening on http://{addr}");
        }
        server.run().await
    })
}
