//! Progress of a long run on stderr, off the round loop: the loop stores how far it got in an
//! atomic counter ([`Progress::counter`]); a monitor thread reads it a few times a second and
//! draws an `indicatif` bar with the rate and the time left. Runs shorter than a second show
//! nothing. On a terminal the bar is redrawn in place; elsewhere nothing is shown unless asked
//! ([`Show::Always`]), and then a plain line every 10 s.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// When progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// Never (`--quiet`, `--json`).
    Never,
    /// When stderr is a terminal.
    Terminal,
    /// Always: redrawn on a terminal, a line every 10 s otherwise.
    Always,
}

impl Show {
    /// [`Show::Terminal`], or [`Show::Never`] when `quiet`.
    pub fn unless(quiet: bool) -> Show {
        if quiet { Show::Never } else { Show::Terminal }
    }
}

/// A progress display for one run of `total` units (`rounds`, `shots`).
#[derive(Debug)]
pub struct Progress {
    done: Arc<AtomicU64>,
    finished: Arc<AtomicBool>,
    monitor: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts the monitor thread (none when nothing is to be shown).
    pub fn start(label: &str, unit: &'static str, total: u64, show: Show) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let finished = Arc::new(AtomicBool::new(false));
        let tty = std::io::stderr().is_terminal();
        let on = match show {
            Show::Never => false,
            Show::Terminal => tty,
            Show::Always => true,
        };
        let monitor = on.then(|| {
            let (d, f, label) = (done.clone(), finished.clone(), label.to_string());
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || monitor(&d, &f, &label, unit, total, tty))
                .ok()
        });
        Progress {
            done,
            finished,
            monitor: monitor.flatten(),
        }
    }

    /// The counter the run stores its progress in (units completed).
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.done.clone()
    }

    /// Stores `done` units completed. Relaxed: a display; nothing is read through it.
    pub fn set(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
    }

    /// Stops the monitor and clears the bar.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.finished.store(true, Ordering::Relaxed);
        if let Some(m) = self.monitor.take() {
            m.thread().unpark();
            let _ = m.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `N rounds/s`, with a k/M prefix.
pub fn rate(per_s: f64, unit: &str) -> String {
    if per_s >= 1e6 {
        format!("{:.2} M {unit}/s", per_s / 1e6)
    } else if per_s >= 1e3 {
        format!("{:.1} k {unit}/s", per_s / 1e3)
    } else {
        format!("{per_s:.0} {unit}/s")
    }
}

/// The line a non-terminal gets every 10 s.
fn plain_line(label: &str, unit: &str, done: u64, total: u64, elapsed: Duration) -> String {
    let el = elapsed.as_secs_f64();
    let per_s = done as f64 / el.max(1e-9);
    let left = if done > 0 {
        format!(
            "{:.0} s",
            el * total.saturating_sub(done) as f64 / done as f64
        )
    } else {
        "?".into()
    };
    format!(
        "{label}: {done}/{total} {unit} ({:.0}%), {}, {left} left",
        100.0 * done as f64 / total.max(1) as f64,
        rate(per_s, unit)
    )
}

/// The monitor thread: nothing for a second, then a bar (terminal) or a line every 10 s.
fn monitor(
    done: &AtomicU64,
    finished: &AtomicBool,
    label: &str,
    unit: &'static str,
    total: u64,
    tty: bool,
) {
    let start = Instant::now();
    let wait = |d: Duration| {
        let until = Instant::now() + d;
        while !finished.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::park_timeout(until - Instant::now());
        }
        !finished.load(Ordering::Relaxed)
    };
    if !wait(Duration::from_secs(1)) {
        return;
    }
    if !tty {
        loop {
            let d = done.load(Ordering::Relaxed);
            eprintln!("{}", plain_line(label, unit, d, total, start.elapsed()));
            if !wait(Duration::from_secs(10)) {
                return;
            }
        }
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(4));
    let style = ProgressStyle::with_template(&format!(
        "{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{percent}}%), {{msg}}, ETA {{eta}}"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(label.to_string());
    loop {
        let d = done.load(Ordering::Relaxed);
        bar.set_position(d);
        let per_s = d as f64 / start.elapsed().as_secs_f64().max(1e-9);
        bar.set_message(rate(per_s, unit));
        if !wait(Duration::from_millis(250)) {
            break;
        }
    }
    bar.finish_and_clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_line_has_rate_and_time_left() {
        let l = plain_line("bench", "rounds", 2_500, 10_000, Duration::from_secs(2));
        assert_eq!(
            l,
            "bench: 2500/10000 rounds (25%), 1.2 k rounds/s, 6 s left"
        );
        assert_eq!(rate(3.0e6, "shots"), "3.00 M shots/s");
    }

    #[test]
    fn the_counter_is_the_one_the_monitor_reads() {
        let p = Progress::start("t", "rounds", 10, Show::Always);
        let c = p.counter();
        p.set(7);
        assert_eq!(c.load(Ordering::Relaxed), 7);
        // The monitor, parked for its first second, is woken and joined.
        p.finish();
        assert_eq!(Arc::strong_count(&c), 1);
    }
}
