//! The controller of a run: starts the worker threads together (`worker.rs`), sets the run's
//! clock once they are connected, collects one interval report per worker per second for the
//! progress line, and merges the workers' results.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use crossbeam::channel;
use ringstore_net::Topology;

use super::recorder::{add_counts, merge_results, IntervalPart};
use super::worker::{Worker, WorkerOutput};
use super::{check_spec, RunSpec, Shared, Times, Workload};
use crate::cpu;
use crate::keyspace::KeySpace;
use crate::results::{latency_histogram, Interval, RunResult, INTERVAL_MS};
use crate::verify::WriteLog;

/// A finished run: the results and, in verify mode, the acknowledged writes.
#[derive(Debug)]
pub struct Outcome {
    pub result: RunResult,
    pub writes: WriteLog,
    /// The node's CPU seconds over the measured phase, if its pid was given.
    pub server_cpu_seconds: Option<f64>,
}

/// Runs one workload against the node at `addr` (whose topology is `topology`); `progress`
/// sees each completed interval.
pub fn run(
    addr: SocketAddr,
    topology: &Topology,
    keyspace: Arc<KeySpace>,
    workload: Workload,
    spec: RunSpec,
    progress: &mut dyn FnMut(&Interval),
) -> Result<Outcome, String> {
    check_spec(&spec)?;
    let shard_addrs = topology
        .shard_ports
        .iter()
        .map(|&p| if p == 0 { addr } else { SocketAddr::new(addr.ip(), p) })
        .collect();
    let shared = Arc::new(Shared {
        keyspace,
        workload,
        shared_addr: addr,
        shard_addrs,
        inserts: AtomicU64::new(spec.items),
        acked: super::acked::AckedCounter::new(spec.items),
        insert_limit: spec.insert_limit,
        ops_limit: spec.ops,
        issued: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        times: OnceLock::new(),
        spec: spec.clone(),
    });
    let threads = spec.threads.min(spec.clients).max(1);
    let ready = Arc::new(Barrier::new(threads + 1));
    let go = Arc::new(Barrier::new(threads + 1));
    let (tx, rx) = channel::unbounded();
    let handles = spawn_workers(&shared, threads, &ready, &go, &tx)?;
    drop(tx);
    ready.wait();
    let times = start_clock(&spec);
    shared.times.set(times).expect("set once");
    go.wait();
    let cpu = spec.server_pid.map(|pid| read_at(times.measure_from, move || read_node_cpu(pid)));
    let own = std::process::id();
    let own_cpu = read_at(times.measure_from, move || read_cpu(own));
    let interval_count =
        spec.duration.map(|d| d.as_millis().div_ceil(u128::from(INTERVAL_MS)) as usize);
    let intervals = collect_intervals(&rx, threads, topology.shards(), interval_count, progress);
    let mut result = RunResult {
        label: String::new(),
        seconds: 0.0,
        ops: Vec::new(),
        intervals,
        shard_ops: vec![0; topology.shards()],
        partition_ops: vec![0; topology.partition_owners.len()],
        server_cpu_seconds: None,
        client_cpu_seconds: None,
        shard_cpu_seconds: None,
        node: None,
        error_messages: Default::default(),
    };
    let (writes, last_done) = join_workers(handles, &mut result, times.measure_from)?;
    set_seconds(&mut result, &times, last_done);
    let mut server_cpu_seconds = None;
    if let (Some(meter), Some(pid)) = (cpu, spec.server_pid) {
        let (process, shards) = node_cpu_since(meter, pid, topology.shards())?;
        server_cpu_seconds = Some(process);
        result.shard_cpu_seconds = Some(shards);
    }
    result.client_cpu_seconds = Some(cpu_seconds_since(own_cpu, std::process::id())?);
    Ok(Outcome { result, writes, server_cpu_seconds })
}

/// One worker's result, from its thread.
type WorkerHandle = std::thread::JoinHandle<Result<WorkerOutput, String>>;

/// Starts `threads` worker threads (`load-N`), client `c` on thread `c % threads`. Each connects
/// its clients, then waits at both barriers; a worker that fails still passes them, and its
/// failure ends the run for every worker.
fn spawn_workers(
    shared: &Arc<Shared>,
    threads: usize,
    ready: &Arc<Barrier>,
    go: &Arc<Barrier>,
    tx: &channel::Sender<IntervalPart>,
) -> Result<Vec<WorkerHandle>, String> {
    let clients = shared.spec.clients as u64;
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let ids: Vec<u64> = (0..clients).filter(|c| *c as usize % threads == t).collect();
        let (shared, ready, go, tx) = (shared.clone(), ready.clone(), go.clone(), tx.clone());
        let body = move || {
            let connected = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Worker::connect(shared.clone(), &ids)
            }))
            .unwrap_or_else(|_| Err("a load thread panicked while connecting".into()));
            let result = match connected {
                Ok(w) => w.run(&ready, &go, &tx),
                Err(e) => {
                    // Pass both barriers so the controller and the other workers go on.
                    ready.wait();
                    go.wait();
                    Err(e)
                }
            };
            if result.is_err() {
                // One worker's failure ends the run for all of them.
                shared.abort.store(true, Ordering::Relaxed);
            }
            result
        };
        let handle = std::thread::Builder::new().name(format!("load-{t}")).spawn(body);
        handles.push(handle.map_err(|e| format!("spawn a load thread: {e}"))?);
    }
    Ok(handles)
}

/// The run's clock, read once every worker is connected: the warm-up ends at `measure_from`
/// (on a whole wall-clock second if asked), a timed run at `until`.
fn start_clock(spec: &RunSpec) -> Times {
    let start = Instant::now();
    let align =
        if spec.align_to_wall_second { to_next_wall_second(spec.warmup) } else { Duration::ZERO };
    let measure_from = start + spec.warmup + align;
    let until = spec.duration.map(|d| measure_from + d);
    Times { start, measure_from, until }
}

/// Waits for every worker and merges what they measured into `result`. Returns the
/// acknowledged writes and when the last operation finished; the first worker error, if any.
fn join_workers(
    handles: Vec<WorkerHandle>,
    result: &mut RunResult,
    measure_from: Instant,
) -> Result<(WriteLog, Instant), String> {
    let mut writes = WriteLog::default();
    let mut last_done = measure_from;
    let mut first_error = None;
    for h in handles {
        match h.join().map_err(|_| "a load thread panicked".to_string())? {
            Ok(out) => {
                merge_results(&mut result.ops, out.ops);
                add_counts(&mut result.shard_ops, &out.shard_ops);
                add_counts(&mut result.partition_ops, &out.partition_ops);
                last_done = last_done.max(out.last_done.unwrap_or(measure_from));
                writes.merge(out.writes);
                for (code, message) in out.error_messages {
                    result.error_messages.entry(code).or_insert(message);
                }
            }
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok((writes, last_done)),
    }
}

/// The measured phase's length: up to `until` for a timed run, to the last completion for a
/// run of a number of operations. A last interval cut short by the end is shortened to match.
fn set_seconds(result: &mut RunResult, times: &Times, last_done: Instant) {
    let end = times.until.unwrap_or(last_done);
    result.seconds = (end - times.measure_from).as_secs_f64();
    if let Some(last) = result.intervals.last_mut() {
        let rest = result.seconds - last.start_s;
        if rest > 0.0 && rest < last.length_s {
            last.length_s = rest;
        }
    }
}

/// CPU seconds process `pid` used since `meter` read them.
fn cpu_seconds_since(
    meter: std::thread::JoinHandle<Result<Duration, String>>,
    pid: u32,
) -> Result<f64, String> {
    let before = meter.join().map_err(|_| "the CPU meter panicked")??;
    Ok((read_cpu(pid)? - before).as_secs_f64())
}

/// The node's CPU time at one moment: the whole process, and each of its threads.
#[derive(Debug)]
struct NodeCpu {
    process: Duration,
    threads: Vec<cpu::ThreadCpu>,
}

fn read_node_cpu(pid: u32) -> Result<NodeCpu, String> {
    let threads = cpu::threads_cpu(pid).map_err(|e| format!("node thread CPU times: {e}"))?;
    Ok(NodeCpu { process: read_cpu(pid)?, threads })
}

/// The node's CPU seconds since `meter` read them, and each of its `shards` shards' seconds.
fn node_cpu_since(
    meter: std::thread::JoinHandle<Result<NodeCpu, String>>,
    pid: u32,
    shards: usize,
) -> Result<(f64, Vec<f64>), String> {
    let before = meter.join().map_err(|_| "the CPU meter panicked")??;
    let after = read_node_cpu(pid)?;
    let process = (after.process.saturating_sub(before.process)).as_secs_f64();
    Ok((process, cpu::shard_cpu_seconds(&before.threads, &after.threads, shards)))
}

/// The time from `Instant::now() + after` to the next whole second of the wall clock.
fn to_next_wall_second(after: Duration) -> Duration {
    let now = std::time::SystemTime::now() + after;
    let into = now.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    Duration::from_nanos(u64::from(1_000_000_000 - into) % 1_000_000_000)
}

/// Runs `read` (a CPU time reading) when the measured phase starts, at `from`; the end is read
/// when the workers are done (so the last replies of a timed run add a little to it).
fn read_at<T: Send + 'static>(
    from: Instant,
    read: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> std::thread::JoinHandle<Result<T, String>> {
    std::thread::spawn(move || {
        // Waiting out the warm-up is the point here, not a synchronisation.
        std::thread::sleep(from.saturating_duration_since(Instant::now()));
        read()
    })
}

fn read_cpu(pid: u32) -> Result<Duration, String> {
    crate::cpu::process_cpu(pid).map_err(|e| format!("node CPU time: {e}"))
}

/// Merges the workers' interval reports in order, calling `progress` for each complete one.
fn collect_intervals(
    rx: &channel::Receiver<IntervalPart>,
    workers: usize,
    shards: usize,
    limit: Option<usize>,
    progress: &mut dyn FnMut(&Interval),
) -> Vec<Interval> {
    // Replies drained after the end of a timed run are not part of it.
    let limit = limit.unwrap_or(usize::MAX);
    let mut pending: Vec<(Interval, usize)> = Vec::new();
    let mut done = Vec::new();
    let length_s = INTERVAL_MS as f64 / 1000.0;
    for part in rx.iter() {
        let i = part.index as usize;
        if i >= limit {
            continue;
        }
        while pending.len() <= i {
            let start_s = pending.len() as f64 * length_s;
            pending.push((empty_interval(start_s, length_s, shards), 0));
        }
        let (iv, seen) = &mut pending[i];
        iv.ops += part.ops;
        iv.errors += part.errors;
        add_counts(&mut iv.shard_ops, &part.shard_ops);
        for (into, from) in iv.latency_us.iter_mut().zip(part.latency_us) {
            if let Some(h) = from {
                into.add(&h).expect("same bounds");
            }
        }
        *seen += 1;
        while done.len() < pending.len() && pending[done.len()].1 == workers {
            let iv = pending[done.len()].0.clone();
            progress(&iv);
            done.push(iv);
        }
    }
    // Workers stop at different moments: keep the partial last intervals with data.
    for (iv, _) in pending.into_iter().skip(done.len()) {
        if iv.ops > 0 {
            done.push(iv);
        }
    }
    done
}

fn empty_interval(start_s: f64, length_s: f64, shards: usize) -> Interval {
    Interval {
        start_s,
        length_s,
        ops: 0,
        errors: 0,
        latency_us: (0..5).map(|_| latency_histogram()).collect(),
        shard_ops: vec![0; shards],
    }
}
