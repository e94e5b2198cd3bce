//! The flags of every command that renders charts to find their images (`images`, `pack` with
//! an `images:` section, `fetch --with-chart-images`, and `build` and `image`, which pack):
//! which Helm, the bounds of each render, whether a chart Helm cannot render fails the run (the
//! default) or is read statically, and whether a program runs where nothing can bound its
//! memory (`--unbounded`, for every program these commands run: Helm, cargo, the built server);
//! and the [`Options`] they make ([`options`]), with the [`note`] each of those commands shows
//! when no Helm renders.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{Helm, HelmError, Options, RenderLimits, Way};

#[derive(Debug, Clone, Args)]
pub struct RenderArgs {
    /// The Helm binary that renders charts to find the images they need [default: `helm` on
    /// the PATH; without one, images are found statically].
    #[arg(long, env = "CHARTREG_HELM")]
    pub helm: Option<PathBuf>,
    /// How long Helm may render one chart before it is stopped and the chart fails (`90s`,
    /// `5m`).
    #[arg(long, env = "CHARTREG_RENDER_TIMEOUT", value_name = "DURATION",
          value_parser = humantime::parse_duration, default_value = "60s")]
    pub render_timeout: Duration,
    /// How much memory Helm may use rendering one chart (MiB) before it is stopped and the
    /// chart fails.
    #[arg(long, env = "CHARTREG_RENDER_MEMORY", value_name = "MIB",
          default_value_t = RenderLimits::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(16..=1 << 20))]
    pub render_memory: u64,
    /// When Helm cannot render a chart (it refuses it, or is stopped at a bound), find its
    /// images statically (annotations, values) with a warning, instead of failing.
    #[arg(long)]
    pub static_fallback: bool,
    /// Run programs (Helm, cargo, the built server) even where this machine can bound no
    /// program's memory: no memory cgroup can be made and /proc cannot be read for the
    /// watchdog. Their time and output stay bounded. Without it such a run is refused, naming
    /// why.
    #[arg(long, env = "CHARTREG_UNBOUNDED")]
    pub unbounded: bool,
}

impl Default for RenderArgs {
    fn default() -> Self {
        RenderArgs {
            helm: None,
            render_timeout: RenderLimits::DEFAULT_TIME,
            render_memory: RenderLimits::DEFAULT_MEMORY_MIB,
            static_fallback: false,
            unbounded: false,
        }
    }
}

impl RenderArgs {
    /// The Helm these flags name (else `helm` on the PATH), with their bounds; `None` when
    /// there is none.
    pub fn helm(&self) -> Result<Option<Helm>, HelmError> {
        let found = Helm::find(self.helm.as_deref(), std::env::var_os("PATH"))?;
        Ok(found.map(|helm| Helm {
            limits: RenderLimits {
                time: self.render_timeout,
                memory: self.render_memory.saturating_mul(1024 * 1024),
                output: RenderLimits::DEFAULT_OUTPUT,
            },
            ..helm
        }))
    }
}

/// The options `render` and `only` make; [`note`] says when no Helm renders.
pub fn options(render: &RenderArgs, only: &[Way]) -> Result<Options, super::Error> {
    let ways: BTreeSet<Way> = if only.is_empty() {
        [Way::Render, Way::Annotation, Way::Values].into()
    } else {
        only.iter().copied().collect()
    };
    Ok(Options {
        helm: render.helm()?,
        ways,
        static_fallback: render.static_fallback,
    })
}

/// A note on stderr when `options` asks to render and there is no Helm to render with.
pub fn note(options: &Options) {
    if options.helm.is_none() && options.ways.contains(&Way::Render) {
        crate::output::eprint_line(
            "chartreg-build: note: helm is not on the PATH: images are found statically (from \
             annotations and values), so a reference a template builds is missed, and images of \
             parts the values leave disabled are counted; give --helm BIN to render",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        render: RenderArgs,
    }

    #[test]
    fn the_flags_default_to_the_render_limits() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        let defaults = RenderArgs::default();
        assert_eq!(cli.render.render_timeout, defaults.render_timeout);
        assert_eq!(cli.render.render_memory, defaults.render_memory);
        assert!(!cli.render.static_fallback);
        assert!(!cli.render.unbounded);
        let cli = Cli::try_parse_from(["x", "--unbounded"]).unwrap();
        assert!(cli.render.unbounded);
    }

    #[test]
    fn a_memory_limit_too_small_to_run_helm_is_refused() {
        assert!(Cli::try_parse_from(["x", "--render-memory", "1"]).is_err());
        let cli =
            Cli::try_parse_from(["x", "--render-timeout", "5m", "--render-memory", "512"]).unwrap();
        assert_eq!(cli.render.render_timeout, Duration::from_secs(300));
        assert_eq!(cli.render.render_memory, 512);
    }
}
