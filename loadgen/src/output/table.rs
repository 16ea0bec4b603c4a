//! The final tables printed on stdout: one run's per-operation results, the scenarios side by
//! side, and a sweep's points.

use hdrhistogram::Histogram;

use crate::results::RunResult;
use crate::status;

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
                o.not_found.to_string(),
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
        r.total_not_found().to_string(),
        format!("{:.0}", r.ops_per_second()),
        ms(&all, 0.5),
        ms(&all, 0.9),
        ms(&all, 0.99),
        ms(&all, 0.999),
        format!("{:.3}", all.max() as f64 / 1000.0),
    ]);
    let header = [
        "op",
        "ops",
        "errors",
        "not found",
        "ops/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "p999 ms",
        "max ms",
    ];
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
    if r.shard_cpu_seconds.is_some() {
        out += &format!(
            "shard CPU % {}  the busiest shard saturates at {} ops/s\n",
            shard_cpu_percent(r),
            opt(r.saturation_ops_per_second(), 0),
        );
    }
    out + &indexes(r) + &errors_by_status(r)
}

/// One line per status code the run's errors carried: code, name, count, and the node's first
/// message for it (and what to do, where the tool's own flags are the likely cause). Empty
/// without errors.
pub fn errors_by_status(r: &RunResult) -> String {
    let mut out = String::new();
    for (code, n) in r.errors_by_status() {
        let message = r.error_messages.get(&code).map_or("", String::as_str);
        out += &format!("errors: {n} x {code} {}: {message}\n", status::name(code));
        if let Some(hint) = status::hint(code) {
            out += &format!("  {code}: {hint}\n");
        }
    }
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
                shard_cpu_percent(r),
                opt(r.saturation_ops_per_second(), 0),
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
        "shard CPU %",
        "saturates at ops/s",
    ];
    render(&header, &rows)
}

/// Each shard's CPU utilisation in percent, `97/12` (shard 0, shard 1); `-` without the node's
/// pid.
pub fn shard_cpu_percent(r: &RunResult) -> String {
    r.shard_utilisation().map_or("-".into(), |u| {
        u.iter().map(|x| format!("{:.0}", x * 100.0)).collect::<Vec<_>>().join("/")
    })
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// The secondary indexes of the run's table and what the node's in-memory index held at the
/// end, in which every index entry is a key like a row (empty when the table has no index).
pub fn indexes(r: &RunResult) -> String {
    let Some(node) = r.node.as_ref().filter(|n| !n.indexes.is_empty()) else {
        return String::new();
    };
    let list: Vec<String> = node.indexes.iter().map(|i| i.to_string()).collect();
    format!(
        "indexes: {}; node: store keys {} (rows and index entries), index {:.2} MiB, {:.1} B/key\n",
        list.join(", "),
        node.index_keys,
        mib(node.index_bytes),
        node.index_bytes_per_key(),
    )
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
                node.index_keys.to_string(),
                format!("{:.2}", mib(node.index_bytes)),
                format!("{:.1}", node.index_bytes_per_key()),
                opt(node.cache_hit_ratio().map(|x| x * 100.0), 1),
                opt(node.rss_bytes.map(mib), 1),
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
        "store keys",
        "index MiB",
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
    fn errors_are_broken_down_by_status_with_the_busy_hint() {
        let mut r = crate::results::tests_support::run_with(&[(720, 3), (614, 1)]);
        r.error_messages
            .insert(720, "busy: the connection's in-flight request budget is full (4)".into());
        let text = errors_by_status(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "errors: 1 x 614 CorruptRecord: ");
        assert_eq!(
            lines[1],
            "errors: 3 x 720 Busy: busy: the connection's in-flight request budget is full (4)"
        );
        assert!(lines[2].starts_with("  720: ") && lines[2].contains("--pipeline"), "{text}");
        assert_eq!(lines.len(), 3);
        assert!(run(&r).contains("errors: 3 x 720 Busy"), "{}", run(&r));
        r.shard_cpu_seconds = Some(vec![0.5, 0.25]);
        assert_eq!(shard_cpu_percent(&r), "50/25");
    }

    #[test]
    fn index_line_and_sweep_columns_show_the_nodes_index() {
        use crate::results::{IndexFigure, NodeFigures};
        let mut r = crate::results::tests_support::run_with(&[]);
        assert_eq!(indexes(&r), "", "no node figures");
        r.node =
            Some(NodeFigures { index_keys: 4000, index_bytes: 3 << 20, ..NodeFigures::default() });
        assert_eq!(indexes(&r), "", "a table without indexes");
        let by_k = IndexFigure { name: "by_k".into(), fields: vec!["k".into()], state: "READY" };
        r.node.as_mut().expect("node").indexes = vec![by_k];
        assert_eq!(
            indexes(&r),
            "indexes: by_k (k) READY; node: store keys 4000 (rows and index entries), \
             index 3.00 MiB, 786.4 B/key\n"
        );
        let t = sweep("key-size", &[(16, &r)]);
        let lines: Vec<Vec<&str>> =
            t.lines().map(|l| l.split("  ").map(str::trim).collect()).collect();
        let at = |name: &str| lines[0].iter().filter(|c| !c.is_empty()).position(|c| *c == name);
        let row: Vec<&str> = lines[1].iter().copied().filter(|c| !c.is_empty()).collect();
        assert_eq!(row[at("store keys").expect("store keys column")], "4000", "{t}");
        assert_eq!(row[at("index MiB").expect("index MiB column")], "3.00", "{t}");
        assert_eq!(row[at("index B/key").expect("B/key column")], "786.4", "{t}");
    }

    #[test]
    fn columns_line_up() {
        let t = render(&["a", "bbb"], &[vec!["1000".into(), "2".into()]]);
        assert_eq!(t, "   a  bbb\n1000    2\n");
    }
}
