//! Requests coordinated across every shard by the shard that received them: Stats, DDL (always
//! on shard 0, see `router.rs`) and scans that do not give a whole shard key. (Index queries,
//! which also ask every shard, run from `table_ops.rs`: `index_query.rs`.)
//!
//! A scan that bounds the first key field is merged across the shards in key order
//! (`merged_scan.rs`). A full scan (nothing bounds the first key field; the client allowed it)
//! visits the shards in turn (0, 1, ...), each in key order (or reverse key order), until it has
//! `limit` rows: no merge, so each shard's rows are read once. Its resume token is node-level:
//! the shard to go on with (u16, little-endian) followed by that shard's own resume token (empty:
//! from that shard's first row). Clients treat tokens as opaque.

use std::rc::Rc;

use ringstore_net::{response, ErrorReply, Writer};
use ringstore_storage::table::{CatalogTable, Outcome, TableError, TableRow};

use crate::error::RequestError;
use crate::forward::ask;
use crate::mesh::ShardMsg;
use crate::router::FanOutKind;
use crate::shard::Shard;
use crate::table_ops::{self, scan_page};
use crate::{merged_scan, page_budget};

/// Bytes of the shard number at the start of a fanned-out scan's resume token.
const SCAN_TOKEN_SHARD_BYTES: usize = 2;

/// Runs a request `router.rs` fanned out and writes the response body into `out`; `body` is
/// the request's body, which a scan sends on to the other shards.
pub async fn run(
    shard: &Rc<Shard>,
    kind: FanOutKind<'_>,
    body: &[u8],
    out: &mut Writer,
) -> Result<(), RequestError> {
    match kind {
        FanOutKind::Stats => {
            let mut all = Vec::with_capacity(shard.shards());
            for s in 0..shard.shards() {
                all.push(if s == shard.id {
                    shard.stats()
                } else {
                    ask(shard, s, |reply| ShardMsg::Stats { reply }).await?
                });
            }
            response::encode_stats(out, &all);
            Ok(())
        }
        FanOutKind::Ddl { text } => {
            let outcomes = ddl(shard, text).await?;
            response::encode_ddl(out, &outcomes);
            Ok(())
        }
        FanOutKind::Scan { table, range } => {
            let t = shard.tables.table(table)?;
            let (rows, resume) = if table_ops::bounds_first_key_field(&t, &range)? {
                let (limit, reverse) = (range.limit, range.reverse);
                merged_scan::page(shard, &t, limit, range.resume, reverse, body).await?
            } else {
                scan(shard, &t, table, range.limit, range.resume, body).await?
            };
            response::encode_page(out, t.schema(), &rows, resume.as_deref());
            Ok(())
        }
    }
}

/// Applies DDL on every shard, this one (the coordinator) first, one text at a time. Every
/// shard gets the same text even when it fails here: statements apply in order until the first
/// failure, which is the same failure on every shard, so the catalogs stay equal. A shard that
/// disagrees (a disk error on one shard) is logged and reported. Shards may differ in how far
/// their index builds have got; the answer is the node's view (`merge`): an index is READY
/// only if it is READY on every shard.
async fn ddl(shard: &Rc<Shard>, text: &str) -> Result<Vec<Outcome>, RequestError> {
    let _permit = shard.ddl_lock.acquire_permit(1).await.map_err(|_| RequestError::ShuttingDown)?;
    let mut here = shard
        .tables
        .ddl(text)
        .await
        .map_err(|e| ErrorReply { code: e.code(), message: e.to_string() });
    let mut disagreement = None;
    for s in (0..shard.shards()).filter(|s| *s != shard.id) {
        // Every shard gets the text even if one cannot be reached, so one failure does not
        // keep the statement from the shards after it.
        let there = ask(shard, s, |reply| ShardMsg::Ddl { text: text.to_owned(), reply })
            .await
            .map_err(|e| e.reply())
            .and_then(|r| r);
        let same = match (&mut here, &there) {
            (Ok(a), Ok(b)) => merge(a, b),
            (Err(a), Err(b)) => a.code == b.code,
            _ => false,
        };
        if !same {
            tracing::error!(shard = s, ?here, ?there, "DDL result differs between shards");
            disagreement.get_or_insert((s, there));
        }
    }
    match (here, disagreement) {
        (Err(e), _) => Err(e.into()),
        (Ok(_), Some((s, Err(e)))) => Err(ErrorReply {
            code: e.code,
            message: format!("DDL applied on shard 0 but failed on shard {s}: {}", e.message),
        }
        .into()),
        (Ok(outcomes), _) => Ok(outcomes),
    }
}

/// Merges another shard's outcomes into `here` (the node's view of index states, see
/// `Outcome::merged_states`); false, leaving `here` alone, if they differ in anything else.
fn merge(here: &mut Vec<Outcome>, there: &[Outcome]) -> bool {
    if here.len() != there.len() {
        return false;
    }
    let merged: Option<Vec<Outcome>> =
        here.iter().zip(there).map(|(a, b)| a.merged_states(b)).collect();
    match merged {
        Some(merged) => {
            *here = merged;
            true
        }
        None => false,
    }
}

/// A fanned-out scan: the shards in turn until `limit` rows.
async fn scan(
    shard: &Rc<Shard>,
    t: &CatalogTable,
    table: &str,
    limit: u32,
    resume: Option<&[u8]>,
    body: &[u8],
) -> Result<(Vec<TableRow>, Option<Vec<u8>>), RequestError> {
    let (mut s, mut inner) = parse_token(resume, shard.shards())
        .map_err(|what| TableError::BadResumeToken { table: table.to_owned(), what })?;
    let mut rows = Vec::new();
    let mut budget = page_budget::page_budget(shard, t);
    while s < shard.shards() {
        // 0 on the first page is refused by the table layer (227), as for any scan.
        let want = limit.saturating_sub(rows.len() as u32);
        let from = inner.clone();
        let page = if s == shard.id {
            scan_page(shard, body, want, inner.as_deref()).await
        } else {
            let resume = inner.take();
            ask(shard, s, |reply| ShardMsg::ScanPage {
                body: body.to_vec(),
                limit: want,
                resume,
                reply,
            })
            .await?
        }?;
        let mut page_rows = page.rows;
        if page_budget::trim_to_budget(&mut page_rows, &mut budget, !rows.is_empty()) {
            // The response is full: go on after the last row kept (or where this shard's part
            // started, if none fit).
            let at = page_rows.last().map(|r| r.key.clone()).or(from).unwrap_or_default();
            rows.extend(page_rows);
            return Ok((rows, Some(token(s, &at))));
        }
        rows.extend(page_rows);
        if let Some(r) = page.resume {
            return Ok((rows, Some(token(s, &r))));
        }
        s += 1;
        inner = None;
        if rows.len() as u32 >= limit {
            return Ok((rows, (s < shard.shards()).then(|| token(s, &[]))));
        }
    }
    Ok((rows, None))
}

/// Where a cross-shard scan resumes: the shard, and the resume token inside that shard's part
/// (None: from its start). No token: shard 0 from the start. Refused (the reason) if the token
/// is too short for the shard number or names a shard past `shards`.
fn parse_token(
    resume: Option<&[u8]>,
    shards: usize,
) -> Result<(usize, Option<Vec<u8>>), &'static str> {
    let Some(token) = resume else { return Ok((0, None)) };
    if token.len() < SCAN_TOKEN_SHARD_BYTES {
        return Err("a scan token starts with a 2-byte shard number");
    }
    let s = usize::from(u16::from_le_bytes([token[0], token[1]]));
    if s >= shards {
        return Err("the scan token names a shard this node does not have");
    }
    let rest = &token[SCAN_TOKEN_SHARD_BYTES..];
    Ok((s, (!rest.is_empty()).then(|| rest.to_vec())))
}

/// The resume token of a cross-shard scan: the shard number (u16, little-endian), then the
/// resume token inside that shard's part (docs/PROTOCOL.md).
fn token(shard: usize, inner: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(SCAN_TOKEN_SHARD_BYTES + inner.len());
    t.extend_from_slice(&(shard as u16).to_le_bytes());
    t.extend_from_slice(inner);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_tokens_name_a_shard_and_a_place_in_it() {
        assert_eq!(parse_token(None, 2), Ok((0, None)), "no token: shard 0 from its start");
        for (shard, inner) in [(0, &b""[..]), (1, &b"k\x00\x01"[..]), (300, &b"x"[..])] {
            let t = token(shard, inner);
            let want = (shard, (!inner.is_empty()).then(|| inner.to_vec()));
            assert_eq!(parse_token(Some(&t), 301), Ok(want), "{t:?}");
        }
        assert!(parse_token(Some(&[1]), 2).unwrap_err().contains("2-byte shard number"));
        let past = token(2, b"k");
        assert!(parse_token(Some(&past), 2).unwrap_err().contains("does not have"));
    }
}
