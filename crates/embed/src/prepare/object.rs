//! One large file as a relocatable ELF object for x86-64 or AArch64 ([`Machine`]), written as a
//! stream: the file is read in 1 MiB pieces, each hashed and written straight to the object
//! (`tree::copy_hashing`), so memory stays at one piece whatever the file's size.
//!
//! The object: an ELF header, the file's bytes as the one allocated section (read-only,
//! page-aligned: `.lrodata.chartreg`, x86-64 large data, on x86-64; `.rodata.chartreg` on
//! AArch64, which has no large data), an empty `.note.GNU-stack` (no executable stack), and a
//! symbol table holding one global, hidden symbol (`chartreg_blob_<hex>`) over the whole
//! section. The `object` crate's two-phase writer
//! lays the file out before anything is written, so the section's place is known before its
//! bytes stream through.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use object::write::StreamingBuffer;
use object::write::elf::{FileHeader, SectionHeader, Sym, Writer};
use object::{Endianness, elf};

use chartreg_core::tree::copy_hashing;

/// The output's buffer.
const PIECE: usize = 1 << 20;

/// `SHF_X86_64_LARGE`: the linker places such sections at the edge of the image (after `.bss`
/// with `-z lrodata-after-bss`). Not named by the `object` crate.
const SHF_X86_64_LARGE: u32 = 0x1000_0000;

/// Page alignment: the first linked section starts a page of its own, so that `_end` (set to
/// its start, see `link_args`) ends the writable data on a page boundary.
const ALIGN: usize = 4096;

/// The machines objects are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    X86_64,
    Aarch64,
}

impl Machine {
    /// The machine of a Linux target, from cargo's `CARGO_CFG_TARGET_OS` and
    /// `CARGO_CFG_TARGET_ARCH`; `None`: objects are not written for it.
    pub fn of_target(os: &str, arch: &str) -> Option<Machine> {
        match (os, arch) {
            ("linux", "x86_64") => Some(Machine::X86_64),
            ("linux", "aarch64") => Some(Machine::Aarch64),
            _ => None,
        }
    }

    /// The object's section name.
    pub fn section(self) -> &'static str {
        match self {
            Machine::X86_64 => ".lrodata.chartreg",
            Machine::Aarch64 => ".rodata.chartreg",
        }
    }

    fn e_machine(self) -> u16 {
        match self {
            Machine::X86_64 => elf::EM_X86_64,
            Machine::Aarch64 => elf::EM_AARCH64,
        }
    }

    fn section_flags(self) -> u64 {
        match self {
            Machine::X86_64 => u64::from(elf::SHF_ALLOC | SHF_X86_64_LARGE),
            Machine::Aarch64 => u64::from(elf::SHF_ALLOC),
        }
    }
}

/// The symbol naming the object of the file whose sha256 is `hex`.
pub fn symbol(hex: &str) -> String {
    format!("chartreg_blob_{hex}")
}

/// Streams `source`, a file of `size` bytes whose sha256 is `sha256`, into a new object for
/// `machine` at `dest` under [`symbol`]. The bytes are hashed again on their way: a file that no longer has
/// that size and digest changed while the build ran, and is an error (no object names bytes
/// other than its digest's).
pub fn write(
    source: &Path,
    size: u64,
    sha256: &[u8; 32],
    machine: Machine,
    dest: &Path,
) -> io::Result<()> {
    let mut input = File::open(source)?;
    let mut buffer = StreamingBuffer::new(BufWriter::with_capacity(PIECE, File::create(dest)?));
    let size_usize = usize::try_from(size).map_err(|_| io::Error::other("too large"))?;
    let name = symbol(&hex::encode(sha256));
    let mut w = Writer::new(Endianness::Little, true, &mut buffer);
    w.reserve_null_section_index();
    let data_name = w.add_section_name(machine.section().as_bytes());
    let data_index = w.reserve_section_index();
    let stack_name = w.add_section_name(b".note.GNU-stack");
    w.reserve_section_index();
    w.reserve_file_header();
    let data_offset = w.reserve(size_usize, ALIGN);
    let name_id = w.add_string(name.as_bytes());
    w.reserve_null_symbol_index();
    w.reserve_symbol_index(Some(data_index));
    w.reserve_symtab_section_index();
    w.reserve_symtab();
    w.reserve_strtab_section_index();
    w.reserve_strtab();
    w.reserve_shstrtab_section_index();
    w.reserve_shstrtab();
    w.reserve_section_headers();

    w.write_file_header(&FileHeader {
        os_abi: elf::ELFOSABI_NONE,
        abi_version: 0,
        e_type: elf::ET_REL,
        e_machine: machine.e_machine(),
        e_entry: 0,
        e_flags: 0,
    })
    .map_err(io::Error::other)?;
    w.write_align(ALIGN);
    let copied = copy_hashing(&mut input, &mut Section(&mut w)).map_err(|(_, e)| e)?;
    if copied != (size, *sha256) {
        return Err(io::Error::other(format!(
            "it is no longer the {size}-byte file hashed before: it changed while the build ran"
        )));
    }
    w.write_null_symbol();
    w.write_symbol(&Sym {
        name: Some(name_id),
        section: Some(data_index),
        st_info: (elf::STB_GLOBAL << 4) | elf::STT_OBJECT,
        st_other: elf::STV_HIDDEN,
        st_shndx: 0,
        st_value: 0,
        st_size: size,
    });
    w.write_strtab();
    w.write_shstrtab();
    w.write_null_section_header();
    w.write_section_header(&SectionHeader {
        name: Some(data_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: machine.section_flags(),
        sh_addr: 0,
        sh_offset: data_offset as u64,
        sh_size: size,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: ALIGN as u64,
        sh_entsize: 0,
    });
    w.write_section_header(&SectionHeader {
        name: Some(stack_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: 0,
        sh_addr: 0,
        sh_offset: 0,
        sh_size: 0,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 1,
        sh_entsize: 0,
    });
    w.write_symtab_section_header(1);
    w.write_strtab_section_header();
    w.write_shstrtab_section_header();
    buffer.result().map_err(io::Error::other)?;
    buffer.into_inner().flush()
}

/// The object's section, as a place to copy bytes to.
struct Section<'w, 'a>(&'w mut Writer<'a>);

impl Write for Section<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chartreg_core::oci::sha256;
    use object::read::elf::ElfFile64;
    use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SymbolScope};

    #[test]
    fn the_object_holds_the_file_under_its_digest() {
        for (machine, architecture, name, flags) in [
            (
                Machine::X86_64,
                object::Architecture::X86_64,
                ".lrodata.chartreg",
                elf::SHF_ALLOC | SHF_X86_64_LARGE,
            ),
            (
                Machine::Aarch64,
                object::Architecture::Aarch64,
                ".rodata.chartreg",
                elf::SHF_ALLOC,
            ),
        ] {
            one_object(machine, architecture, name, flags);
        }
    }

    fn one_object(machine: Machine, architecture: object::Architecture, name: &str, flags: u32) {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("layer");
        // Over two output buffers' worth, and not a whole number of them.
        let data: Vec<u8> = (0..(2 * PIECE + 4099) as u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        std::fs::write(&source, &data).unwrap();
        let dest = dir.path().join("layer.o");
        let hash = sha256(&data);
        write(&source, data.len() as u64, &hash, machine, &dest).unwrap();

        let bytes = std::fs::read(&dest).unwrap();
        let elf = ElfFile64::<Endianness>::parse(bytes.as_slice()).unwrap();
        assert_eq!(elf.architecture(), architecture);
        assert_eq!(elf.kind(), object::ObjectKind::Relocatable);
        let section = elf.section_by_name(name).unwrap();
        assert_eq!(section.data().unwrap(), data.as_slice());
        assert_eq!(section.align(), ALIGN as u64);
        let SectionFlags::Elf { sh_flags } = section.flags() else {
            panic!("ELF flags");
        };
        assert_eq!(
            sh_flags,
            u64::from(flags),
            "read-only, allocated (large on x86-64)"
        );
        assert!(elf.section_by_name(".note.GNU-stack").is_some());
        let symbols: Vec<_> = elf.symbols().collect();
        assert_eq!(symbols.len(), 1);
        let symbol = &symbols[0];
        assert_eq!(symbol.name().unwrap(), super::symbol(&hex::encode(hash)));
        assert_eq!(symbol.size(), data.len() as u64);
        assert_eq!(symbol.section_index(), Some(section.index()));
        assert_eq!(symbol.scope(), SymbolScope::Linkage, "global, hidden");
    }

    #[test]
    fn a_file_that_is_not_what_was_hashed_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("layer");
        std::fs::write(&source, b"layer bytes").unwrap();
        let dest = dir.path().join("layer.o");
        const X: Machine = Machine::X86_64;
        let e = write(&source, 11, &sha256(b"other bytes"), X, &dest).unwrap_err();
        assert!(e.to_string().contains("changed while the build ran"), "{e}");
        let e = write(&source, 10, &sha256(b"layer bytes"), X, &dest).unwrap_err();
        assert!(e.to_string().contains("changed while the build ran"), "{e}");
        let e = write(&source, 12, &sha256(b"layer bytes"), X, &dest).unwrap_err();
        assert!(e.to_string().contains("changed while the build ran"), "{e}");
    }
}
