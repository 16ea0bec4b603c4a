//! Response messages: the body of each successful response, encoded by the node from the table
//! layer's results and decoded by clients into the same types. An error response has status !=
//! 0 and a UTF-8 message as its body ([`ErrorReply`]). `docs/PROTOCOL.md` ("Responses") is the
//! byte-level reference; this file and that section change together.
//!
//! Rows are sent with their column names once per response (the schema's field names, in schema
//! order), then per row: token, stored key, and per version: version, expiry and one value per
//! column (NULL for a field the row does not have).

use ringstore_model::table::stored_row;
use ringstore_model::table::{
    decode_table_record, encode_table_record, for_each_version, visit_row, CatalogTable,
    CurrentRow, ExecuteOutcome, FieldType, IndexHit, MultiDeleteOutcome, Name, Outcome, RowPage,
    RowToken, RowVersion, TableResult, TableRow, TableSchema, Value, ValueRef, VersionSelect,
    WriteOutcome,
};

use crate::fields::value_ref;
use crate::request::INDEX_FIELDS_MAX;
use crate::wire::{Reader, WireError, WireResult, Writer};

/// Most rows a page response may announce (the table layer's page limit is lower).
pub const PAGE_ROWS_MAX: usize = 100_000;

/// The node's shape, as a Hello response carries it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    /// The shard that answered.
    pub shard: u16,
    /// The port every shard accepts on.
    pub shared_port: u16,
    /// Each shard's own port, by shard number.
    pub shard_ports: Vec<u16>,
    /// The owning shard of each partition, by partition number.
    pub partition_owners: Vec<u16>,
}

impl Topology {
    pub fn shards(&self) -> usize {
        self.shard_ports.len()
    }
}

/// One shard's statistics: named counters and gauges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShardStats {
    pub shard: u16,
    pub values: Vec<(String, u64)>,
}

impl ShardStats {
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// Rows with the names of their columns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    pub page: RowPage,
}

/// One entry of an index query's page, as a client receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    /// The indexed values, in index order; None for NULL.
    pub values: Vec<Option<Value>>,
    /// The row's stored key (its primary key, decoded with the table's schema).
    pub row_key: Vec<u8>,
    /// The row's newest version; None in a keys-only query.
    pub row: Option<TableRow>,
}

/// A page of an index query: the table's columns, the entries in index order, and the token of
/// the next page (None: the query is done).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexRows {
    pub columns: Vec<String>,
    pub hits: Vec<IndexRow>,
    pub resume: Option<Vec<u8>>,
}

/// An error response: its status code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error {code}: {message}")]
pub struct ErrorReply {
    pub code: u16,
    pub message: String,
}

// ---- encoding (node side) ----

pub fn encode_topology(w: &mut Writer, t: &Topology) {
    w.u16(t.shard_ports.len() as u16);
    w.u16(t.shard);
    w.u16(t.shared_port);
    for port in &t.shard_ports {
        w.u16(*port);
    }
    w.u32(t.partition_owners.len() as u32);
    for owner in &t.partition_owners {
        w.u16(*owner);
    }
}

pub fn encode_stats(w: &mut Writer, shards: &[ShardStats]) {
    w.u16(shards.len() as u16);
    for s in shards {
        w.u16(s.shard);
        w.u16(s.values.len() as u16);
        for (name, value) in &s.values {
            w.name(name);
            w.u64(*value);
        }
    }
}

pub fn encode_ddl(w: &mut Writer, outcomes: &[Outcome]) {
    // One outcome per statement, and a DDL text has at most DDL_STATEMENTS_MAX (a u16, asserted
    // where the limit is defined).
    debug_assert!(outcomes.len() <= ringstore_model::ddl::DDL_STATEMENTS_MAX);
    w.u16(outcomes.len() as u16);
    for o in outcomes {
        match o {
            Outcome::Created { id } => {
                w.u8(0);
                w.u32(id.0);
            }
            Outcome::AlreadyExists { id } => {
                w.u8(1);
                w.u32(id.0);
            }
            Outcome::Dropped { id } => {
                w.u8(2);
                w.u32(id.0);
            }
            Outcome::NothingDropped => w.u8(3),
            Outcome::Altered { id } => {
                w.u8(6);
                w.u32(id.0);
            }
            Outcome::Described(table) => {
                w.u8(4);
                w.bytes(&encode_table_record(table));
            }
            Outcome::Tables(names) => {
                w.u8(5);
                w.u32(names.len() as u32);
                for name in names {
                    w.name(name.as_str());
                }
            }
            Outcome::IndexCreated { table, index, state } => {
                w.u8(7);
                w.u32(table.0);
                w.u32(index.0);
                w.u8(state.tag());
            }
            Outcome::IndexAlreadyExists { table, index } => {
                w.u8(8);
                w.u32(table.0);
                w.u32(index.0);
            }
            Outcome::IndexDropped { table, index } => {
                w.u8(9);
                w.u32(table.0);
                w.u32(index.0);
            }
            Outcome::NoIndexDropped => w.u8(10),
            Outcome::Indexes(table) => {
                w.u8(11);
                w.bytes(&encode_table_record(table));
            }
        }
    }
}

pub fn encode_describe(w: &mut Writer, table: &CatalogTable) {
    w.bytes(&encode_table_record(table));
}

fn encode_columns(w: &mut Writer, schema: &TableSchema) {
    w.u16(schema.fields().len() as u16);
    for f in schema.fields() {
        w.name(f.name().as_str());
    }
}

fn encode_row(w: &mut Writer, row: &TableRow) {
    w.u64(row.token.0);
    w.bytes(&row.key);
    w.u16(row.versions.len() as u16);
    for v in &row.versions {
        w.u64(v.version);
        w.u64(v.expiry_ms);
        for value in &v.fields {
            w.value(&value_ref(value.as_ref()));
        }
    }
}

/// Bytes `row` takes in a response (what [`encode_row`] writes), so a server can keep a page
/// within its frame limit.
pub fn row_wire_bytes(row: &TableRow) -> usize {
    let versions: usize = row
        .versions
        .iter()
        .map(|v| 16 + v.fields.iter().map(value_wire_bytes).sum::<usize>())
        .sum();
    8 + 4 + row.key.len() + 2 + versions
}

/// Bytes a value (None: NULL) takes on the wire: its tag and its encoding.
fn value_wire_bytes(v: &Option<Value>) -> usize {
    value_ref_wire_bytes(&value_ref(v.as_ref()))
}

/// Bytes a borrowed value takes on the wire: its tag and its encoding.
fn value_ref_wire_bytes(v: &ValueRef<'_>) -> usize {
    1 + match v {
        ValueRef::Null => 0,
        ValueRef::Integer(_) | ValueRef::Float(_) => 4,
        ValueRef::Long(_) | ValueRef::Double(_) | ValueRef::Timestamp(_) => 8,
        ValueRef::Boolean(_) => 1,
        ValueRef::String(s) => 4 + s.len(),
        ValueRef::Binary(b) => 4 + b.len(),
        ValueRef::Enum(s) => 1 + s.len(),
    }
}

/// The most bytes [`encode_get_stored`] can write for a stored row of at most `stored_bytes`
/// (the length of its record, as the store's index gives it before the record is read), so a
/// server can set aside room for a Get's reply before it waits for the disk. It counts the
/// columns, the key, per version the key values and, per non-key field, the most its wire
/// form can take beyond its stored bytes: a tag and a u32 length ([`STORED_FIELD_WIRE_EXTRA`]),
/// or for an ENUM, stored as a number, its longest symbol; the stored bytes once for all
/// versions.
pub fn get_stored_bound(
    schema: &TableSchema,
    key: &[u8],
    key_values: &[Option<ValueRef<'_>>],
    stored_bytes: usize,
    select: VersionSelect,
) -> usize {
    let columns: usize =
        2 + schema.fields().iter().map(|f| 1 + f.name().as_str().len()).sum::<usize>();
    let (_, max) = select.bounds();
    let kept = schema.options().max_versions as usize;
    let versions = max.min(kept).min(stored_bytes / stored_row::STORED_VERSION_HEADER_BYTES);
    let key_fields: usize =
        key_values.iter().map(|v| value_ref_wire_bytes(&v.unwrap_or(ValueRef::Null))).sum();
    let other_fields: usize = schema
        .non_key_fields()
        .iter()
        .map(|&i| match schema.fields()[i].ty() {
            FieldType::Enum(symbols) => 2 + symbols.iter().map(String::len).max().unwrap_or(0),
            _ => STORED_FIELD_WIRE_EXTRA,
        })
        .sum();
    columns + 1 + 8 + 4 + key.len() + 2 + versions * (16 + key_fields + other_fields) + stored_bytes
}

/// The most a non-key field's wire form takes beyond its stored bytes: a tag and a u32 length
/// (a NULL, stored as a clear presence bit, is a tag alone).
pub const STORED_FIELD_WIRE_EXTRA: usize = 1 + 4;

/// A Get response: columns, then 0 (no row) or 1 and the row.
pub fn encode_get(w: &mut Writer, schema: &TableSchema, row: Option<&TableRow>) {
    encode_columns(w, schema);
    match row {
        None => w.u8(0),
        Some(row) => {
            w.u8(1);
            encode_row(w, row);
        }
    }
}

/// A Get response encoded straight from a stored row (the record's value, `stored_row.rs`;
/// None: no row), byte for byte what [`encode_get`] writes for the row the table layer would
/// decode from it, without decoding it: the node's inline path answers a cache hit this way
/// without allocating. `key` is the stored key and `key_values` the request's key values by key
/// position. Only unexpired versions that `select` picks are sent; if none is, the response says
/// "no row", as a read through the table layer does.
pub fn encode_get_stored(
    w: &mut Writer,
    schema: &TableSchema,
    key: &[u8],
    key_values: &[Option<ValueRef<'_>>],
    stored: Option<&[u8]>,
    select: VersionSelect,
    now_ms: u64,
) -> TableResult<()> {
    encode_columns(w, schema);
    let start = w.buf.len();
    let Some(stored) = stored else {
        w.u8(0);
        return Ok(());
    };
    w.u8(1);
    w.u64(0); // the token, once the row is decoded
    w.bytes(key);
    let count_at = w.buf.len();
    w.u16(0);
    let (range, max) = select.bounds();
    // A row keeps the table's newest max_versions versions; after ALTER TABLE lowered it, older
    // ones stay stored until the row's next write but are not read.
    let kept = schema.options().max_versions as usize;
    let (mut seen, mut picked) = (0usize, 0usize);
    let mut fields = Ok(());
    let token = for_each_version(schema, stored, |v| {
        seen += 1;
        if fields.is_err() || picked == max || seen > kept || !v.is_readable(range, now_ms) {
            return;
        }
        picked += 1;
        w.u64(v.version);
        w.u64(v.expiry_ms);
        fields = encode_stored_fields(w, schema, key_values, v.row);
    })?;
    fields?;
    if picked == 0 {
        w.buf.truncate(start);
        w.u8(0);
        return Ok(());
    }
    w.buf[start + 1..start + 9].copy_from_slice(&token.to_le_bytes());
    w.buf[count_at..count_at + 2].copy_from_slice(&(picked as u16).to_le_bytes());
    Ok(())
}

/// One value per schema field, in schema order: key fields from `key_values`, the others from
/// the stored row value `row`.
fn encode_stored_fields(
    w: &mut Writer,
    schema: &TableSchema,
    key_values: &[Option<ValueRef<'_>>],
    row: &[u8],
) -> TableResult<()> {
    let key_value = |field: usize| {
        let position = schema.primary_key().iter().position(|k| k.field == field);
        position.and_then(|p| key_values.get(p).copied().flatten()).unwrap_or(ValueRef::Null)
    };
    // Non-key fields arrive in field order; the key fields before each are written first.
    let mut next = 0;
    visit_row(schema, row, |index, value| {
        while next < index {
            w.value(&key_value(next));
            next += 1;
        }
        w.value(&value);
        next = index + 1;
    })?;
    while next < schema.fields().len() {
        w.value(&key_value(next));
        next += 1;
    }
    Ok(())
}

fn encode_resume(w: &mut Writer, resume: Option<&[u8]>) {
    match resume {
        None => w.u8(0),
        Some(token) => {
            w.u8(1);
            w.bytes(token);
        }
    }
}

/// A MultiGet or Scan response: columns, row count, rows, resume.
pub fn encode_page(w: &mut Writer, schema: &TableSchema, rows: &[TableRow], resume: Option<&[u8]>) {
    encode_columns(w, schema);
    w.u32(rows.len() as u32);
    for row in rows {
        encode_row(w, row);
    }
    encode_resume(w, resume);
}

/// An IndexQuery response: columns, entry count, per entry its values, row key and row (if
/// any), resume.
pub fn encode_index_page(
    w: &mut Writer,
    schema: &TableSchema,
    hits: &[IndexHit],
    resume: Option<&[u8]>,
) {
    encode_columns(w, schema);
    w.u32(hits.len() as u32);
    for hit in hits {
        assert!(hit.values.len() <= INDEX_FIELDS_MAX, "an entry has one value per index field");
        w.u8(hit.values.len() as u8);
        for value in &hit.values {
            w.value(&value_ref(value.as_ref()));
        }
        w.bytes(&hit.row_key);
        match &hit.row {
            None => w.u8(0),
            Some(row) => {
                w.u8(1);
                encode_row(w, row);
            }
        }
    }
    encode_resume(w, resume);
}

/// Bytes `hit` takes in an IndexQuery response (what [`encode_index_page`] writes for it).
pub fn index_hit_wire_bytes(hit: &IndexHit) -> usize {
    let values: usize = hit.values.iter().map(value_wire_bytes).sum();
    1 + values + 4 + hit.row_key.len() + 1 + hit.row.as_ref().map_or(0, row_wire_bytes)
}

pub fn encode_multi_delete(w: &mut Writer, outcome: &MultiDeleteOutcome) {
    w.u32(outcome.deleted as u32);
    encode_resume(w, outcome.resume.as_deref());
}

pub fn encode_write(w: &mut Writer, schema: &TableSchema, outcome: &WriteOutcome) {
    match outcome {
        WriteOutcome::Written { token, version } => {
            w.u8(0);
            w.u64(token.0);
            w.u64(*version);
        }
        WriteOutcome::Deleted { existed } => {
            w.u8(1);
            w.u8(u8::from(*existed));
        }
        WriteOutcome::ConditionFailed { current: None } => {
            w.u8(2);
            w.u8(0);
        }
        WriteOutcome::ConditionFailed { current: Some(c) } => {
            w.u8(2);
            w.u8(1);
            w.u64(c.token.0);
            w.u64(c.version);
            match &c.row {
                None => w.u8(0),
                Some(row) => {
                    w.u8(1);
                    encode_columns(w, schema);
                    encode_row(w, row);
                }
            }
        }
    }
}

pub fn encode_execute(w: &mut Writer, schema: &TableSchema, outcome: &ExecuteOutcome) {
    match outcome {
        ExecuteOutcome::Done(outcomes) => {
            w.u8(0);
            w.u16(outcomes.len() as u16);
            for o in outcomes {
                encode_write(w, schema, o);
            }
        }
        ExecuteOutcome::Aborted { index, outcome } => {
            w.u8(1);
            w.u16(*index as u16);
            encode_write(w, schema, outcome);
        }
    }
}

// ---- decoding (client side) ----

fn bad(at: usize, what: &'static str, value: u64) -> WireError {
    WireError::BadEnum { at, what, value }
}

/// Reads a body completely with `f`.
fn whole<'a, T>(body: &'a [u8], f: impl FnOnce(&mut Reader<'a>) -> WireResult<T>) -> WireResult<T> {
    let mut r = Reader::new(body);
    let out = f(&mut r)?;
    r.finish()?;
    Ok(out)
}

pub fn decode_topology(body: &[u8]) -> WireResult<Topology> {
    whole(body, |r| {
        let shards = usize::from(r.u16("shard count")?);
        let shard = r.u16("shard")?;
        let shared_port = r.u16("shared port")?;
        let mut shard_ports = Vec::with_capacity(shards.min(r.left() / 2));
        for _ in 0..shards {
            shard_ports.push(r.u16("shard port")?);
        }
        let partitions = r.u32("partition count")? as usize;
        let mut partition_owners = Vec::with_capacity(partitions.min(r.left() / 2));
        for _ in 0..partitions {
            partition_owners.push(r.u16("partition owner")?);
        }
        Ok(Topology { shard, shared_port, shard_ports, partition_owners })
    })
}

pub fn decode_stats(body: &[u8]) -> WireResult<Vec<ShardStats>> {
    whole(body, |r| {
        let shards = usize::from(r.u16("shard count")?);
        let mut out = Vec::with_capacity(shards.min(r.left() / 4));
        for _ in 0..shards {
            let shard = r.u16("shard")?;
            let count = usize::from(r.u16("stat count")?);
            let mut values = Vec::with_capacity(count.min(r.left() / 9));
            for _ in 0..count {
                values.push((r.name("stat name")?.to_owned(), r.u64("stat value")?));
            }
            out.push(ShardStats { shard, values });
        }
        Ok(out)
    })
}

fn table_record(r: &mut Reader<'_>) -> WireResult<CatalogTable> {
    let at = r.position();
    let bytes = r.bytes("table record")?;
    decode_table_record(bytes).map_err(|_| bad(at, "table record", bytes.len() as u64))
}

/// DDL outcomes 7 to 9: an index statement's table and index ids (and 7's state).
fn index_outcome(r: &mut Reader<'_>, at: usize, kind: u8) -> WireResult<Outcome> {
    use ringstore_model::table::{IndexId, IndexState, TableId};
    let table = TableId(r.u32("table id")?);
    let index = IndexId(r.u32("index id")?);
    Ok(match kind {
        7 => {
            let tag_at = r.position();
            let tag = r.u8("index state")?;
            let state =
                IndexState::from_tag(tag).ok_or_else(|| bad(tag_at, "index state", tag.into()))?;
            Outcome::IndexCreated { table, index, state }
        }
        8 => Outcome::IndexAlreadyExists { table, index },
        9 => Outcome::IndexDropped { table, index },
        other => return Err(bad(at, "DDL outcome", u64::from(other))),
    })
}

pub fn decode_ddl(body: &[u8]) -> WireResult<Vec<Outcome>> {
    whole(body, |r| {
        let count = usize::from(r.u16("outcome count")?);
        let mut out = Vec::with_capacity(count.min(r.left()));
        for _ in 0..count {
            let at = r.position();
            let kind = r.u8("outcome")?;
            out.push(match kind {
                0 => Outcome::Created { id: ringstore_model::table::TableId(r.u32("id")?) },
                1 => Outcome::AlreadyExists { id: ringstore_model::table::TableId(r.u32("id")?) },
                2 => Outcome::Dropped { id: ringstore_model::table::TableId(r.u32("id")?) },
                3 => Outcome::NothingDropped,
                4 => Outcome::Described(table_record(r)?),
                5 => {
                    let n = r.u32("table count")? as usize;
                    let mut names = Vec::with_capacity(n.min(r.left()));
                    for _ in 0..n {
                        let at = r.position();
                        let name = r.name("table name")?;
                        names.push(Name::new(name).map_err(|_| bad(at, "table name", 0))?);
                    }
                    Outcome::Tables(names)
                }
                6 => Outcome::Altered { id: ringstore_model::table::TableId(r.u32("id")?) },
                7..=9 => index_outcome(r, at, kind)?,
                10 => Outcome::NoIndexDropped,
                11 => Outcome::Indexes(table_record(r)?),
                other => return Err(bad(at, "DDL outcome", u64::from(other))),
            });
        }
        Ok(out)
    })
}

pub fn decode_describe(body: &[u8]) -> WireResult<CatalogTable> {
    whole(body, table_record)
}

fn columns(r: &mut Reader<'_>) -> WireResult<Vec<String>> {
    let count = usize::from(r.u16("column count")?);
    let mut out = Vec::with_capacity(count.min(r.left()));
    for _ in 0..count {
        out.push(r.name("column")?.to_owned());
    }
    Ok(out)
}

fn row(r: &mut Reader<'_>, columns: usize) -> WireResult<TableRow> {
    let token = RowToken(r.u64("row token")?);
    let key = r.bytes("row key")?.to_vec();
    let count = usize::from(r.u16("version count")?);
    let mut versions = Vec::with_capacity(count.min(r.left() / 16));
    for _ in 0..count {
        let version = r.u64("version")?;
        let expiry_ms = r.u64("expiry")?;
        let mut fields = Vec::with_capacity(columns.min(r.left()));
        for _ in 0..columns {
            fields.push(r.value()?.to_value());
        }
        versions.push(RowVersion { version, expiry_ms, fields });
    }
    Ok(TableRow { token, versions, key })
}

fn resume(r: &mut Reader<'_>) -> WireResult<Option<Vec<u8>>> {
    let at = r.position();
    match r.u8("resume flag")? {
        0 => Ok(None),
        1 => Ok(Some(r.bytes("resume token")?.to_vec())),
        other => Err(bad(at, "resume flag", u64::from(other))),
    }
}

fn flag(r: &mut Reader<'_>, what: &'static str) -> WireResult<bool> {
    let at = r.position();
    match r.u8(what)? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(bad(at, what, u64::from(other))),
    }
}

/// A Get response: the columns and the row, if any.
pub fn decode_get(body: &[u8]) -> WireResult<(Vec<String>, Option<TableRow>)> {
    whole(body, |r| {
        let columns = columns(r)?;
        let found = flag(r, "found flag")?;
        let row = if found { Some(row(r, columns.len())?) } else { None };
        Ok((columns, row))
    })
}

pub fn decode_page(body: &[u8]) -> WireResult<Rows> {
    whole(body, |r| {
        let columns = columns(r)?;
        let at = r.position();
        let count = r.u32("row count")? as usize;
        if count > PAGE_ROWS_MAX {
            return Err(bad(at, "row count", count as u64));
        }
        let mut rows = Vec::with_capacity(count.min(r.left() / 14));
        for _ in 0..count {
            rows.push(row(r, columns.len())?);
        }
        let resume = resume(r)?;
        Ok(Rows { columns, page: RowPage { rows, resume } })
    })
}

/// An IndexQuery response. Counts are bounded: at most [`PAGE_ROWS_MAX`] entries, at most
/// [`INDEX_FIELDS_MAX`] values each.
pub fn decode_index_page(body: &[u8]) -> WireResult<IndexRows> {
    whole(body, |r| {
        let columns = columns(r)?;
        let at = r.position();
        let count = r.u32("entry count")? as usize;
        if count > PAGE_ROWS_MAX {
            return Err(bad(at, "entry count", count as u64));
        }
        // An entry takes at least 6 bytes (a value count, an empty key, the row flag).
        let mut hits = Vec::with_capacity(count.min(r.left() / 6));
        for _ in 0..count {
            hits.push(index_row(r, columns.len())?);
        }
        Ok(IndexRows { columns, hits, resume: resume(r)? })
    })
}

fn index_row(r: &mut Reader<'_>, columns: usize) -> WireResult<IndexRow> {
    let at = r.position();
    let count = usize::from(r.u8("index value count")?);
    if count > INDEX_FIELDS_MAX {
        return Err(WireError::TooManyIndexValues { at, count });
    }
    let mut values = Vec::with_capacity(count);
    for _ in 0..count {
        values.push(r.value()?.to_value());
    }
    let row_key = r.bytes("row key")?.to_vec();
    let row = if flag(r, "row flag")? { Some(row(r, columns)?) } else { None };
    Ok(IndexRow { values, row_key, row })
}

pub fn decode_multi_delete(body: &[u8]) -> WireResult<MultiDeleteOutcome> {
    whole(body, |r| {
        Ok(MultiDeleteOutcome { deleted: r.u32("deleted")? as usize, resume: resume(r)? })
    })
}

fn write_outcome(r: &mut Reader<'_>) -> WireResult<WriteOutcome> {
    let at = r.position();
    Ok(match r.u8("write outcome")? {
        0 => WriteOutcome::Written { token: RowToken(r.u64("token")?), version: r.u64("version")? },
        1 => WriteOutcome::Deleted { existed: flag(r, "existed flag")? },
        2 => {
            let current = if flag(r, "current flag")? {
                let token = RowToken(r.u64("token")?);
                let version = r.u64("version")?;
                let row = if flag(r, "row flag")? {
                    let columns = columns(r)?;
                    Some(row(r, columns.len())?)
                } else {
                    None
                };
                Some(CurrentRow { token, version, row })
            } else {
                None
            };
            WriteOutcome::ConditionFailed { current }
        }
        other => return Err(bad(at, "write outcome", u64::from(other))),
    })
}

pub fn decode_write(body: &[u8]) -> WireResult<WriteOutcome> {
    whole(body, write_outcome)
}

pub fn decode_execute(body: &[u8]) -> WireResult<ExecuteOutcome> {
    whole(body, |r| {
        let at = r.position();
        Ok(match r.u8("execute outcome")? {
            0 => {
                let n = usize::from(r.u16("outcome count")?);
                let mut outcomes = Vec::with_capacity(n.min(r.left() / 2));
                for _ in 0..n {
                    outcomes.push(write_outcome(r)?);
                }
                ExecuteOutcome::Done(outcomes)
            }
            1 => ExecuteOutcome::Aborted {
                index: usize::from(r.u16("index")?),
                outcome: write_outcome(r)?,
            },
            other => return Err(bad(at, "execute outcome", u64::from(other))),
        })
    })
}

/// The message of an error response (invalid UTF-8 is replaced, never refused: the code is what
/// matters).
pub fn decode_error(code: u16, body: &[u8]) -> ErrorReply {
    ErrorReply { code, message: String::from_utf8_lossy(body).into_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringstore_model::table::stored_row::{StoredRow, StoredVersion};
    use ringstore_model::table::{encode_row as encode_row_value, TableId};

    /// A Get response encoded from stored bytes is byte for byte the response encoded from the
    /// row the table layer decodes: key fields between non-key fields, NULLs, an expired version
    /// skipped, the version limit, a range that picks nothing.
    #[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
    #[test]
    fn get_from_stored_bytes_matches_get_from_a_row() {
        let schema = TableSchema::builder(TableId(4), "m")
            .field("a", FieldType::Long)
            .field("k1", FieldType::String)
            .field("b", FieldType::String)
            .field("k2", FieldType::Long)
            .field("c", FieldType::Binary)
            .primary_key(&["k1", "k2"])
            .max_versions(3)
            .build()
            .expect("valid schema");
        let versions = [
            (30u64, 0u64, [Some(1i64), None]),
            (20, 25, [Some(2), None]),
            (10, 0, [None, Some(3)]),
        ];
        let stored = StoredRow {
            token: 77,
            versions: versions
                .iter()
                .map(|(version, expiry_ms, v)| {
                    let values = [
                        v[0].map(Value::Long),
                        Some(Value::String(format!("s{version}"))),
                        v[1].map(|x| Value::Binary(vec![x as u8; 3])),
                    ];
                    let row = encode_row_value(&schema, 1, &values).expect("row encodes");
                    StoredVersion { version: *version, expiry_ms: *expiry_ms, row }
                })
                .collect(),
        }
        .encode();
        let key_values = [Some(ValueRef::String("kk")), Some(ValueRef::Long(9))];
        let key = b"stored-key";
        let now = 26; // the version 20 expired at 25
        let row_of = |picked: &[usize]| TableRow {
            token: RowToken(77),
            key: key.to_vec(),
            versions: picked
                .iter()
                .map(|&i| {
                    let (version, expiry_ms, v) = versions[i];
                    RowVersion {
                        version,
                        expiry_ms,
                        fields: vec![
                            v[0].map(Value::Long),
                            Some(Value::String("kk".into())),
                            Some(Value::String(format!("s{version}"))),
                            Some(Value::Long(9)),
                            v[1].map(|x| Value::Binary(vec![x as u8; 3])),
                        ],
                    }
                })
                .collect(),
        };
        let cases: [(VersionSelect, &[usize]); 4] = [
            (VersionSelect::Newest, &[0]),
            (VersionSelect::Latest(5), &[0, 2]),
            (VersionSelect::Range { from: 5, to: 30, max: 5 }, &[2]),
            (VersionSelect::Range { from: 21, to: 29, max: 5 }, &[]),
        ];
        for (select, picked) in cases {
            let mut expected = Writer::default();
            let row = (!picked.is_empty()).then(|| row_of(picked));
            encode_get(&mut expected, &schema, row.as_ref());
            let mut got = Writer::default();
            encode_get_stored(&mut got, &schema, key, &key_values, Some(&stored), select, now)
                .expect("stored row encodes");
            assert_eq!(got.buf, expected.buf, "{select:?}");
            let bound = get_stored_bound(&schema, key, &key_values, stored.len(), select);
            assert!(got.buf.len() <= bound, "{select:?}: {} > bound {bound}", got.buf.len());
        }
        // After ALTER TABLE lowered max_versions to 2, the third stored version is not read,
        // though the row still holds it until its next write.
        let mut options = *schema.options();
        options.max_versions = 2;
        let two = schema.rebuilt(schema.id(), options).expect("valid options");
        let (mut expected, mut got) = (Writer::default(), Writer::default());
        encode_get(&mut expected, &two, Some(&row_of(&[0])));
        let latest = VersionSelect::Latest(5);
        encode_get_stored(&mut got, &two, key, &key_values, Some(&stored), latest, now)
            .expect("stored row encodes");
        assert_eq!(got.buf, expected.buf, "versions past max_versions are not read");

        let (mut expected, mut got) = (Writer::default(), Writer::default());
        encode_get(&mut expected, &schema, None);
        encode_get_stored(&mut got, &schema, key, &key_values, None, VersionSelect::Newest, now)
            .expect("no row encodes");
        assert_eq!(got.buf, expected.buf, "no row");
        let corrupt = &stored[..stored.len() - 1];
        let result = encode_get_stored(
            &mut got,
            &schema,
            key,
            &key_values,
            Some(corrupt),
            VersionSelect::Newest,
            now,
        );
        assert!(result.is_err(), "a damaged stored row is an error, not a response");
    }

    /// The reply bound covers the forms that grow most on the wire: an ENUM stored as a number
    /// sent as its longest symbol, absent fields sent as NULL, every kept version picked.
    #[test]
    fn the_get_reply_bound_covers_the_widest_wire_forms() {
        let long = "a_symbol_much_longer_than_its_stored_number".to_string();
        let schema = TableSchema::builder(TableId(5), "w")
            .field("k", FieldType::Integer)
            .field("e", FieldType::Enum(vec!["x".into(), long.clone()]))
            .field("n", FieldType::Integer)
            .field("s", FieldType::String)
            .field("t", FieldType::Boolean)
            .primary_key(&["k"])
            .max_versions(4)
            .build()
            .expect("valid schema");
        let versions = (1..=4u64)
            .rev()
            .map(|version| {
                let values = if version == 1 {
                    vec![None, None, None, None]
                } else {
                    vec![
                        Some(Value::Enum(long.clone())),
                        Some(Value::Integer(-1)),
                        Some(Value::String(String::new())),
                        Some(Value::Boolean(true)),
                    ]
                };
                let row = encode_row_value(&schema, 1, &values).expect("row encodes");
                StoredVersion { version, expiry_ms: 0, row }
            })
            .collect();
        let stored = StoredRow { token: 5, versions }.encode();
        let key_values = [Some(ValueRef::Integer(7))];
        let key = b"k7";
        for select in [VersionSelect::Newest, VersionSelect::Latest(4)] {
            let mut got = Writer::default();
            encode_get_stored(&mut got, &schema, key, &key_values, Some(&stored), select, 1)
                .expect("stored row encodes");
            let bound = get_stored_bound(&schema, key, &key_values, stored.len(), select);
            assert!(got.buf.len() <= bound, "{select:?}: {} > bound {bound}", got.buf.len());
            assert!(bound < 2 * got.buf.len() + 256, "{select:?}: bound {bound} is not near it");
        }
    }

    fn schema() -> TableSchema {
        TableSchema::builder(TableId(3), "t")
            .field("id", FieldType::Long)
            .field("name", FieldType::String)
            .primary_key(&["id"])
            .build()
            .expect("valid schema")
    }

    fn sample_row() -> TableRow {
        TableRow {
            token: RowToken(77),
            key: vec![1, 2, 3],
            versions: vec![
                RowVersion {
                    version: 10,
                    expiry_ms: 0,
                    fields: vec![Some(Value::Long(1)), Some(Value::String("a".into()))],
                },
                RowVersion { version: 9, expiry_ms: 99, fields: vec![Some(Value::Long(1)), None] },
            ],
        }
    }

    fn all_cuts_fail<T: std::fmt::Debug>(buf: &[u8], decode: impl Fn(&[u8]) -> WireResult<T>) {
        for cut in 0..buf.len() {
            assert!(decode(&buf[..cut]).is_err(), "cut at {cut} decoded");
        }
    }

    #[test]
    fn rows_round_trip() {
        let s = schema();
        let mut w = Writer::default();
        encode_get(&mut w, &s, Some(&sample_row()));
        let (columns, row) = decode_get(&w.buf).expect("decodes");
        assert_eq!(columns, ["id", "name"]);
        assert_eq!(row, Some(sample_row()));
        all_cuts_fail(&w.buf, decode_get);

        let mut w = Writer::default();
        encode_row(&mut w, &sample_row());
        assert_eq!(row_wire_bytes(&sample_row()), w.buf.len());

        let mut w = Writer::default();
        encode_page(&mut w, &s, &[sample_row(), sample_row()], Some(b"next"));
        let rows = decode_page(&w.buf).expect("decodes");
        assert_eq!(rows.page.rows.len(), 2);
        assert_eq!(rows.page.resume.as_deref(), Some(&b"next"[..]));
        all_cuts_fail(&w.buf, decode_page);
    }

    /// An index page round-trips (with and without rows, NULL values), each entry's wire size
    /// is what the encoder writes, and every truncation fails.
    #[test]
    fn index_pages_round_trip() {
        let s = schema();
        let hits = [
            IndexHit {
                entry: vec![0, 0, 0, 9, 1],
                values: vec![Some(Value::String("Oslo".into())), None],
                row_key: vec![1, 2, 3],
                row: Some(sample_row()),
            },
            IndexHit { entry: vec![], values: vec![None], row_key: vec![4], row: None },
        ];
        let mut w = Writer::default();
        encode_index_page(&mut w, &s, &hits, Some(b"next"));
        let page = decode_index_page(&w.buf).expect("decodes");
        assert_eq!(page.columns, ["id", "name"]);
        let got: Vec<_> = page.hits.iter().map(|h| (&h.values, &h.row_key, &h.row)).collect();
        let want: Vec<_> = hits.iter().map(|h| (&h.values, &h.row_key, &h.row)).collect();
        assert_eq!(got, want);
        assert_eq!(page.resume.as_deref(), Some(&b"next"[..]));
        all_cuts_fail(&w.buf, decode_index_page);
        let mut one = Writer::default();
        encode_index_page(&mut one, &s, &hits[..1], None);
        let mut none = Writer::default();
        encode_index_page(&mut none, &s, &[], None);
        assert_eq!(one.buf.len() - none.buf.len(), index_hit_wire_bytes(&hits[0]));
    }

    #[test]
    fn outcomes_round_trip() {
        let s = schema();
        let outcomes = [
            WriteOutcome::Written { token: RowToken(5), version: 6 },
            WriteOutcome::Deleted { existed: true },
            WriteOutcome::ConditionFailed { current: None },
            WriteOutcome::ConditionFailed {
                current: Some(CurrentRow {
                    token: RowToken(8),
                    version: 9,
                    row: Some(sample_row()),
                }),
            },
        ];
        for o in &outcomes {
            let mut w = Writer::default();
            encode_write(&mut w, &s, o);
            assert_eq!(&decode_write(&w.buf).expect("decodes"), o);
            all_cuts_fail(&w.buf, decode_write);
        }
        let done = ExecuteOutcome::Done(outcomes.to_vec());
        let aborted = ExecuteOutcome::Aborted { index: 2, outcome: outcomes[2].clone() };
        for o in [done, aborted] {
            let mut w = Writer::default();
            encode_execute(&mut w, &s, &o);
            assert_eq!(decode_execute(&w.buf).expect("decodes"), o);
        }
        let md = MultiDeleteOutcome { deleted: 4, resume: Some(vec![9]) };
        let mut w = Writer::default();
        encode_multi_delete(&mut w, &md);
        assert_eq!(decode_multi_delete(&w.buf).expect("decodes"), md);
    }

    #[test]
    fn topology_stats_and_ddl_round_trip() {
        let t = Topology {
            shard: 1,
            shared_port: 7000,
            shard_ports: vec![7001, 7002],
            partition_owners: vec![0, 1, 0, 1],
        };
        let mut w = Writer::default();
        encode_topology(&mut w, &t);
        assert_eq!(decode_topology(&w.buf).expect("decodes"), t);
        all_cuts_fail(&w.buf, decode_topology);

        let stats = vec![ShardStats { shard: 0, values: vec![("ops_get".into(), 12)] }];
        let mut w = Writer::default();
        encode_stats(&mut w, &stats);
        assert_eq!(decode_stats(&w.buf).expect("decodes"), stats);

        let table = CatalogTable::new(schema(), 1);
        let outcomes = vec![
            Outcome::Created { id: TableId(3) },
            Outcome::AlreadyExists { id: TableId(3) },
            Outcome::Dropped { id: TableId(3) },
            Outcome::NothingDropped,
            Outcome::Described(table.clone()),
            Outcome::Tables(vec![Name::new("t").expect("valid name")]),
            Outcome::Altered { id: TableId(3) },
            Outcome::IndexCreated {
                table: TableId(3),
                index: ringstore_model::table::IndexId(4),
                state: ringstore_model::table::IndexState::Building,
            },
            Outcome::IndexAlreadyExists {
                table: TableId(3),
                index: ringstore_model::table::IndexId(4),
            },
            Outcome::IndexDropped { table: TableId(3), index: ringstore_model::table::IndexId(4) },
            Outcome::NoIndexDropped,
            Outcome::Indexes(table.clone()),
        ];
        let mut w = Writer::default();
        encode_ddl(&mut w, &outcomes);
        assert_eq!(decode_ddl(&w.buf).expect("decodes"), outcomes);
        all_cuts_fail(&w.buf, decode_ddl);

        let mut w = Writer::default();
        encode_describe(&mut w, &table);
        assert_eq!(decode_describe(&w.buf).expect("decodes"), table);
    }
}
