//! The table layer benchmark (issue 3): what [`TableStore`] costs on top of the raw `Store`.
//!
//! `cargo bench -p ringstore-storage --bench table` measures, in one run:
//!
//! 1. **Encoding**, pure CPU: ns per call of `encode_primary_key`, `encode_primary_key_named` and
//!    `decode_primary_key` on the seed's products key (`PRIMARY KEY (SHARD(productType,
//!    productName), productClass)`, three STRING fields) and on an events key with a TIMESTAMP DESC
//!    and a LONG DESC field, and of `encode_row`/`decode_row` and `StoredRow::encode`/`decode` on
//!    those tables' rows. Each runs `--micro-rounds` rounds of `--micro-ops` calls cycling over
//!    [`MICRO_INPUTS`] prepared inputs (so they stay in the CPU cache), every input and result
//!    passed through `std::hint::black_box`; the median round is reported, and every round.
//! 2. **Table against raw**: one `TableStore` on the real O_DIRECT disk (`DmaDisk`) inside one
//!    glommio executor. `--keys` products rows are loaded through the table; then `--pairs` pairs
//!    of rounds run on that same store, raw then table in odd pairs, table then raw in even ones.
//!    A table round uses `TableStore::put`/`get` with named fields; a raw round uses `Store::put`/
//!    `get` of the same store directly, with the very key bytes the table encodes and a copy of
//!    one stored row as the value (every row of this table has the same stored length), so what
//!    differs is the table layer's work alone. After the load the record cache is filled
//!    (`Store::warm_cache`, not timed), so every put pass starts with every row cached, as the
//!    previous round leaves it. A round: every key put once (NoSync, one task, shuffled order);
//!    sync + compact (not timed); `--miss-gets` distinct keys read by `--readers` tasks (every
//!    put dropped its key's cache entry, so each is a cache miss: one O_DIRECT read);
//!    `Store::warm_cache` (not timed) to cache every row again; then `--keys` gets of random keys
//!    from one task (cache hits). The ratio table/raw is taken within each pair and
//!    the median over the pairs is reported, with the "table layer cost" 1 - table rate / raw
//!    rate (target: at most 25%).
//!
//! CPU time per operation is given for the shard thread (`/proc/thread-self/schedstat`, ns; it
//! includes the benchmark's own loop, which runs on the same thread) and for the whole process
//! (`/proc/self/stat`, 10 ms ticks), as in `store.rs`. A table round builds each request's
//! `(field name, Value)` pairs from the key number inside the timed loop, as a protocol decoder
//! would; part 1 reports that cost alone ("bench: build ...") so it can be told apart.
//!
//! When the environment variable `RINGSTORE_PERF_CTL` names a `perf record --control` FIFO, the
//! benchmark writes `enable`/`disable` to it around the `--profile-pass` pass of every
//! `--profile-side` round, so a profile shows only that pass.

mod bench_env;

use std::cell::Cell;
use std::future::Future;
use std::hint::black_box;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use bench_env::{block_device_dir, machine_line};
use clap::{Parser, ValueEnum};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use ringstore_storage::disk::dma::DmaDisk;
use ringstore_storage::table::stored_row::{StoredRow, StoredVersion};
use ringstore_storage::table::{
    decode_primary_key, decode_row, encode_primary_key, encode_primary_key_named, encode_row,
    CatalogTable, TableStore, Value, VersionSelect, WriteOutcome,
};
use ringstore_storage::{Durability, StoreConfig, SystemClock, WriteOptions};

/// glommio's registered io_uring buffer memory. The locked-memory hard limit here is 8 MiB.
const IO_MEMORY_BYTES: usize = 2 * 1024 * 1024;
/// Record cache: holds every row of the default 200k (about 45 + 42 bytes each, plus overhead).
const CACHE_BYTES: u64 = 256 * 1024 * 1024;
/// Distinct prepared inputs each encoding benchmark cycles over.
const MICRO_INPUTS: usize = 1024;
/// The target: the table layer costs at most this share of the raw store's rate.
const TARGET_TABLE_COST_MAX: f64 = 0.25;
/// Digits of the product number in `productName`; bounds `--keys`.
const PRODUCT_DIGITS: usize = 8;
/// First event timestamp of the events key (2023-11-14, ms since the epoch).
const EVENTS_EPOCH_MS: i64 = 1_700_000_000_000;

const PRODUCTS: &str = "products";
const EVENTS: &str = "events";
const PRODUCTS_DDL: &str = "CREATE TABLE products (productType STRING, productName STRING, \
     productClass STRING, color ENUM(blue, green, red), size ENUM(small, medium, large), \
     inventoryCount INTEGER, PRIMARY KEY (SHARD(productType, productName), productClass))";
const EVENTS_DDL: &str = "CREATE TABLE events (host STRING, at TIMESTAMP, seq LONG, \
     level ENUM(debug, info, warn, error), msg STRING, \
     PRIMARY KEY (SHARD(host), at DESC, seq DESC))";

const PRODUCT_TYPES: [&str; 8] =
    ["wool", "cotton", "silk", "linen", "denim", "leather", "polyester", "cashmere"];
const PRODUCT_CLASSES: [&str; 4] = ["winter", "summer", "spring", "autumn"];
const COLORS: [&str; 3] = ["blue", "green", "red"];
const SIZES: [&str; 3] = ["small", "medium", "large"];
const LEVELS: [&str; 4] = ["debug", "info", "warn", "error"];

use bench_env::measure::{Meter, PerfFifo, Sample};
use bench_env::BenchResult;

#[derive(Parser, Debug, Clone)]
#[command(about = "ringstore table layer benchmark: key/row encoding, table vs raw store")]
struct Args {
    /// Rows (distinct keys) of the table-against-raw part.
    #[arg(long, default_value_t = 200_000)]
    keys: u32,
    /// Pairs of raw and table rounds.
    #[arg(long, default_value_t = 3)]
    pairs: usize,
    /// Concurrent reader tasks of the cache-miss get pass.
    #[arg(long, default_value_t = 256)]
    readers: usize,
    /// Distinct keys read by the cache-miss get pass (at most `--keys`).
    #[arg(long, default_value_t = 50_000)]
    miss_gets: u32,
    /// Calls per round of each encoding benchmark.
    #[arg(long, default_value_t = 200_000)]
    micro_ops: u64,
    /// Rounds of each encoding benchmark (the median is reported).
    #[arg(long, default_value_t = 7)]
    micro_rounds: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Store directory; must be empty or absent, and on a block device (O_DIRECT). Default: a
    /// temporary directory under the cargo target directory, deleted at the end.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Skip part 1 (encoding).
    #[arg(long)]
    skip_micro: bool,
    /// Skip part 2 (table against raw).
    #[arg(long)]
    skip_store: bool,
    /// With RINGSTORE_PERF_CTL: the side whose `--profile-pass` is profiled.
    #[arg(long, value_enum, default_value_t = Side::Table)]
    profile_side: Side,
    /// With RINGSTORE_PERF_CTL: the pass profiled (in every round of `--profile-side`).
    #[arg(long, value_enum)]
    profile_pass: Option<Pass>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Raw,
    Table,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Raw => "raw",
            Side::Table => "table",
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Put,
    GetMiss,
    GetHit,
}

impl Pass {
    const ALL: [Pass; 3] = [Pass::Put, Pass::GetMiss, Pass::GetHit];

    fn label(self, readers: usize) -> String {
        match self {
            Pass::Put => "put NoSync overwrite (1 task)".into(),
            Pass::GetMiss => format!("get cache miss, disk ({readers} tasks)"),
            Pass::GetHit => "get cache hit (1 task, random keys)".into(),
        }
    }
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run_bench(args) {
        eprintln!("table bench failed: {e}");
        std::process::exit(1);
    }
}

fn run_bench(args: Args) -> BenchResult<()> {
    check_args(&args)?;
    let (dir, fs, _guard) = block_device_dir(args.dir.as_deref(), "ringstore-table-bench-")?;
    let machine = machine_line();
    let store_dir = dir.join("shard-0");
    let bench_args = args.clone();
    let report = glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(0))
        .io_memory(IO_MEMORY_BYTES)
        .name("shard-0")
        .spawn(move || async move { run_parts(bench_args, store_dir).await })
        .map_err(|e| format!("cannot start the glommio executor: {e}"))?
        .join()
        .map_err(|e| format!("the executor thread failed: {e}"))??;
    println!("ringstore table layer bench (one shard, in process)");
    println!("{machine}");
    println!(
        "keys {} | pairs {} | miss gets {} from {} readers | micro {} rounds x {} ops | seed {} | dir on {} ({})",
        args.keys,
        args.pairs,
        args.miss_gets,
        args.readers,
        args.micro_rounds,
        args.micro_ops,
        args.seed,
        fs.device,
        fs.fstype
    );
    if !report.micro.is_empty() {
        println!();
        print_micro(&report.micro, &args);
    }
    if !report.rounds.is_empty() {
        println!();
        print_rounds(&report.rounds, &args);
        println!();
        print_pairs(&report.rounds, &args);
        println!();
        print_medians(&report.rounds, &args);
    }
    println!();
    for note in &report.notes {
        println!("{note}");
    }
    Ok(())
}

fn check_args(args: &Args) -> BenchResult<()> {
    if args.keys == 0 || u64::from(args.keys) > 10u64.pow(PRODUCT_DIGITS as u32) {
        return Err(format!("--keys must be 1..={}", 10u64.pow(PRODUCT_DIGITS as u32)));
    }
    if args.pairs == 0 || args.readers == 0 || args.micro_rounds == 0 || args.micro_ops == 0 {
        return Err("--pairs, --readers, --micro-rounds and --micro-ops must be at least 1".into());
    }
    if args.miss_gets == 0 || args.miss_gets > args.keys {
        return Err(format!("--miss-gets must be 1..=--keys ({})", args.keys));
    }
    Ok(())
}

/// Everything the parts share.
struct Bench {
    args: Args,
    tables: Rc<TableStore>,
    products: Rc<CatalogTable>,
    events: Rc<CatalogTable>,
    micro: Vec<Micro>,
    rounds: Vec<RoundResult>,
    notes: Vec<String>,
    perf: PerfControl,
}

struct Report {
    micro: Vec<Micro>,
    rounds: Vec<RoundResult>,
    notes: Vec<String>,
}

impl Bench {
    fn note(&mut self, line: String) {
        eprintln!("  {line}");
        self.notes.push(line);
    }
}

async fn run_parts(args: Args, dir: PathBuf) -> BenchResult<Report> {
    let config = StoreConfig { cache_capacity_bytes: CACHE_BYTES, ..StoreConfig::default() };
    let tables = TableStore::open(DmaDisk, &dir, config, Rc::new(SystemClock))
        .await
        .map_err(|e| format!("open {}: {e}", dir.display()))?;
    for ddl in [PRODUCTS_DDL, EVENTS_DDL] {
        tables.ddl(ddl).await.map_err(|e| format!("ddl {ddl}: {e}"))?;
    }
    let products = tables.table(PRODUCTS).map_err(|e| e.to_string())?;
    let events = tables.table(EVENTS).map_err(|e| e.to_string())?;
    let perf = PerfControl::from_env(args.profile_side, args.profile_pass)?;
    let mut b = Bench {
        args,
        tables: Rc::new(tables),
        products,
        events,
        micro: Vec::new(),
        rounds: Vec::new(),
        notes: Vec::new(),
        perf,
    };
    if !b.args.skip_micro {
        run_micro(&mut b)?;
    }
    if !b.args.skip_store {
        run_store(&mut b).await?;
    }
    let tables = Rc::try_unwrap(b.tables)
        .map_err(|_| "a task still holds the table store at close".to_string())?;
    tables.close().await.map_err(|e| format!("close: {e}"))?;
    Ok(Report { micro: b.micro, rounds: b.rounds, notes: b.notes })
}

// ---------------------------------------------------------------------------------------------
// Part 1: encoding, pure CPU
// ---------------------------------------------------------------------------------------------

/// One encoding benchmark: ns per call of each round.
struct Micro {
    what: &'static str,
    table: &'static str,
    bytes: String,
    ns_per_op: Vec<f64>,
}

/// Runs `op(i % MICRO_INPUTS)` `--micro-ops` times per round, `--micro-rounds` rounds.
fn micro<T>(
    b: &mut Bench,
    what: &'static str,
    table: &'static str,
    bytes: String,
    mut op: impl FnMut(usize) -> T,
) {
    let (rounds, ops) = (b.args.micro_rounds, b.args.micro_ops);
    let mut ns_per_op = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        for i in 0..ops {
            black_box(op(black_box(i as usize % MICRO_INPUTS)));
        }
        ns_per_op.push(started.elapsed().as_nanos() as f64 / ops as f64);
    }
    eprintln!("micro: {what} ({table}): median {:.1} ns/op", median(&ns_per_op));
    b.micro.push(Micro { what, table, bytes, ns_per_op });
}

fn run_micro(b: &mut Bench) -> BenchResult<()> {
    eprintln!(
        "micro: {} rounds x {} calls per benchmark ...",
        b.args.micro_rounds, b.args.micro_ops
    );
    micro_table(b, b.products.clone(), &PRODUCTS_INPUTS)?;
    micro_table(b, b.events.clone(), &EVENTS_INPUTS)?;
    micro_request_build(b);
    Ok(())
}

/// Mean and range of byte lengths, for the table's "bytes" column.
fn lengths<B: AsRef<[u8]>>(items: &[B]) -> String {
    let lens: Vec<usize> = items.iter().map(|i| i.as_ref().len()).collect();
    let (min, max) = (lens.iter().min().copied(), lens.iter().max().copied());
    let mean = lens.iter().sum::<usize>() as f64 / lens.len().max(1) as f64;
    match (min, max) {
        (Some(min), Some(max)) if min == max => format!("{min} B"),
        (Some(min), Some(max)) => format!("{min}-{max} B (mean {mean:.1})"),
        _ => "-".into(),
    }
}

/// Generators of one table's micro-benchmark inputs, by input number.
struct MicroInputs {
    name: &'static str,
    key_values: fn(u32) -> [Value; 3],
    key_pairs: fn(u32) -> [(&'static str, Value); 3],
    row_values: fn(u32) -> Vec<Option<Value>>,
}

const PRODUCTS_INPUTS: MicroInputs = MicroInputs {
    name: PRODUCTS,
    key_values: product_key_values,
    key_pairs: product_key_pairs,
    row_values: product_row_values,
};

const EVENTS_INPUTS: MicroInputs = MicroInputs {
    name: EVENTS,
    key_values: event_key_values,
    key_pairs: event_key_pairs,
    row_values: event_row_values,
};

/// The key and row benchmarks of one table.
fn micro_table(b: &mut Bench, table: Rc<CatalogTable>, inputs: &MicroInputs) -> BenchResult<()> {
    let (schema, version) = (table.schema(), table.schema_version());
    let n = MICRO_INPUTS as u32;
    let values: Vec<[Value; 3]> = (0..n).map(inputs.key_values).collect();
    let named: Vec<[(&str, Value); 3]> = (0..n).map(inputs.key_pairs).collect();
    let keys = values
        .iter()
        .map(|v| encode_primary_key(schema, v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("encode {} key: {e}", inputs.name))?;
    let rows: Vec<Vec<Option<Value>>> = (0..n).map(inputs.row_values).collect();
    micro_keys(b, inputs.name, &table, &values, &named, &keys)?;
    micro_rows(b, inputs.name, schema, version, &rows)
}

/// The three key benchmarks of one table; checks first that the inputs round-trip.
fn micro_keys(
    b: &mut Bench,
    name: &'static str,
    table: &CatalogTable,
    values: &[[Value; 3]],
    named: &[[(&str, Value); 3]],
    keys: &[Vec<u8>],
) -> BenchResult<()> {
    let schema = table.schema();
    for (i, key) in keys.iter().enumerate() {
        let by_name = encode_primary_key_named(schema, &named[i]).map_err(|e| e.to_string())?;
        let back = decode_primary_key(schema, key).map_err(|e| e.to_string())?;
        if &by_name != key || back != values[i] {
            return Err(format!("{name} key {i} does not round-trip"));
        }
    }
    let len = lengths(keys);
    micro(b, "encode_primary_key", name, len.clone(), |i| {
        encode_primary_key(black_box(schema), black_box(&values[i]))
    });
    micro(b, "encode_primary_key_named", name, len.clone(), |i| {
        encode_primary_key_named(black_box(schema), black_box(&named[i]))
    });
    micro(b, "decode_primary_key", name, len, |i| {
        decode_primary_key(black_box(schema), black_box(&keys[i]))
    });
    Ok(())
}

/// The row and stored-row benchmarks of one table; checks first that the inputs round-trip.
fn micro_rows(
    b: &mut Bench,
    name: &'static str,
    schema: &ringstore_storage::table::TableSchema,
    version: u32,
    rows: &[Vec<Option<Value>>],
) -> BenchResult<()> {
    let encoded = rows
        .iter()
        .map(|r| encode_row(schema, version, r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("encode {name} row: {e}"))?;
    let stored: Vec<StoredRow> = encoded
        .iter()
        .enumerate()
        .map(|(i, row)| StoredRow {
            token: 0x0123_4567_89ab_0000 + i as u64,
            versions: vec![StoredVersion {
                version: EVENTS_EPOCH_MS as u64 + i as u64,
                expiry_ms: 0,
                row: row.clone(),
            }],
        })
        .collect();
    let stored_bytes: Vec<Vec<u8>> = stored.iter().map(StoredRow::encode).collect();
    for (i, bytes) in stored_bytes.iter().enumerate() {
        let back = StoredRow::decode(schema, bytes).map_err(|e| e.to_string())?;
        let row = decode_row(schema, back.versions[0].row).map_err(|e| e.to_string())?;
        if back.to_owned_row() != stored[i] || row.values != rows[i] {
            return Err(format!("{name} row {i} does not round-trip"));
        }
    }
    micro(b, "encode_row", name, lengths(&encoded), |i| {
        encode_row(black_box(schema), black_box(version), black_box(&rows[i]))
    });
    micro(b, "decode_row", name, lengths(&encoded), |i| {
        decode_row(black_box(schema), black_box(&encoded[i]))
    });
    micro(b, "StoredRow::encode (1 version)", name, lengths(&stored_bytes), |i| {
        black_box(&stored[i]).encode()
    });
    micro(b, "StoredRow::decode (1 version)", name, lengths(&stored_bytes), |i| {
        StoredRow::decode(black_box(schema), black_box(&stored_bytes[i])).map(|r| r.token)
    });
    Ok(())
}

/// What the table rounds spend building requests inside their timed loops.
fn micro_request_build(b: &mut Bench) {
    micro(b, "bench: build key pairs (3 Strings)", PRODUCTS, "-".into(), |i| {
        product_key_pairs(black_box(i as u32))
    });
    micro(b, "bench: build row pairs (5 Strings, 1 INTEGER)", PRODUCTS, "-".into(), |i| {
        product_row_pairs(black_box(i as u32))
    });
}

// ---------------------------------------------------------------------------------------------
// The rows: products (the seed's table) and events (TIMESTAMP and LONG DESC key fields)
// ---------------------------------------------------------------------------------------------

/// `product-` and the key number, zero-padded to [`PRODUCT_DIGITS`] digits.
fn product_name(i: u32) -> String {
    let mut digits = [b'0'; PRODUCT_DIGITS];
    let mut v = i;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    let mut s = String::with_capacity(8 + PRODUCT_DIGITS);
    s.push_str("product-");
    s.push_str(std::str::from_utf8(&digits).expect("ASCII digits are UTF-8"));
    s
}

fn product_type(i: u32) -> &'static str {
    PRODUCT_TYPES[i as usize % PRODUCT_TYPES.len()]
}

fn product_class(i: u32) -> &'static str {
    PRODUCT_CLASSES[(i as usize / PRODUCT_TYPES.len()) % PRODUCT_CLASSES.len()]
}

/// Key values in primary key order: productType, productName, productClass.
fn product_key_values(i: u32) -> [Value; 3] {
    [product_type(i).into(), product_name(i).into(), product_class(i).into()]
}

/// The key by field name, in the order a client might give it.
fn product_key_pairs(i: u32) -> [(&'static str, Value); 3] {
    [
        ("productName", product_name(i).into()),
        ("productType", product_type(i).into()),
        ("productClass", product_class(i).into()),
    ]
}

/// Non-key values in schema order: color, size, inventoryCount (fixed widths, so every stored
/// row has the same length).
fn product_row_values(i: u32) -> Vec<Option<Value>> {
    vec![
        Some(Value::Enum(COLORS[i as usize % COLORS.len()].into())),
        Some(Value::Enum(SIZES[(i as usize / COLORS.len()) % SIZES.len()].into())),
        Some(Value::Integer(i as i32)),
    ]
}

/// A whole row by field name, as a put sends it.
fn product_row_pairs(i: u32) -> [(&'static str, Value); 6] {
    let [name, ty, class] = product_key_pairs(i);
    [
        name,
        ty,
        class,
        ("color", Value::Enum(COLORS[i as usize % COLORS.len()].into())),
        ("size", Value::Enum(SIZES[(i as usize / COLORS.len()) % SIZES.len()].into())),
        ("inventoryCount", Value::Integer(i as i32)),
    ]
}

fn event_host(i: u32) -> String {
    format!("host-{:04}.example.net", i % 64)
}

/// Key values in primary key order: host, at (DESC), seq (DESC).
fn event_key_values(i: u32) -> [Value; 3] {
    let at = EVENTS_EPOCH_MS + i64::from(i) * 1000;
    [event_host(i).into(), Value::Timestamp(at), Value::Long(i64::from(i) * 7919)]
}

fn event_key_pairs(i: u32) -> [(&'static str, Value); 3] {
    let [host, at, seq] = event_key_values(i);
    [("at", at), ("host", host), ("seq", seq)]
}

fn event_row_values(i: u32) -> Vec<Option<Value>> {
    vec![
        Some(Value::Enum(LEVELS[i as usize % LEVELS.len()].into())),
        Some(format!("GET /api/v1/items/{i} served in {} ms", i % 97).into()),
    ]
}

// ---------------------------------------------------------------------------------------------
// Part 2: table against raw
// ---------------------------------------------------------------------------------------------

/// The raw rounds' inputs: every row's encoded key, and one stored row as the value.
struct Workload {
    key_bytes: Vec<u8>,
    key_ends: Vec<u32>,
    value: Vec<u8>,
}

impl Workload {
    fn len(&self) -> usize {
        self.key_ends.len()
    }

    fn key(&self, i: u32) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i as usize - 1] as usize };
        &self.key_bytes[start..self.key_ends[i as usize] as usize]
    }
}

/// One timed pass of one round.
struct RoundResult {
    pair: usize,
    side: Side,
    pass: Pass,
    sample: Sample,
}

async fn run_store(b: &mut Bench) -> BenchResult<()> {
    let work = Rc::new(encode_keys(b)?);
    load(b, &work).await?;
    let stored = b.tables.store().get(work.key(0)).await.map_err(|e| format!("get: {e}"))?;
    let value = stored.ok_or("row 0 not found after the load")?.value.to_vec();
    let mut work = Rc::try_unwrap(work).map_err(|_| "workload still shared".to_string())?;
    work.value = value;
    check_value_lengths(b, &work).await?;
    let work = Rc::new(work);
    b.note(format!(
        "workload: {} rows of table {PRODUCTS}; stored key {}; stored value {} B \
         (raw rounds put the same key bytes and a copy of row 0's stored value)",
        work.len(),
        lengths(&(0..work.len() as u32).map(|i| work.key(i)).collect::<Vec<_>>()),
        work.value.len()
    ));
    for pair in 1..=b.args.pairs {
        let sides = if pair % 2 == 1 { [Side::Raw, Side::Table] } else { [Side::Table, Side::Raw] };
        for side in sides {
            round(b, &work, pair, side).await?;
        }
    }
    Ok(())
}

fn encode_keys(b: &Bench) -> BenchResult<Workload> {
    eprintln!("encoding {} keys ...", b.args.keys);
    let schema = b.products.schema();
    let mut work = Workload {
        key_bytes: Vec::new(),
        key_ends: Vec::with_capacity(b.args.keys as usize),
        value: Vec::new(),
    };
    for i in 0..b.args.keys {
        let key = encode_primary_key(schema, &product_key_values(i))
            .map_err(|e| format!("encode key {i}: {e}"))?;
        work.key_bytes.extend_from_slice(&key);
        work.key_ends.push(work.key_bytes.len() as u32);
    }
    Ok(work)
}

/// Every row once through the table, in a shuffled order (timed, reported as a note).
async fn load(b: &mut Bench, work: &Workload) -> BenchResult<()> {
    let order = shuffled(work.len(), b.args.seed);
    eprintln!("load: {} table puts of new rows, NoSync, one task ...", order.len());
    let meter = Meter::start();
    for &k in &order {
        table_put(&b.tables, k).await?;
    }
    let s = meter.finish(&mut b.perf.fifo, order.len() as u64);
    b.note(format!(
        "load (new rows, table put, NoSync, 1 task): {} rows in {:.3} s, {:.0} rows/s, shard CPU {:.3} us/row",
        s.ops,
        s.secs,
        s.rate(),
        s.thread_us_per_op()
    ));
    settle(b, "after the load").await?;
    // Every later put pass starts with every row cached (the previous round's get-hit pass
    // leaves them so); the first one must too, or it would skip the cache removals the others pay.
    warm(b, "the first round").await
}

/// Checks that every 1000th row's stored value has the length the raw rounds write.
async fn check_value_lengths(b: &Bench, work: &Workload) -> BenchResult<()> {
    let store = b.tables.store();
    for k in (0..work.len() as u32).step_by(1000) {
        let got = store.get(work.key(k)).await.map_err(|e| format!("get: {e}"))?;
        match got {
            Some(v) if v.value.len() == work.value.len() => {}
            Some(v) => {
                return Err(format!(
                    "row {k}: stored value of {} B, row 0's is {} B: raw and table would differ",
                    v.value.len(),
                    work.value.len()
                ))
            }
            None => return Err(format!("row {k} not found after the load")),
        }
    }
    Ok(())
}

/// One side's round: put pass, settle, cache-miss get pass, cache-hit get pass.
async fn round(b: &mut Bench, work: &Rc<Workload>, pair: usize, side: Side) -> BenchResult<()> {
    let seed = b.args.seed ^ ((pair as u64) << 8);
    eprintln!("pair {pair}, {}: put, get-miss, get-hit ...", side.name());
    let order = shuffled(work.len(), seed ^ 0x1);
    let meter = b.perf.start(side, Pass::Put);
    put_pass(b, work, side, &order).await?;
    let sample = meter.finish(&mut b.perf.fifo, order.len() as u64);
    b.rounds.push(RoundResult { pair, side, pass: Pass::Put, sample });
    settle(b, &format!("pair {pair} {} get-miss", side.name())).await?;

    let mut order = shuffled(work.len(), seed ^ 0x2);
    order.truncate(b.args.miss_gets as usize);
    let order = Rc::new(order);
    let before = b.tables.store().stats().cache;
    let meter = b.perf.start(side, Pass::GetMiss);
    get_miss_pass(b, work, side, order.clone()).await?;
    let sample = meter.finish(&mut b.perf.fifo, order.len() as u64);
    b.rounds.push(RoundResult { pair, side, pass: Pass::GetMiss, sample });
    let after = b.tables.store().stats().cache;
    let (miss_hits, miss_misses) = (after.hits - before.hits, after.misses - before.misses);
    warm(b, &format!("pair {pair} {} get-hit", side.name())).await?;
    let after = b.tables.store().stats().cache;

    let meter = b.perf.start(side, Pass::GetHit);
    get_hit_pass(b, work, side, seed ^ 0x3).await?;
    let sample = meter.finish(&mut b.perf.fifo, work.len() as u64);
    b.rounds.push(RoundResult { pair, side, pass: Pass::GetHit, sample });
    let end = b.tables.store().stats().cache;
    b.note(format!(
        "pair {pair} {}: cache during get-miss: hits {miss_hits}, misses {miss_misses}; \
         during get-hit: hits {}, misses {}; entries {}, used {} of {} bytes",
        side.name(),
        end.hits - after.hits,
        end.misses - after.misses,
        end.entries,
        end.used_bytes,
        end.capacity_bytes
    ));
    Ok(())
}

async fn put_pass(b: &Bench, work: &Workload, side: Side, order: &[u32]) -> BenchResult<()> {
    match side {
        Side::Raw => {
            let (store, opts) = (b.tables.store(), WriteOptions::durability(Durability::NoSync));
            for &k in order {
                store.put(work.key(k), &work.value, opts).await.map_err(|e| format!("put: {e}"))?;
            }
        }
        Side::Table => {
            for &k in order {
                table_put(&b.tables, k).await?;
            }
        }
    }
    Ok(())
}

async fn table_put(tables: &TableStore, k: u32) -> BenchResult<()> {
    match tables.put(PRODUCTS, &product_row_pairs(k), Durability::NoSync).await {
        Ok(WriteOutcome::Written { .. }) => Ok(()),
        Ok(other) => Err(format!("table put {k}: {other:?}")),
        Err(e) => Err(format!("table put {k}: {e}")),
    }
}

/// Every key once, from `--readers` tasks.
async fn get_miss_pass(
    b: &Bench,
    work: &Rc<Workload>,
    side: Side,
    order: Rc<Vec<u32>>,
) -> BenchResult<()> {
    let (tables, work) = (b.tables.clone(), work.clone());
    run_tasks(b.args.readers, order, move |k| get_one(tables.clone(), work.clone(), side, k)).await
}

/// `--keys` gets of random keys from one task.
async fn get_hit_pass(b: &Bench, work: &Rc<Workload>, side: Side, seed: u64) -> BenchResult<()> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = work.len() as u32;
    match side {
        Side::Raw => {
            for _ in 0..n {
                raw_get(&b.tables, work, rng.gen_range(0..n)).await?;
            }
        }
        Side::Table => {
            for _ in 0..n {
                table_get(&b.tables, rng.gen_range(0..n)).await?;
            }
        }
    }
    Ok(())
}

async fn get_one(
    tables: Rc<TableStore>,
    work: Rc<Workload>,
    side: Side,
    k: u32,
) -> BenchResult<()> {
    match side {
        Side::Raw => raw_get(&tables, &work, k).await,
        Side::Table => table_get(&tables, k).await,
    }
}

async fn raw_get(tables: &TableStore, work: &Workload, k: u32) -> BenchResult<()> {
    match tables.store().get(work.key(k)).await {
        Ok(Some(v)) if v.value.len() == work.value.len() => Ok(()),
        Ok(Some(v)) => Err(format!("raw get {k}: value of {} B", v.value.len())),
        Ok(None) => Err(format!("raw get {k}: not found")),
        Err(e) => Err(format!("raw get {k}: {e}")),
    }
}

async fn table_get(tables: &TableStore, k: u32) -> BenchResult<()> {
    let key = product_key_pairs(k);
    match tables.get(PRODUCTS, &key, VersionSelect::Newest).await {
        Ok(Some(row)) if row.versions.len() == 1 => Ok(()),
        Ok(Some(row)) => Err(format!("table get {k}: {} versions", row.versions.len())),
        Ok(None) => Err(format!("table get {k}: not found")),
        Err(e) => Err(format!("table get {k}: {e}")),
    }
}

/// Runs `op(k)` for every `k` of `order` from `tasks` concurrent tasks.
async fn run_tasks<F, Fut>(tasks: usize, order: Rc<Vec<u32>>, op: F) -> BenchResult<()>
where
    F: Fn(u32) -> Fut + Clone + 'static,
    Fut: Future<Output = BenchResult<()>> + 'static,
{
    let next = Rc::new(Cell::new(0usize));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (next, order, op) = (next.clone(), order.clone(), op.clone());
            glommio::spawn_local(async move {
                while let Some(&k) = order.get(next.get()) {
                    next.set(next.get() + 1);
                    op(k).await?;
                }
                BenchResult::Ok(())
            })
        })
        .collect();
    for result in futures::future::join_all(handles).await {
        result?;
    }
    Ok(())
}

/// Caches every row (not timed) by reading the segments sequentially.
async fn warm(b: &Bench, before: &str) -> BenchResult<()> {
    let started = Instant::now();
    let w = b.tables.store().warm_cache().await.map_err(|e| format!("warm_cache: {e}"))?;
    eprintln!(
        "  warm-up before {before}: {:.3} s ({} segments, {} MiB read, {} records cached)",
        started.elapsed().as_secs_f64(),
        w.segments_read,
        w.bytes_read >> 20,
        w.records_cached
    );
    Ok(())
}

/// Syncs and compacts now (not timed), so that the next pass does not share the disk with
/// work left over from the previous one.
async fn settle(b: &mut Bench, before: &str) -> BenchResult<()> {
    let started = Instant::now();
    let store = b.tables.store();
    store.sync().await.map_err(|e| format!("sync: {e}"))?;
    let r = store.compact().await.map_err(|e| format!("compact: {e}"))?;
    eprintln!(
        "  settle before {before}: sync + compact {:.3} s (segments {}, moved {} MiB, reclaimed {} MiB)",
        started.elapsed().as_secs_f64(),
        r.segments_compacted,
        r.bytes_moved >> 20,
        r.bytes_reclaimed >> 20
    );
    Ok(())
}

fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(seed));
    order
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

/// The perf FIFO and the pass to profile (`--profile-side`, `--profile-pass` with
/// `RINGSTORE_PERF_CTL`).
struct PerfControl {
    side: Side,
    pass: Option<Pass>,
    fifo: PerfFifo,
}

impl PerfControl {
    fn from_env(side: Side, pass: Option<Pass>) -> BenchResult<PerfControl> {
        Ok(PerfControl { side, pass, fifo: PerfFifo::from_env()? })
    }

    fn start(&mut self, side: Side, pass: Pass) -> Meter {
        self.fifo.start(self.side == side && self.pass == Some(pass))
    }
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

/// Prints rows as a Markdown table with padded columns (aligned in a terminal, valid in docs).
fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].len()).chain([header[c].len()]).max().unwrap_or(0))
        .collect();
    let line = |r: &[String]| {
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
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    line(
        &widths
            .iter()
            .enumerate()
            .map(|(c, w)| if c == 0 { "-".repeat(*w) } else { format!("{}:", "-".repeat(w - 1)) })
            .collect::<Vec<_>>(),
    );
    for r in rows {
        line(r);
    }
}

fn print_micro(micro: &[Micro], args: &Args) {
    println!(
        "Encoding: ns per call, median of {} rounds of {} calls over {MICRO_INPUTS} inputs",
        args.micro_rounds, args.micro_ops
    );
    let rows: Vec<Vec<String>> = micro
        .iter()
        .map(|m| {
            let rounds: Vec<String> = m.ns_per_op.iter().map(|ns| format!("{ns:.1}")).collect();
            vec![
                m.what.to_string(),
                m.table.to_string(),
                m.bytes.clone(),
                format!("{:.1}", median(&m.ns_per_op)),
                rounds.join(" "),
            ]
        })
        .collect();
    print_table(&["function", "table", "bytes", "median ns/op", "every round ns/op"], &rows);
}

fn print_rounds(rounds: &[RoundResult], args: &Args) {
    println!("Every timed pass, in the order run (same store, same key bytes and value length)");
    let rows: Vec<Vec<String>> = rounds
        .iter()
        .map(|r| {
            let s = &r.sample;
            vec![
                r.pass.label(args.readers),
                r.pair.to_string(),
                r.side.name().to_string(),
                s.ops.to_string(),
                format!("{:.3}", s.secs),
                format!("{:.0}", s.rate()),
                format!("{:.3}", s.thread_us_per_op()),
                format!("{:.3}", s.process_us_per_op()),
            ]
        })
        .collect();
    print_table(
        &["pass", "pair", "side", "ops", "s", "ops/s", "shard CPU us/op", "proc CPU us/op"],
        &rows,
    );
}

fn find(rounds: &[RoundResult], pair: usize, side: Side, pass: Pass) -> Option<Sample> {
    rounds.iter().find(|r| r.pair == pair && r.side == side && r.pass == pass).map(|r| r.sample)
}

/// One pair's comparison of one pass.
struct Compared {
    raw: Sample,
    table: Sample,
}

impl Compared {
    fn ratio(&self) -> f64 {
        self.table.rate() / self.raw.rate()
    }

    fn extra_cpu_us(&self) -> f64 {
        self.table.thread_us_per_op() - self.raw.thread_us_per_op()
    }
}

fn compared(rounds: &[RoundResult], pass: Pass, pairs: usize) -> Vec<(usize, Compared)> {
    (1..=pairs)
        .filter_map(|p| {
            let raw = find(rounds, p, Side::Raw, pass)?;
            let table = find(rounds, p, Side::Table, pass)?;
            Some((p, Compared { raw, table }))
        })
        .collect()
}

fn print_pairs(rounds: &[RoundResult], args: &Args) {
    println!("Table against raw, pair by pair (cost = 1 - table ops/s / raw ops/s)");
    let mut rows = Vec::new();
    for pass in Pass::ALL {
        for (p, c) in compared(rounds, pass, args.pairs) {
            rows.push(vec![
                pass.label(args.readers),
                p.to_string(),
                format!("{:.0}", c.raw.rate()),
                format!("{:.0}", c.table.rate()),
                format!("{:.3}", c.ratio()),
                format!("{:.1}%", (1.0 - c.ratio()) * 100.0),
                format!("{:.3}", c.raw.thread_us_per_op()),
                format!("{:.3}", c.table.thread_us_per_op()),
                format!("{:.3}", c.extra_cpu_us()),
            ]);
        }
    }
    print_table(
        &[
            "pass",
            "pair",
            "raw ops/s",
            "table ops/s",
            "table/raw",
            "table layer cost",
            "raw shard CPU us/op",
            "table shard CPU us/op",
            "extra us/op",
        ],
        &rows,
    );
}

fn print_medians(rounds: &[RoundResult], args: &Args) {
    println!(
        "Medians over the {} pairs (each column on its own; ratios taken within a pair), target: table layer cost <= {:.0}%",
        args.pairs,
        TARGET_TABLE_COST_MAX * 100.0
    );
    let mut rows = Vec::new();
    for pass in Pass::ALL {
        let c = compared(rounds, pass, args.pairs);
        if c.is_empty() {
            continue;
        }
        let col =
            |f: &dyn Fn(&Compared) -> f64| median(&c.iter().map(|(_, c)| f(c)).collect::<Vec<_>>());
        let ratio = col(&|c| c.ratio());
        let cost = 1.0 - ratio;
        let met: Vec<&str> = c
            .iter()
            .map(|(_, c)| if 1.0 - c.ratio() <= TARGET_TABLE_COST_MAX { "yes" } else { "NO" })
            .collect();
        rows.push(vec![
            pass.label(args.readers),
            format!("{:.0}", col(&|c| c.raw.rate())),
            format!("{:.0}", col(&|c| c.table.rate())),
            format!("{ratio:.3}"),
            format!("{:.1}%", cost * 100.0),
            format!("{:.3}", col(&|c| c.raw.thread_us_per_op())),
            format!("{:.3}", col(&|c| c.table.thread_us_per_op())),
            format!("{:.3}", col(&|c| c.extra_cpu_us())),
            met.join("/"),
        ]);
    }
    print_table(
        &[
            "pass",
            "raw ops/s",
            "table ops/s",
            "table/raw",
            "table layer cost",
            "raw shard CPU us/op",
            "table shard CPU us/op",
            "extra us/op",
            "cost <= 25% per pair",
        ],
        &rows,
    );
}
