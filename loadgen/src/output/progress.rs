//! Progress while a run goes: one line per interval (ops/s, p50/p99/p999, errors, shard split)
//! on stderr, and on a terminal a progress bar for the measured phase and the load phase.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::results::{latency_histogram, Interval};

#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    label: String,
    bar: Option<ProgressBar>,
    /// Load phase: the bar counts operations, not seconds, and no lines are printed.
    counting_ops: bool,
    done_ops: u64,
}

impl Progress {
    /// The measured phase: a line per interval, and a bar over the duration on a terminal.
    pub fn measured(
        enabled: bool,
        label: &str,
        duration: Option<Duration>,
        warmup: Duration,
    ) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new(duration.map_or(0, |d| d.as_millis().div_ceil(1000) as u64));
            b.set_style(style("{msg} [{bar:30}] {pos}/{len} s"));
            b.set_message(format!("{label} (warm-up {} ms first)", warmup.as_millis()));
            b
        });
        Progress { enabled, label: label.to_string(), bar, counting_ops: false, done_ops: 0 }
    }

    /// The load phase: a bar over the keys to write.
    pub fn load(enabled: bool, items: u64) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new(items);
            b.set_style(style("load [{bar:30}] {pos}/{len} keys {per_sec}"));
            b
        });
        if enabled && bar.is_none() {
            eprintln!("load: writing {items} keys");
        }
        Progress { enabled, label: "load".into(), bar, counting_ops: true, done_ops: 0 }
    }

    pub fn interval(&mut self, iv: &Interval) {
        self.done_ops += iv.ops;
        if self.counting_ops {
            if let Some(b) = &self.bar {
                b.set_position(self.done_ops);
            }
            return;
        }
        if !self.enabled {
            return;
        }
        let line = line(&self.label, iv);
        match &self.bar {
            Some(b) => {
                b.println(line);
                b.inc(1);
            }
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        if self.counting_ops && self.enabled {
            eprintln!("load: {} keys written", self.done_ops);
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// `[label] 3s 112345 ops/s p50 0.52 p99 2.10 p999 5.00 ms errors 0 shards 51/49%`.
pub fn line(label: &str, iv: &Interval) -> String {
    let mut all = latency_histogram();
    for h in &iv.latency_us {
        all.add(h).expect("same bounds");
    }
    let ms = |q: f64| all.value_at_quantile(q) as f64 / 1000.0;
    let total: u64 = iv.shard_ops.iter().sum::<u64>().max(1);
    let shares: Vec<String> = iv.shard_ops.iter().map(|n| format!("{}", n * 100 / total)).collect();
    format!(
        "[{label}] {:>4.0}s {:>9.0} ops/s  p50 {:.3} p99 {:.3} p999 {:.3} ms  errors {}  shards {}%",
        iv.start_s + iv.length_s,
        iv.ops as f64 / iv.length_s,
        ms(0.5),
        ms(0.99),
        ms(0.999),
        iv.errors,
        shares.join("/"),
    )
}
