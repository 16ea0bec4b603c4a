//! One shard: its tables, its place in the node (partition map, ports, peers) and its counters.
//! Everything here lives on the shard's own executor thread; nothing is shared across threads
//! but the connection count and the shutdown signal.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use glommio::sync::Semaphore;
use ringstore_net::{Opcode, ShardStats, Topology};
use ringstore_storage::table::{
    partition_of, PartitionCount, PartitionMap, PutScratch, TableStore,
};

use crate::budget::BufferBudget;
use crate::buffers::BufPool;
use crate::config::Limits;
use crate::connection_cap::ConnectionCap;
use crate::counters::Counters;
use crate::durable_acks::DurableAcks;
use crate::error::RequestError;
use crate::idle::IdleWatch;
use crate::inflight::InflightSlot;
use crate::mesh::Peers;
use crate::readiness::Readiness;
use crate::shutdown::Shutdown;

/// A shard and everything its tasks share.
#[derive(Debug)]
pub struct Shard {
    pub id: usize,
    pub tables: TableStore,
    pub map: PartitionMap,
    pub topology: Topology,
    /// Every shard's own RESP port, by shard (empty without `--resp`): the nodes of the RESP
    /// port's Redis Cluster view (`resp_cluster.rs`).
    pub resp_ports: Vec<u16>,
    pub limits: Limits,
    pub peers: Peers,
    pub counters: Counters,
    /// Requests this shard has accepted from its connections and not answered yet (each
    /// [`InflightSlot`] holds one).
    pub inflight: Rc<Cell<usize>>,
    /// Open connections on this shard.
    pub connections: Cell<usize>,
    /// Woken when a connection closes (shutdown waits for the last one).
    pub connection_closed: event_listener::Event,
    /// Open connections on the whole node (the connection cap).
    pub node_connections: Arc<ConnectionCap>,
    pub shutdown: Arc<Shutdown>,
    /// Shard 0 orders DDL: one statement text at a time, applied on every shard.
    pub ddl_lock: Semaphore,
    /// Request bodies and response frames, reused.
    pub buffers: BufPool,
    /// Bytes this shard's connections hold for clients, against its share of
    /// `--max-buffer-bytes` (`budget.rs`).
    pub budget: Rc<BufferBudget>,
    /// Responses of inline writes waiting for group commit (`durable_acks.rs`).
    pub acks: DurableAcks,
    /// The encoded key and row of the request the inline path is running (`inline.rs`),
    /// reused from one request to the next.
    pub scratch: RefCell<PutScratch>,
    /// The connections the idle sweeper watches (`idle.rs`).
    pub idle: IdleWatch,
    /// The shard's epoll instance: when its connections have bytes to read (`readiness.rs`).
    pub readiness: Readiness,
}

impl Shard {
    pub fn shards(&self) -> usize {
        self.topology.shard_ports.len()
    }

    pub fn partitions(&self) -> PartitionCount {
        self.map.partitions()
    }

    /// The shard that owns `partition`.
    pub fn owner(&self, partition: u32) -> usize {
        self.map.shard_of(partition) as usize
    }

    /// Whether this shard owns the rows of encoded shard key `shard_key`. A node of one shard
    /// owns every partition, so it does not hash the key to find out (the inline paths ask
    /// once per request).
    pub fn owns_shard_key(&self, shard_key: &[u8]) -> bool {
        self.shards() == 1 || self.owner(partition_of(shard_key, self.partitions())) == self.id
    }

    /// Takes a node-wide connection slot, or refuses past the cap.
    pub fn admit_connection(&self) -> Result<ConnectionSlot<'_>, RequestError> {
        if !self.node_connections.try_take() {
            return Err(RequestError::TooManyConnections { limit: self.node_connections.limit() });
        }
        self.connections.set(self.connections.get() + 1);
        Ok(ConnectionSlot { shard: self })
    }

    /// Takes a slot of the shard's in-flight budget, or BUSY.
    pub fn admit_request(&self) -> Result<InflightSlot, RequestError> {
        let limit = self.limits.inflight_per_shard;
        if self.inflight.get() >= limit {
            return Err(RequestError::Busy { what: "the shard's in-flight request budget", limit });
        }
        Ok(InflightSlot::new(&self.inflight))
    }

    /// Statistics of this shard, for the Stats request and the metrics endpoint.
    pub fn stats(&self) -> ShardStats {
        let s = self.tables.store().stats();
        let c = &self.counters;
        let mut values: Vec<(String, u64)> = Vec::with_capacity(48);
        for (op, n) in c.ops.borrow().iter() {
            values.push((format!("ops_{}", op_name(*op)), *n));
        }
        let mut push = |name: &str, v: u64| values.push((name.to_owned(), v));
        push("requests_errors", c.errors.get());
        push("requests_busy", c.busy.get());
        push("requests_deferred", c.deferred.get());
        push("bytes_in", c.bytes_in.get());
        push("bytes_out", c.bytes_out.get());
        push("forwarded_out", c.forwarded_out.get());
        push("forwarded_in", c.forwarded_in.get());
        push("connections", self.connections.get() as u64);
        push("connections_total", c.connections_total.get());
        push("connections_refused", c.connections_refused.get());
        push("resp_commands", c.resp_commands.get());
        push("resp_keyspace_hits", c.resp_keyspace_hits.get());
        push("resp_keyspace_misses", c.resp_keyspace_misses.get());
        push("inflight", self.inflight.get() as u64);
        push("buffer_bytes", self.budget.used() as u64);
        push("buffer_bytes_limit", self.budget.limit() as u64);
        push("index_keys", s.keys);
        push("index_bytes", s.index_bytes);
        push("index_key_bytes", s.index_key_bytes);
        push("dead_map_bytes", s.dead_map_bytes);
        push("cache_hits", s.cache.hits);
        push("cache_misses", s.cache.misses);
        push("cache_bytes", s.cache.used_bytes);
        push("cache_entries", s.cache.entries);
        push("segments", s.segments);
        push("disk_bytes", s.disk_bytes);
        push("live_bytes", s.live_bytes);
        push("garbage_bytes", s.disk_bytes.saturating_sub(s.live_bytes));
        push("compactions", s.counters.compactions);
        push("compaction_moved_bytes", s.counters.compaction_moved_bytes);
        push("compaction_reclaimed_bytes", s.counters.compaction_reclaimed_bytes);
        push("compaction_read_bytes", s.counters.compaction_read_bytes);
        push("checkpoints", s.counters.checkpoints);
        push("group_commits", s.counters.flushes);
        push("group_commit_records", s.counters.flushed_records);
        push("group_commit_records_p50", s.flush_records.p50);
        push("group_commit_records_p99", s.flush_records.p99);
        push("group_commit_records_max", s.flush_records.max);
        push("fsyncs", s.counters.fsyncs);
        push("fsync_us_p50", s.fsync_us.p50);
        push("fsync_us_p99", s.fsync_us.p99);
        push("fsync_us_p999", s.fsync_us.p999);
        push("fsync_us_max", s.fsync_us.max);
        push("durable_writes", s.counters.durable_writes);
        push("durable_write_us_p50", s.durable_write_us.p50);
        push("durable_write_us_p99", s.durable_write_us.p99);
        push("durable_write_us_max", s.durable_write_us.max);
        push("maintenance_steps", s.maintenance_step_us.count);
        push("maintenance_step_us_p50", s.maintenance_step_us.p50);
        push("maintenance_step_us_p99", s.maintenance_step_us.p99);
        push("maintenance_step_us_max", s.maintenance_step_us.max);
        push("write_buffer_waits", s.counters.write_buffer_waits);
        push("deferred_index_puts", s.counters.deferred_puts);
        push("deferred_index_groups", s.counters.deferred_groups);
        push("segment_preallocations", s.counters.preallocations);
        push("segment_preallocations_failed", s.counters.preallocations_failed);
        push("writes_refused", u64::from(self.tables.is_poisoned()));
        push("write_resumes", s.counters.write_resumes);
        let builds = self.tables.index_work_stats();
        push("indexes_building", builds.building);
        push("index_build_rows", builds.rows_indexed);
        ShardStats { shard: self.id as u16, values }
    }
}

/// The name of an opcode in stats (`ops_get`, ...).
pub fn op_name(op: Opcode) -> &'static str {
    match op {
        Opcode::Ping => "ping",
        Opcode::Hello => "hello",
        Opcode::Stats => "stats",
        Opcode::Ddl => "ddl",
        Opcode::Describe => "describe",
        Opcode::Get => "get",
        Opcode::Put => "put",
        Opcode::Update => "update",
        Opcode::Delete => "delete",
        Opcode::Execute => "execute",
        Opcode::MultiGet => "multi_get",
        Opcode::MultiDelete => "multi_delete",
        Opcode::Scan => "scan",
        Opcode::IndexQuery => "index_query",
    }
}

/// A node-wide connection slot, returned when dropped.
#[derive(Debug)]
pub struct ConnectionSlot<'a> {
    shard: &'a Shard,
}

impl Drop for ConnectionSlot<'_> {
    fn drop(&mut self) {
        self.shard.node_connections.give();
        self.shard.connections.set(self.shard.connections.get() - 1);
        self.shard.connection_closed.notify(usize::MAX);
    }
}
