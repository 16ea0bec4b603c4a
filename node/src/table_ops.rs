//! Runs a request on this shard's tables (the owning shard's side of a request) and encodes the
//! response body. The table layer (`storage/src/table/`) does the work: it checks the request,
//! writes through the shard's log and group commit (`storage/src/log/group_commit.rs`), and
//! returns once the write is as durable as the request asked.
//!
//! The protocol's fields lists are converted to the table layer's `(name, Value)` pairs here. A
//! NULL in a key or a row means "absent" (the table layer then names a missing key field); in an
//! update's set list it clears the field.

use std::rc::Rc;

use ringstore_net::request::{RangeBody, Request, WriteBody, WriteOptions};
use ringstore_net::{response, ErrorReply, FieldList, Opcode, Topology, Writer};
use ringstore_storage::table::{
    CatalogTable, ExecuteOptions, FieldRange, RangeRequest, RowPage, TableError, Value, WriteOp,
};
use ringstore_storage::Durability;

use crate::error::RequestError;
use crate::index_query;
use crate::page_budget::{page_budget, trim_to_budget};
use crate::range_bound::bound;
use crate::shard::Shard;

/// Runs `req` (whose body is `body`) here and writes the response body into `out`. Stats, DDL
/// and fanned-out scans are in `fanout.rs`; this covers what the receiving shard answers, alone
/// or (an index query, `index_query.rs`) by asking every shard for its entries.
pub async fn run(
    shard: &Rc<Shard>,
    req: &Request<'_>,
    body: &[u8],
    durability: Durability,
    out: &mut Writer,
) -> Result<(), RequestError> {
    let tables = &shard.tables;
    match req {
        Request::Ping => Ok(()),
        Request::Hello => {
            let topology = Topology { shard: shard.id as u16, ..shard.topology.clone() };
            response::encode_topology(out, &topology);
            Ok(())
        }
        Request::Stats => {
            response::encode_stats(out, &[shard.stats()]);
            Ok(())
        }
        Request::Ddl { text } => {
            let outcomes = tables.ddl(text).await?;
            response::encode_ddl(out, &outcomes);
            Ok(())
        }
        Request::Describe { table } => {
            response::encode_describe(out, &*tables.table(table)?);
            Ok(())
        }
        Request::Get { table, key, versions } => {
            let t = tables.table(table)?;
            let key = present(*key);
            let row = tables.get(table, &key, *versions).await?;
            response::encode_get(out, t.schema(), row.as_ref());
            Ok(())
        }
        Request::Write { table, body, options } => {
            let t = tables.table(table)?;
            let owned = OwnedWrite::of(body);
            let outcome = tables.write(table, &owned.op(options), durability).await?;
            response::encode_write(out, t.schema(), &outcome);
            Ok(())
        }
        Request::Execute { table, abort_on_failure, ops } => {
            let t = tables.table(table)?;
            let owned: Vec<OwnedWrite<'_>> = ops.iter().map(|(b, _)| OwnedWrite::of(b)).collect();
            let write_ops: Vec<WriteOp<'_>> =
                owned.iter().zip(ops).map(|(w, (_, o))| w.op(o)).collect();
            let options = ExecuteOptions { durability, abort_on_failure: *abort_on_failure };
            let outcome = tables.execute(table, &write_ops, options).await?;
            response::encode_execute(out, t.schema(), &outcome);
            Ok(())
        }
        Request::MultiGet { table, range } | Request::Scan { table, range } => {
            let t = tables.table(table)?;
            let mut page = read_page(shard, &t, range, range.limit, range.resume, req).await?;
            let mut budget = page_budget(shard, &t);
            if trim_to_budget(&mut page.rows, &mut budget, false) {
                page.resume = page.rows.last().map(|r| r.key.clone());
            }
            response::encode_page(out, t.schema(), &page.rows, page.resume.as_deref());
            Ok(())
        }
        Request::IndexQuery { table, query } => {
            index_query::run(shard, table, query, body, out).await
        }
        Request::MultiDelete { table, range } => {
            let t = tables.table(table)?;
            let key = present(range.key);
            let request = range_request(&t, &key, range, range.limit, range.resume)?;
            let outcome = tables.multi_delete(table, &request, durability).await?;
            response::encode_multi_delete(out, &outcome);
            Ok(())
        }
    }
}

/// One page of a MultiGet or of this shard's part of a Scan, with the limit and resume given
/// (a fanned-out scan replaces the request's own).
pub async fn read_page(
    shard: &Shard,
    t: &CatalogTable,
    range: &RangeBody<'_>,
    limit: u32,
    resume: Option<&[u8]>,
    req: &Request<'_>,
) -> Result<RowPage, RequestError> {
    let key = present(range.key);
    let request = range_request(t, &key, range, limit, resume)?;
    let table = t.name().as_str();
    Ok(match req {
        Request::MultiGet { .. } => shard.tables.multi_get(table, &request).await?,
        _ => shard.tables.scan(table, &request).await?,
    })
}

/// This shard's page of a fanned-out scan (`fanout.rs`): the Scan request `body` with the
/// coordinator's `limit` and this shard's own `resume` token in place of the request's. Asked
/// for over the mesh (`peer.rs`) or directly by the coordinating shard.
pub async fn scan_page(
    shard: &Shard,
    body: &[u8],
    limit: u32,
    resume: Option<&[u8]>,
) -> Result<RowPage, ErrorReply> {
    let run = async {
        let req = Request::decode(Opcode::Scan, body)?;
        let Request::Scan { table, range } = &req else {
            unreachable!("decoded as a Scan");
        };
        let t = shard.tables.table(table)?;
        read_page(shard, &t, range, limit, resume, &req).await
    };
    run.await.map_err(|e: RequestError| e.reply())
}

/// The non-NULL pairs of a key or row, owned.
pub(crate) fn present<'a>(fields: FieldList<'a>) -> Vec<(&'a str, Value)> {
    fields.iter().filter_map(|(name, v)| Some((name, v.to_value()?))).collect()
}

/// A write's fields in the table layer's owned form.
pub(crate) struct OwnedWrite<'a> {
    kind: u8,
    key_or_row: Vec<(&'a str, Value)>,
    set: Vec<(&'a str, Option<Value>)>,
}

impl<'a> OwnedWrite<'a> {
    pub(crate) fn of(body: &WriteBody<'a>) -> OwnedWrite<'a> {
        match *body {
            WriteBody::Put { row } => OwnedWrite { kind: 0, key_or_row: present(row), set: vec![] },
            WriteBody::Update { key, set } => {
                OwnedWrite { kind: 1, key_or_row: present(key), set: set.to_values() }
            }
            WriteBody::Delete { key } => {
                OwnedWrite { kind: 2, key_or_row: present(key), set: vec![] }
            }
        }
    }

    pub(crate) fn op(&self, o: &WriteOptions) -> WriteOp<'_> {
        let mut op = match self.kind {
            0 => WriteOp::put(&self.key_or_row),
            1 => WriteOp::update(&self.key_or_row, &self.set),
            _ => WriteOp::delete(&self.key_or_row),
        };
        op = op.condition(o.condition);
        if let Some(v) = o.version {
            op = op.version(v);
        }
        if let Some(ttl) = o.ttl_seconds {
            op = op.ttl_seconds(ttl);
        }
        if o.return_row {
            op = op.return_row();
        }
        op
    }
}

/// Whether the scan `range` bounds the first key field: the table layer's rule
/// ([`RangeRequest::bounds_first_key_field`]), so the node merges exactly the scans the table
/// layer runs without `allow_full_scan`.
pub fn bounds_first_key_field(
    t: &CatalogTable,
    range: &RangeBody<'_>,
) -> Result<bool, RequestError> {
    let key = present(range.key);
    Ok(range_request(t, &key, range, range.limit, None)?.bounds_first_key_field())
}

/// The table layer's range request. The wire names the range's field; it must be the key field
/// right after the partial key (the table layer knows the range only by position).
fn range_request<'a>(
    t: &CatalogTable,
    key: &'a [(&'a str, Value)],
    range: &RangeBody<'_>,
    limit: u32,
    resume: Option<&[u8]>,
) -> Result<RangeRequest<'a>, RequestError> {
    let schema = t.schema();
    let field_range = match &range.range {
        None => None,
        Some((field, start, end)) => {
            if let Some(next) = schema.primary_key().get(key.len()) {
                let expected = schema.fields()[next.field].name().as_str();
                if expected != *field {
                    return Err(TableError::RangeNotOnNextKeyField {
                        table: schema.name().to_string(),
                        field: (*field).to_owned(),
                        expected: expected.to_owned(),
                    }
                    .into());
                }
            }
            Some(FieldRange { start: bound(start), end: bound(end) })
        }
    };
    Ok(RangeRequest {
        key,
        range: field_range,
        reverse: range.reverse,
        limit: limit as usize,
        resume: resume.map(<[u8]>::to_vec),
        versions: range.versions,
        allow_full_scan: range.allow_full_scan,
    })
}
