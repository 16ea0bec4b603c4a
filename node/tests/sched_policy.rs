//! The node's threads run under the scheduling policy `--sched-policy` names
//! (node/src/sched_policy.rs): SCHED_BATCH by default, the process's own policy with `inherit`.
//! The policy is set before any thread starts, so every thread has it: each shard's executor
//! (the thread it is for) and glommio's blocking-pool thread of the same name, started before
//! the shard's own code runs.

mod node_process;

/// The scheduling policy of each of the node's threads whose name starts with `prefix`.
fn policies(node: &node_process::Node, prefix: &str) -> Vec<libc::c_int> {
    node.threads(prefix)
        .iter()
        .map(|t| {
            let tid: libc::pid_t = t
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse().ok())
                .expect("a thread id");
            // SAFETY: sched_getscheduler only reads the policy of the thread `tid` names.
            let policy = unsafe { libc::sched_getscheduler(tid) };
            assert!(policy >= 0, "sched_getscheduler({tid}): {}", std::io::Error::last_os_error());
            policy
        })
        .collect()
}

#[test]
fn every_thread_of_the_node_runs_under_sched_batch_by_default() {
    let node = node_process::Node::start(&["--shards", "2"], |_| {});
    let shards = policies(&node, "shard-");
    assert!(shards.len() >= 2, "the shards' threads: {shards:?}");
    let all = policies(&node, "");
    assert!(all.len() > shards.len(), "the main thread besides the shards': {all:?}");
    assert!(all.iter().all(|&p| p == libc::SCHED_BATCH), "{all:?}");
}

#[test]
fn with_inherit_every_thread_keeps_the_policy_the_process_started_with() {
    // SAFETY: pid 0 names this thread; sched_getscheduler only reads.
    let own = unsafe { libc::sched_getscheduler(0) };
    assert_ne!(own, libc::SCHED_BATCH, "the test would not tell the policies apart");
    let node = node_process::Node::start(&["--shards", "2", "--sched-policy", "inherit"], |_| {});
    let shards = policies(&node, "shard-");
    assert!(shards.len() >= 2, "the shards' threads: {shards:?}");
    let all = policies(&node, "");
    assert!(all.iter().all(|&p| p == own), "{all:?}, the process's {own}");
}
