//! The ordered index alone: nanoseconds per point operation, without the log, the cache, the
//! network or an executor, so that a change to the index's layout can be measured with less
//! noise than a node run gives (a node put spends about a third of its CPU here).
//!
//! `cargo bench -p ringstore-storage --bench index -- --keys 100000` inserts `--keys` keys in
//! random order, then measures `--rounds` rounds of `--ops` random overwrites (`Index::upsert`
//! of a key that exists, what a NoSync put of the comparison table does) and of `Index::get`,
//! and prints every round and the median. Keys have the shape of the load generator's benchmark
//! table as the store sees them: the 4-byte table prefix, then the STRING `k000…n` of
//! `--key-size` bytes, escaped (end mark 0x00 0x01). The keys of the measured loop are written
//! out in order beforehand, so reading them is a sequential stream, as a request buffer is.
//! Time is the thread's CPU time (`bench_env/measure.rs`, as in the other storage benchmarks),
//! so a busy machine that takes the core away between operations inflates the figure less than
//! it would inflate wall time. `RINGSTORE_PERF_CTL` limits a `perf record --control` profile to
//! the measured loops, as there.

mod bench_env;

use bench_env::measure::PerfFifo;
use clap::Parser;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use ringstore_storage::index::{Index, IndexEntry, Location};

#[derive(Parser)]
struct Args {
    /// Keys in the index.
    #[arg(long, default_value_t = 100_000)]
    keys: u32,
    /// Bytes of the key field before escaping (the load generator's `--key-size`).
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// Operations per measured round.
    #[arg(long, default_value_t = 2_000_000)]
    ops: usize,
    /// Measured rounds of each operation.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Cargo passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The table prefix of the benchmark table as a node creates it first.
const TABLE_PREFIX: [u8; 4] = [0, 0, 0, 1];

fn stored_key(out: &mut Vec<u8>, n: u32, key_size: usize) {
    let digits = n.to_string();
    out.extend_from_slice(&TABLE_PREFIX);
    out.push(b'k');
    out.extend(std::iter::repeat_n(b'0', key_size.saturating_sub(digits.len() + 1)));
    out.extend_from_slice(digits.as_bytes());
    out.extend_from_slice(&[0x00, 0x01]);
}

/// An entry for operation `n`: the location cycles within one 64 MiB segment.
fn entry(n: u64) -> IndexEntry {
    IndexEntry::new(Location::new(1, 4096 + n % ENTRY_SLOTS * 128, 128), n + 1, 0)
}

/// Record slots of 128 bytes that fit in one segment after its header block.
const ENTRY_SLOTS: u64 = (64 << 20) / 128 - 64;

/// Thread CPU nanoseconds per operation of a measured loop.
fn ns_per_op(sample: bench_env::measure::Sample) -> f64 {
    sample.thread_cpu_ns as f64 / sample.ops as f64
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let args = Args::parse();
    let mut fifo = PerfFifo::from_env().unwrap_or_else(|e| panic!("{e}"));
    let mut rng = SmallRng::seed_from_u64(7);
    let mut order: Vec<u32> = (0..args.keys).collect();
    order.shuffle(&mut rng);
    let mut index = Index::new();
    let mut key = Vec::new();
    for &n in &order {
        key.clear();
        stored_key(&mut key, n, args.key_size);
        index.upsert(&key, entry(u64::from(n))).expect("load upsert");
    }
    // One merge now, as a long-running shard has had: the measured overwrites find every key in
    // the static run (an overwrite never adds to the delta).
    let _ = index.snapshot();
    let key_len = {
        key.clear();
        stored_key(&mut key, 0, args.key_size);
        key.len()
    };
    let mut stream = Vec::with_capacity(args.ops * key_len);
    for _ in 0..args.ops {
        stored_key(&mut stream, rng.gen_range(0..args.keys), args.key_size);
    }
    assert_eq!(stream.len(), args.ops * key_len, "every key has the same length");
    let per_key = (index.memory_bytes() as f64 - index.key_bytes() as f64) / index.len() as f64;
    println!(
        "index: {} keys of {} stored bytes, {:.1} B/key beyond the key bytes",
        index.len(),
        key_len,
        per_key
    );
    let mut upsert_ns = Vec::new();
    let mut get_ns = Vec::new();
    for round in 1..=args.rounds {
        let meter = fifo.start(true);
        for (i, k) in stream.chunks_exact(key_len).enumerate() {
            let prev = index.upsert(k, entry(i as u64)).expect("overwrite");
            assert!(prev.is_some(), "every measured upsert overwrites");
        }
        let upsert = ns_per_op(meter.finish(&mut fifo, args.ops as u64));
        let meter = fifo.start(true);
        let mut found = 0usize;
        for k in stream.chunks_exact(key_len) {
            found += usize::from(index.get(k).is_some());
        }
        let get = ns_per_op(meter.finish(&mut fifo, args.ops as u64));
        assert_eq!(found, args.ops, "every measured get finds its key");
        println!("round {round}: upsert {upsert:.1} ns/op, get {get:.1} ns/op");
        upsert_ns.push(upsert);
        get_ns.push(get);
    }
    println!(
        "median of {} rounds: upsert {:.1} ns/op, get {:.1} ns/op",
        args.rounds,
        median(upsert_ns),
        median(get_ns)
    );
}
