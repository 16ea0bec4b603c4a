//! Routing: which shard answers a request.
//!
//! A data request whose key gives the whole shard key belongs to the partition that key hashes to
//! (`ringstore_net::route`); the partition map names the owning shard. The receiving shard runs
//! it if it owns the partition and forwards it over the mesh otherwise. Requests that touch every
//! shard (Stats, scans without a full shard key) are coordinated by the receiving shard; DDL is
//! always coordinated by shard 0, so that every shard applies DDL in the same order and table ids
//! agree. Anything the table layer will refuse (unknown table, a key that does not cover the
//! shard key, a mistyped key value) runs locally, where the table layer gives the error.

use ringstore_net::request::{RangeBody, Request, WriteBody};
use ringstore_net::route::partition_of_fields;
use ringstore_net::FieldList;

use crate::shard::Shard;

/// The shard that orders DDL.
pub const DDL_COORDINATOR: usize = 0;

/// Where a request runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Route<'r> {
    /// On the receiving shard.
    Local,
    /// On the shard in the variant, which owns the request's partition (or coordinates DDL:
    /// shard 0); the receiving shard sends it there over the mesh (`forward.rs`).
    Forward(usize),
    /// Coordinated by the receiving shard across every shard (`fanout.rs`).
    FanOut(FanOutKind<'r>),
    /// Forwarded here, but by this shard's catalog the key's partition belongs to shard `owner`:
    /// the two shards routed with different schemas (a DROP + CREATE that changed the shard key
    /// was being applied). Refused with 724, never run on a shard that does not own the row.
    NotOwner(usize),
}

/// The requests that are coordinated across every shard, with what `fanout.rs` needs of each:
/// naming them here lets the coordinator match only these, so a new request kind cannot reach
/// it by mistake.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FanOutKind<'r> {
    /// Every shard's statistics.
    Stats,
    /// DDL text, applied on every shard in the order shard 0 gives.
    Ddl { text: &'r str },
    /// A scan without a whole shard key: every shard's rows in turn.
    Scan { table: &'r str, range: RangeBody<'r> },
}

/// Decides where `req`, received by `shard`, runs. A request another shard `forwarded` here
/// runs here: this shard owns its partition, or is the DDL coordinator.
pub fn route<'r>(shard: &Shard, req: &'r Request<'r>, forwarded: bool) -> Route<'r> {
    if forwarded {
        return match req {
            Request::Ddl { text } => Route::FanOut(FanOutKind::Ddl { text }),
            Request::IndexQuery { .. } => Route::Local,
            _ => check_forwarded(keyed(req).and_then(|(table, key)| by_key(shard, table, key))),
        };
    }
    match req {
        // An index query's entries lie on every shard: the receiving shard asks them all
        // (`index_query.rs`), wherever the query arrived.
        Request::Ping | Request::Hello | Request::Describe { .. } | Request::IndexQuery { .. } => {
            Route::Local
        }
        Request::Stats => Route::FanOut(FanOutKind::Stats),
        Request::Ddl { text } => {
            if shard.id == DDL_COORDINATOR {
                Route::FanOut(FanOutKind::Ddl { text })
            } else {
                Route::Forward(DDL_COORDINATOR)
            }
        }
        Request::Get { table, key, .. } => by_key(shard, table, *key).unwrap_or(Route::Local),
        Request::Write { table, body, .. } => {
            by_key(shard, table, body.key()).unwrap_or(Route::Local)
        }
        Request::Execute { table, ops, .. } => match ops.first() {
            Some((body, _)) => by_key(shard, table, WriteBody::key(body)).unwrap_or(Route::Local),
            None => Route::Local,
        },
        Request::MultiGet { table, range } | Request::MultiDelete { table, range } => {
            by_key(shard, table, range.key).unwrap_or(Route::Local)
        }
        Request::Scan { table, range } => match by_key(shard, table, range.key) {
            Some(route) => route,
            None if shard.tables.table(table).is_ok() => {
                Route::FanOut(FanOutKind::Scan { table, range: *range })
            }
            None => Route::Local,
        },
    }
}

/// Where a forwarded request runs, given the route this shard's own catalog gives its key: here,
/// unless that names another owner.
fn check_forwarded(own_route: Option<Route<'_>>) -> Route<'_> {
    match own_route {
        Some(Route::Forward(owner)) => Route::NotOwner(owner),
        _ => Route::Local,
    }
}

/// The table and key of a request that is routed by its key.
fn keyed<'a>(req: &'a Request<'a>) -> Option<(&'a str, FieldList<'a>)> {
    match req {
        Request::Get { table, key, .. } => Some((table, *key)),
        Request::Write { table, body, .. } => Some((table, body.key())),
        Request::Execute { table, ops, .. } => {
            ops.first().map(|(b, _)| (*table, WriteBody::key(b)))
        }
        Request::MultiGet { table, range }
        | Request::MultiDelete { table, range }
        | Request::Scan { table, range } => Some((table, range.key)),
        _ => None,
    }
}

/// The route of a key that covers the shard key; None when it does not (or the table or a value
/// is wrong, which the table layer reports).
fn by_key(shard: &Shard, table: &str, key: FieldList<'_>) -> Option<Route<'static>> {
    let t = shard.tables.table(table).ok()?;
    let partition = partition_of_fields(t.schema(), key, shard.partitions()).ok()??;
    let owner = shard.owner(partition);
    Some(if owner == shard.id { Route::Local } else { Route::Forward(owner) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forwarded request runs here unless this shard's own catalog says another shard owns
    /// its key, which happens only while shards route with different schemas.
    #[test]
    fn a_forwarded_request_for_another_owner_is_refused() {
        assert_eq!(check_forwarded(Some(Route::Forward(3))), Route::NotOwner(3));
        assert_eq!(check_forwarded(Some(Route::Local)), Route::Local);
        // No full shard key by this catalog (or an unknown table): the table layer reports it.
        assert_eq!(check_forwarded(None), Route::Local);
    }
}
