//! The final tables printed on stdout: one run's per-operation results, the scenarios side by
//! side, and a sweep's points.

use hdrhistogram::Histogram;

use crate::results::RunResult;

/// Columns laid out with each column as wide as its widest cell.
fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> =
            cells.iter().zip(&width).map(|(c, w)| format!("{c:>w$}")).collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|s| s.to_string()).collect());
    for r in rows {
        out += &line(r.clone());
    }
    out
}

/// A latency quantile in milliseconds with µs resolution.
pub fn ms(h: &Histogram<u64>, q: f64) -> String {
    format!("{:.3}", h.value_at_quantile(q) as f64 / 1000.0)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// One run: a row per operation type (and its uncorrected latencies in open loop), then totals.
pub fn run(r: &RunResult) -> String {
    let mut rows = Vec::new();
    let per_s = |n: u64| format!("{:.0}", n as f64 / r.seconds.max(f64::MIN_POSITIVE));
    for o in &r.ops {
        let mut push = |name: String, h: &Histogram<u64>| {
            rows.push(vec![
                name,
                (o.ok + o.errors).to_string(),
                o.errors.to_string(),
                per_s(o.ok + o.errors),
                ms(h, 0.5),
                ms(h, 0.9),
                ms(h, 0.99),
                ms(h, 0.999),
                format!("{:.3}", h.max() as f64 / 1000.0),
            ])
        };
        push(o.kind.name().to_string(), &o.latency_us);
        if let Some(u) = &o.uncorrected_us {
            push(format!("{} (uncorrected)", o.kind.name()), u);
        }
    }
    let all = r.latency_all_us();
    rows.push(vec![
        "all".into(),
        (r.total_ok() + r.total_errors()).to_string(),
        r.total_errors().to_string(),
        format!("{:.0}", r.ops_per_second()),
        ms(&all, 0.5),
        ms(&all, 0.9),
        ms(&all, 0.99),
        ms(&all, 0.999),
        format!("{:.3}", all.max() as f64 / 1000.0),
    ]);
    let header =
        ["op", "ops", "errors", "ops/s", "p50 ms", "p90 ms", "p99 ms", "p999 ms", "max ms"];
    let mut out = render(&header, &rows);
    out += &format!(
        "seconds {:.2}  server CPU s per 1M ops {}  load tool CPU s per 1M ops {}  shard skew {:.3} (per second {:.3})  \
         partitions touched {}/{}  partition skew {:.2}\n",
        r.seconds,
        opt(r.server_cpu_seconds_per_million_ops(), 3),
        opt(r.client_cpu_seconds_per_million_ops(), 3),
        r.shard_skew(),
        r.interval_shard_skew(),
        r.partitions_touched(),
        r.partition_ops.len(),
        r.partition_skew(),
    );
    out
}

/// Scenarios side by side.
pub fn scenarios(runs: &[&RunResult]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let all = r.latency_all_us();
            vec![
                r.label.clone(),
                format!("{:.0}", r.ops_per_second()),
                ms(&all, 0.5),
                ms(&all, 0.99),
                ms(&all, 0.999),
                format!("{:.3}", r.shard_skew()),
                format!("{:.3}", r.interval_shard_skew()),
                format!("{}", r.partitions_touched()),
                format!("{:.2}", r.partition_skew()),
                opt(r.server_cpu_seconds_per_million_ops(), 3),
            ]
        })
        .collect();
    let header = [
        "scenario",
        "ops/s",
        "p50 ms",
        "p99 ms",
        "p999 ms",
        "shard skew",
        "per-second skew",
        "partitions",
        "partition skew",
        "CPU s/Mop",
    ];
    render(&header, &rows)
}

/// A sweep's points: `parameter` = value per row.
pub fn sweep(parameter: &str, points: &[(u64, &RunResult)]) -> String {
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|(v, r)| {
            let all = r.latency_all_us();
            let node = r.node.clone().unwrap_or_default();
            vec![
                v.to_string(),
                format!("{:.0}", r.ops_per_second()),
                ms(&all, 0.5),
                ms(&all, 0.99),
                ms(&all, 0.999),
                format!("{:.1}", node.index_bytes_per_key()),
                opt(node.cache_hit_ratio().map(|x| x * 100.0), 1),
                opt(node.rss_bytes.map(|b| b as f64 / (1 << 20) as f64), 1),
                opt(r.server_cpu_seconds_per_million_ops(), 3),
            ]
        })
        .collect();
    let header = [
        parameter,
        "ops/s",
        "p50 ms",
        "p99 ms",
        "p999 ms",
        "index B/key",
        "cache hit %",
        "node RSS MiB",
        "CPU s/Mop",
    ];
    render(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let t = render(&["a", "bbb"], &[vec!["1000".into(), "2".into()]]);
        assert_eq!(t, "   a  bbb\n1000    2\n");
    }
}
