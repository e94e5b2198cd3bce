//! The mirror's URL as nodes reach it (`--mirror-url`): `http(s)://HOST[:PORT]`, parsed once
//! by `http`'s URI parser into the forms the node files name it by.

use std::str::FromStr;

use actix_web::http::Uri;

/// Where nodes reach chartreg: `http(s)://HOST[:PORT]`, nothing after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorUrl {
    /// `https://host:port`, as hosts.toml names it.
    pub(super) url: String,
    /// `host:port` (the port only when the URL gives one), as registries.conf names it.
    pub(super) authority: String,
    pub(super) plain_http: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MirrorUrlError {
    #[error("`{0}` is not a URL: {1}")]
    Unparsable(String, String),
    #[error(
        "`{0}`: the mirror URL is http:// or https://, followed by a host and an optional port"
    )]
    Scheme(String),
    #[error(
        "`{0}`: the mirror URL has nothing after the host and port (nodes add /v2/ themselves)"
    )]
    Path(String),
    #[error("`{0}`: the mirror URL carries no user name or password")]
    UserInfo(String),
}

impl FromStr for MirrorUrl {
    type Err = MirrorUrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let uri: Uri = s.parse().map_err(|e: actix_web::http::uri::InvalidUri| {
            MirrorUrlError::Unparsable(s.to_owned(), e.to_string())
        })?;
        let plain_http = match uri.scheme_str() {
            Some("https") => false,
            Some("http") => true,
            _ => return Err(MirrorUrlError::Scheme(s.to_owned())),
        };
        let Some(authority) = uri.authority() else {
            return Err(MirrorUrlError::Scheme(s.to_owned()));
        };
        if authority.as_str().contains('@') {
            return Err(MirrorUrlError::UserInfo(s.to_owned()));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(MirrorUrlError::Path(s.to_owned()));
        }
        let authority = authority.as_str().to_ascii_lowercase();
        let scheme = if plain_http { "http" } else { "https" };
        Ok(MirrorUrl {
            url: format!("{scheme}://{authority}"),
            authority,
            plain_http,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(
        "https://chartreg.ns.svc",
        "https://chartreg.ns.svc",
        "chartreg.ns.svc",
        false
    )]
    #[case(
        "https://chartreg.ns.svc:5000/",
        "https://chartreg.ns.svc:5000",
        "chartreg.ns.svc:5000",
        false
    )]
    #[case("http://10.0.0.5:5000", "http://10.0.0.5:5000", "10.0.0.5:5000", true)]
    fn mirror_urls(
        #[case] given: &str,
        #[case] url: &str,
        #[case] authority: &str,
        #[case] plain: bool,
    ) {
        let m: MirrorUrl = given.parse().unwrap();
        assert_eq!(
            (m.url.as_str(), m.authority.as_str(), m.plain_http),
            (url, authority, plain)
        );
    }

    #[rstest]
    #[case("chartreg:5000")]
    #[case("ftp://chartreg")]
    #[case("https://chartreg/v2")]
    #[case("https://chartreg/?x=1")]
    #[case("https://u:p@chartreg")]
    #[case("not a url")]
    fn refused_mirror_urls(#[case] given: &str) {
        let e = given.parse::<MirrorUrl>().unwrap_err().to_string();
        assert!(e.contains(given), "{e}");
    }
}
