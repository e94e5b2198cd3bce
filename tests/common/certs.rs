//! A private CA and a server certificate it signed for 127.0.0.1 and [`LOOPBACK_NAME`]
//! (rcgen), for tests that serve or reach HTTPS on loopback with `--ca-file`.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A name the server certificate also holds, for clients that treat a loopback address as
/// plain HTTP (Helm 3 does): such a test resolves it to 127.0.0.1 itself (see
/// [`super::with_hosts`]).
pub const LOOPBACK_NAME: &str = "chartreg.test";

pub struct LoopbackCert {
    pub ca_pem: String,
    pub ca_der: Vec<u8>,
    pub cert_pem: String,
    pub key_pem: String,
    pub cert_der: Vec<u8>,
    pub key_der: Vec<u8>,
}

impl LoopbackCert {
    pub fn new(ca_name: &str) -> LoopbackCert {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.distinguished_name.push(DnType::CommonName, ca_name);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let names = vec!["127.0.0.1".to_owned(), LOOPBACK_NAME.to_owned()];
        let mut leaf = CertificateParams::new(names).expect("leaf");
        leaf.distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().expect("leaf key");
        let cert = leaf.signed_by(&key, &issuer).expect("leaf certificate");
        LoopbackCert {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().to_vec(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().to_vec(),
            key_der: key.serialize_der(),
        }
    }
}

impl LoopbackCert {
    /// A rustls server configuration with this server certificate and its key.
    pub fn server_config(&self) -> rustls::ServerConfig {
        server_config(&self.cert_der, &self.key_der)
    }
}

/// A rustls server configuration (ring) with a DER certificate and its PKCS#8 key.
pub fn server_config(cert_der: &[u8], key_der: &[u8]) -> rustls::ServerConfig {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert_der.to_vec().into()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key_der.to_vec().into()),
        )
        .expect("server certificate")
}
