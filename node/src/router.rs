//! Routing: which shard answers a request.
//!
//! A data request whose key gives the whole shard key belongs to the partition that key hashes to
//! (`ringstore_net::route`); the partition map names the owning shard. The receiving shard runs
//! it if it owns the partition and forwards it over the mesh otherwise. Requests that touch every
//! shard (Stats, scans without a full shard key) are coordinated by the receiving shard; DDL is
//! always coordinated by shard 0, so that every shard applies DDL in the same order and table ids
//! agree. Anything the table layer will refuse (unknown table, a key that does not cover the
//! shard key, a mistyped key value) runs locally, where the table layer gives the error.

use ringstore_net::request::{Request, WriteBody};
use ringstore_net::route::partition_of_fields;
use ringstore_net::FieldList;

use crate::shard::Shard;

/// The shard that orders DDL.
pub const DDL_COORDINATOR: usize = 0;

/// Where a request runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// On the receiving shard.
    Local,
    /// On this shard, which owns the request's partition (or coordinates DDL).
    Forward(usize),
    /// Coordinated by the receiving shard across every shard.
    FanOut,
}

/// Decides where `req`, received by `shard`, runs. A request another shard `forwarded` here
/// runs here: this shard owns its partition, or is the DDL coordinator.
pub fn route(shard: &Shard, req: &Request<'_>, forwarded: bool) -> Route {
    if forwarded {
        return match req {
            Request::Ddl { .. } => Route::FanOut,
            _ => Route::Local,
        };
    }
    match req {
        Request::Ping | Request::Hello | Request::Describe { .. } => Route::Local,
        Request::Stats => Route::FanOut,
        Request::Ddl { .. } => {
            if shard.id == DDL_COORDINATOR {
                Route::FanOut
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
            None if shard.tables.table(table).is_ok() => Route::FanOut,
            None => Route::Local,
        },
    }
}

/// The route of a key that covers the shard key; None when it does not (or the table or a value
/// is wrong, which the table layer reports).
fn by_key(shard: &Shard, table: &str, key: FieldList<'_>) -> Option<Route> {
    let t = shard.tables.table(table).ok()?;
    let partition = partition_of_fields(t.schema(), key, shard.partitions()).ok()??;
    let owner = shard.owner(partition);
    Some(if owner == shard.id { Route::Local } else { Route::Forward(owner) })
}
