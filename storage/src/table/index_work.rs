//! The work an index's state calls for on one shard (issue 15): building a BUILDING index from
//! the rows the table already has, removing a DELETING index's entries, resuming both at open,
//! and multiDelete on a table with indexes.
//!
//! **Build**: CREATE INDEX on a table this shard holds rows of writes the index BUILDING to the
//! catalog file and returns at once; the shard's index worker ([`TableStore::run_index_work`],
//! which the node spawns in a low-priority task queue) then reads the table's rows in pages of
//! [`INDEX_BUILD_PAGE_ROWS`], yielding its task queue between pages so requests keep their
//! share of the core. A page's keys are found (a keys-only scan) and stamped, both in memory;
//! its rows are read with one store scan, whose value reads run concurrently as any scan's, so
//! a page waits for about one disk read, not one per row; and its entries are written as one
//! batch only if the scan found the same keys and none of them changed since its stamp. Else
//! the page is read again: up to [`WRITE_ATTEMPTS_MAX`] times at once, then again after a
//! yield, for at most [`INDEX_BUILD_PAGE_ROUNDS_MAX`] such rounds, after which the build gives
//! up (224) and the index is dropped again. So the build never writes the entry of a row as it
//! was: a write that lands during the build keeps the index up to date itself (the index is
//! BUILDING, so writes maintain it). Once every page is written and synced, the index becomes
//! READY in the catalog file (under the DDL lock, so the change cannot cross a DDL
//! statement's). On a table with no rows here the build is that last step alone and runs inside
//! the statement. A row whose indexed value is over the index's limits (235, written before the
//! index existed) fails the build: the index is then dropped again. A build that fails on the
//! store (a failed read or write) leaves the index BUILDING, lets the shard's other builds go
//! on, and is tried again from the start: when writes resume if the store or the catalog was
//! poisoned, else after [`INDEX_BUILD_RETRY_FIRST`] (doubling while it keeps failing), or at the
//! next open. **Drop**: one range delete over the index's prefix (atomic, as any range delete),
//! a sync, then the index leaves the catalog; cheap, so it runs inside the statement. Both are
//! idempotent: at open a DELETING index is dropped again, and a BUILDING one is left to the
//! worker, which starts its build over ([`TableStore::resume_index_work`]).

use std::rc::Rc;
use std::time::Duration;

use crate::conditional::Stamp;
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
/// page's entries always fit one batch (the assertions below; the batch byte limit leaves no
/// room for pages much larger). A page's rows are read with one store scan and held until its
/// batch is written: at most this many row values in memory (64 MiB at the 1 MiB value limit;
/// the crash repair's pages, `index_repair.rs`, hold as many); the scan keeps up to
/// [`SCAN_READS_IN_FLIGHT_MAX`] of its reads in flight, here all of a page's.
///
/// [`SCAN_READS_IN_FLIGHT_MAX`]: crate::constants::SCAN_READS_IN_FLIGHT_MAX
pub const INDEX_BUILD_PAGE_ROWS: usize = 64;
const _: () = assert!(INDEX_BUILD_PAGE_ROWS <= BATCH_OPS_MAX);
const _: () =
    assert!(INDEX_BUILD_PAGE_ROWS * (RECORD_HEADER_BYTES + KEY_BYTES_MAX + 8) <= BATCH_BYTES_MAX);

/// Times a background build reads one page again after its writes lost to requests' writes
/// [`WRITE_ATTEMPTS_MAX`] times in a row (yielding in between), before the build gives up (224,
/// [`TableError::WriteContention`] naming `WRITE_ATTEMPTS_MAX * INDEX_BUILD_PAGE_ROUNDS_MAX`
/// attempts; the index is dropped again).
pub const INDEX_BUILD_PAGE_ROUNDS_MAX: usize = 64;

/// A page of a build whose entries are written.
struct PageDone {
    /// Rows the page indexed.
    rows: usize,
    /// Where the next page starts; None after the table's last row.
    resume: Option<Vec<u8>>,
}

/// How long the index worker waits before it tries its builds again after one failed on the
/// store without poisoning it (a failed read, say), when nothing wakes it sooner; the wait
/// doubles, up to [`INDEX_BUILD_RETRY_MAX`], while they keep failing. A build tried again starts
/// over from the table's first row.
pub const INDEX_BUILD_RETRY_FIRST: Duration = Duration::from_secs(1);

/// The longest wait of the index worker between tries of a build that keeps failing on the store.
pub const INDEX_BUILD_RETRY_MAX: Duration = Duration::from_secs(256);

/// How a build ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Built {
    /// Every row has its entry.
    Done,
    /// The index or its table is gone or no longer BUILDING, or the worker was told to stop:
    /// nothing more to do now.
    Stopped,
}

/// What a shard's index work is doing, for its stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexWorkStats {
    /// Indexes in state BUILDING on this shard.
    pub building: u64,
    /// Rows the builds of this shard have indexed since it opened.
    pub rows_indexed: u64,
}

impl<D: Disk> TableStore<D> {
    /// The work an index statement's catalog change calls for, inside the statement (the caller
    /// holds the DDL lock): CREATE INDEX on a table with no rows here makes the index READY at
    /// once; on one with rows it stays BUILDING and the index worker is woken. DROP INDEX
    /// removes its entries and forgets the index. Other outcomes pass.
    pub(crate) async fn index_work(&self, outcome: Outcome) -> OpResult<Outcome> {
        match outcome {
            Outcome::IndexCreated { table, index, .. } => {
                if self.has_rows(table).await? {
                    self.index_work_wanted.notify(usize::MAX);
                    return Ok(Outcome::IndexCreated { table, index, state: IndexState::Building });
                }
                let built = self.build_pages(table, index).await;
                self.settle_build(table, index, built).await?;
                let state = self.index_state(table, index).unwrap_or(IndexState::Ready);
                Ok(Outcome::IndexCreated { table, index, state })
            }
            Outcome::IndexDropped { table, index } => {
                self.finish_drop(table, index).await?;
                Ok(outcome)
            }
            other => Ok(other),
        }
    }

    /// Whether this shard holds a row of the table.
    async fn has_rows(&self, table: TableId) -> OpResult<bool> {
        let prefix = table_prefix(table);
        let mut request = ScanRequest::prefix(&prefix, 1);
        request.keys_only = true;
        Ok(!self.store.scan(&request).await?.rows.is_empty())
    }

    /// The state of index `index` of `table`, if it exists.
    fn index_state(&self, table: TableId, index: IndexId) -> Option<IndexState> {
        let t = self.tables.borrow().by_id.get(&table.0).cloned()?;
        let state = t.indexes().iter().find(|i| i.id() == index).map(|i| i.state());
        state
    }

    /// At open: the drops that a crash or a stop interrupted, done again. An interrupted build
    /// stays BUILDING for the index worker, so the store opens without reading the table.
    pub(crate) async fn resume_index_work(&self) -> OpResult<()> {
        for (table, index) in self.pending(IndexState::Deleting) {
            self.finish_drop(table, index).await?;
        }
        Ok(())
    }

    /// Every index in `state`, with its table.
    fn pending(&self, state: IndexState) -> Vec<(TableId, IndexId)> {
        self.catalog
            .borrow()
            .tables()
            .flat_map(|t| t.indexes().iter().map(move |i| (t.id(), i.id(), i.state())))
            .filter(|(_, _, s)| *s == state)
            .map(|(t, i, _)| (t, i))
            .collect()
    }

    /// What the shard's index builds are doing, for its stats.
    pub fn index_work_stats(&self) -> IndexWorkStats {
        let building = self.pending(IndexState::Building).len() as u64;
        IndexWorkStats { building, rows_indexed: self.index_build_rows.get() }
    }

    /// The shard's index worker: builds every BUILDING index, then waits for the next CREATE
    /// INDEX, until [`TableStore::stop_index_work`]. Spawn it in a task queue with few shares
    /// (the node gives it the store's `maintenance_shares`): it yields its queue after every
    /// page. A build that fails on the store is logged and the index stays BUILDING; the worker
    /// tries again when it is next woken: by a CREATE INDEX, by
    /// [`TableStore::resume_writes`] if the error poisoned the store or the catalog (a full
    /// disk, say), and otherwise (a failed read, say) by itself after
    /// [`INDEX_BUILD_RETRY_FIRST`], doubling up to [`INDEX_BUILD_RETRY_MAX`] while the builds
    /// keep failing. The next open tries again too.
    pub async fn run_index_work(&self) {
        let mut retry = INDEX_BUILD_RETRY_FIRST;
        while !self.index_work_stopped.get() {
            let wanted = self.index_work_wanted.listen();
            let mut retry_after = None;
            // Each failed build was logged by `finish_index_work`.
            let result = self.finish_index_work().await;
            let pending = !self.pending(IndexState::Building).is_empty();
            match result {
                Ok(()) if pending => continue,
                // Done, or a build dropped on a row's value: nothing is left to try again.
                _ if !pending => retry = INDEX_BUILD_RETRY_FIRST,
                // A poisoned store or catalog wakes the worker when it takes writes again.
                Err(_) if self.is_poisoned() => {}
                _ => {
                    tracing::warn!(dir = %self.store.dir().display(), "index builds tried again \
                        in {} s", retry.as_secs());
                    retry_after = Some(retry);
                    retry = (retry * 2).min(INDEX_BUILD_RETRY_MAX);
                }
            }
            if self.index_work_stopped.get() {
                return;
            }
            match retry_after {
                Some(after) => {
                    let timer = async { glommio::timer::sleep(after).await };
                    futures_lite::future::or(wanted, timer).await;
                }
                None => wanted.await,
            }
        }
    }

    /// Makes [`TableStore::run_index_work`] return after the page it is at; the build goes on
    /// after the next open. Await the worker's task before closing the store.
    pub fn stop_index_work(&self) {
        self.index_work_stopped.set(true);
        self.index_work_wanted.notify(usize::MAX);
    }

    /// Builds every index that is BUILDING now, each to READY (or dropped again if a row cannot
    /// have its entry), and returns; what the worker does each time it wakes. Tests and tools
    /// without a worker await it after CREATE INDEX. A build that fails, on a row's value (the
    /// index is dropped) or on the store (it stays BUILDING), lets the others go on, so one
    /// table's unreadable row holds up no other table's build; the first error is returned at
    /// the end.
    pub async fn finish_index_work(&self) -> OpResult<()> {
        let mut first_error = None;
        for (table, index) in self.pending(IndexState::Building) {
            let built = self.build_pages(table, index).await;
            if self.index_work_stopped.get() {
                return Ok(());
            }
            let _permit =
                self.ddl_lock.acquire_permit(1).await.map_err(|_| crate::Error::Closed)?;
            match self.settle_build(table, index, built).await {
                Ok(()) => {}
                Err(OpError::Table(e)) => {
                    tracing::warn!(table = table.0, index = index.0, "index dropped: {e}");
                    first_error.get_or_insert(OpError::Table(e));
                }
                Err(e) => {
                    let dir = self.store.dir().display();
                    tracing::warn!(%dir, table = table.0, index = index.0, "index build: {e}");
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// After the pages of a build (the caller holds the DDL lock, so the catalog change cannot
    /// cross a statement's): done and still BUILDING, it is synced and made READY; a row that
    /// cannot have its entry (a table error) drops the index again and is returned; a store
    /// error is returned with the index left BUILDING.
    async fn settle_build(
        &self,
        table: TableId,
        index: IndexId,
        built: OpResult<Built>,
    ) -> OpResult<()> {
        match built {
            Ok(Built::Stopped) => Ok(()),
            Ok(Built::Done) => {
                self.store.sync().await?;
                if self.building(table, index).is_none() {
                    return Ok(());
                }
                let next = self.catalog.borrow().with_index_state(table, index, IndexState::Ready);
                match next {
                    Some(next) => self.commit_catalog(next).await,
                    None => Ok(()),
                }
            }
            Err(OpError::Table(e)) => {
                let next =
                    self.catalog.borrow().with_index_state(table, index, IndexState::Deleting);
                if let Some(next) = next {
                    self.commit_catalog(next).await?;
                    self.finish_drop(table, index).await?;
                }
                Err(OpError::Table(e))
            }
            Err(e) => Err(e),
        }
    }

    /// Writes the entry of every row of the table, a page at a time, yielding the task queue
    /// between pages. Stops early if the table or the index is gone or no longer BUILDING, or
    /// the worker is stopping.
    async fn build_pages(&self, table: TableId, index: IndexId) -> OpResult<Built> {
        let prefix = table_prefix(table);
        let mut request = ScanRequest::prefix(&prefix, INDEX_BUILD_PAGE_ROWS);
        loop {
            if self.index_work_stopped.get() {
                return Ok(Built::Stopped);
            }
            let Some(page) = self.index_page_rounds(table, index, &request).await? else {
                return Ok(Built::Stopped);
            };
            self.index_build_rows.set(self.index_build_rows.get() + page.rows as u64);
            match page.resume {
                Some(next) => request.resume = Some(next),
                None => return Ok(Built::Done),
            }
            glommio::executor().yield_task_queue_now().await;
        }
    }

    /// Indexes the page of rows `request` asks for, reading it again (after yielding) while
    /// requests' writes to its rows keep winning or the catalog changes under it, at most
    /// [`INDEX_BUILD_PAGE_ROUNDS_MAX`] times; then 224 ([`TableError::WriteContention`]).
    /// None if the index is no longer BUILDING.
    async fn index_page_rounds(
        &self,
        table: TableId,
        index: IndexId,
        request: &ScanRequest,
    ) -> OpResult<Option<PageDone>> {
        for _ in 0..INDEX_BUILD_PAGE_ROUNDS_MAX {
            let Some((t, def)) = self.building(table, index) else { return Ok(None) };
            let epoch = self.catalog_epoch.get();
            match self.index_page(&t, &def, request, epoch).await {
                Ok(Some(done)) => return Ok(Some(done)),
                // The catalog changed while the page was read: look at the index again.
                Ok(None) => {}
                Err(OpError::Table(TableError::WriteContention { .. })) => {
                    glommio::executor().yield_task_queue_now().await;
                }
                Err(e) => return Err(e),
            }
        }
        let table = self.tables.borrow().by_id.get(&table.0).map(|t| t.schema().name().to_string());
        let table = table.unwrap_or_default();
        let attempts = WRITE_ATTEMPTS_MAX * INDEX_BUILD_PAGE_ROUNDS_MAX;
        Err(TableError::WriteContention { table, attempts }.into())
    }

    /// The table and the index, if the index is still BUILDING.
    fn building(&self, table: TableId, index: IndexId) -> Option<(Rc<CatalogTable>, IndexDef)> {
        let t = self.tables.borrow().by_id.get(&table.0).cloned()?;
        let def = t.indexes().iter().find(|i| i.id() == index && i.state() == IndexState::Building);
        let def = def.cloned()?;
        Some((t, def))
    }

    /// Writes the entries of index `def` of the page of rows `request` asks for in one batch, if
    /// none of the rows changed while they were read; reads them again otherwise, at most
    /// [`WRITE_ATTEMPTS_MAX`] times. Each attempt finds the page's keys with a keys-only scan
    /// and stamps them (both in memory, no disk read), then reads the rows with one store scan,
    /// whose value reads run concurrently (up to [`SCAN_READS_IN_FLIGHT_MAX`] in flight), and
    /// writes only if that scan found the same keys and their stamps still match when the batch
    /// is appended. None, writing nothing, if the catalog changed since `epoch` (a DROP INDEX or
    /// DROP TABLE may have removed the entries meanwhile, and this page's must not come back
    /// after it).
    ///
    /// [`SCAN_READS_IN_FLIGHT_MAX`]: crate::constants::SCAN_READS_IN_FLIGHT_MAX
    async fn index_page(
        &self,
        t: &CatalogTable,
        def: &IndexDef,
        request: &ScanRequest,
        epoch: u64,
    ) -> OpResult<Option<PageDone>> {
        let mut keys_request = request.clone();
        keys_request.keys_only = true;
        for _ in 0..WRITE_ATTEMPTS_MAX {
            let keys = self.store.scan(&keys_request).await?;
            // Taken before the rows are read: a stamp that still matches at the write says the
            // row read since is the row's current record (`conditional.rs`).
            let stamps: Vec<(&[u8], Stamp)> =
                keys.rows.iter().map(|r| (&r.key[..], self.store.stamp(&r.key))).collect();
            let page = self.store.scan(request).await?;
            // A row came, went or expired between the two looks, or a row was absent when it
            // was stamped (deleted, then written again before the scan): read the page again.
            let same = page.rows.len() == stamps.len()
                && page.rows.iter().zip(&stamps).all(|(r, (k, s))| r.key == *k && !s.is_absent());
            if !same {
                continue;
            }
            let mut ops = Vec::with_capacity(page.rows.len());
            for r in &page.rows {
                let row = StoredRow::decode(t.schema(), &r.value)?;
                let entry = entry_keys(t, std::iter::once(def), &r.key, &row)?;
                let entry = entry.into_iter().next().expect("one entry per index")?;
                let version = row.versions.first().map(|v| v.version);
                let expiry_ms = row.record_expiry_ms();
                ops.push(BatchOp::Put { key: entry, value: Vec::new(), version, expiry_ms });
            }
            if self.catalog_epoch.get() != epoch {
                return Ok(None);
            }
            let done = PageDone { rows: page.rows.len(), resume: page.resume.clone() };
            if ops.is_empty() {
                return Ok(Some(done));
            }
            if self.store.write_batch_if(&ops, &stamps, Durability::NoSync).await?.is_some() {
                return Ok(Some(done));
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
