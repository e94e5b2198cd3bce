//! What the unit tests build their input from: tar archives and gzip streams made in memory
//! (well formed, or entry by entry from raw headers with any name, type and link target), and
//! the YAML bombs the readers must refuse.

use std::io::Write;

/// A tar archive of regular files, ended.
pub fn tar(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_700_000_000);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, *data).unwrap();
    }
    tar.into_inner().unwrap()
}

/// `data` as one gzip member.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// A chart package: [`tar`] of `entries`, gzipped.
pub fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
    gzip(&tar(entries))
}

/// One tar entry from a raw GNU header (the tar crate's builder refuses `..`, absolute paths
/// and odd types): name, type flag, link target, bytes; modified at 7.
pub fn raw_entry(name: &str, kind: u8, link: &str, data: &[u8]) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    let gnu = header.as_gnu_mut().unwrap();
    gnu.name[..name.len()].copy_from_slice(name.as_bytes());
    gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
    header.set_mode(0o644);
    header.set_size(data.len() as u64);
    header.set_mtime(7);
    // The type byte as given (`EntryType` would write an old-style `\0` file as `0`).
    header.as_old_mut().linkflag = [kind];
    header.set_cksum();
    let mut out = header.as_bytes().to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(512), 0);
    out
}

/// Nine levels of nine aliases: 387,420,489 strings expanded.
pub fn alias_bomb() -> String {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    text
}

/// A document whose one value is a flow sequence nested 100,000 deep.
pub fn deep() -> String {
    format!("deep: {}{}\n", "[".repeat(100_000), "]".repeat(100_000))
}
