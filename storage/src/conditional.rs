//! Check-then-write primitives for read-modify-write callers (the table layer's conditional
//! writes, updates, multi-version rows and `execute`), and an atomic range delete.
//!
//! A read-modify-write reads a key (which may wait for a disk read, letting other tasks run),
//! decides what to write, and must then write only if nobody wrote the key in between. The
//! store does this optimistically: [`Store::stamp`] notes where the key's current record lives
//! (every write of a key, and every compaction move, gives it a new location), and
//! [`Store::write_batch_if`] appends its batch only if every stamp still matches, checking and
//! appending in one synchronous step. A caller whose check fails reads again and retries.
//!
//! [`Store::delete_range`] appends one range tombstone and removes the range's keys from the
//! index in the same synchronous step, so no write can slip between the two: after any crash,
//! recovery sees the tombstone or not, and with it every key of the range deleted or none.

use std::ops::Bound;

use crate::disk::Disk;
use crate::log::group_commit::Durability;
use crate::range_delete::StoredRange;
use crate::state::check_key;
use crate::store::{validate_batch, BatchOp, Store, Value, WriteReceipt};
use crate::Result;

/// Where a key's current record was when a read-modify-write began (None: no record). Two
/// stamps of one key are equal only if no write replaced the record in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp(Option<u64>);

impl Stamp {
    fn of(index: &crate::index::Index, key: &[u8]) -> Stamp {
        Stamp(index.get(key).map(|e| e.location().to_raw()))
    }

    /// The key had no record when it was stamped.
    pub fn is_absent(&self) -> bool {
        self.0.is_none()
    }
}

/// What [`Store::delete_range`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRangeReport {
    /// Keys deleted that had not expired (expired keys of the range leave the index too).
    pub deleted: usize,
}

impl<D: Disk> Store<D> {
    /// The stamp of `key`'s current record.
    pub fn stamp(&self, key: &[u8]) -> Stamp {
        Stamp::of(&self.shared.state.borrow().index, key)
    }

    /// [`Store::get`] together with the stamp taken just before the read: if the stamp still
    /// matches at write time, the value read is the key's current value.
    pub async fn get_stamped(&self, key: &[u8]) -> Result<(Option<Value>, Stamp)> {
        check_key(key)?;
        let stamp = self.stamp(key);
        Ok((self.get(key).await?, stamp))
    }

    /// Applies `ops` atomically, as [`Store::write_batch`], but only if every `(key, stamp)` of
    /// `expect` still matches. Returns None, having written nothing, if one does not.
    pub async fn write_batch_if(
        &self,
        ops: &[BatchOp],
        expect: &[(&[u8], Stamp)],
        durability: Durability,
    ) -> Result<Option<WriteReceipt>> {
        let now = self.shared.clock.now_ms();
        let mut ops = validate_batch(ops, now)?;
        // The rows the writer read are read again by their next write (every write of a table
        // with secondary indexes reads its row): keep their new values in the cache.
        for op in &mut ops {
            op.cache_new = expect.iter().any(|(key, _)| *key == op.key);
        }
        let unchanged = |st: &crate::state::State<D>| {
            expect.iter().all(|(key, stamp)| Stamp::of(&st.index, key) == *stamp)
        };
        let lsn = self.write_if(&ops, durability, unchanged).await?;
        Ok(lsn.map(|lsn| WriteReceipt { lsn, version: now }))
    }

    /// Deletes every key in `start..end`, atomically, however many there are: one range
    /// tombstone in the log, and the keys leave the index in the same synchronous step, so a
    /// reader sees all of them or none, and after a crash all of them are gone or none
    /// (`range_delete.rs`). Bounds that admit no key write nothing; a range that holds no key
    /// still gets its record, so the delete is as durable as asked whatever came before it.
    pub async fn delete_range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        durability: Durability,
    ) -> Result<DeleteRangeReport> {
        let Some(range) = StoredRange::new(start, end)? else {
            return Ok(DeleteRangeReport::default());
        };
        let now = self.shared.clock.now_ms();
        let (deleted, seq) = {
            let mut st = self.shared.state.borrow_mut();
            st.check_writable()?;
            let (deleted, seq) = st.append_range_delete(&range, now, now)?;
            st.counters.deletes += deleted as u64;
            (deleted, seq)
        };
        crate::log::group_commit::wait_durable(&self.shared, seq, durability).await?;
        self.wake_maintenance_if_due();
        Ok(DeleteRangeReport { deleted })
    }
}
