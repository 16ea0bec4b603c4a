//! The node's own figures around a run: index size, cache hits and misses (summed over shards,
//! from the Stats request), the process's resident memory (from /proc), and the secondary
//! indexes of the run's table (`SHOW INDEXES`).

use ringstore_model::table::Outcome;
use ringstore_net::Client;

use crate::results::{IndexFigure, NodeFigures};

/// Reads the node's statistics now.
pub fn read(client: &mut Client, pid: Option<u32>) -> Result<NodeFigures, String> {
    let stats = client.stats().map_err(|e| format!("node stats: {e}"))?;
    let sum = |name: &str| stats.iter().filter_map(|s| s.get(name)).sum::<u64>();
    Ok(NodeFigures {
        index_keys: sum("index_keys"),
        index_bytes: sum("index_bytes"),
        index_key_bytes: sum("index_key_bytes"),
        cache_hits: sum("cache_hits"),
        cache_misses: sum("cache_misses"),
        cache_bytes: sum("cache_bytes"),
        rss_bytes: pid.and_then(rss_bytes),
        indexes: Vec::new(),
    })
}

/// The secondary indexes of `table` with their node-wide states (`SHOW INDEXES ON table`).
pub fn indexes(client: &mut Client, table: &str) -> Result<Vec<IndexFigure>, String> {
    let outcomes =
        client.ddl(&format!("SHOW INDEXES ON {table}")).map_err(|e| format!("{table}: {e}"))?;
    let t = outcomes
        .iter()
        .find_map(|o| match o {
            Outcome::Indexes(t) => Some(t),
            _ => None,
        })
        .ok_or_else(|| format!("SHOW INDEXES ON {table}: no index list in {outcomes:?}"))?;
    let fields = t.schema().fields();
    Ok(t.indexes()
        .iter()
        .map(|i| IndexFigure {
            name: i.name().to_string(),
            fields: i.fields().iter().map(|&f| fields[f].name().to_string()).collect(),
            state: i.state().name(),
        })
        .collect())
}

/// The figures at the end of a run, with cache hits and misses counted from `before`.
pub fn since(before: &NodeFigures, after: NodeFigures) -> NodeFigures {
    NodeFigures {
        cache_hits: after.cache_hits.saturating_sub(before.cache_hits),
        cache_misses: after.cache_misses.saturating_sub(before.cache_misses),
        ..after
    }
}

/// VmRSS of process `pid` in bytes.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss(&status)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_parses_and_this_process_has_one() {
        assert_eq!(parse_vm_rss("Name:\tx\nVmRSS:\t  2048 kB\n"), Some(2048 * 1024));
        assert!(rss_bytes(std::process::id()).is_some_and(|b| b > 0));
    }

    #[test]
    fn cache_counts_are_taken_over_the_run() {
        let before = NodeFigures { cache_hits: 10, cache_misses: 5, ..NodeFigures::default() };
        let after = NodeFigures {
            cache_hits: 25,
            cache_misses: 6,
            index_keys: 3,
            ..NodeFigures::default()
        };
        let d = since(&before, after);
        assert_eq!((d.cache_hits, d.cache_misses, d.index_keys), (15, 1, 3));
    }
}
