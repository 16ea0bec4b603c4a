//! The ordered index alone: nanoseconds per point operation, without the log, the cache, the
//! network or an executor, so that a change to the index's layout can be measured with less
//! noise than a node run gives (a node put spends about a third of its CPU here).
//!
//! `cargo bench -p ringstore-storage --bench index -- --keys 100000` inserts `--keys` keys in
//! random order, then measures `--rounds` rounds of `--ops` random overwrites (`Index::upsert`
//! of a key that exists, what a NoSync put of the comparison table does) and of `Index::get`,
//! and prints every round and the median. Keys have the shape of the load generator's benchmark
//! table as the store sees them: the 4-byte table prefix, then the STRING `k000…n` of
//! `--key-size` bytes, escaped (end mark 0x00 0x01). `--key-prefix` replaces the `k` (for example
//! `'key:{06S}:'` with `--key-size 22` gives redis-benchmark's cluster keys, which share 16 bytes
//! in one shard), and `--other-table-keys N` adds N keys of a second table, as a shard holding
//! two tables has: no prefix is then shared by every key of the index. The keys of the measured loop are written
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
    /// What the key field starts with, before the zero-padded number.
    #[arg(long, default_value = "k")]
    key_prefix: String,
    /// Keys of a second table (loaded, never measured).
    #[arg(long, default_value_t = 0)]
    other_table_keys: u32,
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

/// The table prefix of `--other-table-keys`.
const OTHER_TABLE_PREFIX: [u8; 4] = [0, 0, 0, 2];

/// The shape of a stored key.
struct KeyShape<'a> {
    table: [u8; 4],
    prefix: &'a [u8],
    size: usize,
}

impl KeyShape<'_> {
    fn write(&self, out: &mut Vec<u8>, n: u32) {
        let digits = n.to_string();
        out.extend_from_slice(&self.table);
        out.extend_from_slice(self.prefix);
        let pad = self.size.saturating_sub(digits.len() + self.prefix.len());
        out.extend(std::iter::repeat_n(b'0', pad));
        out.extend_from_slice(digits.as_bytes());
        out.extend_from_slice(&[0x00, 0x01]);
    }
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
    let shape =
        KeyShape { table: TABLE_PREFIX, prefix: args.key_prefix.as_bytes(), size: args.key_size };
    let other = KeyShape { table: OTHER_TABLE_PREFIX, ..shape };
    let mut index = Index::new();
    let mut key = Vec::new();
    for &n in &order {
        key.clear();
        shape.write(&mut key, n);
        index.upsert(&key, entry(u64::from(n))).expect("load upsert");
    }
    for n in 0..args.other_table_keys {
        key.clear();
        other.write(&mut key, n);
        index.upsert(&key, entry(u64::from(n))).expect("load upsert");
    }
    // One merge now, as a long-running shard has had: the measured overwrites find every key in
    // the static run (an overwrite never adds to the delta).
    let _ = index.snapshot();
    let key_len = {
        key.clear();
        shape.write(&mut key, 0);
        key.len()
    };
    let mut stream = Vec::with_capacity(args.ops * key_len);
    for _ in 0..args.ops {
        shape.write(&mut stream, rng.gen_range(0..args.keys));
    }
    assert_eq!(stream.len(), args.ops * key_len, "every key has the same length");
    let per_key = (index.memory_bytes() as f64 - index.key_bytes() as f64) / index.len() as f64;
    println!(
        "index: {} keys of {} stored bytes ({} of another table), {:.1} B/key beyond the key bytes",
        index.len(),
        key_len,
        args.other_table_keys,
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
