//! An OpenPGP keyring as `helm verify --keyring` takes it: `gpg --export` (binary) or
//! `gpg --export --armor`, one key or several. Each key's self-signatures and subkey bindings
//! are checked when it is read; a GnuPG keybox (`pubring.kbx`), which rPGP cannot read, is
//! refused with the command that exports a keyring.

use std::path::{Path, PathBuf};

use pgp::composed::{Deserializable, SignedPublicKey};

/// The most of a keyring read (a team's keyring of a few keys is KiBs).
const KEYRING_LIMIT: u64 = 16 << 20;

/// Why a keyring could not be taken; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{}: a GnuPG keybox, not a keyring: export one with `gpg --export > pubring.gpg`",
        path.display()
    )]
    Keybox { path: PathBuf },
    #[error("{}: not an OpenPGP keyring: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: Box<pgp::errors::Error>,
    },
    #[error("{}: not an OpenPGP keyring: a key's self-signature: {source}", path.display())]
    SelfSignature {
        path: PathBuf,
        source: Box<pgp::errors::Error>,
    },
    #[error("{}: holds no public key", path.display())]
    Empty { path: PathBuf },
}

/// The keys of one keyring file.
#[derive(Debug, Clone)]
pub struct Keyring {
    pub path: PathBuf,
    pub keys: Vec<SignedPublicKey>,
    /// The keyring's bytes, as read (the content's record embeds them).
    pub data: Vec<u8>,
}

impl Keyring {
    pub fn read(path: &Path) -> Result<Keyring, KeyringError> {
        let data = chartreg_core::file::read_limited(path, KEYRING_LIMIT).map_err(|source| {
            KeyringError::Read {
                path: path.to_owned(),
                source,
            }
        })?;
        Keyring::from_bytes(path, data)
    }

    /// The keyring `data` (read from `path`, for messages).
    pub fn from_bytes(path: &Path, data: Vec<u8>) -> Result<Keyring, KeyringError> {
        if data.get(8..12) == Some(b"KBXf") {
            return Err(KeyringError::Keybox {
                path: path.to_owned(),
            });
        }
        let unreadable = |source| KeyringError::Unreadable {
            path: path.to_owned(),
            source: Box::new(source),
        };
        let (keys, _) = SignedPublicKey::from_reader_many(&data[..]).map_err(unreadable)?;
        let keys = keys
            .map(|k| {
                let k = k.map_err(unreadable)?;
                k.verify_bindings()
                    .map_err(|source| KeyringError::SelfSignature {
                        path: path.to_owned(),
                        source: Box::new(source),
                    })?;
                Ok(k)
            })
            .collect::<Result<Vec<_>, KeyringError>>()?;
        if keys.is_empty() {
            return Err(KeyringError::Empty {
                path: path.to_owned(),
            });
        }
        Ok(Keyring {
            path: path.to_owned(),
            keys,
            data,
        })
    }
}
