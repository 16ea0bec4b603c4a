//! `--json FILE`: everything in the final tables plus the settings, the tool's version and the
//! git revision it was built from. The document's shape is listed in docs/LOADGEN.md.

use std::path::Path;

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::results::{NodeFigures, OpResult, RunResult};
use crate::status;
use crate::verify::VerifyReport;

/// The git revision the tool was built from (`build.rs`), or "unknown".
pub const GIT_REVISION: &str = match option_env!("RINGSTORE_GIT_REVISION") {
    Some(r) => r,
    None => "unknown",
};

/// Percentiles each latency summary lists.
pub const PERCENTILES: [(&str, f64); 6] =
    [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999), ("max", 1.0)];

pub fn latency(h: &Histogram<u64>) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("count".into(), json!(h.len()));
    m.insert("mean".into(), json!(h.mean()));
    for (name, q) in PERCENTILES {
        m.insert(name.into(), json!(h.value_at_quantile(q)));
    }
    Value::Object(m)
}

fn op(o: &OpResult) -> Value {
    json!({
        "op": o.kind.name(),
        "ok": o.ok,
        "not_found": o.not_found,
        "errors": o.errors,
        "errors_by_status": o.errors_by_status.iter()
            .map(|(code, n)| (code.to_string(), json!(n)))
            .collect::<serde_json::Map<String, Value>>(),
        "latency_us": latency(&o.latency_us),
        "uncorrected_latency_us": o.uncorrected_us.as_ref().map(latency),
    })
}

fn node(n: &NodeFigures) -> Value {
    json!({
        "index_keys": n.index_keys,
        "index_bytes": n.index_bytes,
        "index_key_bytes": n.index_key_bytes,
        "index_bytes_per_key": n.index_bytes_per_key(),
        "cache_hits": n.cache_hits,
        "cache_misses": n.cache_misses,
        "cache_hit_ratio": n.cache_hit_ratio(),
        "cache_bytes": n.cache_bytes,
        "rss_bytes": n.rss_bytes,
        "indexes": n.indexes.iter().map(|i| json!({
            "name": i.name,
            "fields": i.fields,
            "state": i.state,
        })).collect::<Vec<_>>(),
    })
}

/// One run.
pub fn run(r: &RunResult) -> Value {
    json!({
        "label": r.label,
        "seconds": r.seconds,
        "ops_total": r.total_ok() + r.total_errors(),
        "errors": r.total_errors(),
        "errors_by_status": errors_by_status(r),
        "not_found": r.total_not_found(),
        "ops_per_second": r.ops_per_second(),
        "latency_us": latency(&r.latency_all_us()),
        "ops": r.ops.iter().map(op).collect::<Vec<_>>(),
        "server_cpu_seconds": r.server_cpu_seconds,
        "server_cpu_seconds_per_million_ops": r.server_cpu_seconds_per_million_ops(),
        "client_cpu_seconds": r.client_cpu_seconds,
        "client_cpu_seconds_per_million_ops": r.client_cpu_seconds_per_million_ops(),
        "shard_cpu_seconds": r.shard_cpu_seconds,
        "shard_utilisation": r.shard_utilisation(),
        "saturation_ops_per_second": r.saturation_ops_per_second(),
        "shard_ops": r.shard_ops,
        "shard_skew": r.shard_skew(),
        "interval_shard_skew": r.interval_shard_skew(),
        "partition_ops": r.partition_ops,
        "partitions_touched": r.partitions_touched(),
        "partition_skew": r.partition_skew(),
        "node": r.node.as_ref().map(node),
        "intervals": r.intervals.iter().map(|i| json!({
            "start_s": i.start_s,
            "length_s": i.length_s,
            "ops": i.ops,
            "errors": i.errors,
            "shard_ops": i.shard_ops,
        })).collect::<Vec<_>>(),
    })
}

/// `{"720": {"name": "Busy", "count": 12, "message": "busy: ..."}}`.
fn errors_by_status(r: &RunResult) -> Value {
    let by_code = r.errors_by_status().into_iter().map(|(code, n)| {
        let entry = json!({
            "name": status::name(code),
            "count": n,
            "message": r.error_messages.get(&code),
        });
        (code.to_string(), entry)
    });
    Value::Object(by_code.collect())
}

pub fn verify(v: &VerifyReport) -> Value {
    json!({
        "checked": v.checked, "ok": v.ok, "lost": v.lost, "stale": v.stale,
        "foreign": v.foreign, "newer": v.newer,
        "errors": v.errors.iter().map(|(code, n)| (code.to_string(), json!(n)))
            .collect::<serde_json::Map<String, Value>>(),
        "passed": v.passed(),
    })
}

/// The whole document: `mode` is `run`, `scenarios` or `sweep`.
pub fn document(mode: &str, settings: Value, runs: &[&RunResult], extra: Value) -> Value {
    json!({
        "tool": "ringstore-load",
        "version": env!("CARGO_PKG_VERSION"),
        "git_revision": GIT_REVISION,
        "mode": mode,
        "settings": settings,
        "runs": runs.iter().map(|r| run(r)).collect::<Vec<_>>(),
        "extra": extra,
    })
}

pub fn write(path: &Path, doc: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| format!("JSON: {e}"))?;
    std::fs::write(path, text + "\n").map_err(|e| format!("write {}: {e}", path.display()))
}
