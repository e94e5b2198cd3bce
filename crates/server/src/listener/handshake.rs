//! Connections on the HTTPS port that end before their TLS handshake does: why, counted by
//! reason in `chartreg_tls_handshake_failures_total{reason}`, and logged so an operator sees
//! them without a flood: every one at debug level, and at most one warning per
//! [`WARN_INTERVAL`], which says how many failed since the last.
//!
//! [`Failure::of`] sorts rustls's and the socket's errors into the reasons an operator acts on:
//! a client that refuses the certificate (wrong CA, wrong name), one with no protocol version,
//! cipher or application protocol in common, one that sends something that is not TLS, one that
//! closes or is cut, one that takes too long.

use std::io;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustls::{AlertDescription, Error as TlsError};

use super::plain::Refused;
use crate::metrics::Metrics;

/// The most often a failed handshake is logged as a warning.
pub const WARN_INTERVAL: Duration = Duration::from_secs(10);

/// Why a connection's handshake did not end in a TLS session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The client sent its first byte, or finished the handshake, too late.
    Timeout,
    /// The client refused the certificate (an alert: unknown CA, bad certificate, a name it
    /// does not cover).
    CertificateRefused,
    /// No protocol version or cipher suite in common.
    NoSharedCipher,
    /// No application protocol in common (ALPN: h2, http/1.1).
    NoSharedProtocol,
    /// Plain HTTP to the HTTPS port (answered 400 before the handshake).
    PlainHttp,
    /// Bytes that are neither TLS nor HTTP, or TLS the client got wrong.
    NotTls,
    /// The client closed or reset the connection.
    Closed,
    /// Anything else (its message is in the debug line).
    Other,
}

impl Failure {
    /// Every reason, as labelled (each shows in `/metrics` from the start, zero or not).
    pub const ALL: [Failure; 8] = [
        Failure::Timeout,
        Failure::CertificateRefused,
        Failure::NoSharedCipher,
        Failure::NoSharedProtocol,
        Failure::PlainHttp,
        Failure::NotTls,
        Failure::Closed,
        Failure::Other,
    ];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::CertificateRefused => "certificate_refused",
            Failure::NoSharedCipher => "no_shared_cipher",
            Failure::NoSharedProtocol => "no_shared_protocol",
            Failure::PlainHttp => "plain_http",
            Failure::NotTls => "not_tls",
            Failure::Closed => "closed",
            Failure::Other => "other",
        }
    }

    /// What the handshake's error says (tokio-rustls gives rustls's errors inside an
    /// `io::Error`; the socket's own are plain ones).
    pub fn of(error: &io::Error) -> Failure {
        if let Some(tls) = error.get_ref().and_then(|e| e.downcast_ref::<TlsError>()) {
            return Failure::of_tls(tls);
        }
        match error.kind() {
            io::ErrorKind::TimedOut => Failure::Timeout,
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => Failure::Closed,
            _ => Failure::Other,
        }
    }

    fn of_tls(error: &TlsError) -> Failure {
        match error {
            TlsError::AlertReceived(
                AlertDescription::BadCertificate
                | AlertDescription::UnknownCA
                | AlertDescription::CertificateUnknown
                | AlertDescription::CertificateExpired
                | AlertDescription::UnsupportedCertificate
                | AlertDescription::CertificateRevoked
                | AlertDescription::AccessDenied
                | AlertDescription::UnrecognisedName,
            ) => Failure::CertificateRefused,
            TlsError::AlertReceived(
                AlertDescription::ProtocolVersion
                | AlertDescription::HandshakeFailure
                | AlertDescription::InsufficientSecurity,
            ) => Failure::NoSharedCipher,
            TlsError::AlertReceived(AlertDescription::NoApplicationProtocol)
            | TlsError::NoApplicationProtocol => Failure::NoSharedProtocol,
            TlsError::PeerIncompatible(_) => Failure::NoSharedCipher,
            TlsError::InvalidMessage(_)
            | TlsError::InappropriateMessage { .. }
            | TlsError::InappropriateHandshakeMessage { .. }
            | TlsError::DecryptError
            | TlsError::PeerMisbehaved(_) => Failure::NotTls,
            _ => Failure::Other,
        }
    }

    /// What plain HTTP's sorting refused.
    pub fn of_refused(refused: &Refused) -> Failure {
        match refused {
            Refused::Silent => Failure::Timeout,
            Refused::Closed | Refused::Read(_) => Failure::Closed,
            Refused::NotHttp(_) => Failure::NotTls,
            Refused::PlainHttp | Refused::Write(_) => Failure::PlainHttp,
        }
    }
}

/// Counts failures and keeps the warnings to one per [`WARN_INTERVAL`].
#[derive(Debug)]
pub struct Reporter {
    /// When the last warning was written (`None`: never), and the failures since.
    warned: Mutex<(Option<Instant>, u64)>,
}

impl Default for Reporter {
    fn default() -> Self {
        Reporter {
            warned: Mutex::new((None, 0)),
        }
    }
}

impl Reporter {
    /// Counts one failure, and logs it.
    pub fn failed(
        &self,
        metrics: &Metrics,
        failure: Failure,
        peer: Option<SocketAddr>,
        detail: &dyn std::fmt::Display,
    ) {
        metrics.tls_handshake_failed(failure.label());
        let peer = peer.map_or_else(|| "an unknown peer".to_owned(), |p| p.to_string());
        log::debug!(
            "TLS handshake with {peer} failed ({}): {detail}",
            failure.label()
        );
        let since = {
            let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
            warned.1 += 1;
            let now = Instant::now();
            if warned
                .0
                .is_some_and(|at| now.duration_since(at) < WARN_INTERVAL)
            {
                return;
            }
            let since = warned.1;
            *warned = (Some(now), 0);
            since
        };
        log::warn!(
            reason = failure.label(), peer = peer.as_str();
            "TLS handshake with {peer} failed ({}): {detail}; {since} failed since the last such warning (counted by reason in chartreg_tls_handshake_failures_total; each at debug level)",
            failure.label()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use rustls::PeerIncompatible;

    fn wrapped(error: TlsError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, error)
    }

    #[rstest]
    #[case(
        wrapped(TlsError::AlertReceived(AlertDescription::UnknownCA)),
        Failure::CertificateRefused
    )]
    #[case(
        wrapped(TlsError::AlertReceived(AlertDescription::BadCertificate)),
        Failure::CertificateRefused
    )]
    #[case(
        wrapped(TlsError::PeerIncompatible(PeerIncompatible::NoCipherSuitesInCommon)),
        Failure::NoSharedCipher
    )]
    #[case(
        wrapped(TlsError::AlertReceived(AlertDescription::ProtocolVersion)),
        Failure::NoSharedCipher
    )]
    #[case(wrapped(TlsError::NoApplicationProtocol), Failure::NoSharedProtocol)]
    #[case(
        wrapped(TlsError::InvalidMessage(rustls::InvalidMessage::InvalidContentType)),
        Failure::NotTls
    )]
    #[case(io::Error::from(io::ErrorKind::UnexpectedEof), Failure::Closed)]
    #[case(io::Error::from(io::ErrorKind::ConnectionReset), Failure::Closed)]
    #[case(io::Error::from(io::ErrorKind::TimedOut), Failure::Timeout)]
    #[case(io::Error::other("what"), Failure::Other)]
    fn errors_sort_into_reasons(#[case] error: io::Error, #[case] reason: Failure) {
        assert_eq!(Failure::of(&error), reason);
    }

    #[test]
    fn labels_are_distinct() {
        let mut labels: Vec<_> = Failure::ALL.iter().map(|f| f.label()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), Failure::ALL.len());
    }
}
