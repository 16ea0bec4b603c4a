//! `ringstore-load`: drive a node and measure it. The options are described in docs/LOADGEN.md.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use ringstore_loadgen::distribution::KeyDistribution;
use ringstore_loadgen::engine::{Pacing, Protocol, RunSpec, Workload};
use ringstore_loadgen::keyspace::IndexOn;
use ringstore_loadgen::output::{chart, hdr, json, table};
use ringstore_loadgen::results::{OpKind, RunResult};
use ringstore_loadgen::runner::{self, Plan, Target};
use ringstore_loadgen::scenario::Scenario;
use ringstore_loadgen::workload::{
    Mix, SizeSpec, Ycsb, KEY_SIZE_MAX, KEY_SIZE_MIN, SCAN_LENGTH_MAX_DEFAULT, VALUE_BYTES_MAX,
};
use ringstore_model::table::limits::{INDEXES_PER_TABLE_MAX, INDEX_VALUE_BYTES_MAX};
use ringstore_model::Durability;
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProtocolArg {
    Binary,
    Resp,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DurabilityArg {
    Sync,
    WriteNoSync,
    NoSync,
}

/// Drive a ringstore node with a workload and measure it.
#[derive(Debug, Parser)]
#[command(name = "ringstore-load", version)]
struct Args {
    /// The node's shared address; without it a node is started on a temp directory.
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// What the connections speak: ringstore's binary protocol, or RESP (GET and SET) to any
    /// Redis-protocol server at --addr, Redis or ringstore's --resp port.
    #[arg(long, value_enum, default_value = "binary")]
    protocol: ProtocolArg,
    /// With --addr: the node's pid, to report its CPU time per operation and memory.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Shards of the node started without --addr (default: the number of cores).
    #[arg(long)]
    shards: Option<usize>,
    /// Extra flag for the node started without --addr (repeatable), e.g.
    /// --node-arg=--cache-capacity-bytes=1048576.
    #[arg(long, allow_hyphen_values = true)]
    node_arg: Vec<String>,
    /// A YCSB core workload (sets the mix and the distribution) [default: b].
    #[arg(long, value_enum)]
    workload: Option<Ycsb>,
    /// A custom mix, e.g. read=90,update=10 (read, update, insert, scan, rmw).
    #[arg(long)]
    mix: Option<Mix>,
    /// Key distribution: uniform, zipf[:THETA], scrambled-zipf[:THETA], hotspot[:KEYS:OPS],
    /// sequential, latest[:THETA] [default: the workload's].
    #[arg(long)]
    distribution: Option<KeyDistribution>,
    /// Keys filled by the load phase and drawn from by the run.
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    /// Key size in bytes, fixed (16) or a range (16..64).
    #[arg(long, default_value = "16")]
    key_size: SizeSpec,
    /// Value size in bytes, fixed or a range.
    #[arg(long, default_value = "100")]
    value_size: SizeSpec,
    /// Durability of every write: sync (answered once fsynced), write-no-sync (once written to
    /// the log file, not synced), no-sync (at once, from memory).
    #[arg(long, value_enum, default_value = "sync")]
    durability: DurabilityArg,
    /// Logical clients; shard-aware, each has one connection per shard.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Closed loop: requests in flight per client. Open loop: the most a client has in flight.
    #[arg(long, default_value_t = 8)]
    pipeline: usize,
    /// Load threads sharing the clients.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Open loop: total requests per second, on a fixed schedule (latency counted from the
    /// scheduled time; uncorrected figures shown beside). Without it: closed loop.
    #[arg(long)]
    rate: Option<f64>,
    /// Length of the measured phase (5s, 500ms, 1m) [default: 10s; with --ops only: until
    /// the operations are done].
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// Run until this many requests were sent (instead of --duration).
    #[arg(long)]
    ops: Option<u64>,
    /// Warm-up before measuring, not counted.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2s")]
    warmup: Duration,
    /// Seed of every key stream (client i is seeded from it and i).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Send everything through the shared port instead of each shard's own port.
    #[arg(long)]
    no_shard_aware: bool,
    /// Bind each client to one shard: its reads and updates draw only keys that shard owns, so
    /// its pipeline goes down one connection (as redis-benchmark --cluster binds clients to
    /// nodes). Keeps a uniform distribution; flattens a skew across shards.
    #[arg(long)]
    bind_clients: bool,
    /// Skip the load phase (the keys are already there).
    #[arg(long)]
    no_load: bool,
    /// Longest scan (YCSB E); lengths are uniform in 1..=this.
    #[arg(long, default_value_t = SCAN_LENGTH_MAX_DEFAULT)]
    scan_length_max: u32,
    /// Key-design lab: `all` or a list of scenarios (user, timestamp-s, timestamp-ms, enum,
    /// hash-prefix, reversed, bucket, random-suffix); `list` prints them with their keys.
    #[arg(long, conflicts_with = "sweep")]
    scenario: Option<String>,
    /// Key-design lab: leave its lab_* tables in the node afterwards (they are dropped after
    /// each scenario by default).
    #[arg(long, requires = "scenario")]
    keep_tables: bool,
    /// Run the workload at each size on a fresh node: key-size=16,64,256 or value-size=...
    #[arg(long)]
    sweep: Option<String>,
    /// Secondary indexes on the benchmark table, made before the load and READY before the
    /// measured phase: a list of `key` (an index on k: its entries carry the key twice) and
    /// `value` (on v: values of at most 1024 bytes), one index per item, e.g. key or key,value.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["scenario", "check_log"])]
    index_on: Vec<IndexOn>,
    /// Record every acknowledged write and read everything back afterwards.
    #[arg(long)]
    verify: bool,
    /// With --verify: also save the acknowledged writes to this file, for --check-log.
    #[arg(long, requires = "verify")]
    write_log: Option<PathBuf>,
    /// Read back every write in this saved log (from --write-log) and report what is lost,
    /// stale or foreign; runs no load. The check after a crash and restart.
    #[arg(long, conflicts_with_all = ["verify", "scenario", "sweep"])]
    check_log: Option<PathBuf>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write .hgrm/.hlog files and SVG/PNG charts into this directory.
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// No per-second lines or progress bars.
    #[arg(long)]
    quiet: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ringstore-load: {e}");
            ExitCode::from(2)
        }
    }
}

/// Ok(false): the run finished but found errors (failed requests or failed verification).
fn run(args: &Args) -> Result<bool, String> {
    if args.scenario.as_deref() == Some("list") {
        print!("{}", Scenario::list());
        return Ok(true);
    }
    let plan = plan(args)?;
    if args.verify && (args.scenario.is_some() || args.sweep.is_some()) {
        return Err("--verify checks a plain run; leave out --scenario and --sweep".into());
    }
    if args.bind_clients && args.scenario.is_some() {
        return Err("--bind-clients draws from the benchmark table's keys; a scenario's rows \
                    are keyed by user and time: leave out one of the two"
            .into());
    }
    if let Some(path) = &args.check_log {
        let target = target(args)?;
        let v = runner::check_log(&target, path)?;
        print_verify(&v);
        write_outputs(args, "check-log", &[], json!({ "verify": json::verify(&v) }))?;
        return Ok(v.passed());
    }
    if let Some(list) = &args.scenario {
        return scenarios(args, &plan, &Scenario::parse_list(list)?);
    }
    if let Some(sweep) = &args.sweep {
        return sweep_run(args, &plan, sweep);
    }
    let target = target(args)?;
    let finished = runner::bench(&target, &plan, &label(args))?;
    let r = &finished.result;
    println!("{}", header(args, &plan));
    print!("{}", table::run(r));
    let mut ok = r.total_errors() == 0;
    let mut extra = json!({});
    if let Some(v) = &finished.verify {
        print_verify(v);
        ok &= v.passed();
        extra = json!({ "verify": json::verify(v) });
    }
    write_outputs(args, "run", &[r], extra)?;
    if let Some(dir) = &args.out_dir {
        chart::throughput_over_time(&[r], dir, "throughput")?;
        chart::latency_spectrum(&[r], dir, "latency")?;
        chart::shard_load(&[r], dir, "shards")?;
        chart::partition_load(r, dir, "partitions")?;
    }
    Ok(ok)
}

fn print_verify(v: &ringstore_loadgen::verify::VerifyReport) {
    let errors: Vec<String> = v.errors.iter().map(|(code, n)| format!("{code}:{n}")).collect();
    println!(
        "verify: checked {} ok {} lost {} stale {} foreign {} newer {} errors {} [{}] -> {}",
        v.checked,
        v.ok,
        v.lost,
        v.stale,
        v.foreign,
        v.newer,
        v.errored(),
        errors.join(" "),
        if v.passed() { "PASSED" } else { "FAILED" }
    );
}

fn scenarios(args: &Args, plan: &Plan, list: &[Scenario]) -> Result<bool, String> {
    // A node the tool starts is started afresh for each scenario, so that no design runs on a
    // store the previous ones have filled (its index, segments and compaction would differ).
    let shared = if args.addr.is_some() { Some(target(args)?) } else { None };
    let mut results = Vec::new();
    for &s in list {
        let fresh = if shared.is_none() { Some(target(args)?) } else { None };
        let t = shared.as_ref().or(fresh.as_ref()).ok_or("no target")?;
        results.push(runner::scenario(t, plan, s, args.keep_tables)?);
    }
    let refs: Vec<&RunResult> = results.iter().collect();
    println!("{} (scenarios: puts of order rows, mix update=100)", header(args, plan));
    print!("{}", table::scenarios(&refs));
    print_errors(&refs);
    write_outputs(args, "scenarios", &refs, json!({}))?;
    if let Some(dir) = &args.out_dir {
        chart::scenarios(&refs, dir, "scenarios")?;
        chart::shard_load(&refs, dir, "scenario-shards")?;
        chart::latency_spectrum(&refs, dir, "scenario-latency")?;
    }
    Ok(results.iter().all(|r| r.total_errors() == 0))
}

fn sweep_run(args: &Args, plan: &Plan, spec: &str) -> Result<bool, String> {
    if args.addr.is_some() {
        return Err("--sweep starts a fresh node for every point; leave out --addr".into());
    }
    let (parameter, values) = parse_sweep(spec)?;
    // Every point is checked before the first node starts, in the sweep's own terms.
    let points =
        values.iter().map(|&v| sweep_point(plan, parameter, v)).collect::<Result<Vec<_>, _>>()?;
    let mut results = Vec::new();
    for (&v, p) in values.iter().zip(&points) {
        let target = target(args)?;
        let f = runner::bench(&target, p, &format!("{parameter}={v}"))?;
        results.push((v, f.result));
    }
    let points: Vec<(u64, &RunResult)> = results.iter().map(|(v, r)| (*v, r)).collect();
    println!("{}", header(args, plan));
    print!("{}", table::sweep(parameter, &points));
    let refs: Vec<&RunResult> = results.iter().map(|(_, r)| r).collect();
    for r in &refs {
        for line in table::indexes(r).lines() {
            println!("[{}] {line}", r.label);
        }
    }
    print_errors(&refs);
    write_outputs(args, "sweep", &refs, json!({ "parameter": parameter, "values": values }))?;
    if let Some(dir) = &args.out_dir {
        chart::sweep(parameter, &points, dir, "sweep")?;
        chart::latency_spectrum(&refs, dir, "sweep-latency")?;
    }
    Ok(refs.iter().all(|r| r.total_errors() == 0))
}

/// The plan of one sweep point, or an error naming the point as the user typed it.
fn sweep_point(plan: &Plan, parameter: &str, v: u64) -> Result<Plan, String> {
    let mut p = plan.clone();
    let (lo, hi) = match parameter {
        "key-size" => (KEY_SIZE_MIN, KEY_SIZE_MAX),
        _ => (0, VALUE_BYTES_MAX),
    };
    let size = usize::try_from(v).ok().filter(|s| (lo..=hi).contains(s)).ok_or_else(|| {
        format!("--sweep {parameter}={v}: a {parameter} of {v} bytes is outside {lo}..{hi}")
    })?;
    match parameter {
        "key-size" => p.key_size = SizeSpec::fixed(size),
        _ => p.workload.value_size = SizeSpec::fixed(size),
    }
    check_indexes(&p).map_err(|e| format!("--sweep {parameter}={v}: {e}"))?;
    Ok(p)
}

/// The error breakdown of every run that had errors, each line prefixed with the run's label.
fn print_errors(runs: &[&RunResult]) {
    for r in runs {
        for line in table::errors_by_status(r).lines() {
            println!("[{}] {line}", r.label);
        }
    }
}

/// `key-size=16,64` or `value-size=100,1000`.
fn parse_sweep(s: &str) -> Result<(&'static str, Vec<u64>), String> {
    let (name, list) =
        s.split_once('=').ok_or_else(|| format!("--sweep {s:?}: expected key-size=16,64,..."))?;
    let parameter = match name {
        "key-size" => "key-size",
        "value-size" => "value-size",
        other => {
            return Err(format!(
                "--sweep: unknown parameter {other:?}; known: key-size, value-size"
            ))
        }
    };
    let values = list
        .split(',')
        .map(|v| {
            v.trim().parse::<u64>().map_err(|_| format!("--sweep: {v:?} is not a size in bytes"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((parameter, values))
}

fn target(args: &Args) -> Result<Target, String> {
    match args.addr {
        Some(addr) => Ok(Target::remote(addr, args.server_pid)),
        None => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Target::embedded(args.shards.unwrap_or(cores), &args.node_arg)
        }
    }
}

fn plan(args: &Args) -> Result<Plan, String> {
    let ycsb = args.workload.unwrap_or(Ycsb::B);
    let mix = args.mix.clone().unwrap_or_else(|| ycsb.mix());
    let duration = match (args.duration, args.ops) {
        (None, None) => Some(Duration::from_secs(10)),
        (d, _) => d,
    };
    let protocol = match args.protocol {
        ProtocolArg::Binary => Protocol::Binary,
        ProtocolArg::Resp => Protocol::Resp,
    };
    let plan = Plan {
        workload: Workload {
            protocol,
            mix,
            distribution: args.distribution.clone().unwrap_or_else(|| ycsb.distribution()),
            value_size: args.value_size,
            durability: match args.durability {
                DurabilityArg::Sync => Durability::Sync,
                DurabilityArg::WriteNoSync => Durability::WriteNoSync,
                DurabilityArg::NoSync => Durability::NoSync,
            },
            scan_length_max: args.scan_length_max.max(1),
            verify: args.verify,
            ack_log: None,
        },
        spec: RunSpec {
            threads: args.threads,
            clients: args.connections,
            pacing: match args.rate {
                Some(rate) => Pacing::Open { rate, cap: args.pipeline },
                None => Pacing::Closed { depth: args.pipeline },
            },
            warmup: args.warmup,
            duration,
            ops: args.ops,
            seed: args.seed,
            shard_aware: !args.no_shard_aware,
            bind_clients: args.bind_clients,
            items: args.keys,
            insert_limit: None,
            server_pid: None,
            align_to_wall_second: false,
        },
        key_size: args.key_size,
        load: !args.no_load,
        progress: !args.quiet,
        write_log: args.write_log.clone(),
        indexes: args.index_on.clone(),
    };
    if args.keys == 0 {
        return Err("--keys must be at least 1".into());
    }
    if args.verify && plan.workload.value_size.min < ringstore_loadgen::verify::VALUE_HEADER_BYTES {
        return Err(format!(
            "--verify needs values of at least {} bytes (they carry the write's identity)",
            ringstore_loadgen::verify::VALUE_HEADER_BYTES
        ));
    }
    check_sizes(&plan)?;
    ringstore_loadgen::engine::check_spec(&plan.spec)?;
    if protocol == Protocol::Resp {
        check_resp(args, &plan)?;
    }
    Ok(plan)
}

/// Refuses what a RESP run cannot do, naming the flag.
fn check_resp(args: &Args, p: &Plan) -> Result<(), String> {
    if args.addr.is_none() {
        return Err("--protocol resp needs --addr: the RESP port of a ringstore node \
                    (ringstore-node --resp) or a Redis server"
            .into());
    }
    let refused = [
        (args.verify, "--verify"),
        (args.check_log.is_some(), "--check-log"),
        (args.scenario.is_some(), "--scenario"),
        (args.bind_clients, "--bind-clients"),
        (args.sweep.is_some(), "--sweep"),
        (!p.indexes.is_empty(), "--index-on"),
        (p.workload.mix.weight(OpKind::Scan) > 0, "a mix with scans (YCSB E)"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, what)) => {
            Err(format!("{what} needs the binary protocol; --protocol resp sends only GET and SET"))
        }
        None => Ok(()),
    }
}

fn check_sizes(p: &Plan) -> Result<(), String> {
    p.key_size.check("--key-size", KEY_SIZE_MIN, KEY_SIZE_MAX)?;
    p.workload.value_size.check("--value-size", 0, VALUE_BYTES_MAX)?;
    check_indexes(p)
}

/// The node refuses more than [`INDEXES_PER_TABLE_MAX`] indexes on a table, and a write whose
/// indexed BINARY value is over [`INDEX_VALUE_BYTES_MAX`] (235): both are refused here, before
/// a node starts.
fn check_indexes(p: &Plan) -> Result<(), String> {
    if p.indexes.len() > INDEXES_PER_TABLE_MAX {
        return Err(format!(
            "--index-on: {} indexes; a table has at most {INDEXES_PER_TABLE_MAX}",
            p.indexes.len()
        ));
    }
    if p.indexes.contains(&IndexOn::Value) && p.workload.value_size.max > INDEX_VALUE_BYTES_MAX {
        return Err(format!(
            "--index-on value: --value-size {} is over the {INDEX_VALUE_BYTES_MAX} bytes an \
             indexed BINARY value may have",
            p.workload.value_size
        ));
    }
    Ok(())
}

fn label(args: &Args) -> String {
    match (&args.mix, args.workload) {
        (Some(m), _) => m.to_string(),
        (None, w) => format!("ycsb-{:?}", w.unwrap_or(Ycsb::B)).to_lowercase(),
    }
}

/// The settings line above each table.
fn header(args: &Args, p: &Plan) -> String {
    let mut line = format!(
        "workload={} mix={} distribution={} keys={} key_size={} value_size={} durability={} \
         connections={} pipeline={} threads={} pacing={} shard_aware={} seed={}",
        label(args),
        p.workload.mix,
        p.workload.distribution,
        p.spec.items,
        p.key_size,
        p.workload.value_size,
        match p.workload.protocol {
            Protocol::Binary => format!("{:?}", p.workload.durability),
            Protocol::Resp => "server's (resp)".to_string(),
        },
        p.spec.clients,
        args.pipeline,
        p.spec.threads,
        args.rate.map_or("closed".into(), |r| format!("open {r} ops/s")),
        p.spec.shard_aware && p.workload.protocol == Protocol::Binary,
        p.spec.seed,
    );
    if p.spec.bind_clients {
        line += " bind_clients=true";
    }
    if !p.indexes.is_empty() {
        line += &format!(" index_on={}", index_list(&p.indexes));
    }
    line
}

/// `key,value`, as `--index-on` takes it.
fn index_list(list: &[IndexOn]) -> String {
    list.iter().map(|i| i.name()).collect::<Vec<_>>().join(",")
}

fn settings(args: &Args) -> serde_json::Value {
    json!({
        "addr": args.addr.map(|a| a.to_string()),
        "embedded": args.addr.is_none(),
        "index_on": args.index_on.iter().map(|i| i.name()).collect::<Vec<_>>(),
        "command": std::env::args().collect::<Vec<_>>(),
        "debug": format!("{args:?}"),
    })
}

fn write_outputs(
    args: &Args,
    mode: &str,
    runs: &[&RunResult],
    extra: serde_json::Value,
) -> Result<(), String> {
    if let Some(path) = &args.json {
        let doc = json::document(mode, settings(args), runs, extra);
        json::write(path, &doc)?;
    }
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let now = unix_seconds();
        for r in runs {
            let stem = file_stem(&r.label);
            hdr::write_run(r, Path::new(dir), &stem, now)
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
    }
    Ok(())
}

fn file_stem(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
