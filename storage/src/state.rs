//! The mutable state of one store, shared by the request path and the background tasks.
//!
//! Everything runs on one executor thread, so a `RefCell` is enough; no borrow is ever held across
//! an `.await`. Write operations mutate the index and append to the log in one synchronous step,
//! which is what makes a batch, or a check-then-write, atomic with respect to every other task.

use std::cell::{Ref, RefCell, RefMut};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use event_listener::Event;

use crate::cache::RecordCache;
use crate::clock::Clock;
use crate::compaction_filter::CompactionFilter;
use crate::config::StoreConfig;
use crate::constants::*;
use crate::deferred_puts::DeferredPuts;
use crate::disk::Disk;
use crate::index::{Index, IndexEntry, Location};
use crate::log::prepared::Prepared;
use crate::log::writer::{Chunk, LogWriter, Reservation};
use crate::record::{self, RecordKind, RecordMeta};
use crate::segments::{SegmentInfo, SegmentTable};
use crate::stats::{Counters, Histograms};
use crate::{Error, Result};

/// What every task of one store shares.
pub(crate) struct Shared<D: Disk> {
    pub disk: D,
    pub dir: PathBuf,
    pub config: StoreConfig,
    pub clock: Rc<dyn Clock>,
    /// Borrowed through [`StateCell`], which applies deferred index updates first.
    pub state: StateCell<D>,
    /// Written/synced progress or poisoning: wakes writers waiting for durability.
    pub progress: Event,
    /// Wakes the flusher.
    pub flush_wanted: Event,
    /// Wakes the maintenance task (compaction, checkpoints).
    pub maintenance_wanted: Event,
    /// Wakes the segment preparer ([`crate::log::preallocate`]).
    pub prepare_wanted: Event,
    /// One compaction or checkpoint at a time.
    pub maintenance_lock: glommio::sync::Semaphore,
    /// The layer above's say in what compaction keeps.
    pub compaction_filter: RefCell<Option<Rc<dyn CompactionFilter>>>,
}

pub(crate) struct State<D: Disk> {
    pub index: Index,
    /// Index updates of blind puts waiting to be applied as a group (`deferred_puts.rs`).
    pub deferred: DeferredPuts,
    pub cache: RecordCache,
    pub log: LogWriter,
    pub segments: SegmentTable<D::File>,
    /// Chunks the flusher is writing; reads of their records are served from here.
    pub inflight: Vec<Chunk>,
    /// A zero-filled, fsynced file ready to become the next segment.
    pub prepared: Prepared<D::File>,
    pub next_lsn: u64,
    pub written_seq: u64,
    pub synced_seq: u64,
    pub write_wanted_seq: u64,
    pub sync_wanted_seq: u64,
    /// When the oldest unflushed record was appended.
    pub pending_since: Option<Instant>,
    /// The flusher knows about the pending records (so `NoSync` writers need not wake it again).
    pub flusher_armed: bool,
    /// The flusher waits on `flush_wanted` and nothing has woken it since: a Sync writer
    /// notifies only then. A notification takes a SeqCst fence and the event's lock even with
    /// nobody listening; one per Sync put was 1.9% of the shard's CPU at pipeline 32, while the
    /// flusher, busy with the previous flush, was not listening for most of them (it checks
    /// the wanted sequence numbers before it waits again).
    pub flusher_waiting: bool,
    /// While the flusher waits in its commit delay (`group_commit::commit_delay`): the append
    /// sequence number that ends the wait, so that only the Sync writer that reaches it wakes
    /// the flusher. 0 otherwise (every Sync writer wakes a waiting flusher).
    pub commit_delay_until_seq: u64,
    pub checkpoint_lsn: u64,
    pub bytes_since_checkpoint: u64,
    pub poisoned: Option<String>,
    /// Appended writes that a [`crate::Store::resume`] gave up: their waiters get the poison.
    pub lost: Option<LostWrites>,
    pub closing: bool,
    /// Set by close once everything is synced: the flusher exits when idle.
    pub flusher_stop: bool,
    pub counters: Counters,
    pub histograms: Histograms,
}

/// The appended writes a resumed store dropped: sequence numbers above what was written (or
/// synced) when the store was poisoned, up to the last one appended. A waiter for one of them
/// must get the poison, never success from the new state's counters, which continue at `upto`.
#[derive(Debug, Clone)]
pub(crate) struct LostWrites {
    pub written: u64,
    pub synced: u64,
    pub upto: u64,
    pub reason: String,
}

impl LostWrites {
    /// The poison reason if `seq`, waited for as written (or synced, if `synced`), was lost.
    pub fn covers(&self, seq: u64, synced: bool) -> Option<&str> {
        let done = if synced { self.synced } else { self.written };
        (seq > done && seq <= self.upto).then_some(self.reason.as_str())
    }
}

/// What an [`Op`] does to its key (a range delete is not an op: `range_delete.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    Put,
    Delete,
}

impl OpKind {
    fn record_kind(self) -> RecordKind {
        match self {
            OpKind::Put => RecordKind::Put,
            OpKind::Delete => RecordKind::Delete,
        }
    }
}

/// One operation of a write, already validated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op<'a> {
    pub kind: OpKind,
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub version: u64,
    pub expiry_ms: u64,
    /// Cache the new value even if the key is not cached (a put whose writer read the row
    /// first; see [`crate::cache::RecordCache::write_through_at`]).
    pub cache_new: bool,
}

impl<'a> Op<'a> {
    /// A delete of `key`, versioned `now`.
    pub fn delete(key: &'a [u8], now: u64) -> Op<'a> {
        Op { kind: OpKind::Delete, key, value: &[], version: now, expiry_ms: 0, cache_new: false }
    }
}

/// The store's state, borrowed through this so that no one but the put path sees it with
/// index updates still deferred.
pub(crate) struct StateCell<D: Disk>(RefCell<State<D>>);

impl<D: Disk> StateCell<D> {
    pub fn new(state: State<D>) -> StateCell<D> {
        StateCell(RefCell::new(state))
    }

    /// The state with every deferred update applied.
    pub fn borrow(&self) -> Ref<'_, State<D>> {
        // A shared borrow already held means nothing is deferred: the put path defers only
        // under its own exclusive borrow, and every other borrow applies them.
        if let Ok(mut st) = self.0.try_borrow_mut() {
            st.apply_deferred();
        }
        self.0.borrow()
    }

    /// The state with every deferred update applied, to change.
    pub fn borrow_mut(&self) -> RefMut<'_, State<D>> {
        let mut st = self.0.borrow_mut();
        st.apply_deferred();
        st
    }

    /// The state as it is, deferred updates and all: only for the put path
    /// ([`State::append_ops`] defers and applies updates itself) and for bookkeeping that reads
    /// no index entry and no live-byte count.
    pub fn borrow_mut_deferring(&self) -> RefMut<'_, State<D>> {
        self.0.borrow_mut()
    }
}

impl<D: Disk> Shared<D> {
    /// Makes creations, renames and removals in the store directory durable.
    pub async fn sync_dir(&self) -> Result<()> {
        self.disk.sync_dir(&self.dir).await.map_err(|e| Error::io("fsync directory", &self.dir, e))
    }

    pub fn segment_path(&self, id: u32) -> PathBuf {
        self.dir.join(crate::log::segment_file::segment_file_name(id))
    }
}

impl<D: Disk> State<D> {
    /// Applies the index updates of blind puts that wait in `deferred` (`deferred_puts.rs`).
    pub fn apply_deferred(&mut self) {
        let State { index, segments, deferred, counters, .. } = self;
        deferred.apply(index, segments, counters);
    }

    pub fn check_writable(&self) -> Result<()> {
        if let Some(reason) = &self.poisoned {
            return Err(Error::Poisoned { reason: reason.clone() });
        }
        if self.closing {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Reserves `len` bytes in the log, opening a new segment if needed.
    pub fn reserve(&mut self, len: u64) -> Result<Reservation> {
        // The free id is looked for only when the log opens a segment, not on every write.
        let segments = &self.segments;
        let r = self
            .log
            .reserve(len, || segments.free_id())
            .ok_or(Error::SegmentIdsExhausted { max: SEGMENT_ID_MAX })?;
        if let Some(id) = r.opened_segment {
            self.segments.insert(id, SegmentInfo::new(None, SEGMENT_HEADER_BYTES, false));
        }
        Ok(r)
    }

    /// Appends `ops` as one atomic group and applies them to the index and cache. Returns the
    /// append sequence number of the last record. Nothing is appended if the index refuses a key.
    pub fn append_ops(&mut self, ops: &[Op<'_>]) -> Result<(u64, u64)> {
        let total: u64 = ops.iter().map(|o| record::padded_len(o.key.len(), o.value.len())).sum();
        let r = self.reserve(total)?;
        let first_lsn = self.next_lsn;
        let mut offset = r.offset;
        let mut seq = 0;
        for (i, op) in ops.iter().enumerate() {
            let len = record::padded_len(op.key.len(), op.value.len());
            let loc = Location::new(r.segment, offset, len);
            if let Err(e) = self.apply_to_index(op, loc) {
                // Only the first op can fail before anything is appended; later ones would leave
                // a half-applied batch in memory, so the store stops instead.
                if i > 0 {
                    self.poisoned = Some(format!("index refused key {i} of a batch: {e}"));
                }
                return Err(e);
            }
            let meta = RecordMeta {
                kind: op.kind.record_kind(),
                lsn: self.next_lsn,
                version: op.version,
                expiry_ms: op.expiry_ms,
                segment_id: r.segment,
                flags: 0,
                batch_remaining: (ops.len() - 1 - i) as u16,
            };
            self.next_lsn += 1;
            let (at, s) = self.append_record(&meta, op.key, op.value);
            assert_eq!(at, loc, "log placed a record away from its reservation");
            seq = s;
            offset += len;
        }
        self.note_appended(total);
        Ok((first_lsn, seq))
    }

    /// Points the index at the new record (or removes the key for a delete) and moves live bytes.
    fn apply_to_index(&mut self, op: &Op<'_>, loc: Location) -> Result<()> {
        let old = match op.kind {
            OpKind::Put => {
                // The cached copy, if any, keeps where the key's index entry was at its last
                // write, so the index need not search for it. A refused key changes nothing, so
                // its cached copy stays current.
                let at = self.cache.locate(op.key);
                let entry = IndexEntry::new(loc, op.version, op.expiry_ms);
                if !at.is_cached() && !op.cache_new && self.deferred.admits(&self.index, op.key) {
                    // A blind put: its search waits to overlap with others'.
                    if self.deferred.is_full() {
                        self.apply_deferred();
                    }
                    self.deferred.push(op.key, entry);
                    self.segments.add_live(loc.segment(), loc.len());
                    return Ok(());
                }
                self.apply_deferred();
                let (old, hint) =
                    self.index.upsert_hinted(op.key, entry, self.cache.index_hint(&at))?;
                self.cache.write_through_at(
                    at,
                    op.key,
                    op.value,
                    op.version,
                    op.expiry_ms,
                    op.cache_new,
                    hint,
                );
                self.segments.add_live(loc.segment(), loc.len());
                old
            }
            OpKind::Delete => {
                self.apply_deferred();
                self.cache.remove(op.key);
                self.index.remove(op.key)
            }
        };
        if let Some(old) = old {
            let old = old.location();
            self.segments.record_died(old.segment(), old.offset(), old.len());
        }
        Ok(())
    }

    /// Re-appends a record compaction found live, keeping its LSN, version and expiry.
    pub fn append_moved(
        &mut self,
        meta: &RecordMeta,
        key: &[u8],
        value: &[u8],
    ) -> Result<(Location, u64)> {
        let len = record::padded_len(key.len(), value.len());
        let r = self.reserve(len)?;
        let meta = RecordMeta {
            segment_id: r.segment,
            flags: record::FLAG_MOVED,
            batch_remaining: 0,
            ..*meta
        };
        let (loc, seq) = self.append_record(&meta, key, value);
        self.note_appended(len);
        Ok((loc, seq))
    }

    /// Appends one record to the log tail, noting a tombstone in its segment
    /// (`SegmentInfo::tombstone_lsn_max`, which tells compaction whether it may read only a
    /// victim's live records).
    pub(crate) fn append_record(
        &mut self,
        meta: &RecordMeta,
        key: &[u8],
        value: &[u8],
    ) -> (Location, u64) {
        if meta.kind != RecordKind::Put {
            self.segments.note_tombstone(meta.segment_id, meta.lsn);
        }
        self.log.append(meta, key, value)
    }

    pub(crate) fn note_appended(&mut self, bytes: u64) {
        self.bytes_since_checkpoint += bytes;
        if self.pending_since.is_none() {
            self.pending_since = Some(Instant::now());
        }
    }

    /// Record bytes at `loc` that have not reached the file yet.
    pub fn find_unflushed(&self, loc: Location) -> Option<&[u8]> {
        self.log.find(loc).or_else(|| self.inflight.iter().find_map(|c| c.find(loc)))
    }
}

/// Checks a key against the store's limits.
pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::KeyEmpty);
    }
    if key.len() > KEY_BYTES_MAX {
        return Err(Error::KeyTooLarge { len: key.len(), max: KEY_BYTES_MAX });
    }
    Ok(())
}

/// Checks a value against the store's limits.
pub(crate) fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > VALUE_BYTES_MAX {
        return Err(Error::ValueTooLarge { len: value.len(), max: VALUE_BYTES_MAX });
    }
    Ok(())
}
