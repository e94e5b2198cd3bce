//! What a chart must be once its files arrive ([`Arrival`]): the package and its `.prov`,
//! each already in its place with the right bytes or staged beside it, the package read as the
//! chart Helm loads and the one asked for, both checked with the policy; refused, what was
//! staged is removed. A chart checked waits as [`Pending`] until the run puts it in place.
//! Names the charts file asks for are checked here too ([`check_name`]), before they are part
//! of a path or a request.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chartreg_core::content::Evidence;

use crate::fetch::options::Options;
use crate::fetch::problem::Problem;
use crate::fetch::transport::{Bounded, existing_sha256};
use crate::lock::LockedChart;

/// A chart name the charts file asks for, checked before it is part of a path or a request.
pub(super) fn check_name(chart: &str) -> Result<(), Problem> {
    crate::pack::chart_name::check(chart).map_err(|reason| Problem::ChartName {
        name: chart.to_owned(),
        reason: Arc::new(reason),
    })
}

/// The package at `package` (at most a package's bound of it) read as the chart Helm loads:
/// its name and version, checked (`crate::pack::read_chart`).
pub(super) fn read_package(package: &Path) -> Result<(String, String), Problem> {
    let data = chartreg_core::file::read_limited(package, Bounded::Package.bytes())
        .map_err(|source| Problem::file(package, source))?;
    let chart =
        crate::pack::read_chart(&data).map_err(|problem| Problem::NotAChart(Arc::new(problem)))?;
    Ok((chart.name().to_owned(), chart.version().to_owned()))
}

pub(super) fn hex(hash: [u8; 32]) -> String {
    hex::encode(hash)
}

/// `path` with `.suffix` after its name (`hello-1.0.0.tgz` -> `hello-1.0.0.tgz.prov`).
pub(super) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Where a file of the chart is staged beside its place.
pub(super) fn staged_beside(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.fetch-new"))
}

/// A chart package and its `.prov` as fetched: each either already in its place with the
/// right bytes, or staged beside it. [`Arrival::expect`] reads the package as the chart asked
/// for, [`Arrival::verify`] checks both against the policy; each removes what was staged when
/// it refuses, and so does [`Arrival::discard`]; [`Arrival::place`] puts them in place.
#[derive(Debug)]
pub(super) struct Arrival {
    /// `<charts>/<name>-<version>.tgz`.
    pub(super) target: PathBuf,
    /// Where the package's bytes are: `target`, or staged.
    pub(super) package: PathBuf,
    /// Where the `.prov`'s bytes are (`<target>.prov`, or staged), if the source has one.
    pub(super) prov: Option<PathBuf>,
}

impl Arrival {
    pub(super) fn prov_target(&self) -> PathBuf {
        with_suffix(&self.target, "prov")
    }

    /// Removes what was staged (what is in its place stays).
    pub(super) fn discard(&self) {
        if self.package != self.target {
            let _ = std::fs::remove_file(&self.package);
        }
        if let Some(prov) = self.prov.as_ref().filter(|p| **p != self.prov_target()) {
            let _ = std::fs::remove_file(prov);
        }
    }

    /// `result`, having removed what was staged if it is an error.
    pub(super) fn or_discard<T>(&self, result: Result<T, Problem>) -> Result<T, Problem> {
        if result.is_err() {
            self.discard();
        }
        result
    }

    /// Reads the package as a chart, which must be `name` at a version `is_version` takes
    /// (`listed_by` says what lists it so); refused, what was staged is removed.
    pub(super) fn expect(
        &self,
        name: &str,
        version: &str,
        is_version: impl Fn(&str) -> bool,
        listed_by: &'static str,
    ) -> Result<(), Problem> {
        let read = read_package(&self.package).and_then(|(found, found_version)| {
            if found == name && is_version(&found_version) {
                Ok(())
            } else {
                Err(Problem::NotAsListed {
                    asked: (name.to_owned(), version.to_owned()),
                    package: (found, found_version),
                    listed_by,
                })
            }
        });
        self.or_discard(read)
    }

    /// Checks chart `name` `version` (sha256 `sha256`, hex) with the policy, if any: who
    /// signed it, when verified. Refused, what was staged is removed.
    pub(super) fn verify(
        &self,
        options: &Options,
        name: &str,
        version: &str,
        sha256: &str,
        pinned: Option<&LockedChart>,
    ) -> Result<Option<Evidence>, Problem> {
        let verified = match &options.verify {
            Some(verifier) => verifier.chart(
                name,
                version,
                sha256,
                self.prov.as_deref(),
                pinned.map(|p| p.verified.as_ref()),
            ),
            None => Ok(None),
        };
        self.or_discard(verified)
    }

    /// Puts the package and `.prov` in place (a `.prov` an earlier fetch took is removed when
    /// the source has none now); what could not be put in place is removed.
    pub(super) fn place(self) -> Result<(), Problem> {
        let prov_target = self.prov_target();
        match &self.prov {
            Some(prov) if *prov != prov_target => {
                let renamed = std::fs::rename(prov, &prov_target)
                    .map_err(|source| Problem::file(&prov_target, source));
                self.or_discard(renamed)?;
            }
            Some(_) => {}
            None => {
                // None upstream: one an earlier fetch took would no longer match.
                let _ = std::fs::remove_file(&prov_target);
            }
        }
        if self.package != self.target {
            let renamed = std::fs::rename(&self.package, &self.target)
                .map_err(|source| Problem::file(&self.target, source));
            self.or_discard(renamed)?;
        }
        Ok(())
    }
}

/// A chart fetched and checked, its files still beside their places: what the lock will record
/// of it, and where its package is now.
#[derive(Debug)]
pub struct Pending {
    pub locked: LockedChart,
    pub(super) arrival: Arrival,
}

impl Pending {
    /// Where the package's bytes are now (staged, or already in its place).
    pub fn package(&self) -> &Path {
        &self.arrival.package
    }

    /// Puts the chart's files in place: what the lock records of it. (Two entries of the lists
    /// may resolve to one package, staged once: the second finds it in place.)
    pub fn place(self) -> Result<LockedChart, Problem> {
        let placed_by_a_twin = !self.arrival.package.exists()
            && existing_sha256(&self.arrival.target).map(hex).as_deref()
                == Some(self.locked.sha256.as_str());
        if !placed_by_a_twin {
            self.arrival.place()?;
        }
        Ok(self.locked)
    }

    /// Removes what was staged for the chart; what was in its place stays.
    pub fn discard(self) {
        self.arrival.discard();
    }
}

/// A downloaded package (at `staged`, a name of its own), checked to be a chart Helm loads:
/// its arrival (to be put in place as `<out>/<name>-<version>.tgz`: both checked, so the name
/// is a file's), name and version; removed if it is not a chart.
pub(super) fn arriving(staged: PathBuf, out: &Path) -> Result<(Arrival, String, String), Problem> {
    let (name, version) = match read_package(&staged) {
        Ok(found) => found,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    Ok((
        Arrival {
            target: out.join(format!("{name}-{version}.tgz")),
            package: staged,
            prov: None,
        },
        name,
        version,
    ))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// A package holding `top/Chart.yaml` with `name` and `version`.
    fn package(top: &str, name: &str, version: &str) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        let chart = format!("apiVersion: v2\nname: {name:?}\nversion: {version:?}\n");
        let mut header = tar::Header::new_gnu();
        header.set_size(chart.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("{top}/Chart.yaml"), chart.as_bytes())
            .unwrap();
        let tar = tar.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    /// An arrival staged in `dir`: the package `data` as `.hello-1.0.0.tgz.fetch-new`, and a
    /// `.prov` beside it.
    fn staged(dir: &Path, data: &[u8]) -> Arrival {
        let target = dir.join("hello-1.0.0.tgz");
        let package = staged_beside(&target);
        std::fs::write(&package, data).unwrap();
        let prov = staged_beside(&with_suffix(&target, "prov"));
        std::fs::write(&prov, b"signed").unwrap();
        Arrival {
            target,
            package,
            prov: Some(prov),
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn exact(version: &str) -> impl Fn(&str) -> bool + '_ {
        move |found| found == version
    }

    #[test]
    fn the_chart_the_index_lists_is_taken_and_placed() {
        let dir = tempfile::tempdir().unwrap();
        let arrival = staged(dir.path(), &package("hello", "hello", "1.0.0"));
        arrival
            .expect("hello", "1.0.0", exact("1.0.0"), "the index")
            .unwrap();
        arrival.place().unwrap();
        assert_eq!(
            files(dir.path()),
            ["hello-1.0.0.tgz", "hello-1.0.0.tgz.prov"]
        );
    }

    #[test]
    fn another_chart_or_version_than_listed_is_refused_and_removed() {
        for (name, version, listed) in [("other", "1.0.0", "1.0.0"), ("hello", "9.9.9", "1.0.0")] {
            let dir = tempfile::tempdir().unwrap();
            let arrival = staged(dir.path(), &package("hello", name, version));
            let e = arrival
                .expect("hello", listed, exact(listed), "the index")
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "the package is chart {name:?} version {version:?}, but the index lists it as \"hello\" version \"1.0.0\""
                )
            );
            assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
        }
    }

    #[test]
    fn a_package_helm_does_not_load_is_refused_and_removed_but_what_was_in_place_stays() {
        let dir = tempfile::tempdir().unwrap();
        let arrival = staged(dir.path(), b"PK\x03\x04 not a chart");
        std::fs::write(&arrival.target, b"an earlier fetch's").unwrap();
        let e = arrival
            .expect("hello", "1.0.0", exact("1.0.0"), "the index")
            .unwrap_err();
        assert!(matches!(e, Problem::NotAChart(_)), "{e}");
        assert!(
            e.to_string()
                .starts_with("not a chart package Helm loads: "),
            "{e}"
        );
        assert_eq!(files(dir.path()), ["hello-1.0.0.tgz"]);
        assert_eq!(
            std::fs::read(dir.path().join("hello-1.0.0.tgz")).unwrap(),
            b"an earlier fetch's"
        );
    }

    #[test]
    fn a_package_past_its_bound_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.tgz");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(Bounded::Package.bytes() + 1).unwrap();
        let e = read_package(&path).unwrap_err();
        assert!(matches!(e, Problem::File { .. }), "{e}");
        assert!(e.to_string().contains("larger than"), "{e}");
    }

    #[test]
    fn a_staged_package_whose_chart_is_refused_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let staged = dir.path().join(".abc.oci-download");
        std::fs::write(&staged, package("evil", "--post-renderer=sh", "1.0.0")).unwrap();
        let e = arriving(staged, dir.path()).unwrap_err();
        assert!(e.to_string().contains("invalid chart name"), "{e}");
        assert!(files(dir.path()).is_empty());
    }

    #[test]
    fn names_the_charts_file_asks_for_are_chart_names() {
        for name in [
            "../../../tmp/evil",
            "--post-renderer=sh",
            "..",
            "Evil",
            "a\u{1b}[2J",
        ] {
            let e = check_name(name).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("invalid chart name {name:?}: it ")),
                "{e}"
            );
        }
        check_name("hello").unwrap();
    }
}
