//! A query on a secondary index across shards (issue 15): an index's entries live on the shard
//! of their rows, so every shard holds some of them. The shard that received the query asks
//! every shard at once for one page of its READY index (`TableStore::index_scan`: equal values,
//! a range, forward or reverse, rows or keys only) and merges the pages in index order, reverse
//! index order for a reverse query, as a bounded scan does (`merge::merge_by`).
//!
//! Entry keys are encoded alike on every shard (the index id and the table id come from the one
//! catalog every shard applies in the same order; docs/FORMAT.md "Index entries"), and an entry
//! names its row's primary key, so entry keys are unique across shards and "after this entry"
//! means the same everywhere. A shard whose page was cut may hold more entries after its last
//! one, so the merged page keeps only entries up to the first cut in index order; the resume
//! token is the entry key the next page starts after, which every shard checks lies in the
//! query's range (223 otherwise). A shard's refusal (unknown index 505, not READY 236, a bad
//! query) is the query's answer.
//!
//! Cost: a page reads up to `limit` entries (and their rows) on each shard and returns `limit`.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use futures::future::try_join_all;
use ringstore_net::request::IndexBody;
use ringstore_net::{response, ErrorReply, Opcode, Request, Writer};
use ringstore_storage::table::{CatalogTable, FieldRange, IndexHit, IndexPage, IndexQuery};

use crate::error::RequestError;
use crate::forward::ask;
use crate::merge::{merge_by, Merged};
use crate::mesh::ShardMsg;
use crate::page_budget::{page_budget, trim_items_to_budget};
use crate::range_bound::bound;
use crate::shard::Shard;

/// Runs the index query `query` on `table` (whose request body is `body`, sent on to the other
/// shards) and writes the IndexPage response body into `out`.
pub async fn run(
    shard: &Rc<Shard>,
    table: &str,
    query: &IndexBody<'_>,
    body: &[u8],
    out: &mut Writer,
) -> Result<(), RequestError> {
    let t = shard.tables.table(table)?;
    let (hits, resume) = page(shard, &t, query, body).await?;
    response::encode_index_page(out, t.schema(), &hits, resume.as_deref());
    Ok(())
}

/// One merged page: the entries in index order that fit a response, and the resume token.
async fn page(
    shard: &Rc<Shard>,
    t: &CatalogTable,
    query: &IndexBody<'_>,
    body: &[u8],
) -> Result<(Vec<IndexHit>, Option<Vec<u8>>), RequestError> {
    let parts = shard_pages(shard, body, query.resume).await?;
    let parts = parts.into_iter().map(|p| (p.hits, p.resume)).collect();
    let Merged { rows: mut hits, next } =
        merge_by(parts, entry_key, query.reverse, query.limit as usize);
    let mut budget = page_budget(shard, t);
    let trimmed =
        trim_items_to_budget(&mut hits, &mut budget, false, response::index_hit_wire_bytes);
    let next = if trimmed { hits.last().map(|h| h.entry.clone()) } else { next };
    Ok((hits, next))
}

/// What orders hits across shards: the entry key.
fn entry_key(hit: &IndexHit) -> &[u8] {
    &hit.entry
}

/// Every shard's page after entry `after`, this shard's run here and the others' asked at once.
async fn shard_pages(
    shard: &Rc<Shard>,
    body: &[u8],
    after: Option<&[u8]>,
) -> Result<Vec<IndexPage>, RequestError> {
    type PageFuture<'f> = Pin<Box<dyn Future<Output = Result<IndexPage, RequestError>> + 'f>>;
    let asks = (0..shard.shards()).map(|s| -> PageFuture<'_> {
        if s == shard.id {
            Box::pin(async move { Ok(shard_page(shard, body, after).await?) })
        } else {
            let resume = after.map(<[u8]>::to_vec);
            let body = body.to_vec();
            Box::pin(async move {
                let page: Result<IndexPage, ErrorReply> =
                    ask(shard, s, |reply| ShardMsg::IndexPage { body, resume, reply }).await?;
                Ok(page?)
            })
        }
    });
    try_join_all(asks).await
}

/// This shard's page of the index query `body` (an IndexQuery request body), after entry
/// `after` in place of the request's own token. Asked for over the mesh (`peer.rs`) or directly
/// by the coordinating shard.
pub async fn shard_page(
    shard: &Shard,
    body: &[u8],
    after: Option<&[u8]>,
) -> Result<IndexPage, ErrorReply> {
    let run = async {
        let req = Request::decode(Opcode::IndexQuery, body)?;
        let Request::IndexQuery { table, query } = &req else {
            unreachable!("decoded as an IndexQuery");
        };
        let q = table_query(query, after);
        Ok(shard.tables.index_scan(table, query.index, &q).await?)
    };
    run.await.map_err(|e: RequestError| e.reply())
}

/// The table layer's form of a query: owned values, and the given resume position.
fn table_query(query: &IndexBody<'_>, after: Option<&[u8]>) -> IndexQuery {
    IndexQuery {
        equal: query.equal.iter().map(|v| v.to_value()).collect(),
        range: query
            .range
            .as_ref()
            .map(|(start, end)| FieldRange { start: bound(start), end: bound(end) }),
        reverse: query.reverse,
        limit: query.limit as usize,
        resume: after.map(<[u8]>::to_vec),
        keys_only: query.keys_only,
    }
}

#[cfg(test)]
mod tests {
    use ringstore_net::request::Bound;
    use ringstore_net::ValueRef;
    use ringstore_storage::table::{RangeBound, Value};

    use super::*;

    fn hit(entry: &[u8]) -> IndexHit {
        IndexHit { entry: entry.to_vec(), values: vec![], row_key: vec![], row: None }
    }

    fn entries(m: &Merged<IndexHit>) -> Vec<&[u8]> {
        m.rows.iter().map(|h| h.entry.as_slice()).collect()
    }

    /// Entries merge in entry-key order, reversed for a reverse query, and entries past the
    /// first shard page that was cut wait for the next page, which starts after that cut.
    #[test]
    fn entries_merge_in_index_order_up_to_the_first_cut() {
        let parts = vec![
            (vec![hit(b"a"), hit(b"c")], Some(b"c".to_vec())),
            (vec![hit(b"b"), hit(b"d")], None),
        ];
        let m = merge_by(parts, entry_key, false, 10);
        assert_eq!(entries(&m), [b"a", b"b", b"c"]);
        assert_eq!(m.next.as_deref(), Some(&b"c"[..]));
        let parts = vec![(vec![hit(b"e"), hit(b"c")], None), (vec![hit(b"d")], None)];
        let m = merge_by(parts, entry_key, true, 2);
        assert_eq!(entries(&m), [b"e", b"d"]);
        assert_eq!(m.next.as_deref(), Some(&b"d"[..]), "the limit cut it");
    }

    #[test]
    fn a_wire_query_becomes_the_table_layers() {
        let mut body = IndexBody::new("i", vec![ValueRef::String("x"), ValueRef::Null], 5);
        body.range = Some((None, Some(Bound { value: ValueRef::Integer(3), inclusive: true })));
        body.reverse = true;
        body.keys_only = true;
        let q = table_query(&body, Some(b"after"));
        assert_eq!(q.equal, [Some(Value::String("x".into())), None]);
        let end = Some(RangeBound { value: Value::Integer(3), inclusive: true });
        assert_eq!(q.range, Some(FieldRange { start: None, end }));
        assert_eq!((q.reverse, q.keys_only, q.limit), (true, true, 5));
        assert_eq!(q.resume.as_deref(), Some(&b"after"[..]));
    }
}
