//! Segment preallocation: one zero-filled, fsynced file kept ready for the next segment, so that
//! a flush never grows a file.
//!
//! Why: an O_DIRECT write past the end of a file changes its size and allocates blocks. On ext4
//! io_uring cannot issue such a write without blocking, so it hands it to a kernel worker thread,
//! and the next `fdatasync` must commit the size and the new extents through the journal before
//! it can return. A write inside a file whose blocks are allocated *and written* (zeros count;
//! `fallocate` alone leaves them "unwritten", which converts on first write and journals again)
//! is a plain overwrite: issued inline, and its `fdatasync` only flushes the device's write cache.
//! This disk measured 128 us for a 4 KiB append + fdatasync and 85 us for an overwrite of a
//! pre-zeroed file + fdatasync (`../shared/DESIGN.md`); docs/BENCHMARKS.md has the A/B on the node.
//!
//! How: the preparer task writes [`PREPARED_SEGMENT_FILE`] with zeros up to
//! `segment_size_bytes` in [`PREALLOCATE_WRITE_BYTES`] writes, fdatasyncs it and parks it in
//! [`State::prepared`](crate::state::State). When the flusher opens a new segment it takes that
//! file, renames it to the segment's name, then writes the header and syncs as for any new segment
//! ([`super::group_commit`]); then it wakes the preparer for the next one. With no file ready (the
//! first segment after open, a preparer that failed, or a disk that fills) the flusher creates the
//! segment the plain way, so preallocation only ever makes a flush cheaper, never waits for one.
//!
//! One task at a time owns the prepared file's name ([`Prepared`]): the preparer while it writes
//! the file, the flusher while it renames it. Without that, a preparer woken during the rename
//! could remove and recreate the name, and the rename would then give the segment the new,
//! headerless file while the flusher wrote into the old one.
//!
//! On disk the zeros are flush padding to the scanner (docs/FORMAT.md, "Reading a segment"), so a
//! preallocated segment reads exactly like a grown one. A leftover prepared file (a crash while
//! preparing, or the one ready at close) is removed at open: its zeros may not be durable.

use std::rc::Rc;

use crate::constants::*;
use crate::disk::{Disk, DiskFile};
use crate::state::Shared;
use crate::{Error, Result};

/// The prepared segment's file name; never a segment name (`seg-XXXXXXXX.log`).
pub const PREPARED_SEGMENT_FILE: &str = "seg-prepared.tmp";

/// Size of each zero write while preparing (64 writes for a 64 MiB segment).
pub const PREALLOCATE_WRITE_BYTES: u64 = 1024 * 1024;

const _: () = assert!(PREALLOCATE_WRITE_BYTES.is_multiple_of(DMA_ALIGN_BYTES));

/// The prepared file and who owns its name.
#[derive(Debug, Default)]
pub(crate) enum Prepared<F> {
    /// No file under [`PREPARED_SEGMENT_FILE`] that anyone uses (a partial leftover at most).
    #[default]
    Absent,
    /// A task is writing or renaming the file; nobody else touches the name.
    Busy,
    /// Zero-filled, fsynced, under [`PREPARED_SEGMENT_FILE`], ready to become a segment.
    Ready(F),
}

/// Prepares the first segment's file at open, before any write can need it (a store that just
/// opened writes to a new segment, and would otherwise grow its whole first segment). A failure is
/// logged and counted, not returned: the store works without preallocation.
pub(crate) async fn prepare_at_open<D: Disk>(shared: &Shared<D>) {
    if claim(shared) {
        prepare_claimed(shared).await;
    }
}

/// The preparer task: keeps one prepared file ready until the store closes or is poisoned.
/// A failed preparation (ENOSPC, an I/O error) is logged, counted and retried when the next
/// segment is opened; the store goes on creating segments the plain way meanwhile.
pub(crate) async fn run_preparer<D: Disk>(shared: Rc<Shared<D>>) {
    loop {
        let listener = shared.prepare_wanted.listen();
        let stopped = {
            let st = shared.state.borrow();
            st.closing || st.poisoned.is_some()
        };
        if stopped {
            return;
        }
        if claim(&shared) && prepare_claimed(&shared).await {
            continue;
        }
        listener.await;
    }
}

/// Takes the name for preparing if nobody holds it and no file is ready.
fn claim<D: Disk>(shared: &Shared<D>) -> bool {
    let mut st = shared.state.borrow_mut();
    let free = matches!(st.prepared, Prepared::Absent);
    if free {
        st.prepared = Prepared::Busy;
    }
    free
}

/// Prepares a file under the claimed name; true if one is now ready. Always releases the claim.
async fn prepare_claimed<D: Disk>(shared: &Shared<D>) -> bool {
    let result = prepare(shared).await;
    let ready = matches!(result, Ok(Some(_)));
    match result {
        Ok(Some(file)) => {
            let mut st = shared.state.borrow_mut();
            st.prepared = Prepared::Ready(file);
            st.counters.preallocations += 1;
        }
        // Stopped by close: the partial file stays for close (or the next open) to remove.
        Ok(None) => shared.state.borrow_mut().prepared = Prepared::Absent,
        Err(e) => failed(shared, &e).await,
    }
    ready
}

/// Writes one prepared file; None if the store started closing meanwhile.
async fn prepare<D: Disk>(shared: &Shared<D>) -> Result<Option<D::File>> {
    remove_leftover(shared).await?;
    let path = shared.dir.join(PREPARED_SEGMENT_FILE);
    let file = shared.disk.create(&path).await.map_err(|e| Error::io("create", &path, e))?;
    let size = shared.config.segment_size_bytes;
    let mut pos = 0;
    while pos < size {
        if shared.state.borrow().closing {
            return Ok(None);
        }
        let len = (size - pos).min(PREALLOCATE_WRITE_BYTES);
        let zeros = file.alloc_buf(len as usize);
        file.write_at(zeros, pos).await.map_err(|e| Error::io("write", &path, e))?;
        pos += len;
    }
    file.fdatasync().await.map_err(|e| Error::io("fdatasync", &path, e))?;
    Ok(Some(file))
}

/// Logs and counts a failed preparation or rename, removes what is left under the name (the
/// caller holds it) and releases the name.
async fn failed<D: Disk>(shared: &Shared<D>, e: &Error) {
    tracing::warn!(dir = %shared.dir.display(), error = %e,
        "segment preallocation failed; new segments grow as they are written until one succeeds");
    remove_leftover(shared).await.ok();
    let mut st = shared.state.borrow_mut();
    st.counters.preallocations_failed += 1;
    st.prepared = Prepared::Absent;
}

/// At close, after the preparer stopped and the last flush (so nobody holds the name): gives the
/// prepared file's space back (a file left now would be removed at the next open anyway; its
/// zeros are not trusted across a restart).
pub(crate) async fn remove_at_close<D: Disk>(shared: &Shared<D>) -> Result<()> {
    shared.state.borrow_mut().prepared = Prepared::Absent;
    remove_leftover(shared).await
}

/// Removes [`PREPARED_SEGMENT_FILE`] from the store's directory if it exists.
async fn remove_leftover<D: Disk>(shared: &Shared<D>) -> Result<()> {
    let (disk, dir) = (&shared.disk, &shared.dir);
    let names = disk.list_dir(dir).await.map_err(|e| Error::io("list", dir, e))?;
    if names.iter().any(|n| n == PREPARED_SEGMENT_FILE) {
        let path = dir.join(PREPARED_SEGMENT_FILE);
        disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
    }
    Ok(())
}

/// The prepared file, renamed to segment `id`'s path, if one is ready; None otherwise (the caller
/// creates the segment the plain way). Wakes the preparer for the next one either way.
pub(crate) async fn take_for_segment<D: Disk>(shared: &Shared<D>, id: u32) -> Option<D::File> {
    let taken = std::mem::replace(&mut shared.state.borrow_mut().prepared, Prepared::Busy);
    let Prepared::Ready(file) = taken else {
        // Put back what was there (Absent, or Busy: the preparer is still writing).
        shared.state.borrow_mut().prepared = taken;
        shared.prepare_wanted.notify(1);
        return None;
    };
    let from = shared.dir.join(PREPARED_SEGMENT_FILE);
    let to = shared.segment_path(id);
    let renamed = shared.disk.rename(&from, &to).await;
    let file = match renamed {
        Ok(()) => {
            shared.state.borrow_mut().prepared = Prepared::Absent;
            Some(file)
        }
        Err(e) => {
            // The flusher creates the segment the plain way; the file it could not rename goes.
            failed(shared, &Error::io("rename", &to, e)).await;
            None
        }
    };
    shared.prepare_wanted.notify(1);
    file
}
