//! The typed, blocking client of a ringstore node, shared by `ringstore-cli`, the load generator
//! and the end-to-end tests.
//!
//! [`Client::connect`] opens a [`Connection`] to the node's shared port and asks for the
//! [`Topology`] (Hello). A shard-aware client (the default) then sends each single-key request
//! straight to the shard that owns the key: it learns each table's schema once (Describe),
//! computes the key's partition exactly as the node does ([`partition_of_fields`]) and looks up
//! the owner in the topology's partition map. It opens one connection per shard, on first use,
//! to that shard's own port. Everything else (Ping, Hello, Stats, DDL, Describe, scans that do
//! not cover the shard key) goes through the shared port, and so does every request of a client
//! that is not shard aware.
//!
//! Routing is only an optimisation: a request that reaches the wrong shard (a stale schema after
//! another client re-created the table, say) is forwarded by the node, so the answer is the same.
//! A key the client cannot route (a missing or mistyped shard key field, an unknown table) goes
//! to the shared port, and the node's answer names the problem.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use ringstore_model::table::{
    CatalogTable, ExecuteOutcome, IndexState, MultiDeleteOutcome, Outcome, PartitionCount,
    RangeBound, TableRow, Value, VersionSelect, WriteOutcome,
};
use ringstore_model::Durability;

use crate::connection::{ClientError, Connection, Result};
use crate::fields::{value_ref, FieldList, FieldsBuf};
use crate::frame::FRAME_BODY_BYTES_MAX;
use crate::request::{
    Bound, IndexBody, RangeBody, Request, WriteBody, WriteOptions, EXECUTE_OPS_MAX,
    INDEX_FIELDS_MAX,
};
use crate::response::{self, IndexRows, Rows, ShardStats, Topology};
use crate::route::partition_of_fields;
use crate::wire::{ValueRef, FIELDS_MAX};

/// Longest table, field or ENUM symbol name the protocol carries (a u8 length).
const NAME_BYTES_MAX: usize = u8::MAX as usize;

/// Time between two looks at an index's state in [`Client::wait_index_ready`].
pub const INDEX_WAIT_POLL: Duration = Duration::from_millis(100);

/// How a wait for an index ([`Client::wait_index_ready`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexWait {
    /// READY on every shard.
    Ready,
    /// The table has no such index any more: its build met a row it cannot index and dropped
    /// it, or someone dropped it.
    Gone,
    /// Still in this state when the wait's limit passed.
    Still(IndexState),
}

/// How a [`Client`] talks to its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// Send single-key requests straight to the owning shard's port.
    pub shard_aware: bool,
    /// The durability every write asks for ([`Client::with_durability`] changes it later).
    pub durability: Durability,
    /// Bounds every connect, read and write; None waits forever.
    pub timeout: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            shard_aware: true,
            durability: Durability::Sync,
            timeout: Some(Duration::from_secs(10)),
        }
    }
}

/// One write, as [`Client::write`] and [`Client::execute`] take it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WriteOp<'a> {
    /// Insert or replace a row (every key field, any non-key fields).
    Put { row: &'a [(&'a str, Value)] },
    /// Set (Some) or clear (None) some non-key fields of a row.
    Update { key: &'a [(&'a str, Value)], set: &'a [(&'a str, Option<Value>)] },
    /// Delete a row.
    Delete { key: &'a [(&'a str, Value)] },
}

/// A read or delete of the rows under a partial key: the owned-value form of [`RangeBody`].
#[derive(Debug, Clone, PartialEq)]
pub struct RangeQuery<'a> {
    /// A leading prefix of the primary key.
    pub key: &'a [(&'a str, Value)],
    /// The key field after `key` the range is on, and the range's ends (None: open).
    pub range: Option<(&'a str, Option<RangeBound>, Option<RangeBound>)>,
    pub reverse: bool,
    /// Scans only: run even if `key` does not cover the shard key.
    pub allow_full_scan: bool,
    /// Rows per page.
    pub limit: u32,
    /// The previous page's `resume`.
    pub resume: Option<Vec<u8>>,
    /// Reads only.
    pub versions: VersionSelect,
}

impl<'a> RangeQuery<'a> {
    /// Every row under `key`, forward, `limit` rows per page, newest versions.
    pub fn new(key: &'a [(&'a str, Value)], limit: u32) -> RangeQuery<'a> {
        RangeQuery {
            key,
            range: None,
            reverse: false,
            allow_full_scan: false,
            limit,
            resume: None,
            versions: VersionSelect::Newest,
        }
    }
}

/// A query on a secondary index: the owned-value form of [`IndexBody`]. The node runs it on
/// every shard and merges the entries in index order.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexLookup<'a> {
    /// Values of the first index fields, in index order; None asks for rows without a value.
    pub equal: &'a [Option<Value>],
    /// A range on the index field after `equal`: its start and end (None: open on that side).
    pub range: Option<(Option<RangeBound>, Option<RangeBound>)>,
    /// Highest entries first.
    pub reverse: bool,
    /// Return the indexed values and row keys without the rows.
    pub keys_only: bool,
    /// Entries per page.
    pub limit: u32,
    /// The previous page's `resume`.
    pub resume: Option<Vec<u8>>,
}

impl<'a> IndexLookup<'a> {
    /// Every entry under `equal`, forward, with rows, `limit` entries per page.
    pub fn new(equal: &'a [Option<Value>], limit: u32) -> IndexLookup<'a> {
        IndexLookup { equal, range: None, reverse: false, keys_only: false, limit, resume: None }
    }
}

/// A client of one node.
#[derive(Debug)]
pub struct Client {
    addr: SocketAddr,
    options: ClientOptions,
    topology: Topology,
    /// The shared-port connection; None after it broke, until the next use reopens it.
    shared: Option<Connection>,
    /// One connection per shard, opened on first use.
    shards: Vec<Option<Connection>>,
    /// Schemas by table name, for routing; cleared by every DDL call.
    schemas: HashMap<String, CatalogTable>,
}

impl Client {
    /// Connects with the default options (shard aware, Sync writes, 10 s timeout).
    pub fn connect(addr: SocketAddr) -> Result<Client> {
        Client::connect_with(addr, ClientOptions::default())
    }

    /// Connects to the node's shared port `addr` and reads its topology.
    pub fn connect_with(addr: SocketAddr, options: ClientOptions) -> Result<Client> {
        let mut shared = Connection::connect(addr, options.timeout)?;
        let reply = shared.call(&Request::Hello, Durability::Sync)?.into_result()?;
        let topology = response::decode_topology(&reply.body)?;
        let client = Client {
            addr,
            options,
            shards: (0..topology.shards()).map(|_| None).collect(),
            topology,
            shared: Some(shared),
            schemas: HashMap::new(),
        };
        if options.shard_aware {
            client.partition_count()?;
        }
        Ok(client)
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Sets the durability of every later write.
    pub fn with_durability(&mut self, durability: Durability) -> &mut Client {
        self.options.durability = durability;
        self
    }

    pub fn ping(&mut self) -> Result<()> {
        self.call(None, &Request::Ping).map(drop)
    }

    /// Statistics of every shard.
    pub fn stats(&mut self) -> Result<Vec<ShardStats>> {
        Ok(response::decode_stats(&self.call(None, &Request::Stats)?)?)
    }

    /// Runs DDL text; forgets every schema learnt so far (the text may have changed some).
    pub fn ddl(&mut self, text: &str) -> Result<Vec<Outcome>> {
        check_len("DDL text", text.len())?;
        self.schemas.clear();
        Ok(response::decode_ddl(&self.call(None, &Request::Ddl { text })?)?)
    }

    /// The node's state of index `index` of `table` (`SHOW INDEXES`): READY only once every
    /// shard has built it. None if the table has no such index (a build that failed on a row's
    /// value drops its index again).
    pub fn index_state(&mut self, table: &str, index: &str) -> Result<Option<IndexState>> {
        check_name("table name", table)?;
        let outcomes = self.ddl(&format!("SHOW INDEXES ON {table}"))?;
        let table = outcomes.iter().find_map(|o| match o {
            Outcome::Indexes(t) => Some(t),
            _ => None,
        });
        Ok(table.and_then(|t| t.index(index)).map(|i| i.state()))
    }

    /// Looks at the state of index `index` of `table` every [`INDEX_WAIT_POLL`] until it is
    /// READY on every shard, the index is gone, or `limit` has passed.
    pub fn wait_index_ready(
        &mut self,
        table: &str,
        index: &str,
        limit: Duration,
    ) -> Result<IndexWait> {
        let start = std::time::Instant::now();
        loop {
            match self.index_state(table, index)? {
                Some(IndexState::Ready) => return Ok(IndexWait::Ready),
                None => return Ok(IndexWait::Gone),
                Some(state) if start.elapsed() >= limit => return Ok(IndexWait::Still(state)),
                Some(_) => std::thread::sleep(INDEX_WAIT_POLL),
            }
        }
    }

    /// A table's schema, fresh from the node (and remembered for routing).
    pub fn describe(&mut self, table: &str) -> Result<CatalogTable> {
        check_name("table name", table)?;
        let described = response::decode_describe(&self.call(None, &Request::Describe { table })?)?;
        self.schemas.insert(table.to_owned(), described.clone());
        Ok(described)
    }

    /// The newest version of a row.
    pub fn get(&mut self, table: &str, key: &[(&str, Value)]) -> Result<Option<TableRow>> {
        Ok(self.get_versions(table, key, VersionSelect::Newest)?.1)
    }

    /// Some versions of a row, with the names of its columns.
    pub fn get_versions(
        &mut self,
        table: &str,
        key: &[(&str, Value)],
        versions: VersionSelect,
    ) -> Result<(Vec<String>, Option<TableRow>)> {
        check_name("table name", table)?;
        let key = fields_buf(key)?;
        let body = self.route_and_call(&Request::Get { table, key: key.list(), versions })?;
        Ok(response::decode_get(&body)?)
    }

    pub fn put(&mut self, table: &str, row: &[(&str, Value)]) -> Result<WriteOutcome> {
        self.write(table, WriteOp::Put { row }, WriteOptions::default())
    }

    pub fn delete(&mut self, table: &str, key: &[(&str, Value)]) -> Result<WriteOutcome> {
        self.write(table, WriteOp::Delete { key }, WriteOptions::default())
    }

    /// One write with its condition, version, TTL and return-row flag.
    pub fn write(
        &mut self,
        table: &str,
        op: WriteOp<'_>,
        options: WriteOptions,
    ) -> Result<WriteOutcome> {
        check_name("table name", table)?;
        let encoded = EncodedWrite::of(&op)?;
        let req = Request::Write { table, body: encoded.body(), options };
        Ok(response::decode_write(&self.route_and_call(&req)?)?)
    }

    /// Writes sharing one shard key, applied atomically; with `abort_on_failure`, nothing is
    /// written if any condition fails.
    pub fn execute(
        &mut self,
        table: &str,
        ops: &[(WriteOp<'_>, WriteOptions)],
        abort_on_failure: bool,
    ) -> Result<ExecuteOutcome> {
        check_name("table name", table)?;
        if ops.len() > EXECUTE_OPS_MAX {
            return Err(invalid(format!(
                "{} operations in one execute; the limit is {EXECUTE_OPS_MAX} (EXECUTE_OPS_MAX)",
                ops.len()
            )));
        }
        let encoded = ops.iter().map(|(op, _)| EncodedWrite::of(op)).collect::<Result<Vec<_>>>()?;
        let ops = encoded.iter().zip(ops).map(|(e, (_, o))| (e.body(), *o)).collect();
        let req = Request::Execute { table, abort_on_failure, ops };
        Ok(response::decode_execute(&self.route_and_call(&req)?)?)
    }

    /// One page of the rows under a partial key covering the shard key.
    pub fn multi_get(&mut self, table: &str, query: &RangeQuery<'_>) -> Result<Rows> {
        let key = check_query(table, query)?;
        let req = Request::MultiGet { table, range: range_body(query, &key) };
        Ok(response::decode_page(&self.route_and_call(&req)?)?)
    }

    /// Deletes (one atomic batch of at most `limit`) rows under a partial key.
    pub fn multi_delete(
        &mut self,
        table: &str,
        query: &RangeQuery<'_>,
    ) -> Result<MultiDeleteOutcome> {
        let key = check_query(table, query)?;
        let req = Request::MultiDelete { table, range: range_body(query, &key) };
        Ok(response::decode_multi_delete(&self.route_and_call(&req)?)?)
    }

    /// One page of a scan: routed like a multiGet when the key covers the shard key, else sent
    /// to the shared port, whose shard fans it out.
    pub fn scan(&mut self, table: &str, query: &RangeQuery<'_>) -> Result<Rows> {
        let key = check_query(table, query)?;
        let req = Request::Scan { table, range: range_body(query, &key) };
        Ok(response::decode_page(&self.route_and_call(&req)?)?)
    }

    /// One page of a query on index `index` of `table`, sent to the shared port: the node asks
    /// every shard and merges their entries in index order (reverse order if asked).
    pub fn index_query(
        &mut self,
        table: &str,
        index: &str,
        query: &IndexLookup<'_>,
    ) -> Result<IndexRows> {
        check_name("table name", table)?;
        check_name("index name", index)?;
        if query.equal.len() > INDEX_FIELDS_MAX {
            let n = query.equal.len();
            return Err(invalid(format!(
                "{n} equal values for index {index}; an index has at most {INDEX_FIELDS_MAX} \
                 fields (INDEX_FIELDS_MAX)"
            )));
        }
        let ends = query.range.iter().flat_map(|(start, end)| [start, end]).flatten();
        for value in query.equal.iter().flatten().chain(ends.map(|b| &b.value)) {
            check_value(value)?;
        }
        if let Some(resume) = &query.resume {
            check_len("resume token", resume.len())?;
        }
        let req = Request::IndexQuery { table, query: index_body(index, query) };
        Ok(response::decode_index_page(&self.call(None, &req)?)?)
    }

    /// The shard that owns `key` (a full key, a row, or a partial key covering the shard key);
    /// None when the key does not give every shard key field.
    pub fn shard_of(&mut self, table: &str, key: &[(&str, Value)]) -> Result<Option<usize>> {
        check_name("table name", table)?;
        let key = fields_buf(key)?;
        self.owner_of(table, key.list())
    }

    /// The connection to a shard's own port (None: the shared port), opened if need be, for
    /// pipelining by hand. Replies it holds back are the caller's to collect.
    pub fn connection(&mut self, shard: Option<usize>) -> Result<&mut Connection> {
        if let Some(s) = shard.filter(|s| *s >= self.shards.len()) {
            return Err(invalid(format!("shard {s}: the node has {} shards", self.shards.len())));
        }
        let addr = self.addr_of(shard);
        let timeout = self.options.timeout;
        let slot = match shard {
            None => &mut self.shared,
            Some(s) => &mut self.shards[s],
        };
        // A connection the node closed while it sat idle (its idle timeout) is reopened here,
        // before a request is sent on it.
        if slot.as_ref().is_some_and(Connection::closed_while_quiet) {
            *slot = None;
        }
        match slot {
            Some(conn) => Ok(conn),
            None => Ok(slot.insert(Connection::connect(addr, timeout)?)),
        }
    }

    /// The address of a shard's port (None: the shared port). A shard whose port is 0 has no
    /// port of its own and is reached through the shared port.
    fn addr_of(&self, shard: Option<usize>) -> SocketAddr {
        match shard.and_then(|s| self.topology.shard_ports.get(s)) {
            Some(&port) if port != 0 => SocketAddr::new(self.addr.ip(), port),
            _ => self.addr,
        }
    }

    /// Sends a request to `shard` (None: the shared port) and returns the successful reply's
    /// body.
    fn call(&mut self, shard: Option<usize>, req: &Request<'_>) -> Result<Vec<u8>> {
        let durability = self.options.durability;
        let reply = self.connection(shard)?.call(req, durability)?;
        Ok(reply.into_result()?.body)
    }

    /// Sends a data request to the shard that owns its key, or to the shared port.
    fn route_and_call(&mut self, req: &Request<'_>) -> Result<Vec<u8>> {
        let shard = self.route(req)?;
        self.call(shard, req)
    }

    /// Where a request goes: its key's owner when the client is shard aware and the key can be
    /// routed, else the shared port (None).
    fn route(&mut self, req: &Request<'_>) -> Result<Option<usize>> {
        if !self.options.shard_aware || self.topology.shards() <= 1 {
            return Ok(None);
        }
        let Some((table, key)) = routing_key(req) else { return Ok(None) };
        match self.owner_of(table, key) {
            Ok(shard) => Ok(shard),
            // The node gives the authoritative answer (unknown table, mistyped key field).
            Err(ClientError::Server(_) | ClientError::InvalidRequest(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The shard owning the partition of `key`, learning the table's schema if need be.
    fn owner_of(&mut self, table: &str, key: FieldList<'_>) -> Result<Option<usize>> {
        let count = self.partition_count()?;
        if !self.schemas.contains_key(table) {
            self.describe(table)?;
        }
        let Some(described) = self.schemas.get(table) else { return Ok(None) };
        let partition = partition_of_fields(described.schema(), key, count)
            .map_err(|e| invalid(format!("key of table {table}: {e}")))?;
        let owners = &self.topology.partition_owners;
        Ok(partition.and_then(|p| owners.get(p as usize)).map(|&o| usize::from(o)))
    }

    /// The topology's partition count, after checking that its map can route: at least one
    /// partition, and every owner a shard the node has.
    fn partition_count(&self) -> Result<PartitionCount> {
        let t = &self.topology;
        let count = u32::try_from(t.partition_owners.len()).ok().map(PartitionCount::new);
        let bad_owner = t.partition_owners.iter().find(|&&o| usize::from(o) >= t.shards());
        match (count, bad_owner) {
            (Some(Ok(count)), None) => Ok(count),
            (_, Some(owner)) => Err(self.protocol(format!(
                "the partition map names shard {owner}; the node has {} shards",
                t.shards()
            ))),
            _ => Err(self.protocol(format!(
                "the partition map has {} partitions",
                t.partition_owners.len()
            ))),
        }
    }

    fn protocol(&self, detail: String) -> ClientError {
        ClientError::Protocol { addr: self.addr, detail }
    }
}

/// The table and the key fields that decide where a request goes; None for requests that are
/// not about one key (and for an empty execute).
fn routing_key<'a>(req: &Request<'a>) -> Option<(&'a str, FieldList<'a>)> {
    match req {
        Request::Get { table, key, .. } => Some((table, *key)),
        Request::Write { table, body, .. } => Some((table, body.key())),
        Request::Execute { table, ops, .. } => ops.first().map(|(body, _)| (*table, body.key())),
        Request::MultiGet { table, range }
        | Request::MultiDelete { table, range }
        | Request::Scan { table, range } => Some((table, range.key)),
        _ => None,
    }
}

/// A write's fields lists, encoded.
enum EncodedWrite {
    Put(FieldsBuf),
    Update(FieldsBuf, FieldsBuf),
    Delete(FieldsBuf),
}

impl EncodedWrite {
    fn of(op: &WriteOp<'_>) -> Result<EncodedWrite> {
        Ok(match op {
            WriteOp::Put { row } => EncodedWrite::Put(fields_buf(row)?),
            WriteOp::Update { key, set } => {
                EncodedWrite::Update(fields_buf(key)?, updates_buf(set)?)
            }
            WriteOp::Delete { key } => EncodedWrite::Delete(fields_buf(key)?),
        })
    }

    fn body(&self) -> WriteBody<'_> {
        match self {
            EncodedWrite::Put(row) => WriteBody::Put { row: row.list() },
            EncodedWrite::Update(key, set) => {
                WriteBody::Update { key: key.list(), set: set.list() }
            }
            EncodedWrite::Delete(key) => WriteBody::Delete { key: key.list() },
        }
    }
}

/// Checks a range query and encodes its key.
fn check_query(table: &str, q: &RangeQuery<'_>) -> Result<FieldsBuf> {
    check_name("table name", table)?;
    if let Some((field, start, end)) = &q.range {
        check_name("range field", field)?;
        for bound in [start, end].into_iter().flatten() {
            check_value(&bound.value)?;
        }
    }
    if let Some(resume) = &q.resume {
        check_len("resume token", resume.len())?;
    }
    fields_buf(q.key)
}

fn range_body<'a>(q: &'a RangeQuery<'_>, key: &'a FieldsBuf) -> RangeBody<'a> {
    let bound = |b: &'a Option<RangeBound>| {
        b.as_ref().map(|b| Bound { value: ValueRef::from(&b.value), inclusive: b.inclusive })
    };
    RangeBody {
        key: key.list(),
        range: q.range.as_ref().map(|(field, start, end)| (*field, bound(start), bound(end))),
        reverse: q.reverse,
        allow_full_scan: q.allow_full_scan,
        limit: q.limit,
        resume: q.resume.as_deref(),
        versions: q.versions,
    }
}

fn index_body<'a>(index: &'a str, q: &'a IndexLookup<'_>) -> IndexBody<'a> {
    let bound = |b: &'a Option<RangeBound>| {
        b.as_ref().map(|b| Bound { value: ValueRef::from(&b.value), inclusive: b.inclusive })
    };
    IndexBody {
        index,
        equal: q.equal.iter().map(|v| value_ref(v.as_ref())).collect(),
        range: q.range.as_ref().map(|(start, end)| (bound(start), bound(end))),
        reverse: q.reverse,
        keys_only: q.keys_only,
        limit: q.limit,
        resume: q.resume.as_deref(),
    }
}

/// Encodes a key or row, after the checks the encoder would otherwise panic on.
fn fields_buf(fields: &[(&str, Value)]) -> Result<FieldsBuf> {
    check_count(fields.len())?;
    for (name, value) in fields {
        check_name("field name", name)?;
        check_value(value)?;
    }
    Ok(FieldsBuf::of_values(fields))
}

/// Encodes the fields an update sets (Some) or clears (None, sent as NULL).
fn updates_buf(fields: &[(&str, Option<Value>)]) -> Result<FieldsBuf> {
    check_count(fields.len())?;
    for (name, value) in fields {
        check_name("field name", name)?;
        value.as_ref().map(check_value).transpose()?;
    }
    Ok(FieldsBuf::of(fields.iter().map(|(n, v)| (*n, value_ref(v.as_ref())))))
}

fn check_count(count: usize) -> Result<()> {
    if count > FIELDS_MAX {
        return Err(invalid(format!("{count} fields in one list; the limit is {FIELDS_MAX}")));
    }
    Ok(())
}

fn check_name(what: &str, name: &str) -> Result<()> {
    if name.len() > NAME_BYTES_MAX {
        let start: String = name.chars().take(32).collect();
        return Err(invalid(format!(
            "{what} {start:?}... is {} bytes; the limit is {NAME_BYTES_MAX}",
            name.len()
        )));
    }
    Ok(())
}

fn check_len(what: &str, len: usize) -> Result<()> {
    if len > FRAME_BODY_BYTES_MAX as usize {
        return Err(invalid(format!(
            "{what} of {len} bytes is over the largest frame ({FRAME_BODY_BYTES_MAX} bytes)"
        )));
    }
    Ok(())
}

fn check_value(value: &Value) -> Result<()> {
    match value {
        Value::Enum(symbol) => check_name("ENUM symbol", symbol),
        Value::String(s) => check_len("STRING value", s.len()),
        Value::Binary(b) => check_len("BINARY value", b.len()),
        _ => Ok(()),
    }
}

fn invalid(message: String) -> ClientError {
    ClientError::InvalidRequest(message)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use ringstore_model::table::{partition_of_values, FieldType, RowToken, TableId, TableSchema};

    use super::*;
    use crate::connection::fake::{answering, Frame, TIMEOUT};
    use crate::frame::Opcode;
    use crate::wire::Writer;

    /// Partition owners of the fake node: 8 partitions over 2 shards, unevenly.
    const OWNERS: [u16; 8] = [0, 1, 1, 0, 1, 0, 0, 1];

    fn schema() -> TableSchema {
        TableSchema::builder(TableId(7), "users")
            .field("tenant", FieldType::String)
            .field("id", FieldType::Long)
            .field("name", FieldType::String)
            .primary_key(&["tenant", "id"])
            .shard_key(&["tenant"])
            .build()
            .expect("valid schema")
    }

    fn encoded(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::default();
        f(&mut w);
        w.buf
    }

    /// What the fake node's ports saw.
    #[derive(Default)]
    struct Counts {
        describes: AtomicUsize,
        shared_data: AtomicUsize,
    }

    /// Answers a data request on `shard` (None: the shared port): a write reports the shard in
    /// its token, a page has no rows.
    fn data_answer(shard: Option<usize>, f: &Frame) -> (u16, Vec<u8>) {
        let req = Request::decode(f.header.opcode, &f.body).expect("the client sends valid bodies");
        assert_eq!(req.table(), Some("users"));
        let token = RowToken(shard.map_or(99, |s| s as u64));
        let body = match f.header.opcode {
            Opcode::Put | Opcode::Delete => encoded(|w| {
                response::encode_write(w, &schema(), &WriteOutcome::Written { token, version: 1 })
            }),
            Opcode::Scan | Opcode::MultiGet => {
                encoded(|w| response::encode_page(w, &schema(), &[], None))
            }
            op => return (900, format!("the fake node does not do {op:?}").into_bytes()),
        };
        (0, body)
    }

    /// A fake node: two shard listeners and a shared port that answers Hello, Describe, DDL and
    /// data requests.
    fn fake_node() -> (SocketAddr, Arc<Counts>) {
        let shard_ports: Vec<u16> =
            (0..2).map(|s| answering(move |f| data_answer(Some(s), f)).port()).collect();
        let counts = Arc::new(Counts::default());
        let seen = counts.clone();
        let shared = answering(move |f| match f.header.opcode {
            Opcode::Hello => {
                let t = Topology {
                    shard: 0,
                    shared_port: 0,
                    shard_ports: shard_ports.clone(),
                    partition_owners: OWNERS.to_vec(),
                };
                (0, encoded(|w| response::encode_topology(w, &t)))
            }
            Opcode::Describe => {
                seen.describes.fetch_add(1, Ordering::SeqCst);
                let table = CatalogTable::new(schema(), 1);
                (0, encoded(|w| response::encode_describe(w, &table)))
            }
            Opcode::Ddl => (0, encoded(|w| response::encode_ddl(w, &[Outcome::NothingDropped]))),
            Opcode::Ping => (0, Vec::new()),
            _ => {
                seen.shared_data.fetch_add(1, Ordering::SeqCst);
                data_answer(None, f)
            }
        });
        (shared, counts)
    }

    fn options(shard_aware: bool) -> ClientOptions {
        ClientOptions { shard_aware, timeout: Some(TIMEOUT), ..ClientOptions::default() }
    }

    fn expected_shard(tenant: &str) -> usize {
        let count = PartitionCount::new(OWNERS.len() as u32).expect("count");
        let p = partition_of_values(&schema(), &[Value::String(tenant.into())], count)
            .expect("partition");
        usize::from(OWNERS[p as usize])
    }

    fn token(outcome: WriteOutcome) -> u64 {
        let WriteOutcome::Written { token, .. } = outcome else { panic!("{outcome:?}") };
        token.0
    }

    /// Every key goes to `partition_owners[partition_of_fields(...)]`, both shards are used,
    /// and the schema is asked for once until a DDL call forgets it.
    #[test]
    fn shard_aware_client_routes_each_key_to_its_owner() {
        let (addr, counts) = fake_node();
        let mut client = Client::connect_with(addr, options(true)).expect("connect");
        assert_eq!(client.topology().partition_owners, OWNERS);
        let mut used = [false; 2];
        for i in 0..32 {
            let tenant = format!("tenant-{i}");
            let row = [("tenant", Value::String(tenant.clone())), ("id", Value::Long(i))];
            let want = expected_shard(&tenant);
            assert_eq!(client.shard_of("users", &row).expect("routable"), Some(want));
            let got = token(client.put("users", &row).expect("put"));
            assert_eq!(got, want as u64, "{tenant}");
            let got = token(client.delete("users", &row).expect("delete"));
            assert_eq!(got, want as u64, "{tenant}");
            used[want] = true;
        }
        assert_eq!(used, [true, true], "the keys should have reached both shards");
        assert_eq!(counts.describes.load(Ordering::SeqCst), 1);
        assert_eq!(counts.shared_data.load(Ordering::SeqCst), 0);

        // A scan that does not cover the shard key fans out from the shared port.
        let mut all = RangeQuery::new(&[], 10);
        all.allow_full_scan = true;
        assert!(client.scan("users", &all).expect("scan").page.rows.is_empty());
        assert_eq!(counts.shared_data.load(Ordering::SeqCst), 1);
        let key = [("tenant", Value::String("tenant-3".into()))];
        client.multi_get("users", &RangeQuery::new(&key, 10)).expect("multi_get");
        assert_eq!(counts.shared_data.load(Ordering::SeqCst), 1, "multiGet was routed");
        assert_eq!(client.shard_of("users", &[("id", Value::Long(1))]).expect("ok"), None);

        client.ddl("DROP TABLE IF EXISTS other").expect("ddl");
        client.put("users", &key).expect("put");
        assert_eq!(counts.describes.load(Ordering::SeqCst), 2, "DDL forgets schemas");
    }

    #[test]
    fn client_that_is_not_shard_aware_uses_the_shared_port() {
        let (addr, counts) = fake_node();
        let mut client = Client::connect_with(addr, options(false)).expect("connect");
        let row = [("tenant", Value::String("a".into())), ("id", Value::Long(1))];
        assert_eq!(token(client.put("users", &row).expect("put")), 99);
        assert_eq!(counts.shared_data.load(Ordering::SeqCst), 1);
        assert_eq!(counts.describes.load(Ordering::SeqCst), 0);
        // shard_of still answers, from the schema.
        assert_eq!(client.shard_of("users", &row).expect("routable"), Some(expected_shard("a")));
    }

    /// Errors of the node come back with their code; a key the client cannot route goes to the
    /// shared port for the node to judge; bad input is refused before anything is sent.
    #[test]
    fn errors_and_unroutable_keys() {
        let (addr, counts) = fake_node();
        let mut client = Client::connect_with(addr, options(true)).expect("connect");
        let e = client.get("users", &[("tenant", Value::String("a".into()))]).expect_err("get");
        assert_eq!(e.code(), Some(900), "{e}");
        let mistyped = [("tenant", Value::Long(5))];
        assert_eq!(token(client.put("users", &mistyped).expect("put")), 99);
        assert_eq!(counts.shared_data.load(Ordering::SeqCst), 1);
        let long = "x".repeat(300);
        let e = client.put(&long, &mistyped).expect_err("long name");
        assert!(matches!(e, ClientError::InvalidRequest(_)), "{e}");
        let e = client.connection(Some(2)).expect_err("no shard 2");
        assert!(matches!(e, ClientError::InvalidRequest(_)), "{e}");
        client.ping().expect("still usable");
    }
}
