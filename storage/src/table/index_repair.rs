//! Making every index equal to its table again after a crash (issue 15).
//!
//! While the store runs, a row and its entries change in one atomic batch, so the index always
//! equals its table. A power loss, though, may keep a later unsynced flush and lose an earlier
//! one (writes that no fsync covered reach the media in any order; the simulated disk models
//! exactly that), and index maintenance is a delta: a kept batch deletes the entry the lost
//! batch wrote, or leaves alone an entry the lost batch was to write. Rows are whole records,
//! so each row is still some version of itself; only entries can be stale or missing, and only
//! for rows written since the last sync. So an open that replayed log records (after a crash; a
//! clean close leaves nothing to replay) checks every READY index against its table before the
//! store takes requests: each row gets the entries it calls for, and each entry whose row does
//! not call for it is deleted. That costs a read of every row and entry of the tables with READY
//! indexes, at open after a crash only. A BUILDING index's build starts over instead: its
//! entries go with one range delete, and the index worker builds it again in the background, so
//! the open does not wait for a read of its table.

use crate::disk::Disk;
use crate::log::group_commit::Durability;
use crate::read::{as_ref, bounds, ScanRequest};
use crate::store::BatchOp;
use crate::table::catalog::CatalogTable;
use crate::table::index_def::{IndexDef, IndexState};
use crate::table::index_work::INDEX_BUILD_PAGE_ROWS;
use crate::table::key::{decode_index_entry, index_prefix, table_prefix};
use crate::table::op_error::OpResult;
use crate::table::secondary_index::entry_keys;
use crate::table::stored_row::StoredRow;
use crate::table::table_store::TableStore;

impl<D: Disk> TableStore<D> {
    /// After an open that replayed log records: every READY index made equal to its table and
    /// every BUILDING one emptied for its build to start over, then synced. Nothing to do after
    /// a clean close.
    pub(crate) async fn repair_indexes_after_crash(&self) -> OpResult<()> {
        if self.store.recovery_report().records_replayed == 0 {
            return Ok(());
        }
        let tables: Vec<_> = self.tables.borrow().by_id.values().cloned().collect();
        let mut repaired = false;
        for t in &tables {
            for def in t.indexes().iter().filter(|i| i.state() == IndexState::Building) {
                let prefix = index_prefix(def.id());
                let (start, end) = bounds(&ScanRequest::prefix(&prefix, 1));
                self.store.delete_range(as_ref(&start), as_ref(&end), Durability::NoSync).await?;
                repaired = true;
            }
            if ready(t).next().is_none() {
                continue;
            }
            self.add_missing_entries(t).await?;
            for def in ready(t) {
                self.remove_stale_entries(t, def).await?;
            }
            repaired = true;
        }
        if repaired {
            self.store.sync().await?;
        }
        Ok(())
    }

    /// Puts every entry a row of `t` calls for in a READY index that the store lacks (or holds with another
    /// expiry).
    async fn add_missing_entries(&self, t: &CatalogTable) -> OpResult<()> {
        let prefix = table_prefix(t.id());
        let mut request = ScanRequest::prefix(&prefix, INDEX_BUILD_PAGE_ROWS);
        let mut ops = Vec::new();
        loop {
            let page = self.store.scan(&request).await?;
            for row in &page.rows {
                let stored = StoredRow::decode(t.schema(), &row.value)?;
                let expiry_ms = stored.record_expiry_ms();
                let version = stored.versions.first().map(|v| v.version);
                // An entry the row cannot have (a value over the limits) was never written.
                for entry in entry_keys(t, ready(t), &row.key, &stored)?.into_iter().flatten() {
                    let held = self.store.get(&entry).await?;
                    if !matches!(held, Some(h) if h.expiry_ms == expiry_ms) {
                        ops.push(BatchOp::Put {
                            key: entry,
                            value: Vec::new(),
                            version,
                            expiry_ms,
                        });
                    }
                }
                self.flush_repairs(&mut ops, INDEX_BUILD_PAGE_ROWS).await?;
            }
            match page.resume {
                Some(resume) => request.resume = Some(resume),
                None => break,
            }
        }
        self.flush_repairs(&mut ops, 1).await
    }

    /// Deletes every entry of `def` that its row does not call for (the row is gone, or its
    /// values give another entry), or that does not decode.
    async fn remove_stale_entries(&self, t: &CatalogTable, def: &IndexDef) -> OpResult<()> {
        let prefix = index_prefix(def.id());
        let mut request = ScanRequest::prefix(&prefix, INDEX_BUILD_PAGE_ROWS);
        request.keys_only = true;
        let mut ops = Vec::new();
        loop {
            let page = self.store.scan(&request).await?;
            for entry in &page.rows {
                if !self.entry_is_current(t, def, &entry.key).await? {
                    ops.push(BatchOp::Delete { key: entry.key.to_vec() });
                }
            }
            self.flush_repairs(&mut ops, INDEX_BUILD_PAGE_ROWS).await?;
            match page.resume {
                Some(resume) => request.resume = Some(resume),
                None => break,
            }
        }
        self.flush_repairs(&mut ops, 1).await
    }

    /// Whether the row of index entry `entry` exists and calls for exactly this entry.
    async fn entry_is_current(
        &self,
        t: &CatalogTable,
        def: &IndexDef,
        entry: &[u8],
    ) -> OpResult<bool> {
        let Ok(decoded) = decode_index_entry(t.schema(), def, entry) else { return Ok(false) };
        let Some(row) = self.store.get(&decoded.row_key).await? else { return Ok(false) };
        let Ok(stored) = StoredRow::decode(t.schema(), &row.value) else { return Ok(false) };
        let wanted = entry_keys(t, std::iter::once(def), &decoded.row_key, &stored)?;
        Ok(matches!(wanted.first(), Some(Ok(key)) if key.as_slice() == entry))
    }

    /// Writes the repairs gathered so far once there are at least `at_least` of them.
    async fn flush_repairs(&self, ops: &mut Vec<BatchOp>, at_least: usize) -> OpResult<()> {
        if !ops.is_empty() && ops.len() >= at_least {
            for chunk in ops.chunks(INDEX_BUILD_PAGE_ROWS) {
                self.store.write_batch(chunk, Durability::NoSync).await?;
            }
            ops.clear();
        }
        Ok(())
    }
}

/// The READY indexes of `t`: the ones a repair makes equal to the table.
fn ready(t: &CatalogTable) -> impl Iterator<Item = &IndexDef> + Clone + '_ {
    t.indexes().iter().filter(|i| i.state() == IndexState::Ready)
}
