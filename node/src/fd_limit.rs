//! File descriptors: the node checks at start that it may open enough of them for its connection
//! cap, raising its soft RLIMIT_NOFILE up to the hard limit when needed, and refuses to start,
//! naming the numbers, when even the hard limit is too low.
//!
//! Past the limit `accept` fails with EMFILE: connections then sit in the kernel's backlog with
//! neither a reply nor the 721 (too many connections) refusal, which needs an accepted socket to
//! be sent on. Keeping `max_connections` under the limit means the cap, not the kernel, refuses.

/// Descriptors a node needs beyond its connections, per shard: the io_uring rings and their
/// eventfds, the epoll instance of its read readiness (`readiness.rs`), the listeners, the mesh
/// channels' eventfds, the store's open segment files (each with a second O_DSYNC descriptor
/// while active), the checkpoint and catalog files, and the `accept` of one connection more
/// than the cap so that it can be refused with 721.
pub const FDS_PER_SHARD: u64 = 128;
/// Descriptors the process needs beyond its shards: stdio, the data-directory lock, the signal
/// thread, the metrics endpoint and its connections.
pub const FDS_BASE: u64 = 64;

/// What the start-up check found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimit {
    pub needed: u64,
    /// The soft limit before the check, and after it.
    pub soft_before: u64,
    pub soft: u64,
    pub hard: u64,
}

/// Descriptors a node with `shards` shards and `connections_max` connections needs.
pub fn needed(shards: usize, connections_max: usize) -> u64 {
    connections_max as u64 + FDS_PER_SHARD * shards as u64 + FDS_BASE
}

/// Makes RLIMIT_NOFILE's soft limit at least `needed`, up to the hard limit; Err says what is
/// missing and how to fix it.
pub fn ensure(shards: usize, connections_max: usize) -> Result<FdLimit, String> {
    let needed = needed(shards, connections_max);
    let (soft_before, hard) = get()?;
    let mut limit = FdLimit { needed, soft_before, soft: soft_before, hard };
    if soft_before >= needed {
        return Ok(limit);
    }
    if hard < needed {
        return Err(format!(
            "max_connections {connections_max} with {shards} shards needs about {needed} file \
             descriptors ({connections_max} + {FDS_PER_SHARD} per shard + {FDS_BASE}), but \
             RLIMIT_NOFILE allows {hard} (hard limit): raise it (LimitNOFILE= in the systemd \
             unit, ulimit -n) or lower --max-connections"
        ));
    }
    set(needed, hard)?;
    limit.soft = needed;
    Ok(limit)
}

fn get() -> Result<(u64, u64), String> {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` through the pointer, which points at a live local.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return Err(format!("cannot read RLIMIT_NOFILE: {}", std::io::Error::last_os_error()));
    }
    Ok((l.rlim_cur, l.rlim_max))
}

fn set(soft: u64, hard: u64) -> Result<(), String> {
    let l = libc::rlimit { rlim_cur: soft, rlim_max: hard };
    // SAFETY: setrlimit reads one `rlimit` through the pointer, which points at a live local.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) } != 0 {
        return Err(format!(
            "cannot raise RLIMIT_NOFILE to {soft}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
