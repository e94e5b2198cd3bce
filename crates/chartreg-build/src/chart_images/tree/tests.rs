//! `tree`'s tests: packages made in memory, read or refused.

use super::*;
use crate::samples::tar_gz as package;

#[test]
fn subcharts_are_read_from_folders_and_packages_by_their_values_key() {
    let inner = package(&[
        ("db/Chart.yaml", b"name: db\nversion: 2.0.0\n"),
        ("db/values.yaml", b"image: postgres:16\n"),
    ]);
    let outer = package(&[
        (
            "app/Chart.yaml",
            b"name: app\nversion: 1.0.0\nappVersion: \"3.1\"\ndependencies:\n  - {name: agent, version: 0.1.0, alias: probe}\n  - {name: db, version: 2.0.0}\n",
        ),
        ("app/values.yaml", b"image: {repository: app}\n"),
        ("app/charts/agent/Chart.yaml", b"name: agent\nversion: 0.1.0\n"),
        ("app/charts/agent/values.yaml", b"image: agent:1\n"),
        ("app/charts/db-2.0.0.tgz", &inner),
    ]);
    let tree = ChartTree::read(&outer).unwrap();
    assert_eq!(tree.id(), "app:1.0.0");
    assert_eq!(tree.app_version, "3.1");
    let keys: Vec<(&str, String)> = tree
        .subcharts
        .iter()
        .map(|(k, c)| (k.as_str(), c.id()))
        .collect();
    assert_eq!(
        keys,
        [("probe", "agent:0.1.0".into()), ("db", "db:2.0.0".into())]
    );
    assert_eq!(
        tree.subchart_of("app/charts/db/templates/x.yaml")
            .map(ChartTree::id),
        Some("db:2.0.0".into())
    );
    assert!(tree.subchart_of("app/templates/x.yaml").is_none());
}

/// The bounds: nesting, decompressed bytes, YAML, many subcharts.
mod bounds {
    use super::*;
    use crate::chart::unpacking;
    use crate::samples::{alias_bomb, gzip, tar};
    use rstest::rstest;
    use std::io::Write;
    use std::time::{Duration, Instant};

    fn chart(name: &str) -> String {
        format!("name: {name}\nversion: 1.0.0\n")
    }

    /// A package of chart `name` holding `sub` as `charts/sub.tgz`.
    fn holding(name: &str, sub: &[u8]) -> Vec<u8> {
        gzip(&tar(&[
            (&format!("{name}/Chart.yaml"), chart(name).as_bytes()),
            (&format!("{name}/charts/sub.tgz"), sub),
        ]))
    }

    #[test]
    fn packages_nested_past_the_limit_are_refused_naming_the_chain() {
        let mut package = gzip(&tar(&[("c/Chart.yaml", chart("c").as_bytes())]));
        for _ in 0..40 {
            package = holding("c", &package);
        }
        let e = ChartTree::read(&package).unwrap_err().to_string();
        let chain = ["charts/sub.tgz"; 11].join("/");
        assert!(
            e.starts_with(&format!("{chain}: subcharts nest more than 10 deep")),
            "{e}"
        );
    }

    #[test]
    fn packages_nested_to_the_limit_are_read() {
        let mut package = gzip(&tar(&[("c/Chart.yaml", chart("c").as_bytes())]));
        for _ in 0..unpacking::MAX_NESTING {
            package = holding("c", &package);
        }
        let mut tree = &ChartTree::read(&package).unwrap();
        let mut depth = 0;
        while let Some((_, sub)) = tree.subcharts.first() {
            tree = sub;
            depth += 1;
        }
        assert_eq!(depth, unpacking::MAX_NESTING);
    }

    #[test]
    fn folders_nested_past_the_limit_are_refused_naming_the_folder() {
        let mut entries = vec![("c/Chart.yaml".to_owned(), chart("c"))];
        let mut dir = "c/".to_owned();
        for i in 0..12 {
            dir = format!("{dir}charts/s{i}/");
            entries.push((format!("{dir}Chart.yaml"), chart(&format!("s{i}"))));
        }
        let entries: Vec<(&str, &[u8])> = entries
            .iter()
            .map(|(p, d)| (p.as_str(), d.as_bytes()))
            .collect();
        let e = ChartTree::read(&gzip(&tar(&entries)))
            .unwrap_err()
            .to_string();
        let chain: String = (0..11).map(|i| format!("charts/s{i}/")).collect();
        assert!(
            e.starts_with(&format!("{}: subcharts nest", chain.trim_end_matches('/'))),
            "{e}"
        );
    }

    /// A package of chart `b` holding `templates/zeros.yaml`, `n` zeros, written in pieces.
    fn zeros(n: u64) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let head = tar(&[("b/Chart.yaml", chart("b").as_bytes())]);
        // The Chart.yaml entry, without the end of the archive.
        gz.write_all(&head[..head.len() - 1024]).unwrap();
        let mut header = tar::Header::new_gnu();
        header.set_path("b/templates/zeros.yaml").unwrap();
        header.set_size(n);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        gz.write_all(header.as_bytes()).unwrap();
        let piece = vec![0u8; 1 << 20];
        for _ in 0..n >> 20 {
            gz.write_all(&piece).unwrap();
        }
        gz.write_all(&[0; 1024]).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn subchart_gzip_bombs_are_refused_at_the_chart_s_budget() {
        // Six packages of 90 KB, 90 MiB each: the third passes 256 MiB.
        let bomb = zeros(90 << 20);
        let names: Vec<String> = (0..6).map(|i| format!("c/charts/b{i}.tgz")).collect();
        let mut entries: Vec<(&str, &[u8])> = vec![("c/Chart.yaml", b"name: c\nversion: 1.0.0\n")];
        entries.extend(names.iter().map(|n| (n.as_str(), bomb.as_slice())));
        let e = ChartTree::read(&gzip(&tar(&entries)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("charts/b2.tgz: the chart's packages") && e.contains("256 MiB"),
            "{e}"
        );
    }

    #[test]
    fn a_link_in_a_nested_package_is_refused_naming_the_package() {
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        let mut sub = tar::Builder::new(Vec::new());
        sub.append_link(&mut link, "s/templates/x.yaml", "/etc/shadow")
            .unwrap();
        let mut header = tar::Header::new_gnu();
        let data = chart("s");
        header.set_size(data.len() as u64);
        header.set_entry_type(tar::EntryType::Regular);
        sub.append_data(&mut header, "s/Chart.yaml", data.as_bytes())
            .unwrap();
        let sub = gzip(&sub.into_inner().unwrap());
        let e = ChartTree::read(&holding("c", &sub))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("charts/sub.tgz: archive entry \"s/templates/x.yaml\" is a symbolic link to \"/etc/shadow\""),
            "{e}"
        );
    }

    /// values.yaml with a bomb, in the package and in a subchart package: refused naming the
    /// file within a second. Measured in a release build: the alias bomb 7 to 10 ms, 100,000
    /// deep 0.1 ms (serde_yaml_ng alone: 16 ms and 16 s).
    #[rstest]
    #[case::alias_bomb(alias_bomb(), "alias bomb")]
    #[case::deep(format!("deep: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)), "256 deep")]
    fn values_yaml_bombs_are_refused_quickly_naming_the_file(
        #[case] values: String,
        #[case] words: &str,
    ) {
        let sub = gzip(&tar(&[
            ("s/Chart.yaml", chart("s").as_bytes()),
            ("s/values.yaml", values.as_bytes()),
        ]));
        let own = gzip(&tar(&[
            ("c/Chart.yaml", chart("c").as_bytes()),
            ("c/values.yaml", values.as_bytes()),
        ]));
        for (package, file) in [
            (own, "values.yaml"),
            (holding("c", &sub), "charts/sub.tgz/values.yaml"),
        ] {
            let start = Instant::now();
            let e = ChartTree::read(&package).unwrap_err().to_string();
            let took = start.elapsed();
            assert!(
                e.starts_with(&format!("{file}: ")) && e.contains(words),
                "{e}"
            );
            assert!(took < Duration::from_secs(1), "{took:?}");
        }
    }

    #[test]
    fn many_subchart_folders_are_read_in_one_walk() {
        // 20,000 subcharts and 60,000 files: each chart's files are looked up, not scanned
        // for each subchart (which took 4 s here). Read in 0.3 s in release builds.
        let mut entries = vec![("c/Chart.yaml".to_owned(), chart("c"))];
        for i in 0..20_000 {
            entries.push((format!("c/charts/s{i}/Chart.yaml"), chart(&format!("s{i}"))));
            entries.push((format!("c/charts/s{i}/values.yaml"), "a: 1\n".to_owned()));
            entries.push((format!("c/charts/s{i}/templates/x.yaml"), String::new()));
        }
        let entries: Vec<(&str, &[u8])> = entries
            .iter()
            .map(|(p, d)| (p.as_str(), d.as_bytes()))
            .collect();
        let package = gzip(&tar(&entries));
        let start = Instant::now();
        let tree = ChartTree::read(&package).unwrap();
        let took = start.elapsed();
        assert_eq!(tree.subcharts.len(), 20_000);
        assert!(took < Duration::from_secs(2), "{took:?}");
    }
}
