//! Operations on the rows under a partial key: multiGet, multiDelete and scan.
//!
//! A partial key (a leading prefix of the primary key) and an optional range on the next key
//! field become one byte range of stored keys (`key/range.rs`). multiGet reads one page of it
//! through [`Store::scan`], which collects the page's index entries in one synchronous step (one
//! snapshot); multiDelete deletes the whole range with [`Store::delete_range`]: one range
//! tombstone, and every row of the range leaves the index in the same synchronous step. Both need the key to cover the shard
//! key, so the rows live in one partition of one shard. A scan may give a shorter key (or none):
//! within this shard it reads the same way, and the node fans it out to every shard; it runs only
//! when the request sets `allow_full_scan` (Lindorm's rule). Every read page ends with a resume
//! token (the last stored key) when more rows may follow; a token must lie inside the request's
//! range (a multiDelete with one deletes from it on, and never returns one).

use crate::constants::{BATCH_OPS_MAX, SCAN_LIMIT_MAX};
use crate::disk::Disk;
use crate::log::group_commit::Durability;
use crate::read::{as_ref, bounds, ScanRequest};
use crate::table::catalog::CatalogTable;
use crate::table::error::{TableError, TableResult, WHOLE_KEY_SHARD_HINT};
use crate::table::key::{key_range, partial_key_values, KeyByteRange};
use crate::table::op_error::OpResult;
use crate::table::request::*;
use crate::table::schema::TableSchema;
use crate::table::secondary_index::maintained;
use crate::table::stored_row::StoredRow;
use crate::table::table_store::TableStore;
use crate::table::write_plan::{check_select, table_row};

/// What the key of a range request must cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// multiGet and multiDelete: the whole shard key.
    OneShardKey,
    /// scan: anything, if the request allows a full scan.
    Scan,
}

impl<D: Disk> TableStore<D> {
    /// The rows under a partial key covering the shard key: one page, one snapshot.
    pub async fn multi_get(&self, table: &str, req: &RangeRequest<'_>) -> OpResult<RowPage> {
        self.read_range(table, req, Reach::OneShardKey).await
    }

    /// This shard's rows under a partial key that may be shorter than the shard key (or empty);
    /// refused unless `req.allow_full_scan` when it does not cover the shard key.
    pub async fn scan(&self, table: &str, req: &RangeRequest<'_>) -> OpResult<RowPage> {
        self.read_range(table, req, Reach::Scan).await
    }

    /// Deletes every row under a partial key covering the shard key (and inside the request's
    /// range on the next key field, after its `resume` if it has one), however many there are,
    /// atomically: one range tombstone ([`TableStore::store`]'s `delete_range`), so a reader sees
    /// all of the rows or none and after a crash all of them are gone or none. `req.limit` is
    /// still checked (1..=[`BATCH_OPS_MAX`], as when it sized a batch) but bounds nothing; the
    /// outcome's `resume` is always None. On a table with indexes the rows and their entries are
    /// one batch instead (`index_work.rs`), so the range may hold at most what fits one batch.
    pub async fn multi_delete(
        &self,
        table: &str,
        req: &RangeRequest<'_>,
        durability: Durability,
    ) -> OpResult<MultiDeleteOutcome> {
        let t = self.table(table)?;
        let range = byte_range(&t, req, Reach::OneShardKey, BATCH_OPS_MAX)?;
        if range.is_empty() {
            return Ok(MultiDeleteOutcome::default());
        }
        let request = scan_request(range, req, true);
        if maintained(&t).next().is_some() {
            return self.multi_delete_indexed(t, request, durability).await;
        }
        let (start, end) = bounds(&request);
        let report = self.store.delete_range(as_ref(&start), as_ref(&end), durability).await?;
        Ok(MultiDeleteOutcome { deleted: report.deleted, resume: None })
    }

    async fn read_range(
        &self,
        table: &str,
        req: &RangeRequest<'_>,
        reach: Reach,
    ) -> OpResult<RowPage> {
        let t = self.table(table)?;
        let schema = t.schema();
        check_select(schema, req.versions)?;
        let range = byte_range(&t, req, reach, SCAN_LIMIT_MAX)?;
        if range.is_empty() {
            return Ok(RowPage::default());
        }
        let page = self.store.scan(&scan_request(range, req, false)).await?;
        let now = self.store.now_ms();
        let mut rows = Vec::with_capacity(page.rows.len());
        for r in &page.rows {
            let stored = StoredRow::decode(schema, &r.value)?;
            rows.extend(table_row(schema, &r.key, None, &stored, req.versions, now)?);
        }
        Ok(RowPage { rows, resume: page.resume })
    }
}

/// The stored-key range of a request, after checking its key, limit and resume token.
fn byte_range(
    t: &CatalogTable,
    req: &RangeRequest<'_>,
    reach: Reach,
    limit_max: usize,
) -> TableResult<KeyByteRange> {
    let schema = t.schema();
    if req.limit == 0 || req.limit > limit_max {
        return Err(TableError::InvalidLimit {
            table: name(schema),
            limit: req.limit,
            max: limit_max,
        });
    }
    let values: Vec<_> = partial_key_values(schema, req.key)?.into_iter().cloned().collect();
    let needed = schema.shard_key_len();
    if values.len() < needed {
        let given = values.len();
        match reach {
            Reach::OneShardKey => {
                let shard_key = (0..needed)
                    .map(|p| schema.key_field(p).name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let (table, hint) = (name(schema), shard_key_hint(schema));
                return Err(TableError::ShardKeyNotCovered {
                    table,
                    given,
                    needed,
                    shard_key,
                    hint,
                });
            }
            Reach::Scan if !req.allow_full_scan && !req.bounds_first_key_field() => {
                let first = schema.key_field(0).name().to_string();
                return Err(TableError::FullScanNotAllowed { table: name(schema), first });
            }
            Reach::Scan => {}
        }
    }
    let range = key_range(schema, &values, req.range.as_ref())?;
    if let Some(resume) = &req.resume {
        if !range.contains(resume) {
            let what = "it is not a key inside the request's key range";
            return Err(TableError::BadResumeToken { table: name(schema), what });
        }
    }
    Ok(range)
}

/// [`WHOLE_KEY_SHARD_HINT`] when `schema`'s shard key is its whole primary key, else nothing.
fn shard_key_hint(schema: &TableSchema) -> &'static str {
    if schema.shard_key_len() == schema.primary_key().len() {
        WHOLE_KEY_SHARD_HINT
    } else {
        ""
    }
}

fn scan_request(range: KeyByteRange, req: &RangeRequest<'_>, keys_only: bool) -> ScanRequest {
    ScanRequest {
        range: range.into(),
        reverse: req.reverse,
        limit: req.limit,
        resume: req.resume.clone(),
        keys_only,
    }
}

fn name(schema: &TableSchema) -> String {
    schema.name().to_string()
}
