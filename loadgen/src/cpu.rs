//! The CPU time a process has used (user + system), from `/proc/PID/stat`: how the load tool
//! reports the server's CPU seconds per million operations, which is the cost figure that means
//! something on a machine where the load generator and the node share 2 cores; and each shard
//! thread's CPU time (`/proc/PID/task/TID/stat`), whose busiest shard says at what throughput
//! the node would saturate.

use std::time::Duration;

/// User plus system CPU time of process `pid` so far.
pub fn process_cpu(pid: u32) -> std::io::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&stat, clock_ticks_per_second()).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("cannot parse /proc/{pid}/stat"),
        )
    })
}

/// One thread's CPU time so far.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadCpu {
    pub tid: u32,
    /// Its name (`comm`, at most 15 bytes): the node's shard threads are `shard-N-M`.
    pub name: String,
    pub cpu: Duration,
}

/// The CPU time of every thread of process `pid`, from `/proc/PID/task/TID/stat`. A thread that
/// ends while the list is read is left out.
pub fn threads_cpu(pid: u32) -> std::io::Result<Vec<ThreadCpu>> {
    let ticks = clock_ticks_per_second();
    let mut threads = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Some(tid) = entry?.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")) else {
            continue;
        };
        if let (Some(name), Some(cpu)) = (stat_name(&stat), parse_stat(&stat, ticks)) {
            threads.push(ThreadCpu { tid, name: name.to_string(), cpu });
        }
    }
    Ok(threads)
}

/// The shard a node thread belongs to: glommio names a shard's executor thread `shard-N-M`
/// (the node names the executor `shard-N`, glommio appends its own id), and gives its helper
/// thread for blocking calls the same name.
pub fn shard_of_thread(name: &str) -> Option<usize> {
    let rest = name.strip_prefix("shard-")?;
    rest.split('-').next()?.parse().ok()
}

/// CPU seconds of each of `shards` shards between two readings of the node's threads: per
/// shard, its busiest thread (the executor; a shard is one thread, so this is what saturates).
/// A thread absent from `before` counts from zero.
pub fn shard_cpu_seconds(before: &[ThreadCpu], after: &[ThreadCpu], shards: usize) -> Vec<f64> {
    let mut per_shard = vec![0.0f64; shards];
    for t in after {
        let Some(shard) = shard_of_thread(&t.name).filter(|&s| s < shards) else {
            continue;
        };
        let start = before.iter().find(|b| b.tid == t.tid).map_or(Duration::ZERO, |b| b.cpu);
        let used = t.cpu.saturating_sub(start).as_secs_f64();
        per_shard[shard] = per_shard[shard].max(used);
    }
    per_shard
}

/// The command name of a stat line: between the first `(` and the last `)`.
fn stat_name(stat: &str) -> Option<&str> {
    stat.get(stat.find('(')? + 1..stat.rfind(')')?)
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

/// utime and stime are fields 14 and 15; the command name (field 2) is in parentheses and may
/// contain spaces, so fields are counted after its closing parenthesis.
fn parse_stat(stat: &str, ticks_per_second: u64) -> Option<Duration> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state), so field n is at index n - 3.
    let utime: u64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.get(15 - 3)?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_nanos(ticks * 1_000_000_000 / ticks_per_second))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_utime_and_stime_after_a_name_with_spaces() {
        let stat = "1234 (shard 0 (x)) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 3 0 100 0 0";
        assert_eq!(parse_stat(stat, 100), Some(Duration::from_secs(3)));
    }

    #[test]
    fn reads_this_process() {
        assert!(process_cpu(std::process::id()).is_ok());
    }

    #[test]
    fn reads_this_process_threads_by_name() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        // The new thread sets its own OS name before it runs the closure, so /proc shows the
        // name only once the closure has started: wait for that, or the read can race it.
        let named = std::thread::Builder::new()
            .name("shard-7-3".into())
            .spawn(move || {
                started_tx.send(()).expect("started");
                rx.recv()
            })
            .expect("spawn");
        started.recv().expect("the thread started");
        let threads = threads_cpu(std::process::id()).expect("task list");
        assert!(threads.iter().any(|t| t.name == "shard-7-3"), "{threads:?}");
        assert!(threads.iter().any(|t| t.tid == std::process::id()), "{threads:?}");
        tx.send(()).expect("send");
        named.join().expect("join").expect("recv");
    }

    #[test]
    fn shard_threads_are_told_apart_by_name() {
        assert_eq!(shard_of_thread("shard-0-1"), Some(0));
        assert_eq!(shard_of_thread("shard-12-14"), Some(12));
        assert_eq!(shard_of_thread("shard-3"), Some(3));
        assert_eq!(shard_of_thread("signals"), None);
        assert_eq!(shard_of_thread("iou-wrk-1234"), None);
        assert_eq!(stat_name("7 (shard-0-1) S 1"), Some("shard-0-1"));
    }

    #[test]
    fn a_shard_is_its_busiest_thread_over_the_interval() {
        let t = |tid, name: &str, ms| ThreadCpu {
            tid,
            name: name.into(),
            cpu: Duration::from_millis(ms),
        };
        let before = [t(1, "shard-0-1", 1000), t(2, "shard-0-1", 10), t(3, "shard-1-2", 500)];
        let after = [
            t(1, "shard-0-1", 1900), // the executor: 0.9 s
            t(2, "shard-0-1", 30),   // its helper: 0.02 s, not added
            t(3, "shard-1-2", 600),
            t(4, "shard-1-2", 50), // started during the interval: counted from 0
            t(5, "signals", 9000),
            t(6, "shard-9-9", 9000), // not a shard of this node's count
        ];
        let got = shard_cpu_seconds(&before, &after, 2);
        assert!((got[0] - 0.9).abs() < 1e-9, "{got:?}");
        assert!((got[1] - 0.1).abs() < 1e-9, "{got:?}");
    }
}
