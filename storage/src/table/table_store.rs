//! [`TableStore`]: one shard's tables, on top of its [`Store`] (issue 3).
//!
//! Every typed operation follows the same path: look the table up in the catalog, check and
//! encode the request (`write_plan.rs`), then either write blindly (a put or delete with no
//! condition on a single-version table: one store write, no read) or read-modify-write: read the
//! row with a stamp, decide (`write_plan::plan`), and write only if the stamp still matches
//! ([`Store::write_batch_if`]), retrying up to [`WRITE_ATTEMPTS_MAX`] times if another write got
//! in between. Reads decode the stored row (`stored_row.rs`) and return the versions asked for.
//! Range operations live in `range_ops.rs`.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;

use crate::clock::Clock;
use crate::config::StoreConfig;
use crate::ddl;
use crate::disk::Disk;
use crate::log::group_commit::{Durability, DurableWait};
use crate::read::{as_ref, bounds, ReadNow, ScanRequest};
use crate::store::{Store, WriteOptions};
use crate::table::catalog::{Catalog, CatalogTable, Outcome};
use crate::table::catalog_file;
use crate::table::error::TableError;
use crate::table::index_def::IndexId;
use crate::table::key::{encode_primary_key_refs, index_prefix, primary_key_values, table_prefix};
use crate::table::op_error::OpResult;
use crate::table::purge::TablePurge;
use crate::table::request::*;
use crate::table::schema::TableId;
use crate::table::secondary_index;
use crate::table::stored_row::StoredRow;
use crate::table::tables::Tables;
use crate::table::token::TokenSource;
use crate::table::write_plan::{self, check_select, plan, prepare, table_row, Plan, Prepared};

/// Attempts of a read-modify-write before it gives up with
/// [`TableError::WriteContention`]: each failed attempt means another write of the same row
/// landed while this one was reading.
pub const WRITE_ATTEMPTS_MAX: usize = 16;

/// One shard's tables: a [`Store`] plus the catalog kept in the same directory.
pub struct TableStore<D: Disk = crate::disk::dma::DmaDisk> {
    pub(crate) store: Store<D>,
    pub(crate) catalog: RefCell<Catalog>,
    /// The catalog's tables, shared with in-flight requests (so a request keeps the schema it
    /// started with even if a DDL statement changes the catalog meanwhile) and with compaction.
    pub(crate) tables: Rc<RefCell<Tables>>,
    /// One DDL statement at a time; the index worker takes it too for its catalog changes.
    pub(crate) ddl_lock: glommio::sync::Semaphore,
    pub(crate) tokens: TokenSource,
    /// Moves on every catalog change. A read-modify-write that saw it move while it read its
    /// rows starts again with the table as it is now, so no write appends its row without the
    /// entries of an index made meanwhile (`secondary_index.rs`).
    pub(crate) catalog_epoch: Cell<u64>,
    /// Wakes the index worker (`index_work.rs`): a CREATE INDEX left an index BUILDING.
    pub(crate) index_work_wanted: event_listener::Event,
    /// Set by [`TableStore::stop_index_work`]: builds stop after their page.
    pub(crate) index_work_stopped: Cell<bool>,
    /// Rows the index builds indexed since the open, for stats.
    pub(crate) index_build_rows: Cell<u64>,
}

impl<D: Disk> std::fmt::Debug for TableStore<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableStore").field("store", &self.store).finish_non_exhaustive()
    }
}

impl<D: Disk> TableStore<D> {
    /// Opens (recovering) or creates the store in `dir` and loads its catalog.
    pub async fn open(
        disk: D,
        dir: impl Into<PathBuf>,
        config: StoreConfig,
        clock: Rc<dyn Clock>,
    ) -> OpResult<TableStore<D>> {
        let store = Store::open_with_clock(disk, dir, config, clock).await?;
        let catalog = catalog_file::load(store.disk(), store.dir()).await?;
        let tables = Rc::new(RefCell::new(Tables::of(&catalog)));
        store.set_compaction_filter(Rc::new(TablePurge { tables: tables.clone() }));
        let table_store = TableStore {
            store,
            catalog: RefCell::new(catalog),
            tables,
            ddl_lock: glommio::sync::Semaphore::new(1),
            tokens: TokenSource::default(),
            catalog_epoch: Cell::new(0),
            index_work_wanted: event_listener::Event::new(),
            index_work_stopped: Cell::new(false),
            index_build_rows: Cell::new(0),
        };
        table_store.resume_index_work().await?;
        table_store.repair_indexes_after_crash().await?;
        Ok(table_store)
    }

    /// The store underneath, for stats, sync, checkpoints and compaction.
    pub fn store(&self) -> &Store<D> {
        &self.store
    }

    /// Flushes, checkpoints and closes the store.
    pub async fn close(self) -> OpResult<()> {
        Ok(self.store.close().await?)
    }

    /// Whether writes are refused because a failed write poisoned the store or the catalog.
    pub fn is_poisoned(&self) -> bool {
        self.store.is_poisoned() || self.catalog.borrow().is_poisoned()
    }

    /// Takes writes again after a full disk or a failed write poisoned the store or the catalog,
    /// without a restart ([`Store::resume`]; a poisoned catalog is loaded again from its file,
    /// which holds the last catalog whose write completed). Ok(false) if nothing was poisoned.
    pub async fn resume_writes(&self) -> OpResult<bool> {
        let store = self.store.resume().await?;
        // A build that stopped on the failed write goes on.
        self.index_work_wanted.notify(usize::MAX);
        if !self.catalog.borrow().is_poisoned() {
            return Ok(store);
        }
        let _permit = self.ddl_lock.acquire_permit(1).await.map_err(|_| crate::Error::Closed)?;
        let catalog = catalog_file::load(self.store.disk(), self.store.dir()).await?;
        *self.catalog.borrow_mut() = catalog;
        self.catalog_changed();
        tracing::warn!(dir = %self.store.dir().display(), "catalog taking changes again");
        Ok(true)
    }

    /// Runs DDL text (SQL statements or the admin CLI script); each change is durable before the
    /// next statement runs. Stops at the first failing statement (earlier ones stay applied).
    pub async fn ddl(&self, text: &str) -> OpResult<Vec<Outcome>> {
        let statements = ddl::parse(text)?;
        let _permit = self.ddl_lock.acquire_permit(1).await.map_err(|_| crate::Error::Closed)?;
        let mut outcomes = Vec::with_capacity(statements.len());
        for statement in &statements {
            // A dropped table's indexes go with its rows; their ids are gone once it is.
            let dropped_indexes = match statement {
                ddl::Statement::DropTable { table, .. } => self
                    .table(table.as_str())
                    .map(|t| t.indexes().iter().map(|i| i.id()).collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            // Applied to a copy (the catalog is not borrowed across the file write), then swapped
            // in either way: after a failure the copy is unchanged, and poisoned if the file
            // write failed, which later DDL must see.
            let mut next = self.catalog.borrow().clone();
            let result =
                catalog_file::apply(&mut next, self.store.disk(), self.store.dir(), statement)
                    .await;
            *self.catalog.borrow_mut() = next;
            let outcome = result?;
            self.catalog_changed();
            let outcome = match outcome {
                Outcome::Dropped { id } => {
                    self.delete_table_rows(id, &dropped_indexes).await?;
                    outcome
                }
                other => self.index_work(other).await?,
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// Deletes every row of a dropped table with one range tombstone (atomic), and the entries
    /// of each of its indexes with one more, and syncs. A crash between the catalog change and
    /// the tombstones leaves rows and entries no request can reach (the table is gone from the
    /// catalog); compaction drops them (`purge.rs`).
    async fn delete_table_rows(&self, id: TableId, indexes: &[IndexId]) -> OpResult<()> {
        let prefixes =
            std::iter::once(table_prefix(id)).chain(indexes.iter().map(|i| index_prefix(*i)));
        for prefix in prefixes {
            let (start, end) = bounds(&ScanRequest::prefix(&prefix, 1));
            self.store.delete_range(as_ref(&start), as_ref(&end), Durability::NoSync).await?;
        }
        Ok(self.store.sync().await?)
    }

    /// After the catalog changed: the tables requests see are rebuilt, and the epoch moves so
    /// read-modify-writes under way read again (see `catalog_epoch`).
    pub(crate) fn catalog_changed(&self) {
        *self.tables.borrow_mut() = Tables::of(&self.catalog.borrow());
        self.catalog_epoch.set(self.catalog_epoch.get() + 1);
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Result<Rc<CatalogTable>, TableError> {
        let tables = self.tables.borrow();
        let mut last = tables.last.borrow_mut();
        if let Some(t) = last.as_ref().filter(|t| t.name().as_str() == name) {
            return Ok(Rc::clone(t));
        }
        let t = tables
            .by_name
            .get(name)
            .cloned()
            .ok_or_else(|| TableError::UnknownTable { table: name.to_owned() })?;
        *last = Some(Rc::clone(&t));
        Ok(t)
    }

    /// The row with full key `key`, with the versions `select` asks for; None if it does not
    /// exist, has expired or has no version `select` picks.
    pub async fn get(
        &self,
        table: &str,
        key: Fields<'_>,
        select: VersionSelect,
    ) -> OpResult<Option<TableRow>> {
        let t = self.table(table)?;
        let schema = t.schema();
        check_select(schema, select)?;
        let key_values = primary_key_values(schema, key)?;
        let key = encode_primary_key_refs(schema, &key_values)?;
        let Some(value) = self.store.get(&key).await? else { return Ok(None) };
        let stored = StoredRow::decode(schema, &value.value)?;
        Ok(table_row(schema, &key, Some(&key_values), &stored, select, self.store.now_ms())?)
    }

    /// The stored row under encoded key `key` (see `stored_row.rs`), borrowed from memory for
    /// the length of `f`, when it can be had without waiting: `Done(f(row))` on a record cache
    /// hit, a row not flushed yet, or no live row (`f(None)`); `OnDisk` with the record's size,
    /// without calling `f`, when it must be read from disk. Nothing is copied: the node's inline path encodes the response
    /// straight from these bytes (`visit_row`, `for_each_version`). `f` must not call back into
    /// the store. `now_ms` is the store's clock as the caller last read it ([`Store::now_ms`]).
    pub fn read_stored_now<R>(
        &self,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> ReadNow<OpResult<R>> {
        let answer = self.store.read_now(key, now_ms, |v| f(v.map(|v| v.value)));
        answer.map(|a| a.map_err(Into::into))
    }

    /// Inserts or replaces a row (see [`WriteOp::put`] for conditions, version and TTL).
    pub async fn put(
        &self,
        table: &str,
        row: Fields<'_>,
        durability: Durability,
    ) -> OpResult<WriteOutcome> {
        self.write(table, &WriteOp::put(row), durability).await
    }

    /// Sets or clears some fields of a row as a new version; creates the row if absent.
    pub async fn update(
        &self,
        table: &str,
        key: Fields<'_>,
        set: Updates<'_>,
        durability: Durability,
    ) -> OpResult<WriteOutcome> {
        self.write(table, &WriteOp::update(key, set), durability).await
    }

    /// Deletes a row.
    pub async fn delete(
        &self,
        table: &str,
        key: Fields<'_>,
        durability: Durability,
    ) -> OpResult<WriteOutcome> {
        self.write(table, &WriteOp::delete(key), durability).await
    }

    /// Runs one write, conditional or not: the general form of put, update and delete
    /// (putIfAbsent is `WriteOp::put(row).condition(Condition::IfAbsent)`, and so on).
    pub async fn write(
        &self,
        table: &str,
        op: &WriteOp<'_>,
        durability: Durability,
    ) -> OpResult<WriteOutcome> {
        if let Some(done) = self.write_now(table, op, durability) {
            let (outcome, wait) = done?;
            if let Some(wait) = wait {
                self.store.wait(wait).await?;
            }
            return Ok(outcome);
        }
        let t = self.table(table)?;
        let now = self.store.now_ms();
        let p = prepare(&t, op, now)?;
        match self.read_modify_write(&t, std::slice::from_ref(&p), false, durability).await? {
            ExecuteOutcome::Done(mut outcomes) => Ok(outcomes.pop().expect("one outcome per op")),
            ExecuteOutcome::Aborted { outcome, .. } => Ok(outcome),
        }
    }

    /// The part of [`TableStore::write`] that needs no waiting: a write that needs no read (a
    /// single-version put, an unconditional delete) is checked, appended and applied here, and
    /// the outcome returned with what is left to wait for before acknowledging it (None: a
    /// buffered `NoSync` write, acknowledged at once). Errors are returned at once too. None,
    /// with nothing done, for a write that must read the row first (run [`TableStore::write`]).
    pub fn write_now(
        &self,
        table: &str,
        op: &WriteOp<'_>,
        durability: Durability,
    ) -> Option<OpResult<(WriteOutcome, Option<DurableWait>)>> {
        let t = match self.table(table) {
            Ok(t) => t,
            Err(e) => return Some(Err(e.into())),
        };
        // A table with indexes reads the row first: its old entries go with the write.
        if write_plan::needs_read(op, t.schema()) || !t.indexes().is_empty() {
            return None;
        }
        let now = self.store.now_ms();
        Some(
            prepare(&t, op, now)
                .map_err(Into::into)
                .and_then(|p| self.write_blind(&t, p, now, durability)),
        )
    }
    /// Applies writes that share one shard key atomically (all or nothing). With
    /// `abort_on_failure`, a failed condition writes nothing; without it, the writes whose
    /// condition holds are applied together and the others report their failure.
    pub async fn execute(
        &self,
        table: &str,
        ops: &[WriteOp<'_>],
        options: ExecuteOptions,
    ) -> OpResult<ExecuteOutcome> {
        let t = self.table(table)?;
        let now = self.store.now_ms();
        let prepared = ops.iter().map(|op| prepare(&t, op, now)).collect::<Result<Vec<_>, _>>()?;
        write_plan::check_execute(t.schema(), &prepared)?;
        self.read_modify_write(&t, &prepared, options.abort_on_failure, options.durability).await
    }

    /// A write that needs no read (a single-version put or an unconditional delete), appended
    /// but not waited for.
    fn write_blind(
        &self,
        t: &CatalogTable,
        p: Prepared<'_>,
        now: u64,
        durability: Durability,
    ) -> OpResult<(WriteOutcome, Option<DurableWait>)> {
        if let WriteKind::Delete { .. } = p.op.kind {
            let (existed, wait) = self.store.delete_now(&p.key, durability)?;
            return Ok((WriteOutcome::Deleted { existed }, wait));
        }
        let row = p.put_row.expect("prepare encodes a put's row");
        let new = crate::table::stored_row::StoredVersion {
            version: p.version,
            expiry_ms: p.expiry_ms,
            row,
        };
        let token = self.tokens.next(now);
        let stored = write_plan::versions_after_write(t.schema(), &[], new, token.0, now)?;
        let opts = WriteOptions {
            durability,
            version: Some(p.version),
            expiry_ms: stored.record_expiry_ms(),
        };
        let appended = self.store.put_now(&p.key, &stored.encode(), opts)?;
        Ok((WriteOutcome::Written { token, version: p.version }, appended.wait))
    }

    /// Reads every row of `prepared`, plans each write, and writes them as one batch if no row
    /// changed meanwhile; retries otherwise.
    async fn read_modify_write(
        &self,
        t: &CatalogTable,
        prepared: &[Prepared<'_>],
        abort_on_failure: bool,
        durability: Durability,
    ) -> OpResult<ExecuteOutcome> {
        let now = self.store.now_ms();
        let mut fresh: Option<Rc<CatalogTable>> = None;
        for _ in 0..WRITE_ATTEMPTS_MAX {
            let t = fresh.as_deref().unwrap_or(t);
            let epoch = self.catalog_epoch.get();
            // The records the writes replace, kept only for a table with indexes.
            let mut olds = Vec::new();
            let mut stamps = Vec::with_capacity(prepared.len());
            let mut outcomes = Vec::with_capacity(prepared.len());
            let mut batch = Vec::with_capacity(prepared.len());
            for (index, p) in prepared.iter().enumerate() {
                let (value, stamp) = self.store.get_stamped(&p.key).await?;
                stamps.push((p.key.as_slice(), stamp));
                let stored =
                    value.as_ref().map(|v| StoredRow::decode(t.schema(), &v.value)).transpose()?;
                match plan(t, p, stored.as_ref(), now, &self.tokens)? {
                    Plan::Failed(outcome) if abort_on_failure => {
                        return Ok(ExecuteOutcome::Aborted { index, outcome });
                    }
                    Plan::Failed(outcome) => outcomes.push(outcome),
                    Plan::Write { op, outcome } => {
                        if !t.indexes().is_empty() {
                            olds.push(value.clone());
                        }
                        batch.push(op);
                        outcomes.push(outcome);
                    }
                }
            }
            if batch.is_empty() {
                return Ok(ExecuteOutcome::Done(outcomes));
            }
            if self.catalog_epoch.get() != epoch {
                // DDL ran while the rows were read: read them again with the table as it is now
                // (unless it is gone), so its indexes as they are now get their entries.
                let id = t.id().0;
                fresh = self.tables.borrow().by_id.get(&id).cloned().or(fresh);
                continue;
            }
            if !olds.is_empty() {
                secondary_index::extend_batch(t, &mut batch, &olds)?;
            }
            if self.store.write_batch_if(&batch, &stamps, durability).await?.is_some() {
                return Ok(ExecuteOutcome::Done(outcomes));
            }
        }
        let table = t.schema().name().to_string();
        Err(TableError::WriteContention { table, attempts: WRITE_ATTEMPTS_MAX }.into())
    }
}
