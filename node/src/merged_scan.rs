//! A bounded scan across shards (issue 14; Lindorm's range scans): a scan that bounds the first
//! key field (a value for it, or a range on it) without giving the whole shard key can find rows
//! on every shard, in one key range. The coordinating shard runs it on every shard and merges the
//! answers in key order (reverse key order for a reverse scan), so the client sees one ordered
//! scan; only a scan that bounds no key field is a full scan (`fanout.rs`, shards in turn).
//!
//! Each page asks every shard, at once, for up to `limit` rows after the last row the previous
//! page returned. A shard whose own page was cut (it has a resume key) may hold more rows after
//! its last one, so the merged page keeps only rows up to the first such cut in scan order: every
//! shard has answered for every key before it. The page's resume token is [`MERGED_TOKEN_TAG`]
//! (u16, little-endian) followed by the stored key the next page starts after (docs/PROTOCOL.md).
//! Keys are unique across shards (a key has one partition), so "after this key" means the same on
//! every shard.
//!
//! Cost: a page reads up to `limit` rows on each shard and returns `limit`, so a bounded scan
//! reads up to shards x the rows it returns. The rows of the first cut are the ones returned.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use futures::future::try_join_all;
use ringstore_net::ErrorReply;
use ringstore_storage::table::{CatalogTable, RowPage, TableError, TableRow};

use crate::error::RequestError;
use crate::forward::ask;
use crate::merge::{merge_by, Merged};
use crate::mesh::ShardMsg;
use crate::page_budget;
use crate::shard::Shard;
use crate::table_ops::scan_page;

/// First two bytes of a merged scan's resume token: no shard has this number (`SHARDS_MAX` is
/// 1024), so it cannot be mistaken for a full scan's token, which starts with a shard number.
pub const MERGED_TOKEN_TAG: u16 = u16::MAX;

/// Bytes of the tag at the start of a merged scan's resume token.
const TAG_BYTES: usize = 2;

/// One page of a bounded scan over every shard: its rows, and the resume token when more may
/// follow. `body` is the Scan request, sent on to the other shards.
pub async fn page(
    shard: &Rc<Shard>,
    t: &CatalogTable,
    limit: u32,
    resume: Option<&[u8]>,
    reverse: bool,
    body: &[u8],
) -> Result<(Vec<TableRow>, Option<Vec<u8>>), RequestError> {
    let after = parse_token(resume)
        .map_err(|what| TableError::BadResumeToken { table: t.name().to_string(), what })?;
    let parts = shard_pages(shard, body, limit, after.as_deref()).await?;
    let Merged { mut rows, next } = merge(parts, reverse, limit as usize);
    let mut budget = page_budget::page_budget(shard, t);
    let next = if page_budget::trim_to_budget(&mut rows, &mut budget, false) {
        rows.last().map(|r| r.key.clone())
    } else {
        next
    };
    Ok((rows, next.map(|key| token(&key))))
}

/// Every shard's page after `after`, this shard's run here and the others' asked at once.
async fn shard_pages(
    shard: &Rc<Shard>,
    body: &[u8],
    limit: u32,
    after: Option<&[u8]>,
) -> Result<Vec<RowPage>, RequestError> {
    type PageFuture<'f> = Pin<Box<dyn Future<Output = Result<RowPage, RequestError>> + 'f>>;
    let asks = (0..shard.shards()).map(|s| -> PageFuture<'_> {
        if s == shard.id {
            Box::pin(async move { Ok(scan_page(shard, body, limit, after).await?) })
        } else {
            let resume = after.map(<[u8]>::to_vec);
            let body = body.to_vec();
            Box::pin(async move {
                let page: Result<RowPage, ErrorReply> =
                    ask(shard, s, |reply| ShardMsg::ScanPage { body, limit, resume, reply })
                        .await?;
                Ok(page?)
            })
        }
    });
    try_join_all(asks).await
}

/// Merges the shards' pages of rows into key order (`merge_by` on each row's stored key).
fn merge(parts: Vec<RowPage>, reverse: bool, limit: usize) -> Merged<TableRow> {
    let parts = parts.into_iter().map(|p| (p.rows, p.resume)).collect();
    merge_by(parts, |r: &TableRow| &r.key, reverse, limit)
}

/// The stored key a merged scan goes on after; None: from the start. Refused (the reason) if the
/// token is not a merged scan's.
fn parse_token(resume: Option<&[u8]>) -> Result<Option<Vec<u8>>, &'static str> {
    let Some(token) = resume else { return Ok(None) };
    match token.split_first_chunk::<TAG_BYTES>() {
        Some((tag, key)) if u16::from_le_bytes(*tag) == MERGED_TOKEN_TAG && !key.is_empty() => {
            Ok(Some(key.to_vec()))
        }
        _ => Err("a bounded scan's token is the tag 0xFFFF and the key to go on after"),
    }
}

/// The resume token of a merged scan that goes on after `key`.
fn token(key: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(TAG_BYTES + key.len());
    t.extend_from_slice(&MERGED_TOKEN_TAG.to_le_bytes());
    t.extend_from_slice(key);
    t
}

#[cfg(test)]
mod tests {
    use ringstore_storage::table::RowToken;

    use super::*;

    fn row(key: &[u8]) -> TableRow {
        TableRow { token: RowToken(1), versions: Vec::new(), key: key.to_vec() }
    }

    fn part(keys: &[&[u8]], resume: Option<&[u8]>) -> RowPage {
        RowPage { rows: keys.iter().map(|k| row(k)).collect(), resume: resume.map(<[u8]>::to_vec) }
    }

    fn keys(m: &Merged<TableRow>) -> Vec<&[u8]> {
        m.rows.iter().map(|r| r.key.as_slice()).collect()
    }

    #[test]
    fn whole_parts_merge_in_key_order_and_end_the_scan() {
        let parts = vec![part(&[b"a", b"d"], None), part(&[b"b", b"c", b"e"], None)];
        let m = merge(parts, false, 10);
        assert_eq!(keys(&m), [b"a", b"b", b"c", b"d", b"e"]);
        assert_eq!(m.next, None, "no shard has more");
        let parts = vec![part(&[b"d", b"a"], None), part(&[b"e", b"c", b"b"], None)];
        let m = merge(parts, true, 10);
        assert_eq!(keys(&m), [b"e", b"d", b"c", b"b", b"a"], "reverse: descending");
    }

    /// Rows past a shard's cut are held back: that shard may have rows before them.
    #[test]
    fn rows_after_the_first_cut_wait_for_the_next_page() {
        // Shard 0 returned a, c and was cut at c; shard 1 returned everything it has.
        let parts = vec![part(&[b"a", b"c"], Some(b"c")), part(&[b"b", b"d", b"e"], None)];
        let m = merge(parts, false, 10);
        assert_eq!(keys(&m), [b"a", b"b", b"c"]);
        assert_eq!(m.next.as_deref(), Some(&b"c"[..]), "the next page starts after c");
        // Reverse: the cut nearest the start in descending order wins.
        let parts = vec![part(&[b"e", b"c"], Some(b"c")), part(&[b"d", b"b"], Some(b"b"))];
        let m = merge(parts, true, 10);
        assert_eq!(keys(&m), [b"e", b"d", b"c"]);
        assert_eq!(m.next.as_deref(), Some(&b"c"[..]));
    }

    #[test]
    fn the_limit_cuts_the_merged_page() {
        let parts = vec![part(&[b"a", b"c"], None), part(&[b"b", b"d"], None)];
        let m = merge(parts, false, 3);
        assert_eq!(keys(&m), [b"a", b"b", b"c"]);
        assert_eq!(m.next.as_deref(), Some(&b"c"[..]));
    }

    #[test]
    fn tokens_carry_the_key_to_go_on_after() {
        assert_eq!(parse_token(None), Ok(None));
        let t = token(b"\x00\x00\x00\x07k");
        assert_eq!(parse_token(Some(&t)), Ok(Some(b"\x00\x00\x00\x07k".to_vec())));
        // A full scan's token (shard 1, then its key) and a bare tag are not a merged scan's.
        for bad in [&[1u8, 0, b'k'][..], &[0xFF, 0xFF][..], &[0xFF][..]] {
            assert!(parse_token(Some(bad)).unwrap_err().contains("0xFFFF"), "{bad:?}");
        }
    }
}
