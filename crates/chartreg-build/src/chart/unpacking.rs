//! What reading one chart and its subcharts may take, as one budget: the subcharts of a chart
//! are folders under `charts/` or packages (`charts/*.tgz`), each a chart with subcharts in
//! turn, and a package of a few KB may decompress to 100 MiB. Read for its images
//! (`ChartTree::read`) or packaged from its folder (`pack::chart_folder`), a chart may:
//! - nest subcharts at most [`MAX_NESTING`] deep (a package holding itself, copied 40 deep,
//!   would otherwise be read to the last);
//! - decompress at most [`MAX_UNPACKED`] of packages, its own and every nested one together
//!   (each also at most 100 MiB, the most Helm loads of one package);
//! - hold at most [`yaml::MAX_TREE_VALUES`] values in its YAML ([`yaml::Budget`]).

use serde_yaml_ng::Value;

use super::{ChartError, MAX_DECOMPRESSED, gunzip};
use crate::yaml::{self, YamlError};

/// How deep subcharts may nest below the chart read. Charts nest two or three deep (an
/// umbrella chart, its components, a library chart such as Bitnami's `common` below each);
/// ten leaves room for any chart Helm users write, and bounds the recursion.
pub const MAX_NESTING: usize = 10;

/// The most the packages of one chart may decompress to together: more than two packages at
/// Helm's 100 MiB each, while charts' packages, subcharts included, decompress to a few MiB.
/// A chart's files are held while its subcharts are read, so this bounds the memory a chart
/// takes to read (six subchart packages of 90 KB, 90 MiB each, would otherwise take 540 MiB).
pub const MAX_UNPACKED: u64 = 256 << 20;

/// What one chart and its subcharts may still take.
#[derive(Debug)]
pub struct Unpacking {
    /// Bytes of packages still to decompress.
    left: u64,
    /// Values their YAML may still hold.
    values: yaml::Budget,
}

impl Default for Unpacking {
    fn default() -> Self {
        Unpacking {
            left: MAX_UNPACKED,
            values: yaml::Budget::default(),
        }
    }
}

impl Unpacking {
    /// The tar of `package`, the chart's own or one of a subchart: at most 100 MiB, and no
    /// more than the chart may still decompress.
    pub fn gunzip(&mut self, package: &[u8]) -> Result<Vec<u8>, ChartError> {
        let most = self.left.min(MAX_DECOMPRESSED);
        match gunzip(package, most) {
            Ok(tar) => {
                self.left = self.left.saturating_sub(tar.len() as u64);
                Ok(tar)
            }
            Err(ChartError::TooLarge) if most < MAX_DECOMPRESSED => {
                Err(ChartError::SubchartsTooLarge)
            }
            Err(e) => Err(e),
        }
    }

    /// A YAML document of the chart, its values taken from the chart's budget.
    pub fn yaml(&mut self, data: &[u8]) -> Result<Value, YamlError> {
        yaml::value(data, &mut self.values)
    }

    /// Refuses a subchart `depth` levels below the chart read when that is too deep.
    pub fn nest(depth: usize) -> Result<(), ChartError> {
        if depth > MAX_NESTING {
            return Err(ChartError::SubchartsTooDeep);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A gzip stream of `n` zeros, written in pieces.
    fn zeros(n: u64) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let piece = vec![0u8; 1 << 20];
        for _ in 0..n >> 20 {
            gz.write_all(&piece).unwrap();
        }
        gz.finish().unwrap()
    }

    #[test]
    fn the_packages_of_a_chart_share_one_budget() {
        let package = zeros(90 << 20);
        let mut unpacking = Unpacking::default();
        unpacking.gunzip(&package).unwrap();
        unpacking.gunzip(&package).unwrap();
        // 180 MiB taken: the third would pass 256 MiB, though it is under 100 MiB itself.
        assert!(matches!(
            unpacking.gunzip(&package),
            Err(ChartError::SubchartsTooLarge)
        ));
    }

    #[test]
    fn one_package_past_100_mib_is_refused_as_helm_refuses_it() {
        let mut unpacking = Unpacking::default();
        assert!(matches!(
            unpacking.gunzip(&zeros(101 << 20)),
            Err(ChartError::TooLarge)
        ));
    }

    #[test]
    fn subcharts_may_nest_ten_deep() {
        Unpacking::nest(MAX_NESTING).unwrap();
        assert!(matches!(
            Unpacking::nest(MAX_NESTING + 1),
            Err(ChartError::SubchartsTooDeep)
        ));
    }
}
