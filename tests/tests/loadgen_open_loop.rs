//! Coordinated omission, against a really stalled node: `ringstore-load` in open loop
//! (`--rate`) keeps its timetable while the node is stopped, and its corrected latencies (from
//! the time each request was due) show the stall, while the uncorrected ones (from the time it
//! was sent) hide it.
//!
//! How: the harness starts a node; the tool runs YCSB C against it at 2000 requests/s over 4
//! clients with one request in flight each, for 3 s without warm-up. When the tool prints its
//! first per-second progress line (so the measured phase is running), the test stops the node
//! with SIGSTOP, lets 600 ms pass, and resumes it with SIGCONT. The assertions are lower bounds
//! that follow from the stall alone, whatever the speed of the machine:
//!
//! - 2000/s x 0.6 s = 1200 of the run's ~6000 requests were due while the node was stopped, and
//!   none of them could be answered before it resumed: one due `t` after the stop waited at
//!   least `600 ms - t`. The 600 due in the stall's first 300 ms (10% of the run) waited at
//!   least 300 ms, so the corrected p99 is at least 300 ms; the one due right after the stop
//!   waited about 600 ms, so the corrected max is at least 500 ms.
//! - Each client had one request in flight, so only about 4 requests were *sent* into the stall;
//!   the ~1200 others were sent in a burst after it, each answered within the node's normal
//!   service time. The uncorrected p90 is therefore a normal service time (under a
//!   millisecond here), far below the corrected p90, which is at least about 300 ms (10% of
//!   the run waited that long) plus the time the burst took to drain.

mod loadgen_common;

use std::time::Duration;

use loadgen_common::*;
use ringstore_tests::Node;

/// How long the node is kept stopped.
const STALL: Duration = Duration::from_millis(600);

#[test]
fn a_stalled_node_shows_in_corrected_latencies_only() {
    let _turn = one_at_a_time();
    let (data_tmp, data) = data_dir();
    let node = Node::start(&data, &[]);
    let json = data_tmp.path().join("open-loop.json");
    let (addr, pid) = (node.addr().to_string(), node.pid().to_string());
    // No --quiet: the per-second progress lines on stderr say when the measured phase runs.
    let mut args = vec!["--addr", &addr, "--server-pid", &pid, "--json", arg(&json)];
    args.extend(["--rate", "2000", "--connections", "4", "--pipeline", "1", "--threads", "1"]);
    args.extend(["--duration", "3s", "--warmup", "0s", "--workload", "c", "--keys", "2000"]);
    args.extend(["--durability", "no-sync"]);
    let mut load = Load::spawn(&args);
    // `[ycsb-c]    1s   1999 ops/s ...`: the first second of the measured phase is over.
    let first = load.wait_for_stderr(|l| l.starts_with("[ycsb-c]"));
    println!("stopping the node after: {first}");
    signal(&node, libc::SIGSTOP);
    // This sleep is the stall under test (the node is stopped for its length), not a wait for
    // anything to happen.
    std::thread::sleep(STALL);
    signal(&node, libc::SIGCONT);
    let run = load.finish();
    println!("{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.status, Some(0), "{run:#?}");

    let doc = read_json(&json);
    let r = &runs(&doc)[0];
    assert_eq!(u64_at(r, "/errors"), 0);
    let read = op(r, "read");
    assert!(read["uncorrected_latency_us"].is_object(), "open loop reports both: {read:#}");
    let corrected = |q: &str| u64_at(read, &format!("/latency_us/{q}"));
    let uncorrected = |q: &str| u64_at(read, &format!("/uncorrected_latency_us/{q}"));
    println!(
        "corrected p90 {} p99 {} max {} us; uncorrected p90 {} p99 {} max {} us; count {}",
        corrected("p90"),
        corrected("p99"),
        corrected("max"),
        uncorrected("p90"),
        uncorrected("p99"),
        uncorrected("max"),
        corrected("count"),
    );
    assert!(corrected("p99") >= 300_000, "corrected p99 {} us", corrected("p99"));
    assert!(corrected("max") >= 500_000, "corrected max {} us", corrected("max"));
    assert!(
        corrected("p90") > uncorrected("p90"),
        "the uncorrected p90 ({} us) should hide the stall the corrected p90 ({} us) shows",
        uncorrected("p90"),
        corrected("p90"),
    );
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Sends `sig` to the harness's node.
fn signal(node: &Node, sig: libc::c_int) {
    let pid = node.pid() as libc::pid_t;
    // SAFETY: kill(2) on the harness's own child, which it holds unreaped while `node` lives.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}
