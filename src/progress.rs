//! Progress reporting as Git shows it (`Reading versions:  40% (400/1000)`), behind a trait so
//! the library never writes to the terminal itself.

use parking_lot::Mutex;
use std::io::Write;
use std::time::{Duration, Instant};

/// Receives progress; implementations decide whether and how to show it.
pub trait Progress: Sync {
    /// `done` of `total` (if known) so far, under `label` (Git's words: "Receiving objects").
    fn update(&self, label: &str, done: u64, total: Option<u64>);
    /// The last count under `label`: the line is finished.
    fn finish(&self, label: &str, done: u64, total: Option<u64>);
}

/// Shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn update(&self, _: &str, _: u64, _: Option<u64>) {}
    fn finish(&self, _: &str, _: u64, _: Option<u64>) {}
}

/// Git's progress lines on stderr, redrawn in place, throttled to a few per second. Nothing is
/// shown for a count of zero: as Git, no `Reading versions: 0, done.` when there was nothing to do.
pub struct Stderr {
    last: Mutex<(Option<Instant>, Option<u64>)>,
}

impl Default for Stderr {
    fn default() -> Self {
        Stderr {
            last: Mutex::new((None, None)),
        }
    }
}

/// One progress line, without the leading carriage return.
pub fn format_line(label: &str, done: u64, total: Option<u64>) -> String {
    match total {
        Some(t) if t > 0 => {
            let pct = (done.min(t) * 100) / t;
            format!("{label}: {pct:3}% ({done}/{t})")
        }
        _ => format!("{label}: {done}"),
    }
}

impl Progress for Stderr {
    fn update(&self, label: &str, done: u64, total: Option<u64>) {
        if done == 0 {
            return;
        }
        let mut last = self.last.lock();
        let pct = total.filter(|t| *t > 0).map(|t| done.min(t) * 100 / t);
        let due = last
            .0
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
        if due || (pct.is_some() && pct != last.1) {
            *last = (Some(Instant::now()), pct);
            let _ = write!(std::io::stderr(), "{}\r", format_line(label, done, total));
        }
    }

    fn finish(&self, label: &str, done: u64, total: Option<u64>) {
        if done == 0 {
            return;
        }
        let total = total.or(Some(done));
        let _ = writeln!(
            std::io::stderr(),
            "{}, done.",
            format_line(label, done, total)
        );
        *self.last.lock() = (None, None);
    }
}
