//! Group commit: one flusher task per store turns many appended records into one write and at
//! most one fdatasync (or, for a Sync flush with nothing unsynced before it, one O_DSYNC write
//! and no fdatasync), and wakes every writer whose records that made durable enough.
//!
//! Writers append synchronously (see [`crate::state::State::append_ops`]), record what they need
//! (`write_wanted_seq`, `sync_wanted_seq`) and wait on the `progress` event. The flusher takes all
//! pending chunks at once; whatever is appended while its I/O is in flight goes into the next
//! flush. A `NoSync` record wakes nobody: the flusher writes it when the flush interval since the
//! oldest pending record expires, or earlier with any other flush.
//!
//! A failed write or fsync poisons the store: the error is recorded, every waiter whose record
//! is not yet covered gets [`Error::Poisoned`], and the flusher stops. Nothing is retried: after a
//! failed fsync the kernel may have dropped the dirty pages, so a retry could report success for
//! data that is gone.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::constants::*;
use crate::disk::{Disk, DiskFile};
use crate::log::preallocate;
use crate::log::segment_file::encode_header;
use crate::state::Shared;
use crate::stats::record_elapsed_us;
use crate::{Error, Result};

/// How durable a write must be before it is acknowledged (a wire concept, so it lives in
/// `ringstore-model`).
pub use ringstore_model::Durability;

/// What a writer still waits for after its records were appended: the append sequence number to
/// reach, and whether it must be synced (else written). Made by [`request_durable`], awaited by
/// [`wait_for`]. A request path that cannot wait in place (the node's inline path) keeps it and
/// awaits it elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurableWait {
    pub(crate) seq: u64,
    pub(crate) synced: bool,
}

/// Tells the flusher that the record with append sequence `seq` must become as durable as
/// `durability` asks. None when the writer need not wait: a `NoSync` record, acknowledged once
/// buffered (unless the write buffer is full, when it waits for the write like `WriteNoSync`).
pub(crate) fn request_durable<D: Disk>(
    shared: &Shared<D>,
    seq: u64,
    durability: Durability,
) -> Option<DurableWait> {
    // Durability bookkeeping only: a blind put's deferred index update may stay deferred.
    let mut st = shared.state.borrow_mut_deferring();
    match durability {
        Durability::Sync => st.sync_wanted_seq = st.sync_wanted_seq.max(seq),
        Durability::WriteNoSync => st.write_wanted_seq = st.write_wanted_seq.max(seq),
        Durability::NoSync if st.log.pending_bytes() >= WRITE_BUFFER_BYTES_MAX => {
            // Backpressure: the buffer is full, so this writer waits for the write like a
            // WriteNoSync one instead of letting memory grow.
            st.write_wanted_seq = st.write_wanted_seq.max(seq);
            st.counters.write_buffer_waits += 1;
        }
        Durability::NoSync => {
            // Wake the flusher only for the first record of a flush, so it can arm its
            // interval timer; a wake-up per write would cost more than the write.
            if !st.flusher_armed {
                st.flusher_armed = true;
                drop(st);
                shared.flush_wanted.notify(1);
            }
            return None;
        }
    }
    let wake = st.flusher_waiting && seq >= st.commit_delay_until_seq;
    if wake {
        st.flusher_waiting = false;
    }
    drop(st);
    if wake {
        shared.flush_wanted.notify(1);
    }
    Some(DurableWait { seq, synced: durability == Durability::Sync })
}

/// Waits until the record with append sequence `seq` is as durable as `durability` asks.
pub(crate) async fn wait_durable<D: Disk>(
    shared: &Shared<D>,
    seq: u64,
    durability: Durability,
) -> Result<()> {
    match request_durable(shared, seq, durability) {
        None => Ok(()),
        Some(w) => wait_for(shared, w.seq, w.synced).await,
    }
}

/// Waits until `seq` is written (or synced, if `synced`), or the store is poisoned.
pub(crate) async fn wait_for<D: Disk>(shared: &Shared<D>, seq: u64, synced: bool) -> Result<()> {
    loop {
        let listener = shared.progress.listen();
        {
            let st = shared.state.borrow();
            if let Some(reason) = st.lost.as_ref().and_then(|l| l.covers(seq, synced)) {
                return Err(Error::Poisoned { reason: reason.to_string() });
            }
            let done = if synced { st.synced_seq } else { st.written_seq };
            if done >= seq {
                return Ok(());
            }
            if let Some(reason) = &st.poisoned {
                return Err(Error::Poisoned { reason: reason.clone() });
            }
        }
        listener.await;
    }
}

/// Asks for everything appended so far to be synced and waits for it.
pub(crate) async fn sync_all<D: Disk>(shared: &Shared<D>) -> Result<()> {
    let seq = {
        let mut st = shared.state.borrow_mut();
        let seq = st.log.appended_seq();
        st.sync_wanted_seq = st.sync_wanted_seq.max(seq);
        seq
    };
    shared.flush_wanted.notify(1);
    wait_for(shared, seq, true).await
}

/// One flush: the chunks taken, the sequence number they end at, and whether to fdatasync.
struct Job {
    chunks: usize,
    upto_seq: u64,
    sync: bool,
    records: u64,
}

/// The flusher task: runs until the store closes (after a final flush) or is poisoned.
pub(crate) async fn run_flusher<D: Disk>(shared: Rc<Shared<D>>) {
    while let Some(job) = next_job(&shared).await {
        let started = Instant::now();
        if let Err(e) = run_job(&shared, &job).await {
            poison(&shared, format!("log flush failed: {e}"));
            return;
        }
        if job.sync {
            commit_delay(&shared, &job, started.elapsed()).await;
        }
    }
}

/// Group commit's delay: after a Sync flush, if fewer records wait for the next one than this
/// one carried (but some do), waits until as many have arrived, for at most the time the flush
/// took and `commit_delay_max_us` ([`COMMIT_DELAY_MAX_US_DEFAULT`] by default). Only the Sync
/// writer whose record makes the count wakes it (`State::commit_delay_until_seq`).
///
/// Why: with many writers that each wait for their write (pipeline 1), the writers a flush
/// acknowledges send their next writes while the writers that came during it are already being
/// flushed, so the writers split into two cohorts that take turns: two flushes of 25 records
/// per round of 50 writers. Each flush costs the shard a device write (its submission, the
/// virtio notification) and a sleep and wake-up, so on a shard that the requests keep busy half
/// as many flushes is CPU for requests: at 50 writers, pipeline 1, waiting up to 100 us made 37
/// records a flush instead of 25, 0.919-0.929x the CPU per put and 1.020-1.026x the puts per
/// second (docs/BENCHMARKS.md, twenty-sixth session). A lone writer never waits (nothing is pending
/// after its flush), and no writer waits longer than one more flush would have taken. The wait
/// ends on a timer, which the executor checks when its tasks yield to the reactor (as for the
/// `NoSync` flush interval), or as soon as a Sync writer brings the count up.
async fn commit_delay<D: Disk>(shared: &Shared<D>, job: &Job, flush_took: Duration) {
    let max = Duration::from_micros(shared.config.commit_delay_max_us);
    if max.is_zero() {
        return;
    }
    let deadline = Instant::now() + flush_took.min(max);
    loop {
        let listener = shared.flush_wanted.listen();
        {
            let mut st = shared.state.borrow_mut_deferring();
            let pending = st.log.appended_seq() - st.written_seq;
            let stop = st.closing || st.poisoned.is_some() || st.flusher_stop;
            if stop || pending == 0 || pending >= job.records || Instant::now() >= deadline {
                st.commit_delay_until_seq = 0;
                return;
            }
            // The Sync writer whose record makes as many as the flush carried wakes the
            // flusher (`request_durable`); the ones before it do not.
            st.commit_delay_until_seq = st.written_seq + job.records;
            st.flusher_waiting = true;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        futures_lite::future::or(listener, glommio::timer::sleep(wait)).await;
        shared.state.borrow_mut_deferring().flusher_waiting = false;
    }
}

/// Records why the store stops taking writes and wakes everyone.
pub(crate) fn poison<D: Disk>(shared: &Shared<D>, reason: String) {
    tracing::error!(dir = %shared.dir.display(), %reason, "store poisoned: refusing writes");
    shared.state.borrow_mut().poisoned.get_or_insert(reason);
    shared.progress.notify(usize::MAX);
}

/// Waits until there is something to flush, then takes it.
async fn next_job<D: Disk>(shared: &Shared<D>) -> Option<Job> {
    let interval = Duration::from_millis(shared.config.flush_interval_ms);
    loop {
        let listener = shared.flush_wanted.listen();
        let deadline = {
            let mut st = shared.state.borrow_mut();
            if st.poisoned.is_some() {
                return None;
            }
            let wanted = st.write_wanted_seq > st.written_seq || st.sync_wanted_seq > st.synced_seq;
            let due = st.pending_since.is_some_and(|t| t.elapsed() >= interval);
            let has_data = st.log.pending_bytes() > 0;
            if wanted || (has_data && (due || st.closing)) {
                return Some(take_job(&mut st));
            }
            if st.flusher_stop {
                return None;
            }
            st.flusher_waiting = true;
            st.commit_delay_until_seq = 0;
            st.pending_since.filter(|_| has_data).map(|t| t + interval)
        };
        match deadline {
            None => listener.await,
            Some(at) => {
                let wait = at.saturating_duration_since(Instant::now());
                futures_lite::future::or(listener, glommio::timer::sleep(wait)).await;
            }
        }
        shared.state.borrow_mut_deferring().flusher_waiting = false;
    }
}

fn take_job<D: Disk>(st: &mut crate::state::State<D>) -> Job {
    let chunks = st.log.take_pending();
    let upto_seq = st.log.appended_seq();
    // Flushes run one at a time, so everything after the last written record is in this one.
    let records = upto_seq - st.written_seq;
    let job =
        Job { chunks: chunks.len(), upto_seq, sync: st.sync_wanted_seq > st.synced_seq, records };
    st.inflight = chunks;
    st.pending_since = None;
    st.flusher_armed = false;
    job
}

async fn run_job<D: Disk>(shared: &Shared<D>, job: &Job) -> Result<()> {
    // A Sync flush with nothing written-but-unsynced before it makes each of its writes durable
    // on its own (O_DSYNC: one device round trip, no separate fdatasync); otherwise it writes,
    // then fdatasyncs everything at once.
    let durable_writes = job.sync && job.chunks > 0 && {
        let st = shared.state.borrow();
        st.synced_seq == st.written_seq
    };
    let mut last_file = None;
    for i in 0..job.chunks {
        last_file = Some(write_chunk(shared, i, durable_writes).await?);
    }
    {
        // The bytes are in the files now; reads go there, and WriteNoSync writers may go.
        let mut st = shared.state.borrow_mut();
        let st = &mut *st;
        for chunk in st.inflight.drain(..) {
            st.log.recycle(chunk.bytes);
        }
        st.written_seq = job.upto_seq;
        st.counters.flushes += 1;
        st.counters.flushed_records += job.records;
        st.counters.flush_records_max = st.counters.flush_records_max.max(job.records);
        if job.records > 0 {
            st.histograms.flush_records.saturating_record(job.records);
        }
    }
    shared.progress.notify(usize::MAX);
    if job.sync && !durable_writes {
        let file = last_file.or_else(|| {
            let st = shared.state.borrow();
            st.segments.file(st.log.active_segment())
        });
        if let Some(file) = file {
            fdatasync(shared, &*file).await?;
        }
    }
    if job.sync {
        shared.state.borrow_mut().synced_seq = job.upto_seq;
        shared.progress.notify(usize::MAX);
    }
    Ok(())
}

/// Writes inflight chunk `i` (creating or sealing its segment as marked), durably if `durable`
/// (see [`DiskFile::write_at_durable`]); returns its file.
async fn write_chunk<D: Disk>(shared: &Shared<D>, i: usize, durable: bool) -> Result<Rc<D::File>> {
    let (segment, base, creates, seals) = {
        let st = shared.state.borrow();
        let c = &st.inflight[i];
        (c.segment, c.base, c.creates_segment, c.seals_segment)
    };
    if creates {
        create_segment(shared, segment).await?;
    }
    let file =
        shared.state.borrow().segments.file(segment).expect("segment file exists after creation");
    let path = shared.segment_path(segment);
    let buf = {
        let st = shared.state.borrow();
        let bytes = &st.inflight[i].bytes;
        let len = align_up(bytes.len() as u64, DMA_ALIGN_BYTES) as usize;
        (len > 0).then(|| file.alloc_buf_from(bytes, len))
    };
    if let Some(buf) = buf {
        let len = buf.as_ref().len() as u64;
        if durable {
            let started = Instant::now();
            file.write_at_durable(buf, base).await.map_err(|e| Error::io("write", &path, e))?;
            let mut st = shared.state.borrow_mut();
            st.counters.durable_writes += 1;
            record_elapsed_us(&mut st.histograms.durable_write_us, started);
        } else {
            file.write_at(buf, base).await.map_err(|e| Error::io("write", &path, e))?;
        }
        let mut st = shared.state.borrow_mut();
        st.counters.flushed_bytes += len;
        let seg = st.segments.get_mut(segment);
        seg.end = seg.end.max(base + len);
    }
    if seals {
        fdatasync(shared, &*file).await?;
        shared.state.borrow_mut().segments.get_mut(segment).sealed = true;
        shared.maintenance_wanted.notify(1);
    }
    Ok(file)
}

async fn fdatasync<D: Disk>(shared: &Shared<D>, file: &D::File) -> Result<()> {
    let started = Instant::now();
    file.fdatasync().await.map_err(|e| Error::io("fdatasync", &shared.dir, e))?;
    let mut st = shared.state.borrow_mut();
    let us = record_elapsed_us(&mut st.histograms.fsync_us, started);
    st.counters.fsyncs += 1;
    st.counters.fsync_us_total += us;
    st.counters.fsync_us_max = st.counters.fsync_us_max.max(us);
    Ok(())
}

/// Creates a segment file: header block written and synced, directory synced, so that nothing
/// acknowledged in it can lose its file to a crash. Takes the prepared (zero-filled) file when
/// one is ready ([`super::preallocate`]), else creates an empty one that writes will grow.
async fn create_segment<D: Disk>(shared: &Shared<D>, id: u32) -> Result<()> {
    let path = shared.segment_path(id);
    let (file, created) = match preallocate::take_for_segment(shared, id).await {
        Some(file) => (file, false),
        None => {
            let file =
                shared.disk.create(&path).await.map_err(|e| Error::io("create", &path, e))?;
            (file, true)
        }
    };
    let mut block = file.alloc_buf(SEGMENT_HEADER_BYTES as usize);
    let lsn = shared.state.borrow().next_lsn;
    encode_header(block.as_mut(), id, lsn, shared.config.segment_size_bytes);
    let made = async {
        file.write_at(block, 0).await.map_err(|e| Error::io("write", &path, e))?;
        fdatasync(shared, &file).await?;
        shared.sync_dir().await
    };
    if let Err(e) = made.await {
        // Nothing was written to the segment yet, so a file created here goes again rather
        // than stay behind empty (a full disk fails the header write).
        if created {
            if let Err(remove) = shared.disk.remove(&path).await {
                tracing::warn!(path = %path.display(), error = %remove,
                    "cannot remove a segment file whose creation failed");
            }
        }
        return Err(e);
    }
    let mut st = shared.state.borrow_mut();
    st.segments.get_mut(id).file = Some(Rc::new(file));
    Ok(())
}
