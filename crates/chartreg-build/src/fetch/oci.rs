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

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::{Descriptor, ImageIndex};
use futures_util::StreamExt;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use serde::Deserialize;

use super::problem::{Document, UrlOf};
use super::problem::{Failure, Problem};
use super::transport::{
    Bounded, Partial, Transport, classify_http, error_body, error_chain, quoted, read_bounded,
    status_failure, with_retries,
};

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

/// A page of a repository's tags.
#[derive(Debug, Deserialize)]
struct TagList {
    #[serde(default)]
    tags: Option<Vec<String>>,
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

    /// The manifest `tag_or_digest` names: its bytes (at most [`Bounded::Manifest`]) and its
    /// digest, checked against the digest asked for and the one the registry gave.
    pub async fn manifest(
        &self,
        repository: &str,
        tag_or_digest: &str,
    ) -> Result<(Vec<u8>, String), Problem> {
        let reference = self.reference(repository, tag_or_digest)?;
        let at = reference
            .digest()
            .or(reference.tag())
            .unwrap_or("latest")
            .to_owned();
        let url = self.url(&reference, &format!("manifests/{at}"))?;
        let (data, given) = self
            .document(&reference, &url, &MANIFEST_TYPES.join(", "))
            .await?;
        let digest = Digest::sha256_of(&data).to_string();
        let expected = reference
            .digest()
            .map(str::to_owned)
            .or(given.filter(|g| g.starts_with("sha256:")));
        if let Some(expected) = expected
            && expected != digest
        {
            return Err(Problem::DigestMismatch {
                expected: quoted(&expected),
                actual: digest,
            });
        }
        Ok((data, digest))
    }

    /// The repository's tags, every page of them (each at most [`Bounded::Manifest`]); what the
    /// registry lists that is no tag is left out.
    pub async fn tags(&self, repository: &str) -> Result<Vec<String>, Problem> {
        const PAGE: usize = 1000;
        let reference = self.reference(repository, "latest")?;
        let mut tags: Vec<String> = Vec::new();
        // Pages until one brings nothing new (a registry may page with a smaller size than
        // asked); a bound keeps one that never ends from looping.
        for _ in 0..100 {
            let last = tags.last().cloned();
            let mut url = self.url(&reference, "tags/list")?;
            {
                let mut query = url.query_pairs_mut();
                query.append_pair("n", &PAGE.to_string());
                if let Some(last) = &last {
                    query.append_pair("last", last);
                }
            }
            let (data, _) = self.document(&reference, &url, "application/json").await?;
            let page: TagList = serde_json::from_slice(&data)
                .map_err(|e| Problem::not_json(Document::TagList(url.to_string()), e))?;
            let before = tags.len();
            // What is no tag (an attacker's megabyte of text) is not one of them.
            tags.extend(
                page.tags
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| Some(t) > last.as_ref())
                    .filter(|t| t.parse::<chartreg_core::oci::Tag>().is_ok()),
            );
            if tags.len() == before {
                break;
            }
        }
        Ok(tags)
    }

    /// Whether a manifest `tag` exists (for cosign's tag schema): `None` when it does not.
    pub async fn manifest_if_any(
        &self,
        repository: &str,
        tag: &str,
    ) -> Result<Option<(Vec<u8>, String)>, Problem> {
        match self.manifest(repository, tag).await {
            Ok(found) => Ok(Some(found)),
            Err(Problem::NotFound) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// Streams the blob `layer` describes into `target` (through a temporary file, renamed
    /// once its digest is checked), never more bytes than its descriptor gives; returns its
    /// size.
    pub async fn blob(
        &self,
        repository: &str,
        layer: &Descriptor,
        target: &std::path::Path,
    ) -> Result<u64, Problem> {
        let digest = layer.digest.as_str();
        let reference = self.reference(repository, digest)?;
        let expected =
            super::transport::sha256_of_hex(digest).ok_or_else(|| Problem::NotSha256 {
                digest: digest.to_owned(),
            })?;
        let bound = Bounded::Blob(layer.size);
        let (size, _) = with_retries(|| async {
            self.client
                .store_auth_if_needed(reference.resolve_registry(), &self.auth)
                .await;
            let sized = self
                .client
                .pull_blob_stream(&reference, digest)
                .await
                .map_err(classify)?;
            if sized.content_length.is_some_and(|l| l > bound.bytes()) {
                return Err(Failure::Final(Problem::TooLarge {
                    from: digest.to_owned(),
                    bound,
                }));
            }
            let mut stream = sized.stream;
            let mut partial = Partial::create(target, bound, digest).map_err(Failure::Final)?;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| Failure::Transient(Problem::network(e)))?;
                partial.write(&chunk).map_err(Failure::Final)?;
            }
            partial.finish(Some(expected)).map_err(Failure::Final)
        })
        .await?;
        Ok(size)
    }

    /// The digests (and media types) of the manifests whose subject is `digest`: the OCI
    /// referrers API, or, where the registry has none (404), the referrers tag schema's index
    /// (`sha256-<hex>`); none when neither is there.
    pub async fn referrers(
        &self,
        repository: &str,
        digest: &str,
    ) -> Result<Vec<(String, String)>, Problem> {
        let reference = self.reference(repository, digest)?;
        let url = self.url(&reference, &format!("referrers/{digest}"))?;
        let data = match self
            .document(&reference, &url, "application/vnd.oci.image.index.v1+json")
            .await
        {
            Ok((data, _)) => data,
            Err(Problem::NotFound) => {
                let fallback = digest.replace(':', "-");
                match self.manifest_if_any(repository, &fallback).await? {
                    Some((data, _)) => data,
                    None => return Ok(Vec::new()),
                }
            }
            Err(other) => return Err(other),
        };
        let index: ImageIndex = serde_json::from_slice(&data)
            .map_err(|e| Problem::not_json(Document::Referrers(digest.to_owned()), e))?;
        Ok(index
            .manifests
            .into_iter()
            .map(|m| (m.digest.to_string(), m.media_type))
            .collect())
    }
}

/// What an oci-client error is: transient or final, and which problem; what the registry said
/// quoted, bounded.
fn classify(e: OciDistributionError) -> Failure {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => Failure::Final(Problem::NotFound),
        OciDistributionError::AuthenticationFailure(m) => {
            Failure::Final(Problem::AuthRefusedBecause(quoted(&m)))
        }
        OciDistributionError::UnauthorizedError { .. } => Failure::Final(Problem::AuthRefused(401)),
        OciDistributionError::RegistryError { ref envelope, .. } => {
            let codes: Vec<String> = envelope
                .errors
                .iter()
                .map(|e| format!("{:?}", e.code))
                .collect();
            let codes = quoted(&codes.join(", "));
            if codes.contains("Unknown") || codes.contains("UNKNOWN") {
                Failure::Final(Problem::NotFound)
            } else if codes.contains("Denied") || codes.contains("Unauthorized") {
                Failure::Final(Problem::AuthRefused(403))
            } else {
                Failure::Final(Problem::Registry {
                    codes,
                    source: Arc::new(e),
                })
            }
        }
        OciDistributionError::ServerError { code, message, .. } => {
            status_failure(code, quoted(&message))
        }
        OciDistributionError::RequestError(e) => classify_http(e),
        OciDistributionError::DigestError(e) => Failure::Final(Problem::OciDigest {
            source: Arc::new(e),
        }),
        other => {
            if error_chain(&other).contains("certificate") {
                Failure::Final(Problem::tls(other))
            } else {
                Failure::Final(Problem::Oci {
                    source: Arc::new(other),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_registry_says_in_an_error_is_quoted_bounded() {
        let long = format!("{}\nforged line", "x".repeat(10_000));
        let e = classify(OciDistributionError::ServerError {
            code: 400,
            url: "http://r.test/v2/".into(),
            message: long.clone(),
        });
        let Failure::Final(problem) = e else {
            panic!("a 400 is final")
        };
        let text = problem.to_string();
        assert!(text.len() < 600, "{} characters", text.len());
        assert!(text.ends_with(" [...]"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        let e = classify(OciDistributionError::AuthenticationFailure(long));
        let Failure::Final(problem) = e else {
            panic!("final")
        };
        assert!(problem.to_string().len() < 600);
    }
}
