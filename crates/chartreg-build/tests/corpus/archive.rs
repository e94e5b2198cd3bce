//! Chart archives as an attacker writes them: the tar crate's builder refuses `..` and
//! absolute paths, so entries are written from raw GNU headers here, with any name, link
//! target and type.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

/// One tar entry.
#[derive(Debug, Clone)]
pub enum Entry {
    File(String, Vec<u8>),
    Symlink(String, String),
    Hardlink(String, String),
    CharDevice(String),
    Fifo(String),
    Dir(String),
}

/// A tar archive, entries in order.
#[derive(Debug, Clone, Default)]
pub struct Tar {
    entries: Vec<Entry>,
}

impl Tar {
    pub fn new() -> Tar {
        Tar::default()
    }

    pub fn file(mut self, path: &str, data: impl AsRef<[u8]>) -> Tar {
        self.entries
            .push(Entry::File(path.to_owned(), data.as_ref().to_vec()));
        self
    }

    pub fn entry(mut self, entry: Entry) -> Tar {
        self.entries.push(entry);
        self
    }

    /// A minimal chart under `top/`: Chart.yaml, values.yaml and a Deployment of busybox.
    pub fn chart(top: &str, chart_yaml: &str) -> Tar {
        Tar::new()
            .file(&format!("{top}/Chart.yaml"), chart_yaml)
            .file(&format!("{top}/values.yaml"), "image: busybox:1.36\n")
            .file(&format!("{top}/templates/deployment.yaml"), DEPLOYMENT)
    }

    /// The same chart without its values.yaml, for a case that brings its own.
    pub fn chart_without_values(top: &str, chart_yaml: &str) -> Tar {
        Tar::new()
            .file(&format!("{top}/Chart.yaml"), chart_yaml)
            .file(&format!("{top}/templates/deployment.yaml"), DEPLOYMENT)
    }

    /// The uncompressed archive.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = self.entry_bytes();
        out.extend(std::iter::repeat_n(0u8, 1024));
        out
    }

    /// The entries, without the two zero blocks that end an archive.
    fn entry_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for entry in &self.entries {
            let (name, kind, link, data): (&str, u8, &str, &[u8]) = match entry {
                Entry::File(n, d) => (n, b'0', "", d),
                Entry::Symlink(n, t) => (n, b'2', t, &[]),
                Entry::Hardlink(n, t) => (n, b'1', t, &[]),
                Entry::CharDevice(n) => (n, b'3', "", &[]),
                Entry::Fifo(n) => (n, b'6', "", &[]),
                Entry::Dir(n) => (n, b'5', "", &[]),
            };
            let mut header = tar::Header::new_gnu();
            {
                let gnu = header.as_gnu_mut().expect("a GNU header");
                assert!(
                    name.len() <= 100 && link.len() <= 100,
                    "short names only: {name}"
                );
                gnu.name[..name.len()].copy_from_slice(name.as_bytes());
                gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_mode(if kind == b'5' { 0o755 } else { 0o644 });
            header.set_size(data.len() as u64);
            header.set_mtime(1_700_000_000);
            header.set_uid(0);
            header.set_gid(0);
            header.set_entry_type(tar::EntryType::new(kind));
            header.set_cksum();
            out.extend_from_slice(header.as_bytes());
            out.extend_from_slice(data);
            let pad = (512 - data.len() % 512) % 512;
            out.extend(std::iter::repeat_n(0u8, pad));
        }
        out
    }

    /// The gzipped archive (a chart package).
    pub fn tgz(&self) -> Vec<u8> {
        gzip(&self.bytes())
    }
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(data).expect("gzip in memory");
    gz.finish().expect("gzip in memory")
}

/// A gzipped archive of `n` zero bytes at `path`, written in pieces (never `n` bytes in
/// memory).
pub fn gzip_zeros_in_tar(path: &str, n: u64) -> Vec<u8> {
    gzip_zeros_after(&Tar::new(), path, n)
}

/// A gzipped archive of `head`'s entries, then `n` zero bytes at `path`.
pub fn gzip_zeros_after(head: &Tar, path: &str, n: u64) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&head.entry_bytes()).expect("gzip");
    let mut header = tar::Header::new_gnu();
    header.set_path(path).expect("a plain path");
    header.set_size(n);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    gz.write_all(header.as_bytes()).expect("gzip");
    let zeros = vec![0u8; 1 << 20];
    let mut left = n;
    while left > 0 {
        let piece = left.min(zeros.len() as u64) as usize;
        gz.write_all(&zeros[..piece]).expect("gzip");
        left -= piece as u64;
    }
    gz.write_all(&[0u8; 1024]).expect("gzip");
    gz.finish().expect("gzip")
}

/// A Deployment naming `{{ .Values.image }}`.
pub const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: app
          image: {{ .Values.image }}
";

/// `Chart.yaml` text.
pub fn chart_yaml(name: &str, version: &str) -> String {
    format!(
        "apiVersion: v2\nname: {}\nversion: {}\n",
        yaml_string(name),
        yaml_string(version)
    )
}

/// `s` as a YAML double-quoted string (control characters as escapes).
pub fn yaml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
