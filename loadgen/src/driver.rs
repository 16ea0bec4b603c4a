//! The closed-loop driver: `connections` threads, each with one connection keeping `pipeline`
//! requests in flight (send a batch, receive it, repeat, like `redis-benchmark -P`). A request's
//! latency is from the moment its batch was sent to the moment its reply arrived.

use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use ringstore_net::request::{Request, WriteBody, WriteOptions};
use ringstore_net::{Client, Connection, FieldsBuf, ValueRef};
use ringstore_storage::table::VersionSelect;
use ringstore_storage::Durability;

use crate::keys::{key, keys_by_shard, CREATE_TABLE, TABLE};

/// Requests in flight per connection during the load phase.
pub const LOAD_PIPELINE: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Get,
    Put,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub op: Op,
    pub connections: usize,
    pub pipeline: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub keys: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub durability: Durability,
    pub shard_aware: bool,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub ops: u64,
    pub errors: u64,
    pub seconds: f64,
    pub latency_us: Histogram<u64>,
    /// The server's CPU seconds over the measured interval, if its pid is known.
    pub server_cpu_seconds: Option<f64>,
}

impl Report {
    pub fn ops_per_second(&self) -> f64 {
        self.ops as f64 / self.seconds
    }

    pub fn server_cpu_seconds_per_million_ops(&self) -> Option<f64> {
        self.server_cpu_seconds.map(|s| s / (self.ops as f64 / 1e6))
    }
}

/// Fills keys 0..keys (each shard's keys on that shard's port), NoSync, pipelined.
pub fn load(addr: SocketAddr, o: &Options) -> Result<(), String> {
    let mut client = Client::connect(addr).map_err(|e| e.to_string())?;
    client.ddl(CREATE_TABLE).map_err(|e| e.to_string())?;
    let schema = client.describe(TABLE).map_err(|e| e.to_string())?;
    let by_shard = keys_by_shard(schema.schema(), client.topology(), o.keys, o.key_size);
    let value = vec![0xAB; o.value_size];
    for (shard, keys) in by_shard.iter().enumerate() {
        let conn = client.connection(Some(shard)).map_err(|e| e.to_string())?;
        for chunk in keys.chunks(LOAD_PIPELINE) {
            for &i in chunk {
                send(conn, Op::Put, &key(i, o.key_size), &value, Durability::NoSync)?;
            }
            for _ in chunk {
                let reply = conn.recv().map_err(|e| e.to_string())?;
                if reply.status != 0 {
                    return Err(format!(
                        "load put failed: {}",
                        String::from_utf8_lossy(&reply.body)
                    ));
                }
            }
        }
    }
    Ok(())
}

fn send(
    conn: &mut Connection,
    op: Op,
    k: &str,
    value: &[u8],
    d: Durability,
) -> Result<u64, String> {
    let fields;
    let req = match op {
        Op::Get => {
            fields = FieldsBuf::of([("k", ValueRef::String(k))]);
            Request::Get { table: TABLE, key: fields.list(), versions: VersionSelect::Newest }
        }
        Op::Put => {
            fields = FieldsBuf::of([("k", ValueRef::String(k)), ("v", ValueRef::Binary(value))]);
            Request::Write {
                table: TABLE,
                body: WriteBody::Put { row: fields.list() },
                options: WriteOptions::default(),
            }
        }
    };
    conn.send_request(&req, d).map_err(|e| e.to_string())
}

/// Runs the measured phase (after `load` for gets).
pub fn run(addr: SocketAddr, o: &Options, server_pid: Option<u32>) -> Result<Report, String> {
    let mut client = Client::connect(addr).map_err(|e| e.to_string())?;
    client.ddl(CREATE_TABLE).map_err(|e| e.to_string())?;
    let schema = client.describe(TABLE).map_err(|e| e.to_string())?;
    let topology = client.topology().clone();
    let by_shard = Arc::new(keys_by_shard(schema.schema(), &topology, o.keys, o.key_size));
    let start = Arc::new(Barrier::new(o.connections + 1));
    let measure = Arc::new(Barrier::new(o.connections + 1));
    let mut threads = Vec::with_capacity(o.connections);
    for c in 0..o.connections {
        let shard = c % topology.shards();
        let target = if o.shard_aware && topology.shard_ports[shard] != 0 {
            SocketAddr::new(addr.ip(), topology.shard_ports[shard])
        } else {
            addr
        };
        let keys: Vec<u64> =
            if o.shard_aware { by_shard[shard].clone() } else { (0..o.keys).collect() };
        let (o, start, measure) = (o.clone(), start.clone(), measure.clone());
        threads.push(std::thread::spawn(move || {
            worker(c as u64, target, &keys, &o, &start, &measure)
        }));
    }
    start.wait();
    std::thread::sleep(o.warmup); // the warm-up interval itself, not a synchronisation
    let cpu_before =
        server_pid.map(crate::cpu::process_cpu).transpose().map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    measure.wait();
    let mut total = Report {
        ops: 0,
        errors: 0,
        seconds: 0.0,
        latency_us: new_histogram(),
        server_cpu_seconds: None,
    };
    for t in threads {
        let (ops, errors, h) = t.join().map_err(|_| "worker panicked")??;
        total.ops += ops;
        total.errors += errors;
        total.latency_us.add(&h).map_err(|e| e.to_string())?;
    }
    total.seconds = t0.elapsed().as_secs_f64();
    if let (Some(pid), Some(before)) = (server_pid, cpu_before) {
        let after = crate::cpu::process_cpu(pid).map_err(|e| e.to_string())?;
        total.server_cpu_seconds = Some((after - before).as_secs_f64());
    }
    Ok(total)
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("static bounds")
}

type WorkerResult = Result<(u64, u64, Histogram<u64>), String>;

fn worker(
    seed: u64,
    target: SocketAddr,
    keys: &[u64],
    o: &Options,
    start: &Barrier,
    measure: &Barrier,
) -> WorkerResult {
    let mut conn =
        Connection::connect(target, Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    let value = vec![0xCD; o.value_size];
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next_key = || {
        // xorshift64*: uniform enough for picking keys, and allocation-free.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        keys[(rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % keys.len() as u64) as usize]
    };
    let mut h = new_histogram();
    let (mut ops, mut errors) = (0u64, 0u64);
    start.wait();
    let mut measuring = false;
    let warm_until = Instant::now() + o.warmup;
    let mut end = None;
    loop {
        let now = Instant::now();
        if !measuring && now >= warm_until {
            measure.wait();
            measuring = true;
            end = Some(Instant::now() + o.duration);
        }
        if end.is_some_and(|e| now >= e) {
            return Ok((ops, errors, h));
        }
        let sent = Instant::now();
        for _ in 0..o.pipeline {
            send(&mut conn, o.op, &key(next_key(), o.key_size), &value, o.durability)?;
        }
        for _ in 0..o.pipeline {
            let reply = conn.recv().map_err(|e| e.to_string())?;
            if measuring {
                ops += 1;
                if reply.status != 0 {
                    errors += 1;
                }
                let us = sent.elapsed().as_micros() as u64;
                h.record(us.max(1)).map_err(|e| e.to_string())?;
            }
        }
    }
}
