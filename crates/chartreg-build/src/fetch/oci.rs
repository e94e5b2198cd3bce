//! OCI registries, through the oci-client crate: anonymous, basic auth, or the bearer token a
//! `WWW-Authenticate` challenge asks for (oci-client negotiates it); plain HTTP for loopback and
//! `--plain-http` hosts; manifests by tag or digest, blobs streamed into files and checked
//! against their digests, referrers (the OCI referrers API, and cosign's tag schema).

use futures_util::StreamExt;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::transport::{Partial, Transport, error_chain, status_failure, with_retries};
use super::{Failure, Problem};

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
    client: Client,
    auth: RegistryAuth,
}

impl Registry {
    pub fn new(
        host: &str,
        transport: &Transport,
        tls_verify: bool,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Registry {
        let protocol = if transport.plain_http(host) {
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
        Registry {
            host: host.to_owned(),
            client: Client::new(config),
            auth,
        }
    }

    /// The registry `host`, with what the images file says of it (TLS verification,
    /// credentials), if anything.
    pub fn for_host(
        host: &str,
        transport: &Transport,
        images: &super::lists::ImagesFile,
    ) -> Registry {
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
        text.parse()
            .map_err(|e| Problem::Invalid(format!("`{text}` is not a reference: {e}")))
    }

    /// The manifest `tag_or_digest` names: its bytes and its digest (checked by oci-client
    /// against the digest asked for).
    pub async fn manifest(
        &self,
        repository: &str,
        tag_or_digest: &str,
    ) -> Result<(Vec<u8>, String), Problem> {
        let reference = self.reference(repository, tag_or_digest)?;
        with_retries(|| async {
            self.client
                .pull_manifest_raw(&reference, &self.auth, &MANIFEST_TYPES)
                .await
                .map(|(bytes, digest)| (bytes.to_vec(), digest))
                .map_err(|e| classify(&e))
        })
        .await
    }

    /// The repository's tags, every page of them.
    pub async fn tags(&self, repository: &str) -> Result<Vec<String>, Problem> {
        const PAGE: usize = 1000;
        let reference = self.reference(repository, "latest")?;
        let mut tags: Vec<String> = Vec::new();
        // Pages until one brings nothing new (a registry may page with a smaller size than
        // asked); a bound keeps one that never ends from looping.
        for _ in 0..100 {
            let last = tags.last().cloned();
            let page = with_retries(|| async {
                self.client
                    .list_tags(&reference, &self.auth, Some(PAGE), last.as_deref())
                    .await
                    .map_err(|e| classify(&e))
            })
            .await?;
            let before = tags.len();
            tags.extend(page.tags.into_iter().filter(|t| Some(t) > last.as_ref()));
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

    /// Streams the blob `digest` into `target` (through a temporary file, renamed once its
    /// digest is checked); returns its size.
    pub async fn blob(
        &self,
        repository: &str,
        digest: &str,
        target: &std::path::Path,
    ) -> Result<u64, Problem> {
        let reference = self.reference(repository, digest)?;
        let expected = super::transport::sha256_of_hex(digest)
            .ok_or_else(|| Problem::Invalid(format!("`{digest}` is not a sha256 digest")))?;
        let (size, _) = with_retries(|| async {
            self.client
                .store_auth_if_needed(reference.resolve_registry(), &self.auth)
                .await;
            let mut stream = self
                .client
                .pull_blob_stream(&reference, digest)
                .await
                .map_err(|e| classify(&e))?
                .stream;
            let mut partial = Partial::create(target).map_err(Failure::Final)?;
            while let Some(chunk) = stream.next().await {
                let chunk =
                    chunk.map_err(|e| Failure::Transient(Problem::Network(e.to_string())))?;
                partial.write(&chunk).map_err(Failure::Final)?;
            }
            partial.finish(Some(expected)).map_err(Failure::Final)
        })
        .await?;
        Ok(size)
    }

    /// The digests (and media types) of the manifests whose subject is `digest`, by the OCI
    /// referrers API (oci-client falls back to the referrers tag schema).
    pub async fn referrers(
        &self,
        repository: &str,
        digest: &str,
    ) -> Result<Vec<(String, String)>, Problem> {
        let reference = self.reference(repository, digest)?;
        let index = with_retries(|| async {
            self.client
                .store_auth_if_needed(reference.resolve_registry(), &self.auth)
                .await;
            self.client
                .pull_referrers(&reference, None)
                .await
                .map_err(|e| classify(&e))
        })
        .await;
        match index {
            Ok(index) => Ok(index
                .manifests
                .into_iter()
                .map(|m| (m.digest, m.media_type))
                .collect()),
            // A registry without the referrers API and without the fallback tag.
            Err(Problem::NotFound) => Ok(Vec::new()),
            Err(other) => Err(other),
        }
    }
}

/// What an oci-client error is: transient or final, and which problem.
fn classify(e: &OciDistributionError) -> Failure {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => Failure::Final(Problem::NotFound),
        OciDistributionError::AuthenticationFailure(m) => {
            Failure::Final(Problem::AuthRefusedBecause(m.clone()))
        }
        OciDistributionError::UnauthorizedError { .. } => Failure::Final(Problem::AuthRefused(401)),
        OciDistributionError::RegistryError { envelope, .. } => {
            let codes: Vec<String> = envelope
                .errors
                .iter()
                .map(|e| format!("{:?}", e.code))
                .collect();
            let text = codes.join(", ");
            if text.contains("Unknown") || text.contains("UNKNOWN") {
                Failure::Final(Problem::NotFound)
            } else if text.contains("Denied") || text.contains("Unauthorized") {
                Failure::Final(Problem::AuthRefused(403))
            } else {
                Failure::Final(Problem::Invalid(format!("the registry answered {text}")))
            }
        }
        OciDistributionError::ServerError { code, message, .. } => {
            status_failure(*code, message.clone())
        }
        OciDistributionError::RequestError(e) => super::transport::classify_http(e),
        OciDistributionError::DigestError(e) => Failure::Final(Problem::DigestMismatch {
            expected: "the digest asked for".into(),
            actual: e.to_string(),
        }),
        other => {
            let text = error_chain(other);
            if text.contains("certificate") {
                Failure::Final(Problem::Tls(text))
            } else {
                Failure::Final(Problem::Invalid(text))
            }
        }
    }
}
