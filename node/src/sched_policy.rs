//! The Linux scheduling policy of the node's threads (`--sched-policy`, docs/OPERATIONS.md,
//! "Scheduling policy"). `daemon::run` sets it on its own thread before it starts any other,
//! so every thread inherits it: the shards' executors, glommio's blocking-pool threads,
//! io_uring's workers.
//!
//! Under `batch` the node runs as `SCHED_BATCH`: the same fair scheduler and the same nice value
//! as `SCHED_OTHER`, but a shard woken by a socket's bytes does not preempt the thread running on
//! its CPU; it runs when that thread blocks or its slice ends. A shard serves every request
//! waiting when it runs, so the requests that gather meanwhile are served in one loop turn, and
//! the context switch pair each wake-up cost is saved. That matters only where a shard shares its
//! CPU with another busy thread (a client on the same machine, or more shards than CPUs): on this
//! 2-CPU machine, two shards and one load-generator thread, it cut context switches per get at
//! pipeline 1 from 0.309-0.335 to 0.019-0.025 and node CPU per get to 0.8045x
//! (docs/BENCHMARKS.md, thirty-first session). The price is in the tail on a shared CPU: a woken
//! shard may wait out the other thread's slice (get p1's slowest request in a 3 s run took
//! 10.327-16.895 ms against 5.199-8.967 ms, while the median fell). A shard alone on its CPU
//! gains nothing (one shard leaned the other way), so without `--sched-policy` the node uses
//! `batch` only when there is a shard on every CPU (`config::sched_policy_default`). `inherit`
//! leaves the node the policy the process started with (e.g. systemd's
//! `CPUSchedulingPolicy=`, or `chrt`).

/// Which policy the node's threads run under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedPolicy {
    /// `SCHED_BATCH`, nice value unchanged.
    Batch,
    /// The thread keeps the policy and priority it inherited from the process.
    Inherit,
}

impl SchedPolicy {
    /// The setting's spelling (`batch`, `inherit`), or None for anything else.
    pub fn parse(name: &str) -> Option<SchedPolicy> {
        match name {
            "batch" => Some(SchedPolicy::Batch),
            "inherit" => Some(SchedPolicy::Inherit),
            _ => None,
        }
    }

    /// Puts the calling thread under this policy; threads it starts afterwards inherit it.
    /// `SCHED_BATCH` from `SCHED_OTHER` or a real-time policy needs no privilege, so it fails
    /// only where a sandbox forbids `sched_setscheduler` (or from `SCHED_IDLE` without
    /// `RLIMIT_NICE`); the error names the setting that avoids the call.
    pub fn apply_to_this_thread(self) -> Result<(), String> {
        let policy = match self {
            SchedPolicy::Inherit => return Ok(()),
            SchedPolicy::Batch => libc::SCHED_BATCH,
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 names the calling thread, and `param` is a valid sched_param that
        // outlives the call.
        if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!(
                "cannot put the node's threads under SCHED_BATCH (--sched-policy batch, the \
                 default with a shard on every CPU): {e}; --sched-policy inherit leaves the \
                 process's policy as it is"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_policy_parses_from_its_own_name_and_nothing_else_parses() {
        for (name, policy) in [("batch", SchedPolicy::Batch), ("inherit", SchedPolicy::Inherit)] {
            assert_eq!(SchedPolicy::parse(name), Some(policy));
        }
        for other in ["", "BATCH", "normal", "fifo", "idle"] {
            assert_eq!(SchedPolicy::parse(other), None, "{other:?}");
        }
    }

    #[test]
    fn batch_puts_the_calling_thread_under_sched_batch_and_inherit_changes_nothing() {
        let policies = std::thread::spawn(|| {
            // SAFETY: pid 0 names the calling thread; sched_getscheduler reads only.
            let before = unsafe { libc::sched_getscheduler(0) };
            SchedPolicy::Inherit.apply_to_this_thread().expect("inherit");
            // SAFETY: as above.
            let inherited = unsafe { libc::sched_getscheduler(0) };
            SchedPolicy::Batch.apply_to_this_thread().expect("batch");
            // SAFETY: as above.
            let batch = unsafe { libc::sched_getscheduler(0) };
            (before, inherited, batch)
        })
        .join()
        .expect("thread");
        assert_eq!(policies.1, policies.0, "inherit keeps the thread's policy");
        assert_eq!(policies.2, libc::SCHED_BATCH);
    }
}
