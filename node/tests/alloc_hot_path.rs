//! Proves that the hot path allocates nothing per request in steady state: a Get served from
//! the record cache, and a NoSync Put (an overwrite: a new key grows the index, by design).
//!
//! How: this test binary's global allocator counts every allocation made on the thread whose
//! counting flag is set. One shard is built as the daemon builds it (store, catalog, partition
//! map) on a glommio executor, with a table of rows. After a warm-up (which fills the record
//! cache, sizes the output buffer and lets the log's chunk buffer be recycled by a flush), the
//! requests run as the connection's read loop runs them, with counting on: a batch of frames
//! at a time decoded ahead and prefetched (`frame_batch.rs`), then each through `inline::run`. The count must be zero: no task, no owned row or value, no key, row or response
//! buffer per request. The answers and the store's counters are checked, so the test cannot pass
//! by doing something else.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::rc::Rc;

use ringstore_net::frame::HEADER_BYTES;
use ringstore_net::request::{durability_flags, Request, WriteBody, WriteOptions};
use ringstore_net::{FieldsBuf, Header, Opcode, ValueRef, Writer};
use ringstore_node::frame_batch::{Ahead, BatchKeys, BATCH_FRAMES_MAX};
use ringstore_node::inline::{self, Inline};
use ringstore_node::shard::Shard;
use ringstore_storage::table::VersionSelect;
use ringstore_storage::Durability;

mod common;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: the allocator also runs while thread-locals are being torn down.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call is passed straight to the system allocator; counting only reads and writes
// thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocations_of(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    ALLOCATIONS.with(|n| n.get())
}

const ROWS: u64 = 200;
const ROUNDS: u64 = 5;

/// A request frame's header and body.
fn frame(opcode: Opcode, id: u64, req: &Request<'_>, durability: Durability) -> (Header, Vec<u8>) {
    let mut w = Writer::default();
    req.encode(&mut w);
    let flags = durability_flags(durability);
    let h = Header { opcode, flags, request_id: id, body_len: w.buf.len() as u32, status: 0 };
    (h, w.buf)
}

fn key_of(i: u64) -> String {
    format!("key-{i:012}")
}

/// The store's clock, as the read loop reads it once per batch.
fn now(shard: &Shard) -> u64 {
    shard.tables.store().now_ms()
}

/// Runs `frames` as the read loop runs a read batch: up to [`BATCH_FRAMES_MAX`] at a time
/// decoded ahead, their keys prefetched, then each run inline. Returns how many were answered
/// inline (`Inline::Answered`).
fn run_frames(
    shard: &Rc<Shard>,
    keys: &mut BatchKeys,
    frames: &[(Header, Vec<u8>)],
    out: &mut Vec<u8>,
) -> usize {
    let mut answered = 0;
    for batch in frames.chunks(BATCH_FRAMES_MAX) {
        let mut ahead: [Option<Ahead<'_>>; BATCH_FRAMES_MAX] = [const { None }; BATCH_FRAMES_MAX];
        keys.clear();
        for ((h, body), a) in batch.iter().zip(&mut ahead) {
            *a = Some(keys.decode(shard, *h, HEADER_BYTES + body.len(), body));
        }
        keys.prefetch(shard, ahead.iter().flatten());
        let now = now(shard);
        for a in ahead.iter().flatten() {
            answered +=
                usize::from(matches!(inline::run(shard, a, keys, now, out), Inline::Answered));
        }
    }
    answered
}

/// A Put of row `i` with a 100-byte value.
fn put_frame(i: u64, durability: Durability) -> (Header, Vec<u8>) {
    let key = key_of(i);
    let value = [7u8; 100];
    let row = FieldsBuf::of([
        ("k", ValueRef::String(&key)),
        ("n", ValueRef::Long(i as i64)),
        ("v", ValueRef::Binary(&value)),
    ]);
    let put = Request::Write {
        table: "bench",
        body: WriteBody::Put { row: row.list() },
        options: WriteOptions::default(),
    };
    frame(Opcode::Put, i, &put, durability)
}

/// Runs `test` on a shard (on its own executor thread) whose table `bench` has `ROWS` rows,
/// written through the inline path and flushed.
fn on_shard<F, Fut>(test: F)
where
    F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    common::on_executor(|path| async move {
        let shard = common::shard(&path, 1, 0).await;
        let ddl = "CREATE TABLE bench (k STRING, n LONG, v BINARY, PRIMARY KEY (k))";
        shard.tables.ddl(ddl).await.expect("create table");
        let puts: Vec<_> = (0..ROWS).map(|i| put_frame(i, Durability::NoSync)).collect();
        let mut out = Vec::new();
        let answered = run_frames(&shard, &mut BatchKeys::default(), &puts, &mut out);
        assert_eq!(answered as u64, ROWS, "every Put was answered inline");
        shard.tables.store().sync().await.expect("sync");
        test(shard).await;
    });
}

#[test]
fn nosync_puts_do_not_allocate() {
    on_shard(|shard| async move {
        // Every measured put overwrites a row. The warm-up writes as many bytes as the measured
        // puts, then a flush hands the log's chunk buffer back for reuse.
        let puts: Vec<(Header, Vec<u8>)> =
            (0..ROWS * ROUNDS).map(|i| put_frame(i % ROWS, Durability::NoSync)).collect();
        let mut out = Vec::with_capacity(64 * 1024);
        let mut keys = BatchKeys::default();
        assert_eq!(run_frames(&shard, &mut keys, &puts, &mut out), puts.len());
        shard.tables.store().sync().await.expect("sync");
        let keys_before = shard.tables.store().stats().keys;
        let puts_before = shard.tables.store().stats().counters.puts;
        let mut all_inline = true;
        let allocations = allocations_of(|| {
            out.clear();
            all_inline = run_frames(&shard, &mut keys, &puts, &mut out) == puts.len();
        });
        assert!(all_inline, "every NoSync Put was answered inline");
        let stats = shard.tables.store().stats();
        assert_eq!(stats.counters.puts - puts_before, ROWS * ROUNDS, "every Put was written");
        assert_eq!(stats.keys, keys_before, "they overwrote the rows");
        let status = u16::from_le_bytes([out[20], out[21]]);
        assert_eq!(status, 0, "a successful response");
        assert_eq!(allocations, 0, "{} NoSync Puts allocated", ROWS * ROUNDS);
    });
}

#[test]
fn cache_hit_gets_do_not_allocate() {
    on_shard(|shard| async move {
        let keys: Vec<FieldsBuf> =
            (0..ROWS).map(|i| FieldsBuf::of([("k", ValueRef::String(&key_of(i)))])).collect();
        let gets: Vec<(Header, Vec<u8>)> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                let get = Request::Get {
                    table: "bench",
                    key: key.list(),
                    versions: VersionSelect::Newest,
                };
                frame(Opcode::Get, i as u64, &get, Durability::Sync)
            })
            .collect();
        // The rows were flushed, so these Gets read them from disk and cache them.
        for i in 0..ROWS {
            let key = [("k", key_of(i).as_str().into())];
            let row = shard.tables.get("bench", &key, VersionSelect::Newest).await;
            assert!(row.expect("get").is_some(), "row {i} exists");
        }
        // Warm-up through the inline path: the output buffer reaches its size.
        let mut out = Vec::with_capacity(64 * 1024);
        let mut keys = BatchKeys::default();
        assert_eq!(run_frames(&shard, &mut keys, &gets, &mut out), gets.len());
        let answered = out.len();
        let hits_before = shard.tables.store().stats().cache.hits;
        let mut all_inline = true;
        let allocations = allocations_of(|| {
            for _ in 0..ROUNDS {
                out.clear();
                all_inline &= run_frames(&shard, &mut keys, &gets, &mut out) == gets.len();
            }
        });
        assert!(all_inline, "every Get was answered inline");
        assert_eq!(out.len(), answered, "the same responses as the warm-up round");
        let hits = shard.tables.store().stats().cache.hits - hits_before;
        assert_eq!(hits, ROWS * ROUNDS, "every measured Get was a record cache hit");
        // Each response holds the row (status 0, and longer than the 100-byte value).
        let status = u16::from_le_bytes([out[20], out[21]]);
        assert_eq!(status, 0, "a successful response");
        assert!(out.len() as u64 > ROWS * (HEADER_BYTES as u64 + 100), "responses carry rows");
        assert_eq!(allocations, 0, "{} Gets answered from the cache allocated", ROWS * ROUNDS);
    });
}
