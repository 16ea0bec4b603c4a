//! The secondary index benchmark (issue 15): what indexes cost writes, how fast an index answers,
//! and how fast a background build indexes a table.
//!
//! `cargo bench -p ringstore-storage --bench index_write` measures, on one `TableStore` per part
//! on the real O_DIRECT disk (`DmaDisk`) inside one glommio executor:
//!
//! 1. **Write cost with 0, 1 and 3 indexes**: a table `items (id LONG, a INTEGER, b STRING,
//!    c LONG, PRIMARY KEY (id))` with 0, 1 (`a`) or 3 (`a`; `b, a`; `c`) indexes, made on the
//!    empty table (READY at once). `--keys` rows are loaded (not timed), then `--rounds` rounds of
//!    `--puts` NoSync puts of random ids in `0..keys`, each changing every indexed value (so an
//!    indexed put writes the row, one entry delete and one entry put per index, in one batch).
//!    Reported per index count: the median round's puts/s and CPU µs per put of the shard thread
//!    and of the process, and the cost relative to no index.
//! 2. **Index lookup rate**: on the 1-index store, `--rounds` rounds of `--lookups` queries of a
//!    random `a` value (equality, `--lookup-limit` entries, with rows and keys only).
//! 3. **Build rate**: `--build-rows` rows (default 1M) loaded (not timed), then CREATE INDEX
//!    (BUILDING at once) and the build run to READY by `TableStore::finish_index_work` (the
//!    index worker's loop, yielding its task queue between pages, alone on the core): rows/s,
//!    for `--build-rounds` rounds (DROP INDEX and CREATE INDEX again between rounds).
//!
//! Medians over rounds are printed; every round too. CPU time as in `store.rs`/`table.rs`.

mod bench_env;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use bench_env::measure::{Meter, PerfFifo, Sample};
use bench_env::{block_device_dir, machine_line, BenchResult};
use clap::Parser;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ringstore_storage::disk::dma::DmaDisk;
use ringstore_storage::table::{IndexQuery, TableStore, Value};
use ringstore_storage::{Durability, StoreConfig, SystemClock};

/// glommio's registered io_uring buffer memory. The locked-memory hard limit here is 8 MiB.
const IO_MEMORY_BYTES: usize = 2 * 1024 * 1024;
/// Record cache, large enough for every row of the write-cost part.
const CACHE_BYTES: u64 = 256 * 1024 * 1024;
/// Distinct values of the indexed INTEGER field `a`.
const A_VALUES: i32 = 1000;

const TABLE_DDL: &str =
    "CREATE TABLE items (id LONG, a INTEGER, b STRING, c LONG, PRIMARY KEY (id))";
const INDEX_A: &str = "CREATE INDEX by_a ON items (a)";
const INDEXES_3: &str = "CREATE INDEX by_a ON items (a); CREATE INDEX by_ba ON items (b, a); \
                         CREATE INDEX by_c ON items (c)";

#[derive(Parser, Debug, Clone)]
#[command(about = "ringstore secondary index benchmark (issue 15)")]
struct Args {
    /// Rows of the write-cost and lookup parts.
    #[arg(long, default_value_t = 200_000)]
    keys: u64,
    /// Puts per timed round of the write-cost part.
    #[arg(long, default_value_t = 200_000)]
    puts: u64,
    /// Timed rounds of the write-cost and lookup parts (the median is reported).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Index queries per timed lookup round.
    #[arg(long, default_value_t = 20_000)]
    lookups: u64,
    /// Entries one lookup asks for.
    #[arg(long, default_value_t = 10)]
    lookup_limit: usize,
    /// Rows of the build-rate part.
    #[arg(long, default_value_t = 1_000_000)]
    build_rows: u64,
    /// Timed builds of the build-rate part.
    #[arg(long, default_value_t = 3)]
    build_rounds: usize,
    /// Parent directory of the stores (a temporary one under the target directory by default).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run_bench(args) {
        eprintln!("index_write bench failed: {e}");
        std::process::exit(1);
    }
}

fn run_bench(args: Args) -> BenchResult<()> {
    if args.keys == 0 || args.puts == 0 || args.rounds == 0 || args.build_rounds == 0 {
        return Err("--keys, --puts, --rounds and --build-rounds must be at least 1".into());
    }
    let (dir, fs, _guard) = block_device_dir(args.dir.as_deref(), "ringstore-index-bench-")?;
    println!("ringstore secondary index bench (one shard, in process)");
    println!("{}", machine_line());
    println!(
        "keys {} | puts {} x {} rounds | lookups {} (limit {}) | build rows {} x {} | dir on {}",
        args.keys,
        args.puts,
        args.rounds,
        args.lookups,
        args.lookup_limit,
        args.build_rows,
        args.build_rounds,
        fs.fstype
    );
    let lines = glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(0))
        .io_memory(IO_MEMORY_BYTES)
        .name("shard-0")
        .spawn(move || async move { run_parts(args, dir).await })
        .map_err(|e| format!("cannot start the glommio executor: {e}"))?
        .join()
        .map_err(|e| format!("the executor thread failed: {e}"))??;
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

async fn run_parts(args: Args, dir: PathBuf) -> BenchResult<Vec<String>> {
    let mut fifo = PerfFifo::from_env()?;
    let mut lines = Vec::new();
    let mut base = None;
    for (n, ddl) in [(0, ""), (1, INDEX_A), (3, INDEXES_3)] {
        let ts = open(&dir.join(format!("write-{n}"))).await?;
        ddl_or(&ts, TABLE_DDL).await?;
        if !ddl.is_empty() {
            ddl_or(&ts, ddl).await?;
        }
        let mut rng = SmallRng::seed_from_u64(args.seed);
        load(&ts, args.keys, &mut rng).await?;
        let mut rounds = Vec::with_capacity(args.rounds);
        for _ in 0..args.rounds {
            let meter = Meter::start();
            for _ in 0..args.puts {
                put(&ts, rng.gen_range(0..args.keys), &mut rng).await?;
            }
            rounds.push(meter.finish(&mut fifo, args.puts));
            ts.store().sync().await.map_err(|e| e.to_string())?;
        }
        let m = median(&rounds);
        let rate = m.rate();
        let cost = base
            .map_or(String::new(), |b: f64| format!(" | {:+.1}% vs 0", (b / rate - 1.0) * 100.0));
        base.get_or_insert(rate);
        lines.push(format!(
            "write, {n} indexes: {rate:.0} puts/s | thread {:.2} us/put | process {:.2} us/put{cost}",
            m.thread_us_per_op(),
            m.process_us_per_op()
        ));
        lines.extend(rounds.iter().map(|s| format!("  round {:.0} puts/s", s.rate())));
        if n == 1 {
            lines.extend(lookups(&ts, &args, &mut rng, &mut fifo).await?);
        }
        close(ts).await?;
    }
    lines.extend(build_rate(&args, &dir.join("build"), &mut fifo).await?);
    Ok(lines)
}

/// Part 2: index queries of a random `a` value, with rows and keys only.
async fn lookups(
    ts: &TableStore,
    args: &Args,
    rng: &mut SmallRng,
    fifo: &mut PerfFifo,
) -> BenchResult<Vec<String>> {
    let mut lines = Vec::new();
    for keys_only in [false, true] {
        let mut rounds = Vec::with_capacity(args.rounds);
        let mut hits = 0;
        for _ in 0..args.rounds {
            let meter = Meter::start();
            for _ in 0..args.lookups {
                let q = IndexQuery {
                    equal: vec![Some(Value::Integer(rng.gen_range(0..A_VALUES)))],
                    limit: args.lookup_limit,
                    keys_only,
                    ..IndexQuery::default()
                };
                let page = ts.index_scan("items", "by_a", &q).await.map_err(|e| e.to_string())?;
                hits += page.hits.len() as u64;
            }
            rounds.push(meter.finish(fifo, args.lookups));
        }
        let m = median(&rounds);
        let what = if keys_only { "keys only" } else { "with rows" };
        lines.push(format!(
            "lookup ({what}, limit {}): {:.0} queries/s | thread {:.2} us/query | {:.1} hits/query",
            args.lookup_limit,
            m.rate(),
            m.thread_us_per_op(),
            hits as f64 / (args.lookups as f64 * args.rounds as f64)
        ));
    }
    Ok(lines)
}

/// Part 3: the background build of one index over `--build-rows` rows, run to READY.
async fn build_rate(args: &Args, dir: &Path, fifo: &mut PerfFifo) -> BenchResult<Vec<String>> {
    let ts = open(dir).await?;
    ddl_or(&ts, TABLE_DDL).await?;
    let mut rng = SmallRng::seed_from_u64(args.seed);
    load(&ts, args.build_rows, &mut rng).await?;
    let mut rounds = Vec::with_capacity(args.build_rounds);
    for _ in 0..args.build_rounds {
        let meter = Meter::start();
        ddl_or(&ts, INDEX_A).await?;
        ts.finish_index_work().await.map_err(|e| e.to_string())?;
        rounds.push(meter.finish(fifo, args.build_rows));
        ddl_or(&ts, "DROP INDEX by_a ON items").await?;
    }
    let m = median(&rounds);
    let mut lines = vec![format!(
        "build, {} rows: {:.0} rows/s ({:.2} s) | thread {:.2} us/row",
        args.build_rows,
        m.rate(),
        m.secs,
        m.thread_us_per_op()
    )];
    lines.extend(rounds.iter().map(|s| format!("  round {:.0} rows/s", s.rate())));
    close(ts).await?;
    Ok(lines)
}

async fn open(dir: &Path) -> BenchResult<TableStore> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let config = StoreConfig { cache_capacity_bytes: CACHE_BYTES, ..StoreConfig::default() };
    TableStore::open(DmaDisk, dir, config, Rc::new(SystemClock)).await.map_err(|e| e.to_string())
}

async fn close(ts: TableStore) -> BenchResult<()> {
    ts.close().await.map_err(|e| e.to_string())
}

async fn ddl_or(ts: &TableStore, text: &str) -> BenchResult<()> {
    ts.ddl(text).await.map(|_| ()).map_err(|e| format!("{text}: {e}"))
}

/// Puts ids `0..rows` (not timed), then syncs.
async fn load(ts: &TableStore, rows: u64, rng: &mut SmallRng) -> BenchResult<()> {
    for id in 0..rows {
        put(ts, id, rng).await?;
    }
    ts.store().sync().await.map_err(|e| e.to_string())
}

/// Puts row `id` with new random values in every indexed field.
async fn put(ts: &TableStore, id: u64, rng: &mut SmallRng) -> BenchResult<()> {
    let a = rng.gen_range(0..A_VALUES);
    let row = [
        ("id", Value::Long(id as i64)),
        ("a", Value::Integer(a)),
        ("b", Value::String(format!("b{}", a % 37))),
        ("c", Value::Long(rng.gen())),
    ];
    ts.put("items", &row, Durability::NoSync).await.map(|_| ()).map_err(|e| e.to_string())
}

/// The round with the median rate.
fn median(rounds: &[Sample]) -> Sample {
    let mut sorted = rounds.to_vec();
    sorted.sort_by(|x, y| x.rate().total_cmp(&y.rate()));
    sorted[sorted.len() / 2]
}
