//! Shards are pinned inside the process's CPU mask (issue 12, "shard pinning ignores the process
//! CPU mask"): a node started with only its last allowed CPU in its mask (as `taskset -c` does)
//! runs shard 0 there. Before the fix shard N was pinned to CPU N whatever the mask.

use std::os::unix::process::CommandExt;

mod node_process;

/// The CPUs this test may run on, from its own status file.
fn allowed_cpus(status: &str) -> Vec<usize> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list in status");
    let mut cpus = Vec::new();
    for part in line.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().expect("cpu"), b.parse().expect("cpu"));
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().expect("cpu")),
        }
    }
    cpus
}

#[test]
fn shard_zero_runs_on_the_first_cpu_of_the_process_mask() {
    let own = std::fs::read_to_string("/proc/self/status").expect("own status");
    let cpus = allowed_cpus(&own);
    let cpu = *cpus.last().expect("at least one cpu");
    assert!(cpu > 0 || cpus.len() == 1, "{cpus:?}");
    // SAFETY: cpu_set_t is a plain bit array, for which all-zero bytes are a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (it came from the kernel's list of CPUs).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let node = node_process::Node::start(&["--shards", "1"], |command| {
        // SAFETY: between fork and exec the closure only calls sched_setaffinity, which is
        // async-signal-safe, on a set built before the fork.
        unsafe {
            command.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    let statuses: Vec<String> = node
        .threads("shard-0")
        .iter()
        .map(|t| std::fs::read_to_string(t.join("status")).expect("thread status"))
        .collect();
    assert!(!statuses.is_empty(), "no thread named shard-0*");
    for status in statuses {
        assert_eq!(allowed_cpus(&status), [cpu], "shard-0 with the process mask {{{cpu}}}");
    }
}
