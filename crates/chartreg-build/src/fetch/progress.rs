//! What fetch shows while it works: on a terminal, a spinner per download in progress
//! (indicatif) and a line per download finished; otherwise (CI logs, pipes) the lines alone, so
//! that a log reads the same however it was made. Names and problems quote the lists and
//! upstream (chart names, URLs, registries' messages): each is shown on its line, escaped
//! (`failed::one_line`, `chartreg_core::shown::escaped`).

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use chartreg_core::shown::escaped;

use super::failed::one_line;
use super::problem::Problem;

/// The progress of one fetch.
pub struct Progress {
    bars: Option<MultiProgress>,
}

/// One entry being fetched.
pub struct Task<'p> {
    progress: &'p Progress,
    name: String,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Spinners when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Progress {
        let target = ProgressDrawTarget::stderr();
        Progress {
            bars: (!target.is_hidden()).then(|| MultiProgress::with_draw_target(target)),
        }
    }

    /// Starts showing `name`.
    pub fn task(&self, name: &str) -> Task<'_> {
        let name = one_line(name).into_owned();
        let bar = self.bars.as_ref().map(|bars| {
            let bar = bars.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(name.clone());
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Task {
            progress: self,
            name,
            bar,
        }
    }

    fn line(&self, text: &str) {
        match &self.bars {
            Some(bars) => {
                let _ = bars.println(text);
            }
            None => eprintln!("{text}"),
        }
    }

    /// Clears what is left on the terminal.
    pub fn done(&self) {
        if let Some(bars) = &self.bars {
            let _ = bars.clear();
        }
    }
}

impl Task<'_> {
    /// Ends the task with a line saying how it went.
    pub fn finish<T>(self, result: &Result<T, Problem>) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        match result {
            Ok(_) => self.progress.line(&format!("fetched {}", self.name)),
            Err(problem) => self.progress.line(&format!(
                "failed  {}: {}",
                self.name,
                escaped(&problem.to_string())
            )),
        }
    }
}
