//! `ringstore-load`: drive a node and measure it. See loadgen/src/lib.rs.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use ringstore_loadgen::driver::{self, Op, Options};
use ringstore_loadgen::embedded::EmbeddedNode;
use ringstore_storage::Durability;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OpArg {
    Get,
    Put,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DurabilityArg {
    Sync,
    WriteNoSync,
    NoSync,
}

/// Closed-loop load against a ringstore node.
#[derive(Debug, Parser)]
#[command(name = "ringstore-load", version)]
struct Args {
    /// The node's shared address; without it a node is started on a temp directory.
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// With --addr: the node's pid, to report its CPU time per operation.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Shards of the node started without --addr (default: the number of cores).
    #[arg(long)]
    shards: Option<usize>,
    #[arg(long, value_enum, default_value = "get")]
    op: OpArg,
    #[arg(long, default_value_t = 50)]
    connections: usize,
    /// Requests in flight per connection.
    #[arg(long, default_value_t = 1)]
    pipeline: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Seconds of warm-up before measuring (not counted).
    #[arg(long, default_value_t = 2)]
    warmup: u64,
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    #[arg(long, value_enum, default_value = "sync")]
    durability: DurabilityArg,
    /// Send everything through the shared port instead of each shard's own port.
    #[arg(long)]
    no_shard_aware: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringstore-load: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let shards =
        args.shards.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let embedded = match args.addr {
        Some(_) => None,
        None => Some(EmbeddedNode::start(shards, &[])?),
    };
    let addr = args.addr.or(embedded.as_ref().map(|n| n.addr)).ok_or("no address")?;
    let pid = args.server_pid.or(embedded.as_ref().map(EmbeddedNode::pid));
    let options = Options {
        op: match args.op {
            OpArg::Get => Op::Get,
            OpArg::Put => Op::Put,
        },
        connections: args.connections,
        pipeline: args.pipeline.max(1),
        warmup: Duration::from_secs(args.warmup),
        duration: Duration::from_secs(args.seconds),
        keys: args.keys,
        key_size: args.key_size,
        value_size: args.value_size,
        durability: match args.durability {
            DurabilityArg::Sync => Durability::Sync,
            DurabilityArg::WriteNoSync => Durability::WriteNoSync,
            DurabilityArg::NoSync => Durability::NoSync,
        },
        shard_aware: !args.no_shard_aware,
    };
    if options.op == Op::Get {
        driver::load(addr, &options)?;
    }
    let r = driver::run(addr, &options, pid)?;
    let h = &r.latency_us;
    println!(
        "op={:?} connections={} pipeline={} durability={:?} shard_aware={} key_size={} value_size={} keys={}",
        options.op,
        options.connections,
        options.pipeline,
        options.durability,
        options.shard_aware,
        options.key_size,
        options.value_size,
        options.keys
    );
    println!(
        "ops={} errors={} seconds={:.2} ops_per_sec={:.0} p50_us={} p99_us={} p999_us={} max_us={} server_cpu_s_per_mop={}",
        r.ops,
        r.errors,
        r.seconds,
        r.ops_per_second(),
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max(),
        r.server_cpu_seconds_per_million_ops().map_or("-".into(), |v| format!("{v:.3}")),
    );
    if r.errors > 0 {
        return Err(format!("{} requests failed", r.errors));
    }
    Ok(())
}
