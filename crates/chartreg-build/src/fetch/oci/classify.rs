//! What an oci-client error means for a fetch ([`classify`]): not found, refused, a TLS or
//! network failure, a registry's error codes, a digest oci-client refused; transient (retried)
//! or final. What a registry says is quoted, bounded (`transport::quoting`).

use std::sync::Arc;

use oci_client::errors::OciDistributionError;

use crate::fetch::problem::{Failure, Problem};
use crate::fetch::transport::{classify_http, error_chain, quoted, status_failure};

/// What an oci-client error is: transient or final, and which problem; what the registry said
/// quoted, bounded.
pub(super) fn classify(e: OciDistributionError) -> Failure {
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
