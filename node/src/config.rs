//! The daemon's settings: command-line flags, an optional TOML file (`--config FILE`), defaults.
//!
//! A flag given on the command line wins over the same key in the file, and the file wins over the
//! default. Every TOML key is the flag's name with underscores (`--max-connections` is
//! `max_connections`); an unknown key is refused with its name, so a typo cannot silently leave a
//! default in place. Every default and bound is a named constant below, and every refusal says
//! which setting was wrong and what its limit is. `docs/OPERATIONS.md` lists them all; this file
//! and that table change together.

use std::ffi::OsString;
use std::fmt::Display;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Parser;
use ringstore_net::frame::{FRAME_BODY_BYTES_DEFAULT, FRAME_BODY_BYTES_MAX, HEADER_BYTES};
use ringstore_storage::constants::{
    CACHE_CAPACITY_BYTES_DEFAULT, COMMIT_DELAY_MAX_US_DEFAULT, FLUSH_INTERVAL_MS_DEFAULT,
    GARBAGE_RATIO_THRESHOLD_DEFAULT, SEGMENT_SIZE_BYTES_DEFAULT,
};
use ringstore_storage::table::{limits as table_limits, PartitionCount, TableError};
use ringstore_storage::{Durability, StoreConfig};
use serde::Deserialize;

use crate::sched_policy::SchedPolicy;

/// Fewest shards (glommio executors, one store each).
pub const SHARDS_MIN: usize = 1;
/// Most shards: the partition map stores each partition's owner as a `u16`.
pub const SHARDS_MAX: usize = table_limits::SHARDS_MAX as usize;

/// Partitions of a new data directory unless `--partitions` says otherwise. The count is fixed
/// when the directory is created; 256 leaves room to spread partitions over more shards later.
pub const NODE_PARTITIONS_DEFAULT: u32 = 256;
/// Most partitions the node accepts (the storage format allows more; the partition map and the
/// Hello response carry one entry per partition, so the node keeps it smaller).
pub const NODE_PARTITIONS_MAX: u32 = 65_536;

/// io_uring buffer memory per executor, preallocated and locked (registered with the kernel).
pub const IO_MEMORY_BYTES_DEFAULT: usize = 512 * 1024;
/// glommio refuses to start a reactor when the process may lock less than 512 KiB, so the node
/// never asks an executor for less.
pub const IO_MEMORY_BYTES_MIN: usize = 512 * 1024;
/// Most io_uring buffer memory per executor.
pub const IO_MEMORY_BYTES_MAX: usize = 1 << 30;

/// Smallest frame body limit: a frame must carry the largest row (1 MiB) with its key and fields.
pub const FRAME_BODY_BYTES_MIN: u32 = 2 * 1024 * 1024;

/// Connections the whole node accepts at once.
pub const CONNECTIONS_MAX_DEFAULT: usize = 4096;
pub const CONNECTIONS_MAX_MIN: usize = 1;
pub const CONNECTIONS_MAX_MAX: usize = 1_000_000;

/// Requests of one connection being executed at once; more wait in the socket.
pub const INFLIGHT_PER_CONNECTION_DEFAULT: usize = 256;
pub const INFLIGHT_PER_CONNECTION_MIN: usize = 1;
pub const INFLIGHT_PER_CONNECTION_MAX: usize = 65_536;

/// Requests being executed on one shard at once, its own and forwarded ones together.
pub const INFLIGHT_PER_SHARD_DEFAULT: usize = 8192;
pub const INFLIGHT_PER_SHARD_MIN: usize = 1;
pub const INFLIGHT_PER_SHARD_MAX: usize = 1 << 20;

/// Response bytes queued for one connection before the node stops reading its requests.
pub const OUTPUT_BUFFER_BYTES_DEFAULT: usize = 16 * 1024 * 1024;
/// The lower bound is not a constant: one largest frame (`max_frame_bytes` + header) must fit.
pub const OUTPUT_BUFFER_BYTES_MAX: usize = 1 << 30;

/// Response and large-request buffer bytes the whole node may hold for its clients, split evenly
/// between the shards; past a shard's share, requests that could add to it are answered BUSY.
pub const BUFFER_BYTES_DEFAULT: usize = 1 << 30;
/// The lower bound is not a constant: each shard's share must hold one connection's output
/// buffer and one largest request frame.
pub const BUFFER_BYTES_MAX: usize = 1 << 40;

/// A frame that has started arriving must be complete within this many milliseconds.
pub const READ_TIMEOUT_MS_DEFAULT: u64 = 30_000;
pub const READ_TIMEOUT_MS_MIN: u64 = 1;
pub const READ_TIMEOUT_MS_MAX: u64 = 3_600_000;

/// A connection without a request for this many milliseconds is closed; 0 means never. Five
/// minutes frees the slots of clients that vanished without a FIN (a crashed host) within
/// minutes, so abandoned sockets cannot hold all of `max_connections` for long; the client
/// library reopens a connection closed this way before its next request.
pub const IDLE_TIMEOUT_MS_DEFAULT: u64 = 300_000;
pub const IDLE_TIMEOUT_MS_MAX: u64 = 7 * 24 * 3_600_000;

/// How long a shard with a CPU to itself polls for work before it sleeps, unless
/// `--spin-before-sleep-us` says otherwise ([`spin_before_sleep_us_default`]). 20 us covers the
/// gap between a client's replies and its next requests at pipeline 1; measured on 2 CPUs, one
/// shard served 1.0537x the durable puts a second at the same CPU per put (docs/BENCHMARKS.md,
/// thirty-second session).
pub const SPIN_BEFORE_SLEEP_US_DEFAULT: u64 = 20;
/// Longest spin a shard takes: past a millisecond a spin costs more CPU than the sleep it saves.
pub const SPIN_BEFORE_SLEEP_US_MAX: u64 = 1000;

/// Capacity of each cross-shard channel (requests forwarded to the owning shard).
pub const FORWARD_QUEUE_DEFAULT: usize = 1024;
pub const FORWARD_QUEUE_MIN: usize = 1;
pub const FORWARD_QUEUE_MAX: usize = 65_536;

/// How durable a RESP write is before its reply unless `--resp-durability` says otherwise:
/// `no-sync`, in the log and written to disk within `--flush-interval-ms` (10 ms), which is at
/// least what Redis's defaults give (no AOF, or AOF with `appendfsync everysec`).
pub const RESP_DURABILITY_DEFAULT: Durability = Durability::NoSync;

/// The tracing filter unless `--log` says otherwise.
pub const LOG_DEFAULT: &str = "info";

const _: () = assert!(SHARDS_MIN >= 1 && SHARDS_MAX <= NODE_PARTITIONS_MAX as usize);
const _: () =
    assert!(NODE_PARTITIONS_DEFAULT >= 1 && NODE_PARTITIONS_DEFAULT <= NODE_PARTITIONS_MAX);
const _: () = assert!(NODE_PARTITIONS_MAX <= table_limits::MAP_PARTITIONS_MAX);
const _: () = assert!(IO_MEMORY_BYTES_MIN <= IO_MEMORY_BYTES_DEFAULT);
const _: () = assert!(IO_MEMORY_BYTES_DEFAULT <= IO_MEMORY_BYTES_MAX);
const _: () = assert!(SPIN_BEFORE_SLEEP_US_DEFAULT <= SPIN_BEFORE_SLEEP_US_MAX);
const _: () = assert!(
    (FRAME_BODY_BYTES_MIN as usize)
        > table_limits::ROW_BYTES_MAX + table_limits::ENCODED_KEY_BYTES_MAX
);
const _: () = assert!(FRAME_BODY_BYTES_MIN <= FRAME_BODY_BYTES_DEFAULT);
const _: () = assert!(CONNECTIONS_MAX_MIN <= CONNECTIONS_MAX_DEFAULT);
const _: () = assert!(CONNECTIONS_MAX_DEFAULT <= CONNECTIONS_MAX_MAX);
const _: () = assert!(INFLIGHT_PER_CONNECTION_MIN <= INFLIGHT_PER_CONNECTION_DEFAULT);
const _: () = assert!(INFLIGHT_PER_CONNECTION_DEFAULT <= INFLIGHT_PER_CONNECTION_MAX);
const _: () = assert!(INFLIGHT_PER_SHARD_MIN <= INFLIGHT_PER_SHARD_DEFAULT);
const _: () = assert!(INFLIGHT_PER_SHARD_DEFAULT <= INFLIGHT_PER_SHARD_MAX);
// A connection's in-flight requests all run on its shard, so the defaults must fit together.
const _: () = assert!(INFLIGHT_PER_CONNECTION_DEFAULT <= INFLIGHT_PER_SHARD_DEFAULT);
const _: () = assert!(INFLIGHT_PER_CONNECTION_MAX <= INFLIGHT_PER_SHARD_MAX);
// The output buffer must hold one largest response, for every allowed frame limit.
const _: () =
    assert!(OUTPUT_BUFFER_BYTES_DEFAULT >= FRAME_BODY_BYTES_DEFAULT as usize + HEADER_BYTES);
const _: () = assert!(OUTPUT_BUFFER_BYTES_MAX >= FRAME_BODY_BYTES_MAX as usize + HEADER_BYTES);
const _: () = assert!(READ_TIMEOUT_MS_MIN <= READ_TIMEOUT_MS_DEFAULT);
const _: () = assert!(READ_TIMEOUT_MS_DEFAULT <= READ_TIMEOUT_MS_MAX);
const _: () = assert!(FORWARD_QUEUE_MIN <= FORWARD_QUEUE_DEFAULT);
const _: () = assert!(FORWARD_QUEUE_DEFAULT <= FORWARD_QUEUE_MAX);

/// Why the settings were refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A bad command line, or `--help` / `--version`: clap's own message. `main` calls
    /// [`clap::Error::exit`], which prints it and exits with clap's code (0 for help and version).
    #[error(transparent)]
    Args(#[from] clap::Error),
    #[error("cannot read config file {path}: {source}")]
    ReadFile { path: PathBuf, source: std::io::Error },
    #[error("config file {path}: {source}")]
    ParseFile { path: PathBuf, source: Box<toml::de::Error> },
    #[error("{setting} is required: pass {flag} or set `{setting}` in the config file")]
    Missing { setting: &'static str, flag: &'static str },
    #[error("{setting} {value} is out of range; it must be {min}..={max}")]
    OutOfRange { setting: &'static str, value: u64, min: u64, max: u64 },
    #[error("{setting} {value} {why}")]
    Invalid { setting: &'static str, value: String, why: String },
    #[error("partitions: {source}")]
    Partitions { source: TableError },
    #[error("store settings: {source}")]
    Store { source: ringstore_storage::Error },
    #[error(
        "{shards} shards x io_memory {io_memory_bytes} bytes = {total_bytes} bytes of locked \
         memory, above this process's RLIMIT_MEMLOCK soft limit of {limit_bytes} bytes; lower \
         --shards or --io-memory, or raise the limit (production raises LimitMEMLOCK in the \
         systemd unit, packaging/ringstore-node.service)"
    )]
    LockedMemory { shards: usize, io_memory_bytes: usize, total_bytes: u64, limit_bytes: u64 },
    #[error("cannot read this process's RLIMIT_MEMLOCK: {source}")]
    MemlockQuery { source: std::io::Error },
}

/// Per-connection and per-shard limits of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame body accepted (`--max-frame-bytes`).
    pub frame_body_bytes: u32,
    /// Client connections of the whole node (`--max-connections`).
    pub connections_max: usize,
    /// Requests of one connection executing at once (`--max-inflight-per-connection`).
    pub inflight_per_connection: usize,
    /// Requests executing on one shard at once, forwarded ones included.
    pub inflight_per_shard: usize,
    /// Response bytes queued per connection before its requests stop being read.
    pub output_buffer_bytes: usize,
    /// Response and large-request buffer bytes of the whole node (`--max-buffer-bytes`); each
    /// shard gets `buffer_bytes / shards`.
    pub buffer_bytes: usize,
    /// A frame that has started arriving must be complete within this.
    pub read_timeout_ms: u64,
    /// A connection without a request for this long is closed; 0: never.
    pub idle_timeout_ms: u64,
    /// Capacity of each cross-shard channel.
    pub forward_queue: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            frame_body_bytes: FRAME_BODY_BYTES_DEFAULT,
            connections_max: CONNECTIONS_MAX_DEFAULT,
            inflight_per_connection: INFLIGHT_PER_CONNECTION_DEFAULT,
            inflight_per_shard: INFLIGHT_PER_SHARD_DEFAULT,
            output_buffer_bytes: OUTPUT_BUFFER_BYTES_DEFAULT,
            buffer_bytes: BUFFER_BYTES_DEFAULT,
            read_timeout_ms: READ_TIMEOUT_MS_DEFAULT,
            idle_timeout_ms: IDLE_TIMEOUT_MS_DEFAULT,
            forward_queue: FORWARD_QUEUE_DEFAULT,
        }
    }
}

impl Limits {
    /// Checks every limit against its bounds and the relations between them.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let frame = self.frame_body_bytes;
        in_range("max_frame_bytes", frame, FRAME_BODY_BYTES_MIN, FRAME_BODY_BYTES_MAX)?;
        in_range(
            "max_connections",
            self.connections_max,
            CONNECTIONS_MAX_MIN,
            CONNECTIONS_MAX_MAX,
        )?;
        self.validate_inflight()?;
        self.validate_output_buffer()?;
        in_range(
            "read_timeout_ms",
            self.read_timeout_ms,
            READ_TIMEOUT_MS_MIN,
            READ_TIMEOUT_MS_MAX,
        )?;
        in_range("idle_timeout_ms", self.idle_timeout_ms, 0, IDLE_TIMEOUT_MS_MAX)?;
        in_range("forward_queue", self.forward_queue, FORWARD_QUEUE_MIN, FORWARD_QUEUE_MAX)
    }

    fn validate_inflight(&self) -> Result<(), ConfigError> {
        let (connection, shard) = (self.inflight_per_connection, self.inflight_per_shard);
        in_range(
            "max_inflight_per_connection",
            connection,
            INFLIGHT_PER_CONNECTION_MIN,
            INFLIGHT_PER_CONNECTION_MAX,
        )?;
        in_range("max_inflight_per_shard", shard, INFLIGHT_PER_SHARD_MIN, INFLIGHT_PER_SHARD_MAX)?;
        if connection > shard {
            return Err(invalid(
                "max_inflight_per_connection",
                connection,
                format!(
                    "is above max_inflight_per_shard ({shard}); a connection's requests all run \
                     on its shard, so it must be at most {shard}"
                ),
            ));
        }
        Ok(())
    }

    fn validate_output_buffer(&self) -> Result<(), ConfigError> {
        let min = self.frame_body_bytes as usize + HEADER_BYTES;
        let value = self.output_buffer_bytes;
        if (min..=OUTPUT_BUFFER_BYTES_MAX).contains(&value) {
            return Ok(());
        }
        Err(invalid(
            "max_output_buffer_bytes",
            value,
            format!(
                "is out of range; it must be {min}..={OUTPUT_BUFFER_BYTES_MAX}: at least one \
                 largest frame (max_frame_bytes {} + the {HEADER_BYTES}-byte header)",
                self.frame_body_bytes
            ),
        ))
    }
}

/// The daemon's settings after merging flags, file and defaults; [`NodeConfig::from_args`]
/// returns only validated ones.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    pub data_dir: PathBuf,
    /// Port 0: the node picks free ports.
    pub listen: SocketAddr,
    pub shards: usize,
    pub partitions: u32,
    /// Where the Prometheus text endpoint listens, if anywhere.
    pub metrics: Option<SocketAddr>,
    /// Per executor.
    pub io_memory_bytes: usize,
    pub limits: Limits,
    /// One shard's store: `cache_capacity_bytes`, `segment_size_bytes`, `flush_interval_ms`,
    /// `garbage_ratio_threshold` and `accept_log_damage` come from the settings, the rest are the
    /// store's defaults.
    pub store: StoreConfig,
    /// A tracing `EnvFilter` directive.
    pub log: String,
    /// Copy shard 0's catalog file to every shard whose catalog differs before starting
    /// (`catalog_check.rs`).
    pub catalog_from_shard_0: bool,
    /// Where the RESP (Redis protocol) port listens, if anywhere (docs/RESP.md).
    pub resp: Option<SocketAddr>,
    /// How durable a RESP write is before its reply.
    pub resp_durability: Durability,
    /// Pin each shard's executor to one CPU of the process's mask (`cpus.rs`), or let the
    /// kernel place the shards' threads within the mask; None: pin only when the shards leave
    /// CPUs of the mask free ([`pin_shards_default`]).
    pub pin_shards: Option<bool>,
    /// The scheduling policy of the node's threads (`sched_policy.rs`); None: batch when there
    /// is a shard on every CPU of the mask, else inherit ([`sched_policy_default`]).
    pub sched_policy: Option<SchedPolicy>,
    /// Microseconds a shard with nothing to run polls for work before it sleeps; None: by the
    /// shard count ([`spin_before_sleep_us_default`]) when the shards are pinned, else 0. A
    /// spin needs pinned shards: glommio spins only on an executor bound to a CPU, so the
    /// daemon refuses a spin with unpinned shards.
    pub spin_before_sleep_us: Option<u64>,
}

/// Whether `shards` shards are pinned when `--pin-shards` is not given, on a process that may
/// run on `cpus` CPUs: only when CPUs are left over. A node that leaves CPUs free leaves room for
/// whatever else runs (a client, the load tool) beside its pinned shards; a node with a shard on
/// every CPU shares each with anything else, and a pinned shard cannot move off the CPU another
/// thread is using. Measured on 2 CPUs with the load tool beside the node (docs/BENCHMARKS.md,
/// twenty-first session): one shard pinned served Sync puts at pipeline 32 1.07x faster and
/// matched the kernel's placement elsewhere; two shards placed by the kernel served 1.06-1.53x
/// the requests on four of six loads, the same on one, and 0.90x on Sync puts at pipeline 32.
pub fn pin_shards_default(shards: usize, cpus: usize) -> bool {
    cpu_left_over(shards, cpus)
}

/// Whether `shards` shards on a process that may run on `cpus` CPUs leave a CPU of the mask
/// free: the rule behind the placement, scheduling-policy and spin defaults below.
fn cpu_left_over(shards: usize, cpus: usize) -> bool {
    shards < cpus
}

/// The scheduling policy when `--sched-policy` is not given, for `shards` shards on a process
/// that may run on `cpus` CPUs: `SCHED_BATCH` when there is a shard on every CPU, so that
/// anything else running shares a CPU with a shard, else the process's own policy. Measured on
/// 2 CPUs with the load tool beside the node (docs/BENCHMARKS.md, thirty-first session): under
/// `SCHED_BATCH` two shards served gets and NoSync puts at pipeline 1 for 0.8045x and 0.798x the
/// CPU; one shard, alone on its CPU, gained nothing and leaned the other way (cheaper in 21 of
/// 56 rounds).
pub fn sched_policy_default(shards: usize, cpus: usize) -> SchedPolicy {
    if cpu_left_over(shards, cpus) {
        SchedPolicy::Inherit
    } else {
        SchedPolicy::Batch
    }
}

/// How long a shard spins before it sleeps when `--spin-before-sleep-us` is not given, for
/// `shards` shards on a process that may run on `cpus` CPUs: [`SPIN_BEFORE_SLEEP_US_DEFAULT`]
/// when CPUs are left over (each shard then has a CPU of its own, pinned by default, and the
/// spin takes nothing from another thread), else 0. With a shard on every CPU the spin takes
/// the CPU from whatever shares it: on 2 CPUs with the load tool beside two shards, a 20 us spin
/// served 0.847x the gets at pipeline 1 (docs/BENCHMARKS.md, thirtieth session, lever 53).
pub fn spin_before_sleep_us_default(shards: usize, cpus: usize) -> u64 {
    if cpu_left_over(shards, cpus) {
        SPIN_BEFORE_SLEEP_US_DEFAULT
    } else {
        0
    }
}

impl NodeConfig {
    /// Parses the command line (`args` starts with the program name, like [`std::env::args_os`]),
    /// reads the `--config` file if one is named, fills in defaults and validates the result,
    /// including the locked-memory rule against this process's RLIMIT_MEMLOCK.
    pub fn from_args<I, T>(args: I) -> Result<NodeConfig, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let flags = Settings::try_parse_from(args)?;
        let file = match &flags.config {
            Some(path) => Settings::from_file(path)?,
            None => Settings::default(),
        };
        let config = flags.or(file).resolve()?;
        config.validate()?;
        config.check_locked_memory(memlock_soft_limit_bytes()?)?;
        Ok(config)
    }

    /// Checks every setting against its bounds (not the locked-memory rule, which depends on the
    /// process: [`NodeConfig::check_locked_memory`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        in_range("shards", self.shards, SHARDS_MIN, SHARDS_MAX)?;
        self.validate_partitions()?;
        in_range("io_memory", self.io_memory_bytes, IO_MEMORY_BYTES_MIN, IO_MEMORY_BYTES_MAX)?;
        if let Some(us) = self.spin_before_sleep_us {
            in_range("spin_before_sleep_us", us, 0, SPIN_BEFORE_SLEEP_US_MAX)?;
        }
        self.limits.validate()?;
        self.validate_buffer_budget()?;
        self.store.validate().map_err(|source| ConfigError::Store { source })?;
        self.validate_metrics()?;
        // An unparsable filter used to fall back to `info` without a word.
        tracing_subscriber::EnvFilter::try_new(&self.log)
            .map(drop)
            .map_err(|e| invalid("log", &self.log, format!("not a log filter: {e}")))
    }

    /// Each shard's share of `max_buffer_bytes` must hold one connection's full output buffer and
    /// one largest request frame, or a single client could be refused everything.
    fn validate_buffer_budget(&self) -> Result<(), ConfigError> {
        let l = &self.limits;
        let min =
            self.shards * (l.output_buffer_bytes + HEADER_BYTES + l.frame_body_bytes as usize);
        if (min..=BUFFER_BYTES_MAX).contains(&l.buffer_bytes) {
            return Ok(());
        }
        Err(invalid(
            "max_buffer_bytes",
            l.buffer_bytes,
            format!(
                "is out of range; it must be {min}..={BUFFER_BYTES_MAX}: each of the {} shards \
                 needs max_output_buffer_bytes ({}) plus one largest frame ({} + the \
                 {HEADER_BYTES}-byte header)",
                self.shards, l.output_buffer_bytes, l.frame_body_bytes
            ),
        ))
    }

    fn validate_partitions(&self) -> Result<(), ConfigError> {
        in_range("partitions", self.partitions, 1, NODE_PARTITIONS_MAX)?;
        if (self.partitions as usize) < self.shards {
            return Err(invalid(
                "partitions",
                self.partitions,
                format!(
                    "is below shards ({}); every shard owns at least one partition, so it must \
                     be {}..={NODE_PARTITIONS_MAX}",
                    self.shards, self.shards
                ),
            ));
        }
        PartitionCount::new(self.partitions)
            .map_err(|source| ConfigError::Partitions { source })?;
        Ok(())
    }

    /// The shards' own ports over `base` (`base` + 1 + shard), when `base` is not 0.
    fn own_ports(&self, base: u16) -> Option<std::ops::RangeInclusive<usize>> {
        let first = usize::from(base) + 1;
        (base != 0).then(|| first..=first + self.shards - 1)
    }

    /// The shard whose own port (`listen` port + 1 + shard) is `port`, when `listen` names one.
    fn shard_with_port(&self, port: u16) -> Option<usize> {
        let own = self.own_ports(self.listen.port())?;
        let port = usize::from(port);
        own.contains(&port).then(|| port - own.start())
    }

    fn validate_metrics(&self) -> Result<(), ConfigError> {
        if let Some(resp) = self.resp.filter(|r| r.port() != 0) {
            if resp == self.listen || Some(resp) == self.metrics {
                let why = "is the listen or metrics address; the RESP port needs its own port";
                return Err(invalid("resp", resp, why.to_string()));
            }
            if let Some(shard) = self.shard_with_port(resp.port()) {
                let why = format!(
                    "is shard {shard}'s own port (--listen port + 1 + {shard}, for {} shards); \
                     the RESP port needs its own port",
                    self.shards
                );
                return Err(invalid("resp", resp, why));
            }
            // The shards' own RESP ports (`--resp` port + 1 + shard) must miss the others.
            let own = self.own_ports(resp.port()).expect("the --resp port is not 0 here");
            let listen = usize::from(self.listen.port());
            let taken = std::iter::once(listen)
                .chain(self.own_ports(self.listen.port()).into_iter().flatten())
                .chain(self.metrics.map(|m| usize::from(m.port())))
                .find(|p| *p != 0 && own.contains(p));
            if let Some(port) = taken {
                let why = format!(
                    "its shards' own RESP ports ({}..={}, --resp port + 1 + shard) include port \
                     {port}, which --listen or --metrics uses; choose ports further apart",
                    own.start(),
                    own.end()
                );
                return Err(invalid("resp", resp, why));
            }
        }
        match self.metrics {
            Some(metrics) if metrics == self.listen && metrics.port() != 0 => Err(invalid(
                "metrics",
                metrics,
                "is the listen address; the metrics endpoint needs its own port".to_string(),
            )),
            _ => Ok(()),
        }
    }

    /// Locked memory the executors' io_uring buffers need: `shards * io_memory_bytes`.
    pub fn locked_memory_bytes(&self) -> u64 {
        (self.shards as u64).saturating_mul(self.io_memory_bytes as u64)
    }

    /// Refuses settings whose io_uring buffers would not fit under `limit_bytes` (the process's
    /// RLIMIT_MEMLOCK soft limit; `None` is unlimited). glommio registers each executor's buffers
    /// with the kernel, which locks them; past the limit it falls back to slow unregistered I/O
    /// or fails, so the node refuses to start instead.
    pub fn check_locked_memory(&self, limit_bytes: Option<u64>) -> Result<(), ConfigError> {
        let total_bytes = self.locked_memory_bytes();
        match limit_bytes {
            Some(limit_bytes) if total_bytes > limit_bytes => Err(ConfigError::LockedMemory {
                shards: self.shards,
                io_memory_bytes: self.io_memory_bytes,
                total_bytes,
                limit_bytes,
            }),
            _ => Ok(()),
        }
    }
}

/// This process's RLIMIT_MEMLOCK soft limit in bytes; `None` when unlimited.
pub fn memlock_soft_limit_bytes() -> Result<Option<u64>, ConfigError> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` through the pointer, which points at a live local.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) };
    if rc != 0 {
        return Err(ConfigError::MemlockQuery { source: std::io::Error::last_os_error() });
    }
    let soft: u64 = limit.rlim_cur;
    Ok((soft != libc::RLIM_INFINITY).then_some(soft))
}

/// The directory of shard `id`'s store inside the data directory (the daemon opens it,
/// `catalog_check.rs` compares the catalogs in it).
pub fn shard_dir(data_dir: &Path, id: usize) -> PathBuf {
    data_dir.join(format!("shard-{id}"))
}

/// Shards unless `--shards` says otherwise: one per CPU this process may run on.
pub fn shards_default() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(SHARDS_MIN, SHARDS_MAX)
}

fn in_range<V: Wide>(setting: &'static str, value: V, min: V, max: V) -> Result<(), ConfigError> {
    let (value, min, max) = (value.wide(), min.wide(), max.wide());
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(ConfigError::OutOfRange { setting, value, min, max })
}

/// The integer types of the settings, widened for range checks and messages.
trait Wide: Copy {
    fn wide(self) -> u64;
}

impl Wide for u32 {
    fn wide(self) -> u64 {
        u64::from(self)
    }
}

impl Wide for u64 {
    fn wide(self) -> u64 {
        self
    }
}

impl Wide for usize {
    fn wide(self) -> u64 {
        self as u64
    }
}

/// A durability by its setting name.
fn parse_durability(mode: &str) -> Result<Durability, ConfigError> {
    match mode {
        "sync" => Ok(Durability::Sync),
        "write-no-sync" => Ok(Durability::WriteNoSync),
        "no-sync" => Ok(Durability::NoSync),
        _ => Err(invalid(
            "resp_durability",
            mode,
            "is not a durability; it must be sync, write-no-sync or no-sync".to_string(),
        )),
    }
}

fn invalid(setting: &'static str, value: impl Display, why: String) -> ConfigError {
    ConfigError::Invalid { setting, value: value.to_string(), why }
}

/// A help line that ends with the default, taken from the constant so the two cannot disagree.
fn help(text: &str, default: impl Display) -> String {
    format!("{text} [default: {default}]")
}

/// Everything a flag or the file may set; `None` where neither did. The field names are both the
/// flags (`--max-connections`) and the TOML keys (`max_connections`).
#[derive(Debug, Default, Parser, Deserialize)]
#[command(name = "ringstore-node", version, about = "ringstore node daemon: one shard per core")]
#[serde(deny_unknown_fields)]
struct Settings {
    /// TOML file with settings (keys are the flag names with underscores); flags win over it.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    config: Option<PathBuf>,
    /// Data directory (required); created if missing, locked while the node runs.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Client address, IP:PORT (required); port 0 picks free ports.
    #[arg(long, value_name = "IP:PORT")]
    listen: Option<SocketAddr>,
    #[arg(
        long,
        value_name = "N",
        help = help("Shards (executors), one per core", "CPUs available")
    )]
    shards: Option<usize>,
    #[arg(
        long,
        value_name = "N",
        help = help("Partitions of a new data directory", NODE_PARTITIONS_DEFAULT)
    )]
    partitions: Option<u32>,
    /// Prometheus text endpoint, IP:PORT [default: none].
    #[arg(long, value_name = "IP:PORT")]
    metrics: Option<SocketAddr>,
    #[arg(
        long,
        value_name = "BYTES",
        help = help("io_uring buffer bytes per executor", IO_MEMORY_BYTES_DEFAULT)
    )]
    io_memory: Option<usize>,
    #[arg(long, value_name = "FILTER", help = help("tracing filter directive", LOG_DEFAULT))]
    log: Option<String>,
    #[arg(long, value_name = "BYTES", help = help("Largest frame body", FRAME_BODY_BYTES_DEFAULT))]
    max_frame_bytes: Option<u32>,
    #[arg(
        long,
        value_name = "N",
        help = help("Connections of the whole node", CONNECTIONS_MAX_DEFAULT)
    )]
    max_connections: Option<usize>,
    #[arg(
        long,
        value_name = "N",
        help = help("Requests in flight per connection", INFLIGHT_PER_CONNECTION_DEFAULT)
    )]
    max_inflight_per_connection: Option<usize>,
    #[arg(
        long,
        value_name = "N",
        help = help("Requests in flight per shard", INFLIGHT_PER_SHARD_DEFAULT)
    )]
    max_inflight_per_shard: Option<usize>,
    #[arg(
        long,
        value_name = "BYTES",
        help = help("Queued response bytes per connection", OUTPUT_BUFFER_BYTES_DEFAULT)
    )]
    max_output_buffer_bytes: Option<usize>,
    #[arg(
        long,
        value_name = "BYTES",
        help = help("Response and request buffer bytes of the node", BUFFER_BYTES_DEFAULT)
    )]
    max_buffer_bytes: Option<usize>,
    #[arg(
        long,
        value_name = "MS",
        help = help("A started frame must arrive within", READ_TIMEOUT_MS_DEFAULT)
    )]
    read_timeout_ms: Option<u64>,
    #[arg(
        long,
        value_name = "MS",
        help = help("Close connections idle this long, 0 = never", IDLE_TIMEOUT_MS_DEFAULT)
    )]
    idle_timeout_ms: Option<u64>,
    #[arg(
        long,
        value_name = "N",
        help = help("Capacity of each cross-shard channel", FORWARD_QUEUE_DEFAULT)
    )]
    forward_queue: Option<usize>,
    #[arg(
        long,
        value_name = "BYTES",
        help = help("Record cache per shard, 0 = none", CACHE_CAPACITY_BYTES_DEFAULT)
    )]
    cache_capacity_bytes: Option<u64>,
    #[arg(
        long,
        value_name = "BYTES",
        help = help("Segment file size", SEGMENT_SIZE_BYTES_DEFAULT)
    )]
    segment_size_bytes: Option<u64>,
    #[arg(
        long,
        value_name = "MS",
        help = help("NoSync writes reach the disk within", FLUSH_INTERVAL_MS_DEFAULT)
    )]
    flush_interval_ms: Option<u64>,
    #[arg(
        long,
        value_name = "US",
        help = help(
            "After a Sync flush, wait up to this long (never longer than the flush took) for more Sync writers, 0 = never (0..=1000)",
            COMMIT_DELAY_MAX_US_DEFAULT
        )
    )]
    commit_delay_us: Option<u64>,
    #[arg(
        long,
        value_name = "RATIO",
        help = help(
            "Compact once this share of the store's disk bytes is garbage, segments with the most garbage first (0.05..=0.95)",
            GARBAGE_RATIO_THRESHOLD_DEFAULT
        )
    )]
    garbage_ratio_threshold: Option<f64>,
    /// Redis-protocol (RESP2) port, IP:PORT, served by every shard [default: none].
    #[arg(long, value_name = "IP:PORT")]
    resp: Option<SocketAddr>,
    #[arg(
        long,
        value_name = "MODE",
        help = help(
            "Durability of RESP writes before their reply: sync, write-no-sync, no-sync",
            "no-sync"
        )
    )]
    resp_durability: Option<String>,
    /// Start even if a shard's log has damaged bytes that name no key, dropping them (each is
    /// logged; without this the start fails with error 616). Use once, after reading the error.
    #[arg(long)]
    #[serde(default)]
    accept_log_damage: bool,
    /// Start even if the shards' catalogs differ, by first copying shard 0's catalog (the DDL
    /// coordinator's) to every shard whose catalog differs; tables missing from it lose their
    /// rows on those shards. Without this the start fails, naming the shards.
    #[arg(long = "catalog-from-shard-0")]
    #[serde(default)]
    catalog_from_shard_0: bool,
    /// Pin each shard to its own CPU of the process's mask (true), or let the kernel place the
    /// shards' threads within it (false) [default: pin only when the shards leave CPUs free;
    /// docs/OPERATIONS.md, "CPU placement"].
    #[arg(long, value_name = "BOOL")]
    pin_shards: Option<bool>,
    /// Scheduling policy of the node's threads: batch (SCHED_BATCH: a woken shard does not
    /// preempt the thread on its CPU, so requests gather) or inherit (the process's policy)
    /// [default: batch when there is a shard on every CPU, else inherit; docs/OPERATIONS.md,
    /// "Scheduling policy"].
    #[arg(long, value_name = "POLICY")]
    sched_policy: Option<String>,
    /// Microseconds a shard with nothing to run polls for work before it sleeps, 0 = sleep at
    /// once (0..=1000); needs pinned shards [default: 20 when the shards leave CPUs free and
    /// are pinned, else 0; docs/OPERATIONS.md, "Spinning before a sleep"].
    #[arg(long, value_name = "US")]
    spin_before_sleep_us: Option<u64>,
}

impl Settings {
    fn from_file(path: &Path) -> Result<Settings, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::ReadFile { path: path.to_owned(), source })?;
        toml::from_str(&text).map_err(|source| ConfigError::ParseFile {
            path: path.to_owned(),
            source: Box::new(source),
        })
    }

    /// Each setting from `self` where set, else from `file`.
    fn or(self, file: Settings) -> Settings {
        Settings {
            config: self.config,
            data_dir: self.data_dir.or(file.data_dir),
            listen: self.listen.or(file.listen),
            shards: self.shards.or(file.shards),
            partitions: self.partitions.or(file.partitions),
            metrics: self.metrics.or(file.metrics),
            io_memory: self.io_memory.or(file.io_memory),
            log: self.log.or(file.log),
            max_frame_bytes: self.max_frame_bytes.or(file.max_frame_bytes),
            max_connections: self.max_connections.or(file.max_connections),
            max_inflight_per_connection: self
                .max_inflight_per_connection
                .or(file.max_inflight_per_connection),
            max_inflight_per_shard: self.max_inflight_per_shard.or(file.max_inflight_per_shard),
            max_output_buffer_bytes: self.max_output_buffer_bytes.or(file.max_output_buffer_bytes),
            max_buffer_bytes: self.max_buffer_bytes.or(file.max_buffer_bytes),
            read_timeout_ms: self.read_timeout_ms.or(file.read_timeout_ms),
            idle_timeout_ms: self.idle_timeout_ms.or(file.idle_timeout_ms),
            forward_queue: self.forward_queue.or(file.forward_queue),
            cache_capacity_bytes: self.cache_capacity_bytes.or(file.cache_capacity_bytes),
            segment_size_bytes: self.segment_size_bytes.or(file.segment_size_bytes),
            flush_interval_ms: self.flush_interval_ms.or(file.flush_interval_ms),
            commit_delay_us: self.commit_delay_us.or(file.commit_delay_us),
            garbage_ratio_threshold: self.garbage_ratio_threshold.or(file.garbage_ratio_threshold),
            accept_log_damage: self.accept_log_damage || file.accept_log_damage,
            catalog_from_shard_0: self.catalog_from_shard_0 || file.catalog_from_shard_0,
            pin_shards: self.pin_shards.or(file.pin_shards),
            sched_policy: self.sched_policy.or(file.sched_policy),
            spin_before_sleep_us: self.spin_before_sleep_us.or(file.spin_before_sleep_us),
            resp: self.resp.or(file.resp),
            resp_durability: self.resp_durability.or(file.resp_durability),
        }
    }

    /// Fills in defaults; refuses a missing required setting. Bounds are checked afterwards.
    fn resolve(self) -> Result<NodeConfig, ConfigError> {
        let limits = self.limits();
        let store = self.store();
        Ok(NodeConfig {
            data_dir: self
                .data_dir
                .ok_or(ConfigError::Missing { setting: "data_dir", flag: "--data-dir" })?,
            listen: self
                .listen
                .ok_or(ConfigError::Missing { setting: "listen", flag: "--listen" })?,
            shards: self.shards.unwrap_or_else(shards_default),
            partitions: self.partitions.unwrap_or(NODE_PARTITIONS_DEFAULT),
            metrics: self.metrics,
            io_memory_bytes: self.io_memory.unwrap_or(IO_MEMORY_BYTES_DEFAULT),
            limits,
            store,
            log: self.log.unwrap_or_else(|| LOG_DEFAULT.to_string()),
            catalog_from_shard_0: self.catalog_from_shard_0,
            resp: self.resp,
            resp_durability: match self.resp_durability.as_deref() {
                None => RESP_DURABILITY_DEFAULT,
                Some(mode) => parse_durability(mode)?,
            },
            pin_shards: self.pin_shards,
            sched_policy: match self.sched_policy.as_deref() {
                None => None,
                Some(name) => Some(SchedPolicy::parse(name).ok_or_else(|| {
                    invalid(
                        "sched_policy",
                        name,
                        "is not a scheduling policy; it must be batch or inherit".to_string(),
                    )
                })?),
            },
            spin_before_sleep_us: self.spin_before_sleep_us,
        })
    }

    fn limits(&self) -> Limits {
        let d = Limits::default();
        Limits {
            frame_body_bytes: self.max_frame_bytes.unwrap_or(d.frame_body_bytes),
            connections_max: self.max_connections.unwrap_or(d.connections_max),
            inflight_per_connection: self
                .max_inflight_per_connection
                .unwrap_or(d.inflight_per_connection),
            inflight_per_shard: self.max_inflight_per_shard.unwrap_or(d.inflight_per_shard),
            output_buffer_bytes: self.max_output_buffer_bytes.unwrap_or(d.output_buffer_bytes),
            buffer_bytes: self.max_buffer_bytes.unwrap_or(d.buffer_bytes),
            read_timeout_ms: self.read_timeout_ms.unwrap_or(d.read_timeout_ms),
            idle_timeout_ms: self.idle_timeout_ms.unwrap_or(d.idle_timeout_ms),
            forward_queue: self.forward_queue.unwrap_or(d.forward_queue),
        }
    }

    fn store(&self) -> StoreConfig {
        let d = StoreConfig::default();
        StoreConfig {
            cache_capacity_bytes: self.cache_capacity_bytes.unwrap_or(d.cache_capacity_bytes),
            segment_size_bytes: self.segment_size_bytes.unwrap_or(d.segment_size_bytes),
            flush_interval_ms: self.flush_interval_ms.unwrap_or(d.flush_interval_ms),
            commit_delay_max_us: self.commit_delay_us.unwrap_or(d.commit_delay_max_us),
            garbage_ratio_threshold: self
                .garbage_ratio_threshold
                .unwrap_or(d.garbage_ratio_threshold),
            accept_log_damage: self.accept_log_damage,
            ..d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    const REQUIRED: [&str; 4] = ["--data-dir", "/tmp/ringstore-test", "--listen", "127.0.0.1:7379"];

    fn parse(extra: &[&str]) -> Result<NodeConfig, ConfigError> {
        let args = ["ringstore-node"].iter().chain(REQUIRED.iter()).chain(extra.iter());
        NodeConfig::from_args(args.copied())
    }

    fn refusal(extra: &[&str]) -> String {
        match parse(extra) {
            Ok(config) => panic!("{extra:?} accepted: {config:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// A config file with `text` in its own fresh directory under the system temp directory.
    fn config_file(text: &str) -> PathBuf {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ringstore-config-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        let path = dir.join("node.toml");
        std::fs::write(&path, text).expect("write config file");
        path
    }

    fn from_file(text: &str, extra: &[&str]) -> Result<NodeConfig, ConfigError> {
        let path = config_file(text);
        let path_arg = path.to_str().expect("utf-8 temp path").to_string();
        let mut args = vec!["ringstore-node", "--config", &path_arg];
        args.extend_from_slice(extra);
        let result = NodeConfig::from_args(args);
        if let Some(dir) = path.parent() {
            std::fs::remove_dir_all(dir).expect("remove temp dir");
        }
        result
    }

    #[test]
    fn a_buffer_budget_below_one_connection_per_shard_is_refused() {
        // Two shards, each needing 16 MiB of output buffer and one 4 MiB frame.
        let message = refusal(&["--shards", "2", "--max-buffer-bytes", "41943040"]);
        assert!(message.contains("max_buffer_bytes") && message.contains("2 shards"), "{message}");
        let config = parse(&["--shards", "2", "--max-buffer-bytes", "41943104"]).expect("fits");
        assert_eq!(config.limits.buffer_bytes, 41_943_104);
    }

    #[test]
    fn a_log_filter_that_does_not_parse_is_refused() {
        let message = refusal(&["--log", "info,ringstore=loud"]);
        assert!(message.contains("log") && message.contains("not a log filter"), "{message}");
        assert_eq!(
            parse(&["--log", "warn,ringstore_node=debug"]).expect("valid").log,
            "warn,ringstore_node=debug"
        );
    }

    #[test]
    fn a_scheduling_policy_that_is_not_batch_or_inherit_is_refused_naming_both() {
        let message = refusal(&["--sched-policy", "fifo"]);
        assert!(
            message.contains("sched_policy") && message.contains("fifo"),
            "names the setting and the value: {message}"
        );
        assert!(message.contains("batch or inherit"), "names the choices: {message}");
    }

    #[test]
    fn flags_only_with_defaults() {
        let config = parse(&["--shards", "2"]).expect("valid flags");
        assert_eq!(config.data_dir, PathBuf::from("/tmp/ringstore-test"));
        assert_eq!(config.listen, "127.0.0.1:7379".parse().expect("address"));
        assert_eq!(config.shards, 2);
        assert_eq!(config.partitions, NODE_PARTITIONS_DEFAULT);
        assert_eq!(config.metrics, None);
        assert_eq!(config.io_memory_bytes, IO_MEMORY_BYTES_DEFAULT);
        assert_eq!(config.limits, Limits::default());
        assert_eq!(config.store, StoreConfig::default());
        assert_eq!(config.log, LOG_DEFAULT);
        assert_eq!((config.resp, config.resp_durability), (None, RESP_DURABILITY_DEFAULT));
    }

    #[test]
    fn every_flag_is_read() {
        let config = parse(&[
            "--shards=2",
            "--partitions=64",
            "--metrics=127.0.0.1:9379",
            "--io-memory=1048576",
            "--log=debug",
            "--max-frame-bytes=8388608",
            "--max-connections=10",
            "--max-inflight-per-connection=5",
            "--max-inflight-per-shard=50",
            "--max-output-buffer-bytes=33554432",
            "--max-buffer-bytes=268435456",
            "--read-timeout-ms=100",
            "--idle-timeout-ms=200",
            "--forward-queue=7",
            "--cache-capacity-bytes=0",
            "--segment-size-bytes=8388608",
            "--flush-interval-ms=3",
            "--commit-delay-us=40",
            "--garbage-ratio-threshold=0.5",
            "--accept-log-damage",
            "--resp=127.0.0.1:6379",
            "--resp-durability=sync",
            "--pin-shards=false",
            "--sched-policy=inherit",
            "--spin-before-sleep-us=0",
        ])
        .expect("valid flags");
        assert_eq!(config.pin_shards, Some(false));
        assert_eq!(config.spin_before_sleep_us, Some(0));
        assert_eq!(config.sched_policy, Some(SchedPolicy::Inherit));
        assert_eq!(config.resp, Some("127.0.0.1:6379".parse().expect("address")));
        assert_eq!(config.resp_durability, Durability::Sync);
        assert_eq!((config.shards, config.partitions), (2, 64));
        assert_eq!(config.metrics, Some("127.0.0.1:9379".parse().expect("address")));
        assert_eq!((config.io_memory_bytes, config.log.as_str()), (1 << 20, "debug"));
        let limits = Limits {
            frame_body_bytes: 8 << 20,
            connections_max: 10,
            inflight_per_connection: 5,
            inflight_per_shard: 50,
            output_buffer_bytes: 32 << 20,
            buffer_bytes: 256 << 20,
            read_timeout_ms: 100,
            idle_timeout_ms: 200,
            forward_queue: 7,
        };
        assert_eq!(config.limits, limits);
        let store = &config.store;
        assert_eq!((store.cache_capacity_bytes, store.segment_size_bytes), (0, 8 << 20));
        assert_eq!(store.flush_interval_ms, 3);
        assert_eq!(store.commit_delay_max_us, 40);
        assert_eq!(store.garbage_ratio_threshold, 0.5);
        assert!(store.accept_log_damage);
        let defaults = parse(&[]).expect("no flags");
        assert!(!defaults.store.accept_log_damage, "off by default");
        assert_eq!(defaults.pin_shards, None, "placement follows the shard count by default");
        assert_eq!(defaults.sched_policy, None, "the policy follows the shard count by default");
        assert_eq!(sched_policy_default(1, 2), SchedPolicy::Inherit, "a CPU left over");
        assert_eq!(sched_policy_default(2, 2), SchedPolicy::Batch, "a shard on every CPU");
        assert_eq!(sched_policy_default(3, 2), SchedPolicy::Batch);
        assert!(pin_shards_default(1, 2) && !pin_shards_default(2, 2) && !pin_shards_default(3, 2));
        assert_eq!(defaults.spin_before_sleep_us, None, "the spin follows the shard count");
        assert_eq!(spin_before_sleep_us_default(1, 2), SPIN_BEFORE_SLEEP_US_DEFAULT, "a CPU free");
        assert_eq!(spin_before_sleep_us_default(2, 2), 0, "a shard on every CPU");
        assert_eq!(spin_before_sleep_us_default(3, 2), 0);
    }

    #[test]
    fn file_only() {
        let text = "data_dir = \"/srv/rs\"\nlisten = \"0.0.0.0:7000\"\nshards = 2\n\
                    max_connections = 100\ncache_capacity_bytes = 1024\n\
                    metrics = \"127.0.0.1:0\"\naccept_log_damage = true\n\
                    resp = \"127.0.0.1:0\"\nresp_durability = \"write-no-sync\"\n\
                    pin_shards = true\nsched_policy = \"inherit\"\n\
                    spin_before_sleep_us = 50\n";
        let config = from_file(text, &[]).expect("valid file");
        assert!(config.store.accept_log_damage);
        assert_eq!(config.pin_shards, Some(true));
        assert_eq!(config.spin_before_sleep_us, Some(50));
        assert_eq!(config.sched_policy, Some(SchedPolicy::Inherit));
        assert_eq!(config.resp, Some("127.0.0.1:0".parse().expect("address")));
        assert_eq!(config.resp_durability, Durability::WriteNoSync);
        assert_eq!(config.data_dir, PathBuf::from("/srv/rs"));
        assert_eq!(config.listen, "0.0.0.0:7000".parse().expect("address"));
        assert_eq!(config.shards, 2);
        assert_eq!(config.limits.connections_max, 100);
        assert_eq!(config.store.cache_capacity_bytes, 1024);
        assert_eq!(config.metrics, Some("127.0.0.1:0".parse().expect("address")));
    }

    #[test]
    fn flag_overrides_file() {
        let text = "data_dir = \"/srv/rs\"\nlisten = \"0.0.0.0:7000\"\nshards = 2\n\
                    max_connections = 100\n";
        let config = from_file(text, &["--max-connections", "7", "--data-dir", "/other"])
            .expect("valid file and flags");
        assert_eq!(config.limits.connections_max, 7);
        assert_eq!(config.data_dir, PathBuf::from("/other"));
        assert_eq!(config.shards, 2);
    }

    #[test]
    fn unknown_key_is_refused_with_its_name() {
        let text = "data_dir = \"/srv/rs\"\nlisten = \"0.0.0.0:7000\"\nmax_conections = 5\n";
        let err = from_file(text, &[]).expect_err("typo accepted");
        assert!(matches!(err, ConfigError::ParseFile { .. }), "{err:?}");
        assert!(err.to_string().contains("max_conections"), "{err}");
    }

    #[test]
    fn config_key_is_not_a_file_setting() {
        let text = "data_dir = \"/srv/rs\"\nlisten = \"0.0.0.0:7000\"\nconfig = \"x.toml\"\n";
        let err = from_file(text, &[]).expect_err("config key accepted");
        assert!(err.to_string().contains("config"), "{err}");
    }

    #[test]
    fn missing_file_is_refused_with_its_path() {
        let err = NodeConfig::from_args(["ringstore-node", "--config", "/nonexistent/rs.toml"])
            .expect_err("missing file accepted");
        assert!(err.to_string().contains("/nonexistent/rs.toml"), "{err}");
    }

    #[test]
    fn missing_data_dir_and_listen_are_refused() {
        let err = NodeConfig::from_args(["ringstore-node", "--listen", "127.0.0.1:1"])
            .expect_err("no data dir accepted");
        assert!(err.to_string().contains("--data-dir"), "{err}");
        let err = NodeConfig::from_args(["ringstore-node", "--data-dir", "/tmp/x"])
            .expect_err("no listen accepted");
        assert!(err.to_string().contains("--listen"), "{err}");
    }

    #[test]
    fn help_and_bad_flags_are_clap_errors() {
        let help = NodeConfig::from_args(["ringstore-node", "--help"]).expect_err("help");
        match help {
            ConfigError::Args(e) => {
                assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
                let text = e.to_string();
                assert!(text.contains("--max-connections"), "{text}");
                assert!(text.contains(&format!("[default: {CONNECTIONS_MAX_DEFAULT}]")), "{text}");
            }
            other => panic!("not a clap error: {other:?}"),
        }
        let bad = parse(&["--shards", "many"]).expect_err("bad number accepted");
        assert!(matches!(bad, ConfigError::Args(_)), "{bad:?}");
    }

    #[test]
    fn each_bound_is_refused_naming_the_limit() {
        let cases: &[(&[&str], String)] = &[
            (&["--shards=0"], format!("1..={SHARDS_MAX}")),
            (&["--shards=1025"], format!("1..={SHARDS_MAX}")),
            (&["--shards=4", "--partitions=3"], format!("4..={NODE_PARTITIONS_MAX}")),
            (&["--shards=1", "--partitions=65537"], format!("1..={NODE_PARTITIONS_MAX}")),
            (&["--io-memory=4096"], format!("{IO_MEMORY_BYTES_MIN}..={IO_MEMORY_BYTES_MAX}")),
            (
                &["--spin-before-sleep-us=1001"],
                format!("spin_before_sleep_us 1001 is out of range; it must be 0..={SPIN_BEFORE_SLEEP_US_MAX}"),
            ),
            (
                &["--max-frame-bytes=1000"],
                format!("{FRAME_BODY_BYTES_MIN}..={FRAME_BODY_BYTES_MAX}"),
            ),
            (&["--max-frame-bytes=67108865"], format!("..={FRAME_BODY_BYTES_MAX}")),
            (&["--max-connections=0"], format!("1..={CONNECTIONS_MAX_MAX}")),
            (&["--max-inflight-per-connection=0"], format!("1..={INFLIGHT_PER_CONNECTION_MAX}")),
            (&["--max-inflight-per-shard=0"], format!("1..={INFLIGHT_PER_SHARD_MAX}")),
            (
                &["--max-inflight-per-connection=10", "--max-inflight-per-shard=5"],
                "at most 5".to_string(),
            ),
            (
                &["--max-output-buffer-bytes=1000"],
                format!(
                    "{}..={OUTPUT_BUFFER_BYTES_MAX}",
                    FRAME_BODY_BYTES_DEFAULT as usize + HEADER_BYTES
                ),
            ),
            (&["--read-timeout-ms=0"], format!("1..={READ_TIMEOUT_MS_MAX}")),
            (&["--idle-timeout-ms=999999999999"], format!("0..={IDLE_TIMEOUT_MS_MAX}")),
            (&["--forward-queue=0"], format!("1..={FORWARD_QUEUE_MAX}")),
            (&["--segment-size-bytes=4097"], "segment_size_bytes 4097 must be".to_string()),
            (&["--flush-interval-ms=0"], "1..=60000".to_string()),
            (&["--commit-delay-us=1001"], "commit_delay_max_us 1001 must be 0..=1000".to_string()),
            (
                &["--garbage-ratio-threshold=0.99"],
                "garbage_ratio_threshold 0.99 must be 0.05..=0.95".to_string(),
            ),
            (&["--metrics=127.0.0.1:7379"], "is the listen address".to_string()),
            (&["--resp=127.0.0.1:7379"], "the RESP port needs its own port".to_string()),
            (
                &["--shards=2", "--resp=127.0.0.1:7381"],
                "is shard 1's own port (--listen port + 1 + 1, for 2 shards)".to_string(),
            ),
            (
                &["--shards=2", "--resp=127.0.0.1:7377"],
                "own RESP ports (7378..=7379, --resp port + 1 + shard) include port 7379"
                    .to_string(),
            ),
            (
                &["--resp=127.0.0.1:7500", "--metrics=127.0.0.1:7501"],
                "include port 7501, which --listen or --metrics uses".to_string(),
            ),
            (&["--resp-durability=fsync"], "sync, write-no-sync or no-sync".to_string()),
        ];
        for (flags, limit) in cases {
            let message = refusal(flags);
            assert!(message.contains(limit.as_str()), "{flags:?}: {message:?} lacks {limit:?}");
        }
    }

    #[test]
    fn locked_memory_rule() {
        let config = parse(&["--shards=4", "--io-memory=2097152"]).expect("valid flags");
        assert_eq!(config.locked_memory_bytes(), 8 << 20);
        assert!(config.check_locked_memory(None).is_ok());
        assert!(config.check_locked_memory(Some(8 << 20)).is_ok());
        let err = config.check_locked_memory(Some(4 << 20)).expect_err("over the limit");
        let message = err.to_string();
        for part in ["4 shards", "2097152", "8388608", "4194304", "LimitMEMLOCK"] {
            assert!(message.contains(part), "{message:?} lacks {part:?}");
        }
    }

    #[test]
    fn memlock_limit_is_readable() {
        // The value depends on the machine; the call itself must work.
        memlock_soft_limit_bytes().expect("getrlimit");
    }
}
