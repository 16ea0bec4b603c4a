//! The work an index's state calls for on one shard (issue 15): building a BUILDING index from
//! the rows the table already has, removing a DELETING index's entries, resuming both at open,
//! and multiDelete on a table with indexes.
//!
//! **Build**: the table's keys are read in pages of [`INDEX_BUILD_PAGE_ROWS`]; each row is read
//! with its stamp and the page's entries are written as one batch only if no row of the page
//! changed meanwhile (else the page is read again), so the build never writes the entry of a
//! row as it was: a write that lands during the build keeps the index up to date itself (the
//! index is BUILDING, so writes maintain it). Once every page is written and synced, the index
//! becomes READY in the catalog file. A row whose indexed value is over the index's limits
//! (235, written before the index existed) fails the build: the index is then dropped again.
//! **Drop**: one range delete over the index's prefix (atomic, as any range delete), a sync,
//! then the index leaves the catalog. Both steps are idempotent, so a crash at any point is
//! repaired at the next open by doing the step again ([`TableStore::resume_index_work`]).

use std::rc::Rc;

use crate::constants::{BATCH_BYTES_MAX, BATCH_OPS_MAX, KEY_BYTES_MAX, RECORD_HEADER_BYTES};
use crate::disk::Disk;
use crate::log::group_commit::Durability;
use crate::read::{as_ref, bounds, ScanRequest};
use crate::store::BatchOp;
use crate::table::catalog::{Catalog, CatalogTable, Outcome};
use crate::table::catalog_file;
use crate::table::error::TableError;
use crate::table::index_def::{IndexDef, IndexId, IndexState};
use crate::table::key::{index_prefix, table_prefix};
use crate::table::op_error::{OpError, OpResult};
use crate::table::request::MultiDeleteOutcome;
use crate::table::schema::TableId;
use crate::table::secondary_index::{check_batch_len, entry_keys, extend_batch, maintained};
use crate::table::stored_row::StoredRow;
use crate::table::table_store::{TableStore, WRITE_ATTEMPTS_MAX};

/// Rows an index build reads and indexes per batch. Each entry is at most one store key, so a
/// page's entries always fit one batch.
pub const INDEX_BUILD_PAGE_ROWS: usize = 64;
const _: () = assert!(INDEX_BUILD_PAGE_ROWS <= BATCH_OPS_MAX);
const _: () =
    assert!(INDEX_BUILD_PAGE_ROWS * (RECORD_HEADER_BYTES + KEY_BYTES_MAX + 8) <= BATCH_BYTES_MAX);

impl<D: Disk> TableStore<D> {
    /// The work an index statement's catalog change calls for: CREATE INDEX builds the index
    /// and reports it READY; DROP INDEX removes its entries and forgets it. Other outcomes pass.
    pub(crate) async fn index_work(&self, outcome: Outcome) -> OpResult<Outcome> {
        match outcome {
            Outcome::IndexCreated { table, index, .. } => {
                self.build_or_abandon(table, index).await?;
                Ok(Outcome::IndexCreated { table, index, state: IndexState::Ready })
            }
            Outcome::IndexDropped { table, index } => {
                self.finish_drop(table, index).await?;
                Ok(outcome)
            }
            other => Ok(other),
        }
    }

    /// At open: the builds and drops that a crash or a stop interrupted, done again. A build
    /// that fails on the data drops its index (logged), so the store still opens.
    pub(crate) async fn resume_index_work(&self) -> OpResult<()> {
        let pending: Vec<(TableId, IndexId, IndexState)> = self
            .catalog
            .borrow()
            .tables()
            .flat_map(|t| t.indexes().iter().map(move |i| (t.id(), i.id(), i.state())))
            .filter(|(_, _, state)| *state != IndexState::Ready)
            .collect();
        for (table, index, state) in pending {
            match state {
                IndexState::Building => match self.build_or_abandon(table, index).await {
                    Err(OpError::Table(e)) => {
                        tracing::warn!(table = table.0, index = index.0, "index dropped: {e}");
                    }
                    other => other?,
                },
                IndexState::Deleting => self.finish_drop(table, index).await?,
                IndexState::Ready => {}
            }
        }
        Ok(())
    }

    /// Builds the index; if that fails, drops it again and returns the build's error.
    async fn build_or_abandon(&self, table: TableId, index: IndexId) -> OpResult<()> {
        let Err(e) = self.build_index(table, index).await else { return Ok(()) };
        let next = self.catalog.borrow().with_index_state(table, index, IndexState::Deleting);
        if let Some(next) = next {
            self.commit_catalog(next).await?;
            self.finish_drop(table, index).await?;
        }
        Err(e)
    }

    /// Writes the entry of every row of the table, then makes the index READY. Stops early,
    /// with nothing more to do, if the table or the index is gone or no longer BUILDING.
    async fn build_index(&self, table: TableId, index: IndexId) -> OpResult<()> {
        let mut resume = None;
        loop {
            let Some((t, def)) = self.building(table, index) else { return Ok(()) };
            let prefix = table_prefix(table);
            let mut request = ScanRequest::prefix(&prefix, INDEX_BUILD_PAGE_ROWS);
            request.keys_only = true;
            request.resume = resume.take();
            let page = self.store.scan(&request).await?;
            let keys: Vec<&[u8]> = page.rows.iter().map(|r| &r.key[..]).collect();
            self.index_page(&t, &def, &keys).await?;
            match page.resume {
                Some(next) => resume = Some(next),
                None => break,
            }
        }
        self.store.sync().await?;
        let next = self.catalog.borrow().with_index_state(table, index, IndexState::Ready);
        match (next, self.building(table, index)) {
            (Some(next), Some(_)) => self.commit_catalog(next).await,
            _ => Ok(()),
        }
    }

    /// The table and the index, if the index is still BUILDING.
    fn building(&self, table: TableId, index: IndexId) -> Option<(Rc<CatalogTable>, IndexDef)> {
        let t = self.tables.borrow().by_id.get(&table.0).cloned()?;
        let def = t.indexes().iter().find(|i| i.id() == index && i.state() == IndexState::Building);
        let def = def.cloned()?;
        Some((t, def))
    }

    /// Writes the entries of index `def` of the rows under `keys` in one batch, if none of the
    /// rows changed while they were read; reads them again otherwise.
    async fn index_page(&self, t: &CatalogTable, def: &IndexDef, keys: &[&[u8]]) -> OpResult<()> {
        for _ in 0..WRITE_ATTEMPTS_MAX {
            let mut stamps = Vec::with_capacity(keys.len());
            let mut ops = Vec::with_capacity(keys.len());
            for &key in keys {
                let (value, stamp) = self.store.get_stamped(key).await?;
                stamps.push((key, stamp));
                let Some(value) = value else { continue };
                let row = StoredRow::decode(t.schema(), &value.value)?;
                let entry = entry_keys(t, std::iter::once(def), key, &row)?;
                let entry = entry.into_iter().next().expect("one entry per index")?;
                let version = row.versions.first().map(|v| v.version);
                let expiry_ms = row.record_expiry_ms();
                ops.push(BatchOp::Put { key: entry, value: Vec::new(), version, expiry_ms });
            }
            if ops.is_empty() {
                return Ok(());
            }
            if self.store.write_batch_if(&ops, &stamps, Durability::NoSync).await?.is_some() {
                return Ok(());
            }
        }
        let table = t.schema().name().to_string();
        Err(TableError::WriteContention { table, attempts: WRITE_ATTEMPTS_MAX }.into())
    }

    /// Removes every entry of a DELETING index (one range delete), syncs, and forgets it.
    async fn finish_drop(&self, table: TableId, index: IndexId) -> OpResult<()> {
        let prefix = index_prefix(index);
        let (start, end) = bounds(&ScanRequest::prefix(&prefix, 1));
        self.store.delete_range(as_ref(&start), as_ref(&end), Durability::NoSync).await?;
        self.store.sync().await?;
        let next = self.catalog.borrow().without_index(table, index);
        match next {
            Some(next) => self.commit_catalog(next).await,
            None => Ok(()),
        }
    }

    /// Makes `next` the catalog once its file holds it (as a DDL change is made).
    async fn commit_catalog(&self, next: Catalog) -> OpResult<()> {
        let mut current = self.catalog.borrow().clone();
        let result =
            catalog_file::change(&mut current, self.store.disk(), self.store.dir(), next).await;
        *self.catalog.borrow_mut() = current;
        self.catalog_changed();
        result
    }

    /// multiDelete on a table with maintained indexes: the rows of the range and their entries
    /// in one atomic batch (the rows' range tombstone could not carry the entries), so at most
    /// as many rows as fit [`BATCH_OPS_MAX`] with their entries; more is 233, deleting nothing.
    /// A row written into the range while this runs may stay.
    pub(crate) async fn multi_delete_indexed(
        &self,
        mut t: Rc<CatalogTable>,
        mut request: ScanRequest,
        durability: Durability,
    ) -> OpResult<MultiDeleteOutcome> {
        request.keys_only = true;
        for _ in 0..WRITE_ATTEMPTS_MAX {
            let epoch = self.catalog_epoch.get();
            let per_row = 1 + maintained(&t).count();
            request.limit = BATCH_OPS_MAX / per_row + 1;
            let page = self.store.scan(&request).await?;
            check_batch_len(&t, page.rows.len() * per_row)?;
            let mut stamps = Vec::with_capacity(page.rows.len());
            let mut olds = Vec::with_capacity(page.rows.len());
            let mut batch = Vec::with_capacity(page.rows.len() * per_row);
            for row in &page.rows {
                let (value, stamp) = self.store.get_stamped(&row.key).await?;
                stamps.push((&row.key[..], stamp));
                if value.is_some() {
                    olds.push(value);
                    batch.push(BatchOp::Delete { key: row.key.to_vec() });
                }
            }
            if batch.is_empty() {
                return Ok(MultiDeleteOutcome::default());
            }
            if self.catalog_epoch.get() != epoch {
                let fresh = self.tables.borrow().by_id.get(&t.id().0).cloned();
                t = fresh.unwrap_or(t);
                continue;
            }
            let deleted = batch.len();
            extend_batch(&t, &mut batch, &olds)?;
            if self.store.write_batch_if(&batch, &stamps, durability).await?.is_some() {
                return Ok(MultiDeleteOutcome { deleted, resume: None });
            }
        }
        let table = t.schema().name().to_string();
        Err(TableError::WriteContention { table, attempts: WRITE_ATTEMPTS_MAX }.into())
    }
}
