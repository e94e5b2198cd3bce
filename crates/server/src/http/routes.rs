//! The route table: what a request asks for, parsed once, at the edge.
//!
//! The observing middleware calls [`route`] for every request and gets a [`Routed`]: the
//! [`Endpoint`] metrics count the request under (known from the path's shape alone, so a bad
//! name still counts as `manifests`), and the [`Route`] with every part validated (repository
//! name, tag or digest), or the error to answer with. It keeps the endpoint for its record and
//! hands the route to the handler through the request ([`Routed::carry`], [`take`]), so no one
//! parses the path again. Adding an endpoint is one variant here and one handler.
//!
//! Repository names contain `/`, so the endpoint is found from the end of the path:
//! `/v2/<name>/manifests/<reference>`, `/v2/<name>/blobs/<digest>`,
//! `/v2/<name>/referrers/<digest>`, `/v2/<name>/tags/list`, plus `/v2/` and `/v2/_catalog`. A
//! name may itself hold a component called `manifests` (the last marker wins, as with a greedy
//! `{name:.+}` pattern). Hand-written because actix's router matches `{name:.+}` patterns with
//! a regex engine, which took over half of the instructions of a manifest request; this takes a
//! few string scans.

use actix_web::HttpMessage;
use actix_web::HttpRequest;
use actix_web::http::Method;

use serde::Deserialize;

use super::ApiError;
use chartreg_core::oci::{Digest, Namespace, Reference, ReferenceError, RepositoryName};

/// What metrics count a request under: the registry endpoints, and everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Base,
    Catalog,
    Tags,
    Manifests,
    Blobs,
    Referrers,
    /// The pages for people: `/`, `/ui/...`.
    Pages,
    /// The classic Helm repository: `/<prefix>/index.yaml` and packages.
    Classic,
    Other,
}

impl Endpoint {
    /// Every endpoint, in the order of their indexes.
    pub const ALL: [Endpoint; 9] = [
        Endpoint::Base,
        Endpoint::Catalog,
        Endpoint::Tags,
        Endpoint::Manifests,
        Endpoint::Blobs,
        Endpoint::Referrers,
        Endpoint::Pages,
        Endpoint::Classic,
        Endpoint::Other,
    ];

    /// The endpoint's name in metrics.
    pub const fn label(self) -> &'static str {
        match self {
            Endpoint::Base => "base",
            Endpoint::Catalog => "catalog",
            Endpoint::Tags => "tags",
            Endpoint::Manifests => "manifests",
            Endpoint::Blobs => "blobs",
            Endpoint::Referrers => "referrers",
            Endpoint::Pages => "pages",
            Endpoint::Classic => "classic",
            Endpoint::Other => "other",
        }
    }

    /// Where the endpoint's counters are in the metrics' arrays.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The metrics labels of [`Endpoint::ALL`], by index.
// Evaluated at compile time: an index out of bounds fails the build, never a request.
#[allow(clippy::indexing_slicing)]
pub const LABELS: [&str; Endpoint::ALL.len()] = {
    let mut labels = [""; Endpoint::ALL.len()];
    let mut i = 0;
    while i < labels.len() {
        labels[i] = Endpoint::ALL[i].label();
        i += 1;
    }
    labels
};

/// The endpoints outside `/v2` that keep the server running; not registry traffic, so neither
/// logged nor counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Healthz,
    Readyz,
    Metrics,
}

impl Operation {
    fn of(path: &str) -> Option<Operation> {
        match path {
            "/healthz" => Some(Operation::Healthz),
            "/readyz" => Some(Operation::Readyz),
            "/metrics" => Some(Operation::Metrics),
            _ => None,
        }
    }
}

/// The paths outside `/v2` that are for people and older Helm tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebRoute {
    /// `/`
    Home,
    /// `/ui/style.css`
    Style,
    /// `/sbom.spdx.json` (SPDX) and `/sbom.cdx.json` (CycloneDX): the binary's SBOM (no
    /// repository or classic path has one segment ending in `.json`).
    Sbom(crate::web::sbom::Format),
    /// `/ui/<repository>` (no repository name can start with `ui/` and collide: the whole
    /// name follows the prefix).
    Repository(RepositoryName),
    /// `/<prefix>/index.yaml`, `/<prefix>/<name>-<version>.tgz[.prov]`: the path without its
    /// leading `/`, its prefix a valid repository name.
    Classic(String),
}

impl WebRoute {
    fn of(path: &str) -> Option<Result<WebRoute, ApiError>> {
        if path == "/" {
            return Some(Ok(WebRoute::Home));
        }
        if path == "/ui/style.css" {
            return Some(Ok(WebRoute::Style));
        }
        if path == "/sbom.spdx.json" {
            return Some(Ok(WebRoute::Sbom(crate::web::sbom::Format::Spdx)));
        }
        if path == "/sbom.cdx.json" {
            return Some(Ok(WebRoute::Sbom(crate::web::sbom::Format::CycloneDx)));
        }
        if let Some(name) = path.strip_prefix("/ui/") {
            return Some(
                name.parse()
                    .map(WebRoute::Repository)
                    .map_err(ApiError::from),
            );
        }
        let rest = path.strip_prefix('/')?;
        let (prefix, file) = rest.rsplit_once('/')?;
        let classic = file == "index.yaml" || file.ends_with(".tgz") || file.ends_with(".tgz.prov");
        if !classic || file.len() <= ".tgz".len() {
            return None;
        }
        Some(
            prefix
                .parse::<RepositoryName>()
                .map(|_| WebRoute::Classic(rest.to_owned()))
                .map_err(ApiError::from),
        )
    }

    fn endpoint(&self) -> Endpoint {
        match self {
            WebRoute::Classic(_) => Endpoint::Classic,
            _ => Endpoint::Pages,
        }
    }
}

/// The repository a request names: the name in its path, and the upstream registry a mirror
/// client names with `?ns=` (the distribution spec's "Registry Proxying").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: RepositoryName,
    pub namespace: Option<Namespace>,
}

#[derive(Deserialize)]
struct NamespaceQuery {
    ns: Option<String>,
}

impl Target {
    /// `name` from the path and `ns` from `query` (most requests have no query: nothing is
    /// parsed for them). An empty `ns=` is none.
    fn parse(name: &str, query: &str) -> Result<Target, ApiError> {
        let name = name.parse()?;
        if query.is_empty() {
            return Ok(Target {
                name,
                namespace: None,
            });
        }
        let namespace = namespace_in(query)?;
        Ok(Target { name, namespace })
    }
}

/// The `ns` of a query string (`None` when absent or empty).
fn namespace_in(query: &str) -> Result<Option<Namespace>, ApiError> {
    let asked: NamespaceQuery =
        serde_urlencoded::from_str(query).map_err(ApiError::NamespaceQuery)?;
    match asked.ns.filter(|ns| !ns.is_empty()) {
        Some(ns) => Ok(Some(ns.parse()?)),
        None => Ok(None),
    }
}

/// The registry a request that could not be routed names with a valid `ns`, for its error's
/// `OCI-Namespace` (a registry path only).
pub fn asked_namespace(path: &str, query: &str) -> Option<Namespace> {
    if !is_api(path) || query.is_empty() {
        return None;
    }
    namespace_in(query).ok().flatten()
}

/// A request the server answers, its parts validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Base,
    Catalog,
    Tags(Target),
    Manifest(Target, Reference),
    Blob(Target, Digest),
    Referrers(Target, Digest),
    Operation(Operation),
    Web(WebRoute),
}

impl Route {
    /// The upstream registry the request names with `?ns=`, if any.
    pub fn namespace(&self) -> Option<&Namespace> {
        match self {
            Route::Tags(target)
            | Route::Manifest(target, _)
            | Route::Blob(target, _)
            | Route::Referrers(target, _) => target.namespace.as_ref(),
            _ => None,
        }
    }
}

/// A request as [`route`] parsed it.
#[derive(Debug)]
pub struct Routed {
    /// Where metrics count it; `None` for the operations endpoints.
    pub endpoint: Option<Endpoint>,
    pub route: Result<Route, ApiError>,
}

/// What a request carries to its handler.
struct Carried(Result<Route, ApiError>);

impl Routed {
    /// Puts the route into `req` for the handler to [`take`]; returns where metrics count it.
    pub fn carry(self, req: &HttpRequest) -> Option<Endpoint> {
        req.extensions_mut().insert(Carried(self.route));
        self.endpoint
    }
}

/// The route the middleware parsed for `req` (once: a second call finds none).
pub fn take(req: &HttpRequest) -> Result<Route, ApiError> {
    match req.extensions_mut().remove::<Carried>() {
        Some(Carried(route)) => route,
        None => Err(ApiError::Internal("the request was not routed")),
    }
}

/// The pieces of a registry path, before they are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape<'a> {
    Base,
    Catalog,
    Tags(&'a str),
    Manifest(&'a str, &'a str),
    Blob(&'a str, &'a str),
    Referrers(&'a str, &'a str),
}

impl<'a> Shape<'a> {
    fn of(path: &'a str) -> Option<Self> {
        let rest = path.strip_prefix("/v2")?;
        match rest {
            "" | "/" => return Some(Shape::Base),
            "/_catalog" => return Some(Shape::Catalog),
            _ => {}
        }
        let rest = rest.strip_prefix('/')?;
        if let Some(name) = rest.strip_suffix("/tags/list") {
            return (!name.is_empty()).then_some(Shape::Tags(name));
        }
        let (head, last) = rest.rsplit_once('/')?;
        let (name, kind) = head.rsplit_once('/')?;
        if name.is_empty() || last.is_empty() {
            return None;
        }
        match kind {
            "manifests" => Some(Shape::Manifest(name, last)),
            "blobs" => Some(Shape::Blob(name, last)),
            "referrers" => Some(Shape::Referrers(name, last)),
            _ => None,
        }
    }

    fn endpoint(self) -> Endpoint {
        match self {
            Shape::Base => Endpoint::Base,
            Shape::Catalog => Endpoint::Catalog,
            Shape::Tags(_) => Endpoint::Tags,
            Shape::Manifest(..) => Endpoint::Manifests,
            Shape::Blob(..) => Endpoint::Blobs,
            Shape::Referrers(..) => Endpoint::Referrers,
        }
    }

    /// The route, its parts validated in path order (the name first, with the `ns` of
    /// `query`).
    fn validate(self, query: &str) -> Result<Route, ApiError> {
        let target = |name| Target::parse(name, query);
        Ok(match self {
            Shape::Base => Route::Base,
            Shape::Catalog => Route::Catalog,
            Shape::Tags(name) => Route::Tags(target(name)?),
            Shape::Manifest(name, reference) => {
                Route::Manifest(target(name)?, manifest_reference(reference)?)
            }
            Shape::Blob(name, digest) => Route::Blob(target(name)?, digest.parse()?),
            Shape::Referrers(name, digest) => Route::Referrers(target(name)?, digest.parse()?),
        })
    }
}

/// A manifest reference. A tag cannot hold `+` (`helm push` writes a chart version's `+` as
/// `_`), so `1.2.3+build.7`, as people type it, names the tag `1.2.3_build.7`; digests, which
/// hold a `:`, are taken as they are.
fn manifest_reference(text: &str) -> Result<Reference, ReferenceError> {
    if text.contains('+') && !text.contains(':') {
        return text.replace('+', "_").parse();
    }
    text.parse()
}

/// Whether `path` is under `/v2`.
fn is_api(path: &str) -> bool {
    path == "/v2" || path.starts_with("/v2/")
}

/// What a request with `method` for `path` (and `query`, for `ns`) asks for. Only GET and
/// HEAD are answered: other methods under `/v2` are 405, elsewhere 404, as unknown paths are.
pub fn route(method: &Method, path: &str, query: &str) -> Routed {
    let read = matches!(*method, Method::GET | Method::HEAD);
    let no_route = || ApiError::NoRoute(path.to_owned());
    if let Some(operation) = Operation::of(path) {
        return Routed {
            endpoint: None,
            route: if read {
                Ok(Route::Operation(operation))
            } else {
                Err(no_route())
            },
        };
    }
    if !is_api(path)
        && let Some(web) = WebRoute::of(path)
    {
        let endpoint = match &web {
            Ok(route) => route.endpoint(),
            Err(_) if path.starts_with("/ui/") => Endpoint::Pages,
            Err(_) => Endpoint::Classic,
        };
        return Routed {
            endpoint: Some(endpoint),
            route: match web {
                Ok(route) if read => Ok(Route::Web(route)),
                Ok(_) => Err(no_route()),
                Err(e) => Err(e),
            },
        };
    }
    let shape = Shape::of(path);
    let route = match shape {
        _ if !read && is_api(path) => Err(ApiError::MethodNotAllowed(method.to_string())),
        Some(shape) if read => shape.validate(query),
        _ => Err(no_route()),
    };
    Routed {
        endpoint: Some(shape.map_or(Endpoint::Other, Shape::endpoint)),
        route,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ErrorCode;
    use rstest::rstest;

    #[rstest]
    #[case("/v2", Some(Shape::Base))]
    #[case("/v2/", Some(Shape::Base))]
    #[case("/v2/_catalog", Some(Shape::Catalog))]
    #[case("/v2/charts/hello/tags/list", Some(Shape::Tags("charts/hello")))]
    #[case("/v2/a/manifests/1.0.0", Some(Shape::Manifest("a", "1.0.0")))]
    #[case(
        "/v2/a/b/c/manifests/sha256:x",
        Some(Shape::Manifest("a/b/c", "sha256:x"))
    )]
    #[case(
        "/v2/a/manifests/b/manifests/c",
        Some(Shape::Manifest("a/manifests/b", "c"))
    )]
    #[case("/v2/a/blobs/sha256:x", Some(Shape::Blob("a", "sha256:x")))]
    #[case("/v2/a/referrers/sha256:x", Some(Shape::Referrers("a", "sha256:x")))]
    #[case("/v2/tags/list/tags/list", Some(Shape::Tags("tags/list")))]
    #[case("/v2/a/blobs/uploads/", None)]
    #[case("/v2/a/manifests/", None)]
    #[case("/v2//manifests/x", None)]
    #[case("/v2/manifests/x", None)]
    #[case("/v2/tags/list", None)]
    #[case("/v2/a/other/x", None)]
    #[case("/v2/a", None)]
    #[case("/v2x/a/manifests/b", None)]
    #[case("/v1/a/manifests/b", None)]
    #[case("/", None)]
    #[case("/v2/_catalog/x", None)]
    fn shapes(#[case] path: &str, #[case] expected: Option<Shape<'_>>) {
        assert_eq!(Shape::of(path), expected);
    }

    fn t(name: &str) -> Target {
        Target {
            name: name.parse().unwrap(),
            namespace: None,
        }
    }

    fn in_ns(name: &str, ns: &str) -> Target {
        Target {
            name: name.parse().unwrap(),
            namespace: Some(ns.parse().unwrap()),
        }
    }

    fn routed(method: Method, path: &str) -> (Option<&'static str>, Result<Route, ErrorCode>) {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let r = route(&method, path, query);
        (
            r.endpoint.map(Endpoint::label),
            r.route.map_err(|e| e.code()),
        )
    }

    #[rstest]
    #[case(Method::GET, "/v2/", Some("base"), Ok(Route::Base))]
    #[case(Method::HEAD, "/v2/_catalog", Some("catalog"), Ok(Route::Catalog))]
    #[case(Method::GET, "/v2/a/tags/list", Some("tags"), Ok(Route::Tags(t("a"))))]
    #[case(Method::GET, "/v2/a/manifests/v1", Some("manifests"), Ok(Route::Manifest(t("a"), "v1".parse().unwrap())))]
    #[case(Method::GET, "/v2/a/blobs/sha256:0000000000000000000000000000000000000000000000000000000000000000", Some("blobs"), Ok(Route::Blob(t("a"), "sha256:0000000000000000000000000000000000000000000000000000000000000000".parse().unwrap())))]
    #[case(Method::GET, "/v2/a/referrers/sha256:0000000000000000000000000000000000000000000000000000000000000000", Some("referrers"), Ok(Route::Referrers(t("a"), "sha256:0000000000000000000000000000000000000000000000000000000000000000".parse().unwrap())))]
    #[case(Method::GET, "/v2/a/manifests/v1?ns=quay.io", Some("manifests"), Ok(Route::Manifest(in_ns("a", "quay.io"), "v1".parse().unwrap())))]
    #[case(Method::HEAD, "/v2/a/b/manifests/v1?ns=127.0.0.1%3A5057", Some("manifests"), Ok(Route::Manifest(in_ns("a/b", "127.0.0.1:5057"), "v1".parse().unwrap())))]
    #[case(
        Method::GET,
        "/v2/a/tags/list?n=1&ns=docker.io&last=x",
        Some("tags"),
        Ok(Route::Tags(in_ns("a", "docker.io")))
    )]
    #[case(
        Method::GET,
        "/v2/a/tags/list?n=1",
        Some("tags"),
        Ok(Route::Tags(t("a")))
    )]
    #[case(Method::GET, "/v2/a/manifests/v1?ns=", Some("manifests"), Ok(Route::Manifest(t("a"), "v1".parse().unwrap())))]
    #[case(
        Method::GET,
        "/v2/a/manifests/v1?ns=a..b",
        Some("manifests"),
        Err(ErrorCode::QueryInvalid)
    )]
    #[case(
        Method::GET,
        "/v2/a/manifests/v1?ns=a.io&ns=b.io",
        Some("manifests"),
        Err(ErrorCode::QueryInvalid)
    )]
    #[case(
        Method::GET,
        "/v2/A/manifests/v1",
        Some("manifests"),
        Err(ErrorCode::NameInvalid)
    )]
    #[case(
        Method::GET,
        "/v2/a/manifests/sha256:short",
        Some("manifests"),
        Err(ErrorCode::DigestInvalid)
    )]
    #[case(
        Method::GET,
        "/v2/a/manifests/not%20a%20tag",
        Some("manifests"),
        Err(ErrorCode::ManifestUnknown)
    )]
    #[case(Method::GET, "/v2/a/manifests/1.2.3+build.7", Some("manifests"), Ok(Route::Manifest(t("a"), "1.2.3_build.7".parse().unwrap())))]
    #[case(
        Method::GET,
        "/v2/a/blobs/nope",
        Some("blobs"),
        Err(ErrorCode::DigestInvalid)
    )]
    #[case(
        Method::PUT,
        "/v2/a/manifests/v1",
        Some("manifests"),
        Err(ErrorCode::Unsupported)
    )]
    #[case(
        Method::DELETE,
        "/v2/nothing",
        Some("other"),
        Err(ErrorCode::Unsupported)
    )]
    #[case(
        Method::GET,
        "/v2/a/other/x",
        Some("other"),
        Err(ErrorCode::Unsupported)
    )]
    #[case(Method::GET, "/elsewhere", Some("other"), Err(ErrorCode::Unsupported))]
    #[case(
        Method::GET,
        "/healthz",
        None,
        Ok(Route::Operation(Operation::Healthz))
    )]
    #[case(Method::GET, "/readyz", None, Ok(Route::Operation(Operation::Readyz)))]
    #[case(
        Method::HEAD,
        "/metrics",
        None,
        Ok(Route::Operation(Operation::Metrics))
    )]
    #[case(Method::POST, "/healthz", None, Err(ErrorCode::Unsupported))]
    fn routes(
        #[case] method: Method,
        #[case] path: &str,
        #[case] endpoint: Option<&'static str>,
        #[case] expected: Result<Route, ErrorCode>,
    ) {
        assert_eq!(routed(method, path), (endpoint, expected));
    }

    #[test]
    fn every_endpoint_has_its_own_label_at_its_index() {
        for (i, endpoint) in Endpoint::ALL.iter().enumerate() {
            assert_eq!(endpoint.index(), i, "{endpoint:?}");
            assert_eq!(LABELS[i], endpoint.label());
        }
        let mut labels = LABELS.to_vec();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(
            labels.len(),
            LABELS.len(),
            "labels are distinct: {LABELS:?}"
        );
    }

    #[test]
    fn api_paths() {
        assert!(is_api("/v2"));
        assert!(is_api("/v2/x"));
        assert!(!is_api("/v2x"));
        assert!(!is_api("/healthz"));
    }
}
