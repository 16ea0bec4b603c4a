//! The public face of one shard's store: open, write, read, maintain, close.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use bytes::Bytes;
use event_listener::Event;
use glommio::{Latency, Shares, Task};

use crate::batch_prefetch::Upcoming;
use crate::clock::{Clock, SystemClock};
use crate::compaction_filter::CompactionFilter;
use crate::config::StoreConfig;
use crate::constants::*;
use crate::disk::Disk;
use crate::log::group_commit::{self, Durability, DurableWait};
use crate::log::preallocate;
use crate::record;
use crate::recovery::{self, RecoveryReport};
use crate::state::{check_key, check_value, Op, OpKind, Shared, State, StateCell};
use crate::stats::{Percentiles, StoreStats};
use crate::{compaction, Error, Result};

/// Options of a put.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    pub durability: Durability,
    /// The record's version (ms since the epoch); the store's clock if None.
    pub version: Option<u64>,
    /// When the record expires, in ms since the epoch; 0 means never.
    pub expiry_ms: u64,
}

impl WriteOptions {
    pub fn durability(durability: Durability) -> Self {
        WriteOptions { durability, ..Default::default() }
    }
}

/// What an acknowledged write reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteReceipt {
    /// Log sequence number of the (first) record.
    pub lsn: u64,
    pub version: u64,
}

/// One operation of an atomic batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    Put { key: Vec<u8>, value: Vec<u8>, version: Option<u64>, expiry_ms: u64 },
    Delete { key: Vec<u8> },
}

/// A write appended to the log and the index but not yet acknowledged: see [`Store::put_now`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub receipt: WriteReceipt,
    /// What to wait for before acknowledging; None: acknowledge now.
    pub wait: Option<DurableWait>,
}

/// A value as a read returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    pub value: Bytes,
    pub version: u64,
    pub expiry_ms: u64,
}

/// One shard's log-structured store. Use it from the glommio executor that opened it, and call
/// [`Store::close`] to flush, checkpoint and stop its tasks.
pub struct Store<D: Disk = crate::disk::dma::DmaDisk> {
    pub(crate) shared: Rc<Shared<D>>,
    flusher: RefCell<Option<Task<()>>>,
    /// The maintenance task and the segment preparer, stopped by `close`.
    background: RefCell<Vec<Task<()>>>,
    report: RecoveryReport,
}

impl<D: Disk> std::fmt::Debug for Store<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("dir", &self.shared.dir).finish_non_exhaustive()
    }
}

impl<D: Disk> Store<D> {
    /// Opens (recovering) or creates the store in `dir`, with the system clock.
    pub async fn open(disk: D, dir: impl Into<PathBuf>, config: StoreConfig) -> Result<Store<D>> {
        Self::open_with_clock(disk, dir, config, Rc::new(SystemClock)).await
    }

    /// Opens the store with an injected clock (tests drive TTL and versions with it).
    pub async fn open_with_clock(
        disk: D,
        dir: impl Into<PathBuf>,
        config: StoreConfig,
        clock: Rc<dyn Clock>,
    ) -> Result<Store<D>> {
        config.validate()?;
        let dir = dir.into();
        let (state, report) = recovery::recover(&disk, &dir, &config).await?;
        let shared = Rc::new(Shared {
            disk,
            dir,
            config,
            clock,
            state: StateCell::new(state),
            progress: Event::new(),
            flush_wanted: Event::new(),
            maintenance_wanted: Event::new(),
            prepare_wanted: Event::new(),
            maintenance_lock: glommio::sync::Semaphore::new(1),
            compaction_filter: RefCell::new(None),
        });
        if shared.config.preallocate_segments {
            preallocate::prepare_at_open(&shared).await;
        }
        let flusher = glommio::spawn_local(group_commit::run_flusher(shared.clone()));
        let background = spawn_background(&shared)?;
        let store = Store {
            shared,
            flusher: RefCell::new(Some(flusher)),
            background: RefCell::new(background),
            report,
        };
        if store.report.accepted_damage {
            // The accepted damage is no longer replayed: the next open starts after it.
            store.checkpoint().await?;
        }
        Ok(store)
    }

    /// The store's directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.shared.dir
    }

    /// The disk the store's files live on (the table layer keeps its catalog there too).
    pub fn disk(&self) -> &D {
        &self.shared.disk
    }

    /// The store's clock, in ms since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        self.shared.clock.now_ms()
    }

    /// Installs the filter compaction consults for every live put (see
    /// [`CompactionFilter`]).
    pub fn set_compaction_filter(&self, filter: Rc<dyn CompactionFilter>) {
        *self.shared.compaction_filter.borrow_mut() = Some(filter);
    }

    /// What recovery found when this store was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.report
    }

    /// Inserts or replaces `key`.
    pub async fn put(&self, key: &[u8], value: &[u8], opts: WriteOptions) -> Result<WriteReceipt> {
        let appended = self.put_now(key, value, opts)?;
        self.wait_appended(appended.wait).await?;
        Ok(appended.receipt)
    }

    /// Asks the CPU for the memory that commands about to run on `keys` will touch, so that
    /// their misses overlap (`batch_prefetch.rs`). A hint: it changes nothing, and helps only
    /// if nothing else runs before those commands. Fewer than two keys have no misses to
    /// overlap, so nothing is asked for.
    pub fn prefetch(&self, keys: &[Upcoming<'_>]) {
        if keys.len() >= 2 {
            self.shared.state.borrow().prefetch(keys);
        }
    }

    /// The synchronous half of [`Store::put`]: appends the record and applies it to the index
    /// (reads see it at once) without waiting. The write may be acknowledged once
    /// [`Store::wait`] on `wait` returns, or at once if `wait` is None (a buffered `NoSync`
    /// write). This is what lets a caller answer a `NoSync` put without a task switch.
    pub fn put_now(&self, key: &[u8], value: &[u8], opts: WriteOptions) -> Result<Appended> {
        check_key(key)?;
        check_value(value)?;
        let version = opts.version.unwrap_or_else(|| self.shared.clock.now_ms());
        let op = Op {
            kind: OpKind::Put,
            key,
            value,
            version,
            expiry_ms: opts.expiry_ms,
            cache_new: false,
        };
        let (lsn, wait) = self.append(&[op], opts.durability)?;
        Ok(Appended { receipt: WriteReceipt { lsn, version }, wait })
    }

    /// Deletes `key` (writes a tombstone even if the key is absent, so the delete is as durable
    /// as asked regardless of earlier unsynced writes). Returns whether the key was present.
    pub async fn delete(&self, key: &[u8], durability: Durability) -> Result<bool> {
        let (existed, wait) = self.delete_now(key, durability)?;
        self.wait_appended(wait).await?;
        Ok(existed)
    }

    /// The synchronous half of [`Store::delete`], as [`Store::put_now`] is of a put.
    pub fn delete_now(
        &self,
        key: &[u8],
        durability: Durability,
    ) -> Result<(bool, Option<DurableWait>)> {
        check_key(key)?;
        let now = self.shared.clock.now_ms();
        let existed = self.shared.state.borrow().index.get(key).is_some_and(|e| !e.is_expired(now));
        let (_, wait) = self.append(&[Op::delete(key, now)], durability)?;
        Ok((existed, wait))
    }

    /// Waits until an appended write is as durable as it asked (see [`Store::put_now`]).
    pub async fn wait(&self, wait: DurableWait) -> Result<()> {
        group_commit::wait_for(&self.shared, wait.seq, wait.synced).await
    }

    /// Whether an appended write is now as durable as it asked: Ok(false) while it is not, and
    /// an error if the store was poisoned before it was covered (it will never be). With
    /// [`Store::progress_listener`] this lets one task acknowledge the writes of many requests
    /// per flush, instead of a task per request waiting in [`Store::wait`].
    pub fn is_durable(&self, wait: DurableWait) -> Result<bool> {
        let st = self.shared.state.borrow();
        if let Some(reason) = st.lost.as_ref().and_then(|l| l.covers(wait.seq, wait.synced)) {
            return Err(Error::Poisoned { reason: reason.to_string() });
        }
        let done = if wait.synced { st.synced_seq } else { st.written_seq };
        match &st.poisoned {
            _ if done >= wait.seq => Ok(true),
            Some(reason) => Err(Error::Poisoned { reason: reason.clone() }),
            None => Ok(false),
        }
    }

    /// Fires at the store's next durability progress (a flush written, a flush synced, or the
    /// store poisoned). Take it before checking [`Store::is_durable`], so no progress is missed.
    pub fn progress_listener(&self) -> event_listener::EventListener {
        self.shared.progress.listen()
    }

    async fn wait_appended(&self, wait: Option<DurableWait>) -> Result<()> {
        match wait {
            Some(w) => self.wait(w).await,
            None => Ok(()),
        }
    }

    /// Applies `ops` atomically: after any crash, recovery sees all of them or none.
    pub async fn write_batch(
        &self,
        ops: &[BatchOp],
        durability: Durability,
    ) -> Result<WriteReceipt> {
        let now = self.shared.clock.now_ms();
        let ops = validate_batch(ops, now)?;
        let (lsn, wait) = self.append(&ops, durability)?;
        self.wait_appended(wait).await?;
        Ok(WriteReceipt { lsn, version: now })
    }

    /// Appends `ops` unconditionally; returns the first LSN and what is left to wait for.
    fn append(&self, ops: &[Op<'_>], durability: Durability) -> Result<(u64, Option<DurableWait>)> {
        let (lsn, seq) = self
            .append_if(ops, None::<fn(&State<D>) -> bool>)?
            .expect("an unconditional write applies");
        Ok((lsn, group_commit::request_durable(&self.shared, seq, durability)))
    }

    /// Appends `ops` if `check` passes on the state of this moment (checked and appended in one
    /// synchronous step, so no other task runs in between), then waits for `durability`. None
    /// when the check failed and nothing was written.
    pub(crate) async fn write_if(
        &self,
        ops: &[Op<'_>],
        durability: Durability,
        check: impl FnOnce(&State<D>) -> bool,
    ) -> Result<Option<u64>> {
        let Some((lsn, seq)) = self.append_if(ops, Some(check))? else { return Ok(None) };
        group_commit::wait_durable(&self.shared, seq, durability).await?;
        Ok(Some(lsn))
    }

    /// The synchronous step of [`Store::write_if`]: (first LSN, append sequence of the last
    /// record), or None if `check` failed.
    ///
    /// No check appends unconditionally, and may leave the index updates of blind puts deferred
    /// (`deferred_puts.rs`); a check sees them applied.
    fn append_if(
        &self,
        ops: &[Op<'_>],
        check: Option<impl FnOnce(&State<D>) -> bool>,
    ) -> Result<Option<(u64, u64)>> {
        let mut st = self.shared.state.borrow_mut_deferring();
        st.check_writable()?;
        if let Some(check) = check {
            st.apply_deferred();
            if !check(&st) {
                return Ok(None);
            }
        }
        let (lsn, seq) = st.append_ops(ops)?;
        count_write(&mut st.counters, ops);
        drop(st);
        // Here, not after the wait: writes appended by the node's inline path are never awaited
        // through the store, and they must still bring on the periodic checkpoint.
        self.wake_maintenance_if_due();
        Ok(Some((lsn, seq)))
    }

    pub(crate) fn wake_maintenance_if_due(&self) {
        let due = self.shared.state.borrow_mut_deferring().bytes_since_checkpoint
            >= self.shared.config.checkpoint_interval_bytes;
        if due {
            self.shared.maintenance_wanted.notify(1);
        }
    }

    /// Waits until every write acknowledged so far is fsynced.
    pub async fn sync(&self) -> Result<()> {
        group_commit::sync_all(&self.shared).await
    }

    /// Writes an index checkpoint now; returns its LSN.
    pub async fn checkpoint(&self) -> Result<u64> {
        crate::checkpoint::run(&self.shared).await
    }

    /// Compacts every sealed segment over the garbage threshold, then checkpoints and deletes
    /// the compacted segments.
    pub async fn compact(&self) -> Result<compaction::CompactionReport> {
        compaction::run(&self.shared).await
    }

    pub fn stats(&self) -> StoreStats {
        let st = self.shared.state.borrow();
        StoreStats {
            keys: st.index.len() as u64,
            index_bytes: st.index.memory_bytes() as u64,
            index_key_bytes: st.index.key_bytes() as u64,
            cache: st.cache.stats(),
            segments: st.segments.len() as u64,
            disk_bytes: st.segments.disk_bytes(),
            dead_map_bytes: st.segments.dead_map_bytes() as u64,
            live_bytes: st.segments.live_bytes(),
            next_lsn: st.next_lsn,
            checkpoint_lsn: st.checkpoint_lsn,
            poisoned: st.poisoned.clone(),
            counters: st.counters,
            fsync_us: Percentiles::of(&st.histograms.fsync_us),
            durable_write_us: Percentiles::of(&st.histograms.durable_write_us),
            flush_records: Percentiles::of(&st.histograms.flush_records),
            maintenance_step_us: Percentiles::of(&st.histograms.maintenance_step_us),
        }
    }

    /// Refuses new writes, stops maintenance, syncs everything, writes a checkpoint and stops the
    /// flusher. Returns the first error met on the way (the tasks are stopped regardless).
    pub async fn close(self) -> Result<()> {
        self.shutdown().await
    }

    /// Whether a failed write or fsync made the store refuse writes ([`Error::Poisoned`]).
    pub fn is_poisoned(&self) -> bool {
        self.shared.state.borrow().poisoned.is_some()
    }

    /// Takes writes again after the store was poisoned (a full disk, a failed write or fsync),
    /// without a restart: stops the background tasks, recovers the state from the files exactly
    /// as an open would (the index, from the last checkpoint and the log; the cache starts
    /// empty), and starts the flusher and the background tasks again. Writes appended but not
    /// written when the poison struck are lost, as in a crash: none was acknowledged as durable,
    /// and their waiters get the poison error (NoSync writes were acknowledged and are lost, as
    /// NoSync allows). Returns Ok(false) if the store was not poisoned; on error (recovery
    /// failed) the store stays poisoned and serves reads as before. The counters carry over;
    /// `write_resumes` counts the resumes.
    pub async fn resume(&self) -> Result<bool> {
        let Some(reason) = self.shared.state.borrow().poisoned.clone() else { return Ok(false) };
        if self.shared.state.borrow().flusher_stop {
            return Err(Error::Closed);
        }
        let background = std::mem::take(&mut *self.background.borrow_mut());
        stop_background(&self.shared, background).await;
        let flusher = self.flusher.borrow_mut().take();
        if let Some(flusher) = flusher {
            // It exits on the poison.
            flusher.await;
        }
        let recovered = recovery::recover(&self.shared.disk, &self.shared.dir, &self.shared.config)
            .await
            .and_then(|(state, report)| {
                // Unattributed damage needs the operator's choice, made at a start.
                if report.accepted_damage {
                    return Err(Error::Poisoned {
                        reason: format!("{reason}; the log has damage to accept at a restart"),
                    });
                }
                Ok((state, report))
            });
        let result = match recovered {
            Ok((mut state, report)) => {
                let mut old = self.shared.state.borrow_mut();
                let upto = old.log.appended_seq();
                state.log = crate::log::writer::LogWriter::new(
                    self.shared.config.segment_size_bytes,
                    state.log.active_segment(),
                    upto,
                );
                (state.written_seq, state.synced_seq) = (upto, upto);
                (state.write_wanted_seq, state.sync_wanted_seq) = (upto, upto);
                state.lost = Some(crate::state::LostWrites {
                    written: old.written_seq,
                    synced: old.synced_seq,
                    upto,
                    reason: reason.clone(),
                });
                state.counters = std::mem::take(&mut old.counters);
                state.counters.write_resumes += 1;
                state.histograms = std::mem::take(&mut old.histograms);
                let lost = upto - old.written_seq;
                *old = state;
                drop(old);
                tracing::warn!(dir = %self.shared.dir.display(), %reason,
                    records_replayed = report.records_replayed, appended_not_written = lost,
                    "store taking writes again after a poison");
                Ok(true)
            }
            Err(e) => {
                self.shared.state.borrow_mut().closing = false;
                Err(e)
            }
        };
        // Wake every waiter on the old sequence numbers; they find the poison in `lost`.
        self.shared.progress.notify(usize::MAX);
        if result.is_ok() && self.shared.config.preallocate_segments {
            preallocate::prepare_at_open(&self.shared).await;
        }
        if result.is_ok() {
            let flusher = glommio::spawn_local(group_commit::run_flusher(self.shared.clone()));
            *self.flusher.borrow_mut() = Some(flusher);
        }
        *self.background.borrow_mut() = spawn_background(&self.shared)?;
        result
    }

    /// [`Store::close`] for a store that others still hold (the node's shards): afterwards every
    /// write fails with [`Error::Closed`]. Also trims the active segment's unused preallocated
    /// zeros and keeps the prepared segment file for the next open. A checkpoint that cannot be
    /// written (a full disk) is logged, not returned: the synced log has everything.
    pub async fn shutdown(&self) -> Result<()> {
        let background = std::mem::take(&mut *self.background.borrow_mut());
        stop_background(&self.shared, background).await;
        let result = match group_commit::sync_all(&self.shared).await {
            Ok(()) => match self.checkpoint().await {
                Ok(_) => preallocate::trim_active_at_close(&self.shared).await,
                // Not written (a full disk) but the store is not poisoned: everything is in the
                // synced log, which the next open replays from the previous checkpoint.
                Err(e) if self.shared.state.borrow().poisoned.is_none() => {
                    tracing::warn!(dir = %self.shared.dir.display(), error = %e,
                        "closing without a new checkpoint; the next open replays more log");
                    preallocate::trim_active_at_close(&self.shared).await
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        let result = result.and(preallocate::release_at_close(&self.shared).await);
        self.shared.state.borrow_mut().flusher_stop = true;
        self.shared.flush_wanted.notify(usize::MAX);
        let flusher = self.flusher.borrow_mut().take();
        if let Some(t) = flusher {
            t.await;
        }
        result
    }
}

/// Stops the maintenance task and the segment preparer (they exit when `closing` is set).
async fn stop_background(shared: &Shared<impl Disk>, tasks: Vec<Task<()>>) {
    shared.state.borrow_mut().closing = true;
    shared.maintenance_wanted.notify(usize::MAX);
    shared.prepare_wanted.notify(usize::MAX);
    for t in tasks {
        t.await;
    }
}

/// Spawns the tasks the config asks for, in one low-priority task queue: maintenance
/// (compaction and checkpoints) and the segment preparer.
fn spawn_background<D: Disk>(shared: &Rc<Shared<D>>) -> Result<Vec<Task<()>>> {
    let config = &shared.config;
    if !config.background_maintenance && !config.preallocate_segments {
        return Ok(Vec::new());
    }
    let queue = glommio::executor().create_task_queue(
        Shares::Static(config.maintenance_shares),
        Latency::NotImportant,
        "maintenance",
    );
    let spawn_err =
        |e| Error::Config { what: format!("cannot spawn the store's background tasks: {e}") };
    let mut tasks = Vec::new();
    if config.background_maintenance {
        let t = glommio::spawn_local_into(compaction::run_maintenance(shared.clone()), queue);
        tasks.push(t.map_err(spawn_err)?);
    }
    if config.preallocate_segments {
        let t = glommio::spawn_local_into(preallocate::run_preparer(shared.clone()), queue);
        tasks.push(t.map_err(spawn_err)?);
    }
    Ok(tasks)
}

fn count_write(c: &mut crate::stats::Counters, ops: &[Op<'_>]) {
    if ops.len() > 1 {
        c.batches += 1;
    }
    for op in ops {
        match op.kind {
            OpKind::Put => c.puts += 1,
            OpKind::Delete => c.deletes += 1,
        }
    }
}

pub(crate) fn validate_batch(ops: &[BatchOp], now: u64) -> Result<Vec<Op<'_>>> {
    if ops.is_empty() {
        return Err(Error::BatchEmpty);
    }
    if ops.len() > BATCH_OPS_MAX {
        return Err(Error::BatchTooManyOps { ops: ops.len(), max: BATCH_OPS_MAX });
    }
    let mut out = Vec::with_capacity(ops.len());
    let mut bytes = 0u64;
    for op in ops {
        let op = match op {
            BatchOp::Put { key, value, version, expiry_ms } => {
                check_key(key)?;
                check_value(value)?;
                let version = version.unwrap_or(now);
                Op {
                    kind: OpKind::Put,
                    key,
                    value,
                    version,
                    expiry_ms: *expiry_ms,
                    cache_new: false,
                }
            }
            BatchOp::Delete { key } => {
                check_key(key)?;
                Op::delete(key, now)
            }
        };
        bytes += record::padded_len(op.key.len(), op.value.len());
        out.push(op);
    }
    if bytes > BATCH_BYTES_MAX as u64 {
        return Err(Error::BatchTooLarge { bytes: bytes as usize, max: BATCH_BYTES_MAX });
    }
    Ok(out)
}
