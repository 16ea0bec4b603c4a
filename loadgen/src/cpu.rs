//! The CPU time a process has used (user + system), from `/proc/PID/stat`: how the load tool
//! reports the server's CPU seconds per million operations, which is the cost figure that means
//! something on a machine where the load generator and the node share 2 cores.

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
}
