//! Maintenance in steps: the long pieces of compaction and checkpointing run a bounded amount of
//! work at a time and then give the shard's thread back to the requests.
//!
//! The maintenance task has a task queue of its own, but a glommio queue keeps the thread until
//! its task awaits something that is not ready or its time slice ends, so a long synchronous
//! piece of work is a pause of every request on the shard. Before these steps, compaction's index
//! re-pointing of 65,536 moved records held a shard of 1,000,000 keys for 13-25 ms at a time, and
//! a checkpoint's crcs of the index sections for about 4 ms (docs/BENCHMARKS.md, nineteenth
//! session). The `maintenance_step_us` histogram (metrics) records how long each step held the
//! thread.

/// Records compaction re-points in one step ([`crate::index::Index::relocate_sorted`] over a
/// slice of a sorted batch): about 0.3-0.5 us each in a 1,000,000-key shard, so a step of
/// about 1 ms.
pub(crate) const RELOCATION_STEP_MOVES: usize = 2048;

/// Index slots compaction's walk for a victim's live records visits in one step
/// ([`crate::index::Index::walk_segment_step`]): 6 MiB of entries read in place.
pub(crate) const WALK_STEP_SLOTS: usize = 256 * 1024;

/// Bytes of a checkpoint section one step runs through crc32c: about 80 us.
pub(crate) const CRC_STEP_BYTES: usize = 1024 * 1024;

/// Lets every other task queue run (the requests') before the next step. Outside a glommio
/// executor it is a plain yield.
pub(crate) async fn yield_to_requests() {
    glommio::executor().yield_task_queue_now().await;
}

/// crc32c of `bytes`, [`CRC_STEP_BYTES`] at a time with a yield between steps.
pub(crate) async fn crc32c_in_steps(bytes: &[u8]) -> u32 {
    let mut crc = 0;
    for (i, piece) in bytes.chunks(CRC_STEP_BYTES).enumerate() {
        if i > 0 {
            yield_to_requests().await;
        }
        crc = crc32c::crc32c_append(crc, piece);
    }
    crc
}
