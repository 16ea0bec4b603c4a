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
//! [`Store::delete_range`] collects the live keys of a range and appends their tombstones as one
//! atomic batch in the same synchronous step, so no write can slip between the two: after any
//! crash, recovery sees every tombstone of the batch or none.

use crate::constants::*;
use crate::disk::Disk;
use crate::log::group_commit::Durability;
use crate::read::{as_ref, bounds, ScanRequest};
use crate::record::{self, RecordKind};
use crate::state::{check_key, Op};
use crate::store::{validate_batch, BatchOp, Store, Value, WriteReceipt};
use crate::{Error, Result};

/// Where a key's current record was when a read-modify-write began (None: no record). Two
/// stamps of one key are equal only if no write replaced the record in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp(Option<u64>);

impl Stamp {
    fn of(index: &crate::index::Index, key: &[u8]) -> Stamp {
        Stamp(index.get(key).map(|e| e.location().to_raw()))
    }
}

/// What [`Store::delete_range`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRangeReport {
    /// Keys deleted (live, unexpired keys of the range; each got a tombstone).
    pub deleted: usize,
    /// The last key deleted, when the limit (or the batch byte limit) stopped the delete: pass
    /// it as the next request's `resume` to go on.
    pub resume: Option<Vec<u8>>,
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
        let ops = validate_batch(ops, now)?;
        let unchanged = |st: &crate::state::State<D>| {
            expect.iter().all(|(key, stamp)| Stamp::of(&st.index, key) == *stamp)
        };
        let lsn = self.write_if(&ops, durability, unchanged).await?;
        Ok(lsn.map(|lsn| WriteReceipt { lsn, version: now }))
    }

    /// Deletes the live keys of `req`'s range (in its direction, after its `resume`), at most
    /// `req.limit` of them and at most one batch ([`BATCH_OPS_MAX`] keys, [`BATCH_BYTES_MAX`]
    /// bytes), atomically. `req.keys_only` is ignored.
    pub async fn delete_range(
        &self,
        req: &ScanRequest,
        durability: Durability,
    ) -> Result<DeleteRangeReport> {
        if req.limit == 0 || req.limit > BATCH_OPS_MAX {
            return Err(Error::ScanLimit { limit: req.limit, max: BATCH_OPS_MAX });
        }
        let (start, end) = bounds(req);
        let now = self.shared.clock.now_ms();
        let (lsn_seq, report) = {
            let mut st = self.shared.state.borrow_mut();
            st.check_writable()?;
            let mut keys: Vec<Vec<u8>> = Vec::new();
            let mut bytes = 0u64;
            let mut cut = false;
            let range = st.index.range(as_ref(&start), as_ref(&end), req.reverse);
            for (key, _) in range.filter(|(_, e)| !e.is_expired(now)) {
                let len = record::padded_len(key.len(), 0);
                if keys.len() == req.limit || bytes + len > BATCH_BYTES_MAX as u64 {
                    cut = true;
                    break;
                }
                bytes += len;
                keys.push(key.to_vec());
            }
            let ops: Vec<Op<'_>> = keys
                .iter()
                .map(|key| Op {
                    kind: RecordKind::Delete,
                    key,
                    value: &[],
                    version: now,
                    expiry_ms: 0,
                })
                .collect();
            let seq = if ops.is_empty() {
                None
            } else {
                let (_, seq) = st.append_ops(&ops)?;
                st.counters.deletes += ops.len() as u64;
                st.counters.batches += u64::from(ops.len() > 1);
                Some(seq)
            };
            let resume = if cut { keys.last().cloned() } else { None };
            (seq, DeleteRangeReport { deleted: keys.len(), resume })
        };
        if let Some(seq) = lsn_seq {
            crate::log::group_commit::wait_durable(&self.shared, seq, durability).await?;
            self.wake_maintenance_if_due();
        }
        Ok(report)
    }
}
