//! OCI registries: anonymous, basic auth, or the bearer token a `WWW-Authenticate` challenge
//! asks for (oci-client negotiates it); plain HTTP for loopback and `--plain-http` hosts;
//! manifests by tag or digest, tag lists and referrers (the OCI referrers API, and cosign's tag
//! schema), and blobs streamed into files and checked against their digests.
//!
//! Everything a registry sends is bounded (`transport::Bounded`): a manifest, an index, a
//! referrers index or a page of tags is read by this module, at most 4 MiB of it (oci-client
//! reads whole bodies), with the authorization oci-client negotiated; a blob is streamed
//! through oci-client and cut off past the size its descriptor gives. What a registry answers
//! in an error is quoted, bounded (`transport::quoted`).
//!
//! This module sets a registry up and negotiates what its requests carry, and reads a document
//! within its bound (`document`); `content` reads manifests, tags, referrers and blobs with it;
//! `classify` says what an oci-client error means.

mod classify;
mod content;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};

use super::problem::{Failure, Problem, UrlOf};
use super::transport::{
    Bounded, Transport, classify_http, error_body, read_bounded, status_failure, with_retries,
};
use classify::classify;

/// Every manifest media type fetch accepts.
pub const MANIFEST_TYPES: [&str; 4] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// One registry, as fetch talks to it.
pub struct Registry {
    pub host: String,
    /// oci-client: the authorization it negotiates, and blobs.
    client: Client,
    /// Manifests, tag lists and referrers, read within their bound.
    http: reqwest::Client,
    scheme: &'static str,
    auth: RegistryAuth,
    /// What each repository's requests carry, once negotiated.
    authorizations: Mutex<BTreeMap<String, Authorization>>,
}

/// What a request carries to be let in.
#[derive(Debug, Clone)]
enum Authorization {
    Anonymous,
    Bearer(String),
    Basic(String, String),
}

impl Authorization {
    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Authorization::Anonymous => request,
            Authorization::Bearer(token) => request.bearer_auth(token),
            Authorization::Basic(user, password) => request.basic_auth(user, Some(password)),
        }
    }
}

impl Registry {
    pub fn new(
        host: &str,
        transport: &Transport,
        tls_verify: bool,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Result<Registry, Problem> {
        let plain = transport.plain_http(host);
        let protocol = if plain {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let extra_root_certificates = transport
            .ca_pem
            .iter()
            .map(|pem| Certificate {
                encoding: CertificateEncoding::Pem,
                data: pem.clone(),
            })
            .collect();
        let config = ClientConfig {
            protocol,
            accept_invalid_certificates: !tls_verify,
            extra_root_certificates,
            connect_timeout: Some(std::time::Duration::from_secs(15)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            ..ClientConfig::default()
        };
        let auth = match (username, password) {
            (Some(u), p) => RegistryAuth::Basic(u.to_owned(), p.unwrap_or_default().to_owned()),
            _ => RegistryAuth::Anonymous,
        };
        Ok(Registry {
            host: host.to_owned(),
            client: Client::new(config),
            http: transport.http_client(tls_verify)?,
            scheme: if plain { "http" } else { "https" },
            auth,
            authorizations: Mutex::new(BTreeMap::new()),
        })
    }

    /// The registry `host`, with what the images file says of it (TLS verification,
    /// credentials), if anything.
    pub fn for_host(
        host: &str,
        transport: &Transport,
        images: &super::lists::ImagesFile,
    ) -> Result<Registry, Problem> {
        let config = images.get(host);
        let credentials = config.and_then(|c| c.credentials.as_ref());
        Registry::new(
            host,
            transport,
            config.is_none_or(|c| c.tls_verify),
            credentials.and_then(|c| c.username.as_deref()),
            credentials.and_then(|c| c.password.as_deref()),
        )
    }

    fn reference(&self, repository: &str, tag_or_digest: &str) -> Result<Reference, Problem> {
        let text = if tag_or_digest.contains(':') {
            format!("{}/{repository}@{tag_or_digest}", self.host)
        } else {
            format!("{}/{repository}:{tag_or_digest}", self.host)
        };
        text.parse().map_err(|e| Problem::BadReference {
            reference: text.clone(),
            source: Arc::new(e),
        })
    }

    /// `/v2/<repository>/<path>` on the registry `reference` is in.
    fn url(&self, reference: &Reference, path: &str) -> Result<reqwest::Url, Problem> {
        let text = format!(
            "{}://{}/v2/{}/{path}",
            self.scheme,
            reference.resolve_registry(),
            reference.repository()
        );
        text.parse().map_err(|source| Problem::BadUrl {
            of: UrlOf::Registry,
            url: text.clone(),
            source,
        })
    }

    /// What requests for `reference`'s repository carry: negotiated once (oci-client answers
    /// the registry's challenge), again when `renew` (a token that expired).
    async fn authorization(
        &self,
        reference: &Reference,
        renew: bool,
    ) -> Result<Authorization, Failure> {
        let key = reference.repository().to_owned();
        if !renew
            && let Some(known) = self
                .authorizations
                .lock()
                .ok()
                .and_then(|a| a.get(&key).cloned())
        {
            return Ok(known);
        }
        let token = self
            .client
            .auth(reference, &self.auth, RegistryOperation::Pull)
            .await
            .map_err(classify)?;
        let authorization = match (token, &self.auth) {
            (Some(token), _) => Authorization::Bearer(token),
            (None, RegistryAuth::Basic(user, password)) => {
                Authorization::Basic(user.clone(), password.clone())
            }
            (None, _) => Authorization::Anonymous,
        };
        if let Ok(mut known) = self.authorizations.lock() {
            known.insert(key, authorization.clone());
        }
        Ok(authorization)
    }

    /// GETs the document at `url` in `reference`'s repository (a manifest, an index, a page of
    /// tags), accepting `accept`: its body (at most [`Bounded::Manifest`]) and the
    /// `Docker-Content-Digest` the registry gave it, with retries. 404 is
    /// [`Problem::NotFound`].
    async fn document(
        &self,
        reference: &Reference,
        url: &reqwest::Url,
        accept: &str,
    ) -> Result<(Vec<u8>, Option<String>), Problem> {
        with_retries(|| async {
            let mut renew = false;
            loop {
                let authorization = self.authorization(reference, renew).await?;
                let response = authorization
                    .apply(self.http.get(url.clone()))
                    .header(reqwest::header::ACCEPT, accept)
                    .send()
                    .await
                    .map_err(classify_http)?;
                let status = response.status().as_u16();
                if status == 401 && !renew {
                    // The token may have expired: negotiated again, once.
                    renew = true;
                    continue;
                }
                if status != 200 {
                    return Err(match status {
                        404 => Failure::Final(Problem::NotFound),
                        401 | 403 => Failure::Final(Problem::AuthRefused(status)),
                        _ => {
                            let body = error_body(response).await;
                            status_failure(status, format!("GET {url}: {body}"))
                        }
                    });
                }
                let digest = response
                    .headers()
                    .get("docker-content-digest")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let body = read_bounded(response, Bounded::Manifest, url.as_str()).await?;
                return Ok((body, digest));
            }
        })
        .await
    }
}
