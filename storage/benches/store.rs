//! The storage benchmark: one shard's [`Store`] on the real O_DIRECT disk, inside one glommio
//! executor, measured phase by phase.
//!
//! `cargo bench -p ringstore-storage --bench store` loads `--keys` keys (default 1M) in random order
//! and then measures, in this order: the load itself, cache-hit gets (the cache is filled first
//! by `Store::warm_cache`, which reads the segments sequentially), overwrites with each durability mode, cache-miss gets (store reopened with
//! the cache off), paged scans, index memory per key, and recovery with and without a
//! checkpoint. Progress goes to stderr; stdout gets one fixed-format table plus the store's own
//! counters, ready to paste into `docs/BENCHMARKS.md`.
//!
//! Throughput is wall time over the measured loop. CPU time per operation is given twice: for
//! the shard thread alone (`/proc/thread-self/schedstat`, nanoseconds; it includes this
//! benchmark's own key choice and timing, which run on the same thread as the store), and for the
//! whole process (`/proc/self/stat`, 10 ms ticks; adds io_uring worker threads, which do the
//! fdatasyncs). Single-task phases time one operation in [`LATENCY_SAMPLE_EVERY`], so that the two
//! clock reads do not slow a sub-microsecond operation; concurrent phases time every operation.
//!
//! `--phase NAME` runs the load plus that one phase. When the environment variable
//! `RINGSTORE_PERF_CTL` names a `perf record --control` FIFO, the benchmark writes `enable` to it
//! when the chosen phase's measured loop starts and `disable` when it ends, so a profile shows that
//! loop and not the load (see `perf/profile-storage-bench.sh`).

mod bench_env;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use bench_env::{block_device_dir, machine_line};
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};

use ringstore_storage::checkpoint::checkpoint_path;
use ringstore_storage::disk::dma::DmaDisk;
use ringstore_storage::recovery::RecoveryReport;
use ringstore_storage::stats::Counters;
use ringstore_storage::{Durability, ScanRequest, Store, StoreConfig, StoreStats, WriteOptions};

/// glommio's registered io_uring buffer memory. The locked-memory hard limit here is 8 MiB.
const IO_MEMORY_BYTES: usize = 2 * 1024 * 1024;
/// Record cache of the store used for the cache-hit phase: holds 1M records of 16 + 100 bytes.
const HIT_CACHE_BYTES: u64 = 512 * 1024 * 1024;
/// Single-task phases time one operation in this many.
const LATENCY_SAMPLE_EVERY: u64 = 8;
/// Rows per scan page.
const SCAN_PAGE_ROWS: usize = 1000;
/// Highest latency the histograms hold: 60 s in nanoseconds.
const LATENCY_NS_MAX: u64 = 60_000_000_000;

const TARGET_LOAD_OPS_PER_SEC: f64 = 1_000_000.0;
const TARGET_SYNC_OPS_PER_SEC: f64 = 200_000.0;
const TARGET_HIT_OPS_PER_SEC: f64 = 2_000_000.0;
const TARGET_INDEX_OVERHEAD_BYTES_PER_KEY: f64 = 32.0;
const TARGET_RECOVERY_SECS: f64 = 0.5;

use bench_env::measure::{Meter, PerfFifo, Sample};
use bench_env::BenchResult;

#[derive(Parser, Debug, Clone)]
#[command(about = "ringstore storage engine benchmark (one shard, in process)")]
struct Args {
    /// Number of distinct keys loaded.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Key length: "k" followed by a zero-padded counter.
    #[arg(long, default_value_t = 16)]
    key_bytes: usize,
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Store directory; must be empty or absent, and on a block device (O_DIRECT). Default: a
    /// temporary directory under the cargo target directory, deleted at the end.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Run the load and then only this phase.
    #[arg(long, value_enum)]
    phase: Option<Phase>,
    /// Concurrent writer tasks of the WriteNoSync and Sync put phases.
    #[arg(long, default_value_t = 256)]
    writers: usize,
    /// Concurrent reader tasks of the cache fill and cache-miss get phases.
    #[arg(long, default_value_t = 256)]
    readers: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Operations of the NoSync overwrite phase.
    #[arg(long, default_value_t = 500_000)]
    overwrite_ops: u64,
    /// Operations of the WriteNoSync put phase.
    #[arg(long, default_value_t = 100_000)]
    write_nosync_ops: u64,
    /// Operations of the Sync put phase.
    #[arg(long, default_value_t = 200_000)]
    sync_ops: u64,
    /// Gets of the cache-hit phase.
    #[arg(long, default_value_t = 2_000_000)]
    hit_gets: u64,
    /// Gets of the cache-miss phase.
    #[arg(long, default_value_t = 100_000)]
    miss_gets: u64,
    /// Rows read by the scan with values (cold cache: one disk read per row); the keys-only scan
    /// always covers every key. 0 means every key.
    #[arg(long, default_value_t = 50_000)]
    scan_value_rows: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Load,
    GetHit,
    PutNosync,
    PutWriteNosync,
    PutSync,
    GetMiss,
    Scan,
    Index,
    Recovery,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run_bench(args) {
        eprintln!("store bench failed: {e}");
        std::process::exit(1);
    }
}

fn run_bench(args: Args) -> BenchResult<()> {
    check_args(&args)?;
    let (dir, fs, _guard) = block_device_dir(args.dir.as_deref(), "ringstore-bench-")?;
    let machine = machine_line();
    let config_line = format!(
        "keys {} | key {} B | value {} B | writers {} | readers {} | seed {} | dir on {} ({})",
        args.keys,
        args.key_bytes,
        args.value_bytes,
        args.writers,
        args.readers,
        args.seed,
        fs.device,
        fs.fstype
    );
    let store_dir = dir.join("shard-0");
    let bench_args = args.clone();
    let report = glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(0))
        .io_memory(IO_MEMORY_BYTES)
        .name("shard-0")
        .spawn(move || async move { run_phases(bench_args, store_dir).await })
        .map_err(|e| format!("cannot start the glommio executor: {e}"))?
        .join()
        .map_err(|e| format!("the executor thread failed: {e}"))??;
    println!("ringstore storage bench (one shard, in process)");
    println!("{machine}");
    println!("{config_line}");
    println!();
    print_table(&report.rows);
    println!();
    for note in &report.notes {
        println!("{note}");
    }
    Ok(())
}

fn check_args(args: &Args) -> BenchResult<()> {
    let digits = (args.keys.max(2) - 1).to_string().len();
    if args.keys == 0 || args.key_bytes < digits + 1 {
        return Err(format!(
            "--key-bytes {} cannot hold {} distinct keys",
            args.key_bytes, args.keys
        ));
    }
    if args.keys > u64::from(u32::MAX) {
        return Err("--keys must fit in u32".into());
    }
    if args.writers == 0 || args.readers == 0 {
        return Err("--writers and --readers must be at least 1".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The phases
// ---------------------------------------------------------------------------------------------

/// Everything the phases share.
struct Bench {
    args: Args,
    dir: PathBuf,
    keys: Rc<Keys>,
    value: Rc<Vec<u8>>,
    rows: Vec<Row>,
    notes: Vec<String>,
    perf: PerfControl,
}

struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Bench {
    fn wants(&self, phase: Phase) -> bool {
        self.args.phase.is_none_or(|p| p == phase)
    }

    fn note(&mut self, line: String) {
        eprintln!("  {line}");
        self.notes.push(line);
    }
}

async fn run_phases(args: Args, dir: PathBuf) -> BenchResult<Report> {
    eprintln!("generating {} keys ...", args.keys);
    let keys = Rc::new(Keys::new(args.keys as usize, args.key_bytes));
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut value = vec![0u8; args.value_bytes];
    rng.fill_bytes(&mut value);
    let perf = PerfControl::from_env(args.phase)?;
    let mut b =
        Bench { args, dir, keys, value: Rc::new(value), rows: Vec::new(), notes: Vec::new(), perf };

    let store = Rc::new(open(&b.dir, config_with_cache(HIT_CACHE_BYTES)).await?);
    load(&mut b, &store, &mut rng).await?;
    let after_load = store.stats();
    if b.wants(Phase::GetHit) {
        get_hit(&mut b, &store).await?;
    }
    if b.wants(Phase::PutNosync) {
        put_nosync(&mut b, &store).await?;
    }
    if b.wants(Phase::PutWriteNosync) {
        put_concurrent(&mut b, &store, Phase::PutWriteNosync).await?;
    }
    if b.wants(Phase::PutSync) {
        put_concurrent(&mut b, &store, Phase::PutSync).await?;
    }
    settle(&mut b, &store, "reopen with the cache off").await?;
    let store = reopen(&mut b, store, 0, "reopen with the cache off").await?;
    if b.wants(Phase::GetMiss) {
        get_miss(&mut b, &store).await?;
    }
    if b.wants(Phase::Scan) {
        scan(&mut b, &store, false).await?;
        scan(&mut b, &store, true).await?;
    }
    if b.wants(Phase::Index) {
        index_row(&mut b, "index after load (live-built)", &after_load);
        index_row(&mut b, "index after reopen (checkpoint)", &store.stats());
    }
    store_notes(&mut b, &store.stats());
    let store = if b.wants(Phase::Recovery) { recovery(&mut b, store).await? } else { store };
    close(store).await?;
    Ok(Report { rows: b.rows, notes: b.notes })
}

/// Phase 1: every key once, in a seeded random order, NoSync, one task awaiting each put.
/// Returns the load order.
async fn load(b: &mut Bench, store: &Store, rng: &mut SmallRng) -> BenchResult<()> {
    let mut order: Vec<u32> = (0..b.keys.len() as u32).collect();
    order.shuffle(rng);
    eprintln!("load: {} puts, NoSync, one task, random order ...", order.len());
    let opts = WriteOptions::durability(Durability::NoSync);
    let mut hist = new_histogram();
    let meter = b.perf.start(Phase::Load);
    for (i, &k) in order.iter().enumerate() {
        let put = store.put(b.keys.get(k as usize), &b.value, opts);
        timed(i as u64, &mut hist, put).await.map_err(|e| format!("load put: {e}"))?;
    }
    let sample = meter.finish(&mut b.perf.fifo, order.len() as u64).with_latency(Some(&hist));
    let drain = Instant::now();
    store.sync().await.map_err(|e| format!("sync after load: {e}"))?;
    let drain_secs = drain.elapsed().as_secs_f64();
    let target = Target::AtLeast { per_sec: TARGET_LOAD_OPS_PER_SEC };
    b.rows.push(Row::measured("load put NoSync (1 task, random order)", sample, target));
    b.note(format!("load: sync of the buffered tail after the last put took {drain_secs:.3} s (not in the rate)"));
    Ok(())
}

/// Phase 5: fill the cache with `Store::warm_cache` (sequential segment reads), then random gets
/// from one task.
async fn get_hit(b: &mut Bench, store: &Rc<Store>) -> BenchResult<()> {
    let n = b.keys.len() as u64;
    eprintln!("get-hit: warming the cache from the log ({n} keys) ...");
    let before = store.stats();
    let meter = b.perf.start_unprofiled();
    let warm = store.warm_cache().await.map_err(|e| format!("warm_cache: {e}"))?;
    let sample = meter.finish(&mut b.perf.fifo, warm.records_cached).with_latency(None);
    b.rows.push(Row::measured("cache warm-up, sequential log reads", sample, Target::None));
    b.note(format!(
        "cache warm-up: {} segments, {} MiB read, {} records cached",
        warm.segments_read,
        warm.bytes_read >> 20,
        warm.records_cached
    ));
    let filled = store.stats();
    b.note(cache_note("cache after warm-up", &before, &filled));

    eprintln!("get-hit: {} random gets, one task ...", b.args.hit_gets);
    let mut rng = SmallRng::seed_from_u64(b.args.seed ^ 0x5);
    let mut hist = new_histogram();
    let meter = b.perf.start(Phase::GetHit);
    for i in 0..b.args.hit_gets {
        let k = rng.gen_range(0..b.keys.len());
        let got = timed(i, &mut hist, store.get(b.keys.get(k))).await;
        check_value(got, b.keys.get(k), b.value.len())?;
    }
    let sample = meter.finish(&mut b.perf.fifo, b.args.hit_gets).with_latency(Some(&hist));
    let target = Target::AtLeast { per_sec: TARGET_HIT_OPS_PER_SEC };
    b.rows.push(Row::measured("get cache hit (1 task, random keys)", sample, target));
    b.note(cache_note("cache during get-hit", &filled, &store.stats()));
    Ok(())
}

/// Phase 2: random overwrites, NoSync, one task.
async fn put_nosync(b: &mut Bench, store: &Store) -> BenchResult<()> {
    let ops = b.args.overwrite_ops;
    eprintln!("put-nosync: {ops} random overwrites, NoSync, one task ...");
    let mut rng = SmallRng::seed_from_u64(b.args.seed ^ 0x2);
    let opts = WriteOptions::durability(Durability::NoSync);
    let mut hist = new_histogram();
    let meter = b.perf.start(Phase::PutNosync);
    for i in 0..ops {
        let k = rng.gen_range(0..b.keys.len());
        let put = store.put(b.keys.get(k), &b.value, opts);
        timed(i, &mut hist, put).await.map_err(|e| format!("overwrite put: {e}"))?;
    }
    let sample = meter.finish(&mut b.perf.fifo, ops).with_latency(Some(&hist));
    store.sync().await.map_err(|e| format!("sync after overwrites: {e}"))?;
    b.rows.push(Row::measured("put NoSync overwrite (1 task)", sample, Target::None));
    Ok(())
}

/// Phases 3 and 4: random overwrites from `--writers` tasks, WriteNoSync or Sync.
async fn put_concurrent(b: &mut Bench, store: &Rc<Store>, phase: Phase) -> BenchResult<()> {
    let (durability, ops, name, target) = match phase {
        Phase::PutSync => (
            Durability::Sync,
            b.args.sync_ops,
            "put Sync",
            Target::AtLeast { per_sec: TARGET_SYNC_OPS_PER_SEC },
        ),
        _ => (Durability::WriteNoSync, b.args.write_nosync_ops, "put WriteNoSync", Target::None),
    };
    let writers = b.args.writers;
    settle(b, store, name).await?;
    eprintln!("{name}: {ops} random overwrites from {writers} tasks ...");
    let before = store.stats().counters;
    let meter = b.perf.start(phase);
    let hist = run_tasks(writers, ops, b.args.seed ^ 0x3, {
        let (store, keys, value) = (store.clone(), b.keys.clone(), b.value.clone());
        move |_i, rng| {
            let k = rng.gen_range(0..keys.len());
            put_one(store.clone(), keys.clone(), value.clone(), k, durability)
        }
    })
    .await?;
    let sample = meter.finish(&mut b.perf.fifo, ops).with_latency(Some(&hist));
    let after = store.stats().counters;
    b.rows.push(Row::measured(&format!("{name} ({writers} tasks)"), sample, target));
    b.note(group_commit_note(name, &before, &after));
    Ok(())
}

/// Phase 6: random gets with the cache off, `--readers` tasks: one O_DIRECT read each.
async fn get_miss(b: &mut Bench, store: &Rc<Store>) -> BenchResult<()> {
    let (ops, readers) = (b.args.miss_gets, b.args.readers);
    eprintln!("get-miss: {ops} random gets, cache off, {readers} tasks ...");
    let meter = b.perf.start(Phase::GetMiss);
    let hist = run_tasks(readers, ops, b.args.seed ^ 0x6, {
        let (store, keys) = (store.clone(), b.keys.clone());
        move |_i, rng| {
            let k = rng.gen_range(0..keys.len());
            get_present(store.clone(), keys.clone(), k)
        }
    })
    .await?;
    let sample = meter.finish(&mut b.perf.fifo, ops).with_latency(Some(&hist));
    b.rows.push(Row::measured(
        &format!("get cache miss, disk ({readers} tasks)"),
        sample,
        Target::None,
    ));
    Ok(())
}

/// Phase 7: a forward scan of every key in pages of [`SCAN_PAGE_ROWS`], following `resume`.
async fn scan(b: &mut Bench, store: &Store, keys_only: bool) -> BenchResult<()> {
    let cap = match (keys_only, b.args.scan_value_rows) {
        (true, _) | (false, 0) => u64::MAX,
        (false, rows) => rows,
    };
    let label =
        if keys_only { "scan keys_only (all keys)" } else { "scan with values, cold (cache off)" };
    eprintln!("{label} ...");
    let mut req = ScanRequest::prefix(b"", SCAN_PAGE_ROWS);
    req.keys_only = keys_only;
    let (mut rows, mut pages) = (0u64, 0u64);
    let meter = b.perf.start(Phase::Scan);
    while rows < cap {
        let page = store.scan(&req).await.map_err(|e| format!("scan page {pages}: {e}"))?;
        rows += page.rows.len() as u64;
        pages += 1;
        match page.resume {
            Some(r) => req.resume = Some(r),
            None => break,
        }
    }
    let sample = meter.finish(&mut b.perf.fifo, rows).with_latency(None);
    if keys_only && rows != b.keys.len() as u64 {
        return Err(format!("keys-only scan returned {rows} rows, expected {}", b.keys.len()));
    }
    b.rows.push(Row::measured(label, sample, Target::None).with_unit("rows"));
    b.note(format!("{label}: {rows} rows in {pages} pages of up to {SCAN_PAGE_ROWS}"));
    Ok(())
}

/// Phase 8: index memory per key beyond the key bytes.
fn index_row(b: &mut Bench, label: &str, stats: &StoreStats) {
    let per_key = stats.index_overhead_bytes_per_key();
    let met = per_key <= TARGET_INDEX_OVERHEAD_BYTES_PER_KEY;
    b.rows.push(Row {
        phase: label.into(),
        ops: Some(stats.keys),
        unit: "keys",
        secs: None,
        thread_cpu_ns: None,
        process_cpu_ns: None,
        latency_ns: None,
        target: format!("<= {TARGET_INDEX_OVERHEAD_BYTES_PER_KEY:.0} B/key"),
        measured: format!("{per_key:.2} B/key"),
        met: Some(met),
    });
    b.note(format!(
        "{label}: keys {}, index_bytes {}, index_key_bytes {}, overhead {per_key:.2} B/key, total {:.2} B/key",
        stats.keys,
        stats.index_bytes,
        stats.index_key_bytes,
        stats.index_bytes as f64 / stats.keys.max(1) as f64
    ));
}

/// Phase 9: close (writes a checkpoint) and reopen, then again without the checkpoint file.
async fn recovery(b: &mut Bench, store: Rc<Store>) -> BenchResult<Rc<Store>> {
    eprintln!("recovery: close, reopen from the checkpoint ...");
    let cfg = config_with_cache(0);
    let (store, sample) = timed_reopen(b, store, &cfg, false).await?;
    let target = Target::AtMostSecs(TARGET_RECOVERY_SECS);
    b.rows.push(
        Row::measured("recovery: open = checkpoint + log tail", sample, target).with_unit("keys"),
    );
    b.note(recovery_note("recovery with checkpoint", store.recovery_report()));

    eprintln!("recovery: close, delete the checkpoint, reopen (full log replay) ...");
    let (store, sample) = timed_reopen(b, store, &cfg, true).await?;
    b.rows.push(
        Row::measured("recovery: open = full log replay, no checkpoint", sample, Target::None)
            .with_unit("keys"),
    );
    b.note(recovery_note("recovery without checkpoint", store.recovery_report()));
    Ok(store)
}

async fn timed_reopen(
    b: &mut Bench,
    store: Rc<Store>,
    cfg: &StoreConfig,
    drop_checkpoint: bool,
) -> BenchResult<(Rc<Store>, Sample)> {
    let started = Instant::now();
    close(store).await?;
    let close_secs = started.elapsed().as_secs_f64();
    if drop_checkpoint {
        let path = checkpoint_path(&b.dir);
        std::fs::remove_file(&path).map_err(|e| format!("remove {}: {e}", path.display()))?;
    }
    let meter = b.perf.start(Phase::Recovery);
    let store = open(&b.dir, cfg.clone()).await?;
    let keys = store.stats().keys;
    let sample = meter.finish(&mut b.perf.fifo, keys).with_latency(None);
    let what = if drop_checkpoint {
        "close before the no-checkpoint reopen"
    } else {
        "close (sync + checkpoint)"
    };
    b.note(format!("{what}: {close_secs:.3} s"));
    if keys != b.keys.len() as u64 {
        return Err(format!("reopened store holds {keys} keys, expected {}", b.keys.len()));
    }
    Ok((Rc::new(store), sample))
}

// ---------------------------------------------------------------------------------------------
// Store helpers
// ---------------------------------------------------------------------------------------------

/// Syncs and compacts now (not timed), so that the next phase does not share the disk with
/// compaction work left over from the previous one.
async fn settle(b: &mut Bench, store: &Store, before: &str) -> BenchResult<()> {
    let started = Instant::now();
    store.sync().await.map_err(|e| format!("sync: {e}"))?;
    let r = store.compact().await.map_err(|e| format!("compact: {e}"))?;
    b.note(format!(
        "before {before}: sync + compact took {:.3} s (segments {}, moved {} MiB, reclaimed {} MiB)",
        started.elapsed().as_secs_f64(),
        r.segments_compacted,
        r.bytes_moved >> 20,
        r.bytes_reclaimed >> 20
    ));
    Ok(())
}

fn config_with_cache(cache_capacity_bytes: u64) -> StoreConfig {
    StoreConfig { cache_capacity_bytes, ..StoreConfig::default() }
}

async fn open(dir: &Path, config: StoreConfig) -> BenchResult<Store> {
    Store::open(DmaDisk, dir, config).await.map_err(|e| format!("open {}: {e}", dir.display()))
}

async fn close(store: Rc<Store>) -> BenchResult<()> {
    let store =
        Rc::try_unwrap(store).map_err(|_| "a task still holds the store at close".to_string())?;
    store.close().await.map_err(|e| format!("close: {e}"))
}

async fn reopen(
    b: &mut Bench,
    store: Rc<Store>,
    cache_bytes: u64,
    why: &str,
) -> BenchResult<Rc<Store>> {
    let started = Instant::now();
    close(store).await?;
    let store = open(&b.dir, config_with_cache(cache_bytes)).await?;
    b.note(format!("{why}: close + open took {:.3} s", started.elapsed().as_secs_f64()));
    Ok(Rc::new(store))
}

async fn put_one(
    store: Rc<Store>,
    keys: Rc<Keys>,
    value: Rc<Vec<u8>>,
    k: usize,
    d: Durability,
) -> BenchResult<()> {
    let opts = WriteOptions::durability(d);
    store.put(keys.get(k), &value, opts).await.map(|_| ()).map_err(|e| format!("put: {e}"))
}

async fn get_present(store: Rc<Store>, keys: Rc<Keys>, k: usize) -> BenchResult<()> {
    let got = store.get(keys.get(k)).await;
    check_value(got, keys.get(k), 0)
}

/// Checks that a get found the key (and, if `len` > 0, a value of that length).
fn check_value(
    got: ringstore_storage::Result<Option<ringstore_storage::Value>>,
    key: &[u8],
    len: usize,
) -> BenchResult<()> {
    let key = String::from_utf8_lossy(key);
    match got {
        Ok(Some(v)) if len == 0 || v.value.len() == len => Ok(()),
        Ok(Some(v)) => Err(format!("get {key}: value of {} bytes, expected {len}", v.value.len())),
        Ok(None) => Err(format!("get {key}: not found")),
        Err(e) => Err(format!("get {key}: {e}")),
    }
}

/// Runs `ops` operations from `tasks` concurrent tasks; operation `i` is `op(i, rng)`. Every
/// operation is timed.
async fn run_tasks<F, Fut>(tasks: usize, ops: u64, seed: u64, op: F) -> BenchResult<Histogram<u64>>
where
    F: Fn(u64, &mut SmallRng) -> Fut + Clone + 'static,
    Fut: Future<Output = BenchResult<()>> + 'static,
{
    let next = Rc::new(Cell::new(0u64));
    let hist = Rc::new(RefCell::new(new_histogram()));
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (next, hist, op) = (next.clone(), hist.clone(), op.clone());
            let mut rng = SmallRng::seed_from_u64(seed.wrapping_add(t as u64));
            glommio::spawn_local(async move {
                loop {
                    let i = next.get();
                    if i >= ops {
                        return BenchResult::Ok(());
                    }
                    next.set(i + 1);
                    let started = Instant::now();
                    op(i, &mut rng).await?;
                    hist.borrow_mut().saturating_record(elapsed_ns(started));
                }
            })
        })
        .collect();
    for result in futures::future::join_all(handles).await {
        result?;
    }
    let hist = hist.borrow().clone();
    Ok(hist)
}

/// Awaits `fut`, timing it if `i` is a sampled operation.
async fn timed<F: Future>(i: u64, hist: &mut Histogram<u64>, fut: F) -> F::Output {
    if !i.is_multiple_of(LATENCY_SAMPLE_EVERY) {
        return fut.await;
    }
    let started = Instant::now();
    let out = fut.await;
    hist.saturating_record(elapsed_ns(started));
    out
}

fn elapsed_ns(started: Instant) -> u64 {
    started.elapsed().as_nanos().max(1) as u64
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, 3).expect("constant histogram bounds are valid")
}

/// Fixed-width keys `k000…0<i>`: in byte order exactly when in counter order.
struct Keys {
    bytes: Vec<u8>,
    key_bytes: usize,
}

impl Keys {
    fn new(count: usize, key_bytes: usize) -> Keys {
        let mut bytes = Vec::with_capacity(count * key_bytes);
        for i in 0..count {
            write!(bytes, "k{:0width$}", i, width = key_bytes - 1)
                .expect("writing to a Vec cannot fail");
        }
        assert_eq!(bytes.len(), count * key_bytes, "every key has key_bytes bytes");
        Keys { bytes, key_bytes }
    }

    fn len(&self) -> usize {
        self.bytes.len() / self.key_bytes
    }

    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[i * self.key_bytes..(i + 1) * self.key_bytes]
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

/// The perf FIFO and the phase to profile (`--phase` with `RINGSTORE_PERF_CTL`).
struct PerfControl {
    phase: Option<Phase>,
    fifo: PerfFifo,
}

impl PerfControl {
    fn from_env(phase: Option<Phase>) -> BenchResult<PerfControl> {
        Ok(PerfControl { phase, fifo: PerfFifo::from_env()? })
    }

    fn start(&mut self, phase: Phase) -> Meter {
        self.fifo.start(self.phase == Some(phase))
    }

    fn start_unprofiled(&mut self) -> Meter {
        Meter::start()
    }
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Target {
    None,
    AtLeast { per_sec: f64 },
    AtMostSecs(f64),
}

struct Row {
    phase: String,
    ops: Option<u64>,
    unit: &'static str,
    secs: Option<f64>,
    thread_cpu_ns: Option<u64>,
    process_cpu_ns: Option<u64>,
    latency_ns: Option<[u64; 3]>,
    target: String,
    measured: String,
    met: Option<bool>,
}

impl Row {
    fn measured(phase: &str, s: Sample, target: Target) -> Row {
        let rate = s.ops as f64 / s.secs;
        let (target, measured, met) = match target {
            Target::None => ("-".into(), "-".into(), None),
            Target::AtLeast { per_sec } => {
                (format!(">= {}/s", si(per_sec)), format!("{}/s", si(rate)), Some(rate >= per_sec))
            }
            Target::AtMostSecs(max) => {
                (format!("<= {max} s"), format!("{:.3} s", s.secs), Some(s.secs <= max))
            }
        };
        Row {
            phase: phase.into(),
            ops: Some(s.ops),
            unit: "ops",
            secs: Some(s.secs),
            thread_cpu_ns: Some(s.thread_cpu_ns),
            process_cpu_ns: Some(s.process_cpu_ns),
            latency_ns: s.latency_ns,
            target,
            measured,
            met,
        }
    }

    fn with_unit(mut self, unit: &'static str) -> Row {
        self.unit = unit;
        self
    }

    fn cells(&self) -> Vec<String> {
        let dash = || "-".to_string();
        let per_op = |ns: Option<u64>| match (ns, self.ops) {
            (Some(ns), Some(ops)) if ops > 0 => format!("{:.3}", ns as f64 / 1000.0 / ops as f64),
            _ => dash(),
        };
        let lat = |i: usize| {
            self.latency_ns.map_or_else(dash, |l| format!("{:.1}", l[i] as f64 / 1000.0))
        };
        vec![
            self.phase.clone(),
            self.ops.map_or_else(dash, |o| format!("{o} {}", self.unit)),
            self.secs.map_or_else(dash, |s| format!("{s:.3}")),
            match (self.ops, self.secs) {
                (Some(o), Some(s)) if s > 0.0 => format!("{:.0}", o as f64 / s),
                _ => dash(),
            },
            per_op(self.thread_cpu_ns),
            per_op(self.process_cpu_ns),
            lat(0),
            lat(1),
            lat(2),
            self.target.clone(),
            self.measured.clone(),
            match self.met {
                None => dash(),
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
            },
        ]
    }
}

const HEADER: [&str; 12] = [
    "phase",
    "ops",
    "s",
    "ops/s",
    "shard CPU us/op",
    "proc CPU us/op",
    "p50 us",
    "p99 us",
    "p999 us",
    "target",
    "measured",
    "met",
];

/// Prints the rows as a Markdown table with padded columns (aligned in a terminal, valid in docs).
fn print_table(rows: &[Row]) {
    let cells: Vec<Vec<String>> = rows.iter().map(Row::cells).collect();
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|c| cells.iter().map(|r| r[c].len()).chain([HEADER[c].len()]).max().unwrap_or(0))
        .collect();
    let line = |r: Vec<String>| {
        let padded: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| {
                if c == 0 {
                    format!("{v:<w$}", w = widths[c])
                } else {
                    format!("{v:>w$}", w = widths[c])
                }
            })
            .collect();
        println!("| {} |", padded.join(" | "));
    };
    line(HEADER.iter().map(|h| h.to_string()).collect());
    line(
        widths
            .iter()
            .enumerate()
            .map(|(c, w)| if c == 0 { "-".repeat(*w) } else { format!("{}:", "-".repeat(w - 1)) })
            .collect(),
    );
    for r in cells {
        line(r);
    }
}

/// 1234567 -> "1.23M", 250000 -> "250k".
fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

// ---------------------------------------------------------------------------------------------
// Notes from the store's own counters
// ---------------------------------------------------------------------------------------------

fn group_commit_note(name: &str, a: &Counters, b: &Counters) -> String {
    let flushes = b.flushes - a.flushes;
    let records = b.flushed_records - a.flushed_records;
    let fsyncs = b.fsyncs - a.fsyncs;
    let fsync_us = b.fsync_us_total - a.fsync_us_total;
    format!(
        "{name} group commit: flushes {flushes}, fsyncs {fsyncs}, records/flush mean {:.1} (max since open {}), \
         fsync mean {} us (max since open {} us), flushed {} MiB; meanwhile compactions {}, \
         compaction moved {} MiB, checkpoints {}",
        records as f64 / flushes.max(1) as f64,
        b.flush_records_max,
        fsync_us / fsyncs.max(1),
        b.fsync_us_max,
        (b.flushed_bytes - a.flushed_bytes) >> 20,
        b.compactions - a.compactions,
        (b.compaction_moved_bytes - a.compaction_moved_bytes) >> 20,
        b.checkpoints - a.checkpoints,
    )
}

fn cache_note(what: &str, a: &StoreStats, b: &StoreStats) -> String {
    let hits = b.cache.hits - a.cache.hits;
    let misses = b.cache.misses - a.cache.misses;
    format!(
        "{what}: hits {hits}, misses {misses}, hit ratio {:.4}, entries {}, used {} of {} bytes",
        hits as f64 / (hits + misses).max(1) as f64,
        b.cache.entries,
        b.cache.used_bytes,
        b.cache.capacity_bytes,
    )
}

fn recovery_note(what: &str, r: &RecoveryReport) -> String {
    let lsn = r.checkpoint_lsn.map_or_else(|| "none".to_string(), |l| l.to_string());
    format!(
        "{what}: checkpoint_lsn {lsn}, checkpoint_keys {}, segments {}, bytes_scanned {}, records_replayed {}, \
         torn_tails {}, corrupt {}, batches_discarded {}, duration {:.3} s",
        r.checkpoint_keys,
        r.segments,
        r.bytes_scanned,
        r.records_replayed,
        r.torn_tails.len(),
        r.corrupt.len(),
        r.batches_discarded,
        r.duration.as_secs_f64(),
    )
}

fn store_notes(b: &mut Bench, s: &StoreStats) {
    let c = &s.counters;
    b.note(format!(
        "store before recovery: segments {}, disk {} MiB, live {} MiB, garbage {:.3}",
        s.segments,
        s.disk_bytes >> 20,
        s.live_bytes >> 20,
        s.garbage_ratio()
    ));
    b.note(format!(
        "maintenance since the last open: compactions {}, moved {} MiB, reclaimed {} MiB, segments deleted {}, checkpoints {}, corrupt reads {}, poisoned {}",
        c.compactions,
        c.compaction_moved_bytes >> 20,
        c.compaction_reclaimed_bytes >> 20,
        c.segments_deleted,
        c.checkpoints,
        c.corrupt_reads,
        s.poisoned.as_deref().unwrap_or("no"),
    ));
}
