//! The node's threads run under the scheduling policy `--sched-policy` names
//! (node/src/sched_policy.rs): SCHED_BATCH with `batch`, the process's own policy with `inherit`,
//! and without the flag SCHED_BATCH only when there is a shard on every CPU of the process's mask.
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

/// The policy of this test's own thread, which the node inherits; SCHED_OTHER as tests run.
fn own_policy() -> libc::c_int {
    // SAFETY: pid 0 names this thread; sched_getscheduler only reads.
    let own = unsafe { libc::sched_getscheduler(0) };
    assert_ne!(own, libc::SCHED_BATCH, "the test would not tell the policies apart");
    own
}

/// Every thread of a node started with `args` runs under `policy`; the shards' threads exist.
fn assert_every_thread_under(args: &[&str], policy: libc::c_int) {
    let node = node_process::Node::start(args, |_| {});
    let shards = policies(&node, "shard-");
    assert!(!shards.is_empty(), "the shards' threads, {args:?}");
    let all = policies(&node, "");
    assert!(all.len() > shards.len(), "the main thread besides the shards': {all:?}");
    assert!(all.iter().all(|&p| p == policy), "{all:?} with {args:?}, expected {policy}");
}

#[test]
fn with_batch_every_thread_of_the_node_runs_under_sched_batch() {
    own_policy();
    assert_every_thread_under(&["--shards", "2", "--sched-policy", "batch"], libc::SCHED_BATCH);
}

#[test]
fn with_inherit_every_thread_keeps_the_policy_the_process_started_with() {
    let own = own_policy();
    assert_every_thread_under(&["--shards", "2", "--sched-policy", "inherit"], own);
}

#[test]
fn by_default_the_node_runs_under_sched_batch_only_with_a_shard_on_every_cpu() {
    let own = own_policy();
    // The CPUs of this process's mask, which the node (its child) inherits and counts alike.
    let cpus = ringstore_node::cpus::allowed().len();
    let every_cpu = cpus.to_string();
    assert_every_thread_under(&["--shards", &every_cpu], libc::SCHED_BATCH);
    if cpus > 1 {
        assert_every_thread_under(&["--shards", "1"], own);
    }
}
