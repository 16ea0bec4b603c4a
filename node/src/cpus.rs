//! Which CPU each shard is pinned to (when it is: `--pin-shards`): the CPUs this process may run
//! on (its affinity mask, set by `taskset`, `numactl`, a cgroup cpuset or systemd's
//! `CPUAffinity=`), in order, one shard per CPU and round robin past the last. Pinning shard N
//! to CPU N would put shards on CPUs the operator excluded.

/// The CPUs in the calling thread's affinity mask, ascending. Read on the main thread before any
/// shard pins itself, it is the process's mask. Falls back to `0..available_parallelism` if the
/// mask cannot be read.
pub fn allowed() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array, for which all-zero bytes are a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let read =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    let cpus: Vec<usize> = if read == 0 {
        // SAFETY: `set` was filled by sched_getaffinity and `cpu` is below CPU_SETSIZE.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    } else {
        Vec::new()
    };
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    }
    cpus
}

/// The CPU shard `id` runs on, given the allowed CPUs (never empty).
pub fn for_shard(allowed: &[usize], id: usize) -> usize {
    allowed[id % allowed.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_take_the_allowed_cpus_in_order_then_wrap() {
        let allowed = [2, 3, 7];
        let got: Vec<usize> = (0..5).map(|id| for_shard(&allowed, id)).collect();
        assert_eq!(got, [2, 3, 7, 2, 3]);
    }

    #[test]
    fn the_allowed_set_is_the_threads_mask() {
        let cpus = allowed();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{cpus:?}");
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(cpus.len() >= n, "{cpus:?} against available_parallelism {n}");
    }
}
