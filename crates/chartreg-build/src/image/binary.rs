//! The binaries an image is made of: their platforms (`linux/amd64`, `linux/arm/v7`: parsed
//! once, from `--binary` or the host), and what their ELF headers say about them. Only the
//! file header and the program headers are read (a binary with its content inside can be
//! GiBs):
//!
//! 1. the file is an ELF executable (a script or another format cannot be `/chartreg`);
//! 2. it has no `PT_INTERP` program header: no dynamic loader, so it runs on `scratch`
//!    (a static-pie binary has a dynamic section but no interpreter, and is static here);
//! 3. its machine, compared with the platform it is given for: a mismatch is a [`Warning`],
//!    not an error (a test image may carry the host's binary under another platform).

use std::fmt;
use std::fs::File;
use std::path::PathBuf;

use chartreg_core::oci::layout::Platform;
use object::read::ReadCache;
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endianness, FileKind, elf};

use super::Error;

/// Architectures a Linux image can name (Go's GOARCH values, which the OCI image spec uses).
const ARCHITECTURES: &[&str] = &[
    "386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64",
    "ppc64le", "riscv64", "s390x",
];

/// One binary and the platform it is the image for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    pub platform: Platform,
    pub path: PathBuf,
}

/// Something worth saying about an input that does not stop the image being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The binary is built for another machine than the platform it is given for.
    Machine {
        path: PathBuf,
        platform: String,
        machine: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Machine {
                path,
                platform,
                machine,
            } => write!(
                f,
                "{} is an ELF binary for {machine}, given for {platform}: the image will not run there",
                path.display()
            ),
        }
    }
}

/// Parses `OS/ARCH[/VARIANT]`: a Linux platform with a known architecture.
pub fn parse_platform(text: &str) -> Result<Platform, Error> {
    let bad = |reason: &str| Error::Platform {
        text: text.to_owned(),
        reason: reason.to_owned(),
    };
    let parts: Vec<&str> = text.split('/').collect();
    let (os, architecture, variant) = match parts.as_slice() {
        [os, arch] => (*os, *arch, None),
        [os, arch, variant] => (*os, *arch, Some(*variant)),
        _ => return Err(bad("a platform is OS/ARCH or OS/ARCH/VARIANT")),
    };
    if os != "linux" {
        return Err(bad("chartreg is a Linux binary: the OS must be `linux`"));
    }
    if !ARCHITECTURES.contains(&architecture) {
        return Err(bad(&format!(
            "unknown architecture `{architecture}` (one of {})",
            ARCHITECTURES.join(", ")
        )));
    }
    if let Some(v) = variant
        && (v.is_empty()
            || !v
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
    {
        return Err(bad(&format!(
            "the variant `{v}` is not lowercase letters and digits (v7, v8)"
        )));
    }
    Ok(Platform {
        architecture: architecture.to_owned(),
        os: os.to_owned(),
        variant: variant.map(str::to_owned),
    })
}

/// The platform of the machine this runs on, when it is one a Linux image can name.
pub fn host_platform() -> Option<Platform> {
    let architecture = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "arm" => "arm",
        "riscv64" => "riscv64",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "s390x" => "s390x",
        "loongarch64" => "loong64",
        _ => return None,
    };
    (std::env::consts::OS == "linux").then(|| Platform {
        architecture: architecture.to_owned(),
        os: "linux".to_owned(),
        variant: None,
    })
}

/// The architecture an ELF machine number stands for, in the image spec's words.
fn architecture_of(machine: u16, class_64: bool, big_endian: bool) -> Option<&'static str> {
    Some(match (machine, class_64, big_endian) {
        (elf::EM_X86_64, true, false) => "amd64",
        (elf::EM_386, false, false) => "386",
        (elf::EM_AARCH64, true, false) => "arm64",
        (elf::EM_ARM, false, false) => "arm",
        (elf::EM_RISCV, true, false) => "riscv64",
        (elf::EM_PPC64, true, false) => "ppc64le",
        (elf::EM_PPC64, true, true) => "ppc64",
        (elf::EM_S390, true, true) => "s390x",
        (elf::EM_LOONGARCH, true, false) => "loong64",
        (elf::EM_MIPS, true, false) => "mips64le",
        (elf::EM_MIPS, true, true) => "mips64",
        (elf::EM_MIPS, false, false) => "mipsle",
        (elf::EM_MIPS, false, true) => "mips",
        _ => return None,
    })
}

/// What the ELF headers say: the interpreter asked for (if any), the machine.
struct Headers {
    interpreter: Option<String>,
    machine: u16,
    big_endian: bool,
}

fn headers<H: FileHeader<Endian = Endianness>>(
    data: &ReadCache<File>,
) -> object::read::Result<Headers> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let mut interpreter = None;
    for segment in header.program_headers(endian, data)? {
        if segment.p_type(endian) == elf::PT_INTERP {
            let path = segment.interpreter(endian, data)?.unwrap_or_default();
            interpreter = Some(String::from_utf8_lossy(path).into_owned());
        }
    }
    Ok(Headers {
        interpreter,
        machine: header.e_machine(endian),
        big_endian: header.is_big_endian(),
    })
}

/// Checks that `binary` is a statically linked ELF executable (see the module doc); returns a
/// warning when it is built for another machine than its platform.
pub fn inspect(binary: &Binary) -> Result<Option<Warning>, Error> {
    let (machine, number) = machine(binary)?;
    if machine == Some(binary.platform.architecture.as_str()) {
        return Ok(None);
    }
    Ok(Some(Warning::Machine {
        path: binary.path.clone(),
        platform: binary.platform.to_string(),
        machine: machine.map_or_else(|| format!("ELF machine {number}"), str::to_owned),
    }))
}

/// Checks that `binary` is a statically linked ELF executable; returns the architecture it is
/// built for, in the image spec's words (`None`: one it has no word for), and its ELF machine
/// number.
pub fn machine(binary: &Binary) -> Result<(Option<&'static str>, u16), Error> {
    let path = &binary.path;
    let file = File::open(path).map_err(|source| Error::Binary {
        path: path.clone(),
        source,
    })?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::NotElf {
            path: path.clone(),
            reason: "not a regular file".to_owned(),
        });
    }
    let data = ReadCache::new(file);
    let not_elf = |source: object::read::Error| Error::ElfUnreadable {
        path: path.clone(),
        source,
    };
    let (headers, class_64) = match FileKind::parse(&data) {
        Ok(FileKind::Elf64) => (headers::<elf::FileHeader64<Endianness>>(&data), true),
        Ok(FileKind::Elf32) => (headers::<elf::FileHeader32<Endianness>>(&data), false),
        Ok(kind) => {
            return Err(Error::NotElf {
                path: path.clone(),
                reason: format!("a {kind:?} file"),
            });
        }
        Err(e) => return Err(not_elf(e)),
    };
    let headers = headers.map_err(not_elf)?;
    if let Some(interpreter) = headers.interpreter {
        return Err(Error::Dynamic {
            path: path.clone(),
            interpreter,
        });
    }
    Ok((
        architecture_of(headers.machine, class_64, headers.big_endian),
        headers.machine,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::path::Path;

    #[rstest]
    #[case("linux/amd64", Ok(("amd64", None)))]
    #[case("linux/arm64/v8", Ok(("arm64", Some("v8"))))]
    #[case("linux/arm/v7", Ok(("arm", Some("v7"))))]
    #[case("linux", Err("OS/ARCH"))]
    #[case("linux/amd64/v2/x", Err("OS/ARCH"))]
    #[case("windows/amd64", Err("must be `linux`"))]
    #[case("linux/x86_64", Err("unknown architecture `x86_64`"))]
    #[case("linux/arm/V7", Err("variant `V7`"))]
    #[case("linux/arm/", Err("variant ``"))]
    fn platforms(#[case] text: &str, #[case] expected: Result<(&str, Option<&str>), &str>) {
        match (parse_platform(text), expected) {
            (Ok(p), Ok((arch, variant))) => {
                assert_eq!((p.os.as_str(), p.architecture.as_str()), ("linux", arch));
                assert_eq!(p.variant.as_deref(), variant);
                assert_eq!(p.to_string(), text);
            }
            (Err(e), Err(words)) => {
                let e = e.to_string();
                assert!(e.contains(words) && e.contains(text), "{e}");
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[rstest]
    #[case(elf::EM_X86_64, true, false, Some("amd64"))]
    #[case(elf::EM_AARCH64, true, false, Some("arm64"))]
    #[case(elf::EM_ARM, false, false, Some("arm"))]
    #[case(elf::EM_S390, true, true, Some("s390x"))]
    #[case(elf::EM_X86_64, false, false, None)]
    fn machines(
        #[case] machine: u16,
        #[case] class_64: bool,
        #[case] big_endian: bool,
        #[case] arch: Option<&str>,
    ) {
        assert_eq!(architecture_of(machine, class_64, big_endian), arch);
    }

    fn binary(path: &Path) -> Binary {
        Binary {
            platform: parse_platform("linux/amd64").unwrap(),
            path: path.to_owned(),
        }
    }

    #[test]
    fn refuses_what_is_not_an_elf_executable() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        let err = inspect(&binary(&script)).unwrap_err();
        assert!(
            matches!(err, Error::NotElf { .. } | Error::ElfUnreadable { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("script"), "{err}");
        let err = inspect(&binary(dir.path())).unwrap_err();
        assert!(matches!(err, Error::NotElf { .. }), "{err}");
        let err = inspect(&binary(&dir.path().join("missing"))).unwrap_err();
        assert!(matches!(err, Error::Binary { .. }), "{err}");
    }

    #[test]
    fn a_dynamic_binary_names_its_interpreter() {
        // The test binary itself is dynamically linked, unless built with crt-static.
        if cfg!(target_feature = "crt-static") {
            return;
        }
        let me = std::env::current_exe().unwrap();
        match inspect(&binary(&me)) {
            Err(Error::Dynamic { path, interpreter }) => {
                assert_eq!(path, me);
                assert!(interpreter.contains("ld-"), "{interpreter}");
            }
            other => panic!("a dynamic binary: {other:?}"),
        }
    }
}
