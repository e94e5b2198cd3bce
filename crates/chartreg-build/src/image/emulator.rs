//! What runs another machine's Linux binary on this one, for `image` to ask it what only it
//! can say (its SBOMs): nothing for a binary built for this machine, else qemu-user for the
//! architecture it is built for, `qemu-<arch>-static` or `qemu-<arch>` (Debian's
//! `qemu-user-static`), the one program `image` finds through the PATH. The binary is then
//! qemu's argument; no binfmt registration is needed.

use std::path::PathBuf;

use super::binary::{Binary, host_platform};

/// No qemu-user for a binary built for another machine.
#[derive(Debug, thiserror::Error)]
#[error(
    "the {platform} binary {} cannot run on this machine ({host}): neither {name}-static nor {name} is on the PATH (Debian: qemu-user-static)",
    path.display()
)]
pub struct NoEmulator {
    pub platform: String,
    pub path: PathBuf,
    pub host: String,
    pub name: String,
}

/// The program that runs `binary`, built for `architecture` (its ELF header's, in the image
/// spec's words): `None` when that is this machine's, else qemu-user from the PATH.
pub fn find(binary: &Binary, architecture: &str) -> Result<Option<PathBuf>, NoEmulator> {
    let host = host_platform();
    if host
        .as_ref()
        .is_some_and(|h| h.architecture == architecture)
    {
        return Ok(None);
    }
    let name = qemu_name(architecture);
    let static_name = format!("{name}-static");
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find_map(|dir| {
            [&static_name, &name]
                .into_iter()
                .map(|n| dir.join(n))
                .find(|p| p.is_absolute() && p.is_file())
        })
    });
    match found {
        Some(qemu) => Ok(Some(qemu)),
        None => Err(NoEmulator {
            platform: binary.platform.to_string(),
            path: binary.path.clone(),
            host: host.map_or_else(|| std::env::consts::ARCH.to_owned(), |h| h.to_string()),
            name,
        }),
    }
}

/// qemu-user's program name for an architecture in the image spec's words (`qemu-aarch64`
/// for arm64).
fn qemu_name(architecture: &str) -> String {
    let arch = match architecture {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        "386" => "i386",
        "loong64" => "loongarch64",
        other => other,
    };
    format!("qemu-{arch}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("arm64", "qemu-aarch64")]
    #[case("amd64", "qemu-x86_64")]
    #[case("386", "qemu-i386")]
    #[case("arm", "qemu-arm")]
    #[case("ppc64le", "qemu-ppc64le")]
    #[case("s390x", "qemu-s390x")]
    #[case("riscv64", "qemu-riscv64")]
    #[case("loong64", "qemu-loongarch64")]
    fn qemu_names(#[case] architecture: &str, #[case] name: &str) {
        assert_eq!(qemu_name(architecture), name);
    }
}
