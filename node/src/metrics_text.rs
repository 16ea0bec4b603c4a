//! The metrics endpoint's output: per-shard statistics in the Prometheus text exposition format,
//! version 0.0.4, and the few bytes of HTTP/1.1 around it.
//!
//! Each shard reports its statistics as `(name, u64)` pairs (the Stats response). Every distinct
//! name becomes one metric family `ringstore_<name>` with a `# HELP` and a `# TYPE` line, then
//! one sample per shard labelled `shard="N"`. The text is written by the `prometheus` crate
//! (a registry built per scrape, its `TextEncoder`): families sorted by name, samples by label. Whether a name is a counter (only ever grows while
//! the process runs) or a gauge comes from the table in [`describe`], never from the name's
//! spelling; a name the table does not know is a gauge with a generic help text, so a new
//! statistic shows up at once and gets its description later.
//!
//! The HTTP side is deliberately tiny: the server reads one request head, answers
//! `GET /metrics` with [`http_response`] and anything else with [`http_not_found`], then closes
//! the connection. Scrapers send nothing else.

use std::collections::{HashMap, HashSet};

use prometheus::core::Collector;
use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder};

/// Prefix of every metric name.
pub const METRIC_PREFIX: &str = "ringstore_";
/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";
const _: () = assert!(CONTENT_TYPE.len() == prometheus::TEXT_FORMAT.len());
/// Most bytes of a request head the server reads before giving up on the request.
pub const REQUEST_HEAD_BYTES_MAX: usize = 8192;

/// One shard's statistics, in the order the shard reported them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardMetrics {
    pub shard: u32,
    pub values: Vec<(String, u64)>,
}

/// The Prometheus metric type of a statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows while the process runs (reset by a restart).
    Counter,
    /// Goes up and down: a size, a count of things, a percentile.
    Gauge,
}

use Kind::{Counter, Gauge};

/// Help text of a statistic the table below does not know.
pub const UNKNOWN_HELP: &str = "ringstore shard statistic (not yet described).";
/// Help text of an `ops_<operation>` counter the table below does not know.
const OPS_HELP: &str = "Requests of this operation the shard executed.";

/// Every statistic the node reports (`Shard::stats` in `shard.rs`): name without the prefix,
/// type, help. A name added there should get its line here.
const DESCRIPTIONS: &[(&str, Kind, &str)] = &[
    // Requests and connections.
    ("ops_ping", Counter, "Ping requests the shard answered."),
    ("ops_hello", Counter, "Hello requests the shard answered."),
    ("ops_stats", Counter, "Stats requests the shard answered."),
    ("ops_ddl", Counter, "DDL requests the shard executed."),
    ("ops_describe", Counter, "Describe requests the shard answered."),
    ("ops_get", Counter, "Get requests the shard executed."),
    ("ops_put", Counter, "Put requests the shard executed."),
    ("ops_update", Counter, "Update requests the shard executed."),
    ("ops_delete", Counter, "Delete requests the shard executed."),
    ("ops_execute", Counter, "Execute requests the shard executed."),
    ("ops_multi_get", Counter, "MultiGet requests the shard executed."),
    ("ops_multi_delete", Counter, "MultiDelete requests the shard executed."),
    ("ops_scan", Counter, "Scan requests the shard executed."),
    ("ops_index_query", Counter, "Index queries the shard coordinated."),
    ("requests_errors", Counter, "Requests the shard answered with an error status."),
    ("requests_busy", Counter, "Requests refused because an in-flight or buffer limit was reached."),
    ("requests_deferred", Counter, "Times a request waited unread until its connection's output had room for its response."),
    ("bytes_in", Counter, "Request bytes read from this shard's connections."),
    ("bytes_out", Counter, "Response bytes written to this shard's connections."),
    ("forwarded_out", Counter, "Requests this shard sent to the shard owning their partition."),
    ("forwarded_in", Counter, "Requests other shards sent to this shard."),
    ("connections", Gauge, "Client connections open on this shard."),
    ("connections_total", Counter, "Client connections this shard accepted."),
    ("connections_refused", Counter, "Client connections refused at the connection limit."),
    ("resp_commands", Counter, "Commands received on this shard's RESP connections."),
    ("resp_keyspace_hits", Counter, "RESP read commands on keys this shard owns that found their key (INFO keyspace_hits)."),
    ("resp_keyspace_misses", Counter, "RESP read commands on keys this shard owns that did not find their key (INFO keyspace_misses)."),
    ("inflight", Gauge, "Requests executing on this shard now."),
    ("buffer_bytes", Gauge, "Response bytes queued or reserved and large-request buffer bytes held for this shard's connections."),
    ("buffer_bytes_limit", Gauge, "This shard's share of --max-buffer-bytes."),
    // Index and cache.
    ("index_keys", Gauge, "Live keys in the shard's index."),
    ("index_bytes", Gauge, "Bytes of the shard's in-memory index, exactly accounted."),
    ("index_key_bytes", Gauge, "Bytes of the live keys themselves."),
    ("dead_map_bytes", Gauge, "Bytes of the maps of records later writes replaced, kept per segment for compaction."),
    ("cache_hits", Counter, "Reads the record cache answered."),
    ("cache_misses", Counter, "Reads the record cache could not answer."),
    ("cache_bytes", Gauge, "Bytes the record cache holds."),
    ("cache_entries", Gauge, "Records in the record cache."),
    // Log, segments and compaction.
    ("segments", Gauge, "Segment files of the shard's log."),
    ("disk_bytes", Gauge, "Bytes used by the shard's segment files."),
    ("live_bytes", Gauge, "Segment bytes still referenced by the index."),
    ("garbage_bytes", Gauge, "Segment bytes no longer referenced (reclaimed by compaction)."),
    ("compactions", Counter, "Segments compaction rewrote."),
    ("compaction_moved_bytes", Counter, "Bytes of live records compaction copied to the log head."),
    (
        "compaction_reclaimed_bytes",
        Counter,
        "Bytes of the segments compaction retired; minus the moved bytes, the garbage reclaimed.",
    ),
    (
        "compaction_read_bytes",
        Counter,
        "Bytes compaction read from its victims (whole segments, or only their live records' ranges).",
    ),
    ("checkpoints", Counter, "Index checkpoints written."),
    // Group commit and fsync; percentiles cover the time since the daemon started.
    ("group_commits", Counter, "Log flushes: one write per group of writers."),
    ("group_commit_records", Counter, "Records written by all log flushes."),
    ("group_commit_records_p50", Gauge, "Median records per log flush."),
    ("group_commit_records_p99", Gauge, "99th percentile of records per log flush."),
    ("group_commit_records_max", Gauge, "Most records one log flush wrote."),
    ("fsyncs", Counter, "fdatasync calls of the log."),
    ("fsync_us_p50", Gauge, "Median fdatasync latency in microseconds."),
    ("fsync_us_p99", Gauge, "99th percentile fdatasync latency in microseconds."),
    ("fsync_us_p999", Gauge, "99.9th percentile fdatasync latency in microseconds."),
    ("fsync_us_max", Gauge, "Longest fdatasync in microseconds."),
    (
        "durable_writes",
        Counter,
        "Log writes made durable on their own (O_DSYNC), with no fdatasync.",
    ),
    ("durable_write_us_p50", Gauge, "Median durable (O_DSYNC) log write latency in microseconds."),
    ("durable_write_us_p99", Gauge, "99th percentile durable log write latency in microseconds."),
    ("durable_write_us_max", Gauge, "Longest durable log write in microseconds."),
    (
        "maintenance_steps",
        Counter,
        "Maintenance steps (checkpoint snapshots, compaction's index walks and re-pointing) run.",
    ),
    (
        "maintenance_step_us_p50",
        Gauge,
        "Median time one maintenance step held the shard without yielding, in microseconds.",
    ),
    (
        "maintenance_step_us_p99",
        Gauge,
        "99th percentile time one maintenance step held the shard, in microseconds.",
    ),
    (
        "maintenance_step_us_max",
        Gauge,
        "Longest time one maintenance step held the shard, in microseconds.",
    ),
    (
        "write_buffer_waits",
        Counter,
        "NoSync writes that waited for the log's write because 16 MiB were pending.",
    ),
    (
        "deferred_index_puts",
        Counter,
        "Blind puts whose index update was deferred and applied with others in a group.",
    ),
    (
        "deferred_index_groups",
        Counter,
        "Groups of deferred index updates applied (puts / groups is the mean group size).",
    ),
    ("segment_preallocations", Counter, "Segment files zero-filled ahead of need."),
    (
        "segment_preallocations_failed",
        Counter,
        "Segment preallocations that failed (segments then grow).",
    ),
    (
        "writes_refused",
        Gauge,
        "1 while a failed write or fsync (a full disk) makes the shard refuse writes (611).",
    ),
    ("write_resumes", Counter, "Times the shard took writes again after refusing them."),
    (
        "indexes_building",
        Gauge,
        "Secondary indexes BUILDING on the shard (its background build has not finished).",
    ),
    ("index_build_rows", Counter, "Rows the shard's background index builds have indexed."),
];

/// Every statistic this table describes (names without the `ringstore_` prefix). A test
/// (`tests/tests/node_metrics.rs`) checks that the shards report exactly these.
pub fn described_names() -> impl Iterator<Item = &'static str> {
    DESCRIPTIONS.iter().map(|(name, _, _)| *name)
}

/// Help text and type of a statistic (its name without the `ringstore_` prefix).
pub fn describe(name: &str) -> (&'static str, Kind) {
    if let Some(&(_, kind, help)) = DESCRIPTIONS.iter().find(|(known, _, _)| *known == name) {
        return (help, kind);
    }
    if name.starts_with("ops_") {
        return (OPS_HELP, Counter);
    }
    (UNKNOWN_HELP, Gauge)
}

/// The exposition text of all shards: one family per distinct name, sorted by name, each with
/// one sample per shard that reported it. A name a shard reports twice counts once (the first
/// value), because Prometheus refuses a scrape with a repeated series. Values are written as the
/// f64 Prometheus keeps (exact up to 2^53); a gauge over `i64::MAX` is capped there (the crate's
/// integer gauge).
pub fn render(shards: &[ShardMetrics]) -> String {
    let registry = Registry::new();
    for family in families(shards) {
        if let Err(e) = register(&registry, &family) {
            // Names are sanitised and unique and every help text is set, so this is a bug.
            tracing::warn!(metric = %family.metric, "metric family left out of /metrics: {e}");
        }
    }
    let mut out = String::new();
    if let Err(e) = TextEncoder::new().encode_utf8(&registry.gather(), &mut out) {
        tracing::warn!("cannot encode /metrics: {e}");
    }
    out
}

/// Registers one family's collector, with its samples set, in `registry`.
fn register(registry: &Registry, family: &Family<'_>) -> prometheus::Result<()> {
    let (help, kind) = describe(family.name);
    let opts = Opts::new(family.metric.clone(), help);
    let collector: Box<dyn Collector> = match kind {
        Kind::Counter => {
            let vec = IntCounterVec::new(opts, &["shard"])?;
            for (shard, value) in &family.samples {
                vec.with_label_values(&[shard.to_string()]).inc_by(*value);
            }
            Box::new(vec)
        }
        Kind::Gauge => {
            let vec = IntGaugeVec::new(opts, &["shard"])?;
            for (shard, value) in &family.samples {
                let value = i64::try_from(*value).unwrap_or(i64::MAX);
                vec.with_label_values(&[shard.to_string()]).set(value);
            }
            Box::new(vec)
        }
    };
    registry.register(collector)
}

/// The samples of one metric family.
struct Family<'a> {
    /// The statistic's name as reported (looked up in [`describe`]).
    name: &'a str,
    /// The full metric name: prefix and the name, with characters Prometheus refuses replaced.
    metric: String,
    samples: Vec<(u32, u64)>,
}

fn families(shards: &[ShardMetrics]) -> Vec<Family<'_>> {
    let mut families: Vec<Family<'_>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut seen: HashSet<(u32, usize)> = HashSet::new();
    for shard in shards {
        for (name, value) in &shard.values {
            let metric = metric_name(name);
            let i = *index.entry(metric.clone()).or_insert_with(|| {
                families.push(Family { name, metric, samples: Vec::new() });
                families.len() - 1
            });
            if seen.insert((shard.shard, i)) {
                families[i].samples.push((shard.shard, *value));
            }
        }
    }
    families
}

/// `ringstore_<name>`, with every character outside `[a-zA-Z0-9_]` replaced by `_` (the prefix
/// already keeps the name from starting with a digit).
fn metric_name(name: &str) -> String {
    let clean = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' });
    METRIC_PREFIX.chars().chain(clean).collect()
}

/// A complete HTTP/1.1 200 response carrying `body` as the exposition text; the server closes
/// the connection after writing it.
pub fn http_response(body: &str) -> Vec<u8> {
    response("200 OK", CONTENT_TYPE, body)
}

/// A complete HTTP/1.1 404 response, for any request other than `GET /metrics`.
pub fn http_not_found() -> Vec<u8> {
    response("404 Not Found", "text/plain", "only GET /metrics is served here\n")
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let mut bytes = Vec::with_capacity(head.len() + body.len());
    bytes.extend_from_slice(head.as_bytes());
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// Length of the request head in `buf` (through the blank line that ends it), once it is all
/// there. The server reads until this is `Some` or [`REQUEST_HEAD_BYTES_MAX`] bytes arrived.
pub fn request_head_len(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|at| at + 4)
}

/// Whether a request head asks for `GET /metrics` (a query string is allowed and ignored).
pub fn is_metrics_request(head: &[u8]) -> bool {
    let line_end = head.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(head.len());
    let mut parts = head[..line_end].split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let path = target.split(|&b| b == b'?').next().unwrap_or(target);
    method == b"GET" && path == b"/metrics" && version.starts_with(b"HTTP/1.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(shard: u32, values: &[(&str, u64)]) -> ShardMetrics {
        let values = values.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        ShardMetrics { shard, values }
    }

    #[test]
    fn renders_families_once_with_one_sample_per_shard() {
        let shards = [
            shard(0, &[("ops_get", 5), ("index_bytes", 1024)]),
            shard(1, &[("ops_get", 7), ("index_bytes", 2048), ("new_thing", 3)]),
        ];
        // Families sorted by name (the prometheus crate's registry sorts them).
        let expected = "\
# HELP ringstore_index_bytes Bytes of the shard's in-memory index, exactly accounted.
# TYPE ringstore_index_bytes gauge
ringstore_index_bytes{shard=\"0\"} 1024
ringstore_index_bytes{shard=\"1\"} 2048
# HELP ringstore_new_thing ringstore shard statistic (not yet described).
# TYPE ringstore_new_thing gauge
ringstore_new_thing{shard=\"1\"} 3
# HELP ringstore_ops_get Get requests the shard executed.
# TYPE ringstore_ops_get counter
ringstore_ops_get{shard=\"0\"} 5
ringstore_ops_get{shard=\"1\"} 7
";
        assert_eq!(render(&shards), expected);
    }

    #[test]
    fn large_values_and_many_shards() {
        let shards: Vec<ShardMetrics> = (0..12)
            .map(|s| shard(s, &[("ops_put", u64::from(s) + (1 << 40)), ("cache_bytes", u64::MAX)]))
            .collect();
        let text = render(&shards);
        // Values up to 2^53 keep every digit; the text carries f64 as Prometheus keeps samples,
        // and a gauge past i64::MAX is capped there (2^63 as an f64).
        assert!(text.contains("ringstore_ops_put{shard=\"11\"} 1099511627787\n"), "{text}");
        let capped = text.lines().find(|l| l.starts_with("ringstore_cache_bytes{shard=\"0\"}"));
        assert_eq!(capped, Some("ringstore_cache_bytes{shard=\"0\"} 9223372036854776000"));
        assert_eq!(text.lines().filter(|l| l.starts_with("ringstore_ops_put{")).count(), 12);
        assert_eq!(text.matches("# TYPE ringstore_ops_put counter\n").count(), 1);
    }

    #[test]
    fn empty_input_renders_nothing() {
        assert_eq!(render(&[]), "");
        assert_eq!(render(&[shard(0, &[])]), "");
    }

    #[test]
    fn repeated_name_in_one_shard_counts_once_and_bad_characters_are_replaced() {
        let shards = [shard(3, &[("ops_frob", 1), ("ops_frob", 2), ("weird-name.x", 9)])];
        let expected = "\
# HELP ringstore_ops_frob Requests of this operation the shard executed.
# TYPE ringstore_ops_frob counter
ringstore_ops_frob{shard=\"3\"} 1
# HELP ringstore_weird_name_x ringstore shard statistic (not yet described).
# TYPE ringstore_weird_name_x gauge
ringstore_weird_name_x{shard=\"3\"} 9
";
        assert_eq!(render(&shards), expected);
    }

    #[test]
    fn table_names_are_unique_and_valid() {
        for (i, (name, _, help)) in DESCRIPTIONS.iter().enumerate() {
            assert_eq!(metric_name(name), format!("{METRIC_PREFIX}{name}"), "{name}");
            assert!(!help.contains('\n') && !help.contains('\\'), "{name}: help needs escaping");
            let again = DESCRIPTIONS[i + 1..].iter().any(|(other, _, _)| other == name);
            assert!(!again, "{name} described twice");
        }
    }

    #[test]
    fn http_response_is_exact() {
        let bytes = http_response("a 1\n");
        let expected = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                        Content-Length: 4\r\nConnection: close\r\n\r\na 1\n";
        assert_eq!(String::from_utf8(bytes).expect("utf-8"), expected);
        let not_found = String::from_utf8(http_not_found()).expect("utf-8");
        assert!(not_found.starts_with("HTTP/1.1 404 Not Found\r\n"), "{not_found}");
        let body = "only GET /metrics is served here\n";
        assert!(not_found.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert!(not_found.ends_with(body), "{not_found}");
    }

    #[test]
    fn recognises_metrics_requests() {
        let yes: [&[u8]; 4] = [
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /metrics HTTP/1.0\r\n\r\n",
            b"GET /metrics?name[]=x HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1",
        ];
        for head in yes {
            assert!(is_metrics_request(head), "{:?}", String::from_utf8_lossy(head));
        }
        let no: [&[u8]; 7] = [
            b"POST /metrics HTTP/1.1\r\n\r\n",
            b"GET /metricsx HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\n\r\n",
            b"GET /metrics\r\n\r\n",
            b"GET /metrics SPDY/3\r\n\r\n",
            b"get /metrics HTTP/1.1\r\n\r\n",
            b"",
        ];
        for head in no {
            assert!(!is_metrics_request(head), "{:?}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn finds_the_end_of_the_request_head() {
        assert_eq!(request_head_len(b"GET /metrics HTTP/1.1\r\n"), None);
        assert_eq!(request_head_len(b"GET / HTTP/1.1\r\n\r\nrest"), Some(18));
    }
}
