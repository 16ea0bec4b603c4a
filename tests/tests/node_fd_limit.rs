//! Proves the start-up check of file descriptors against `max_connections`
//! (`node/src/fd_limit.rs`): past RLIMIT_NOFILE, accept fails and connections sit in the backlog
//! with no 721 refusal, so the node makes sure the cap comes first.
//! - A soft limit below what the cap needs, under a hard limit that allows it: the node raises its
//!   soft limit (read back from /proc/PID/limits) and starts.
//! - A hard limit below what the cap needs: the node refuses to start and names the numbers.

use std::os::unix::process::CommandExt;
use std::process::Command;

use ringstore_tests::Node;

mod node_common;
use node_common::*;

/// Sets RLIMIT_NOFILE in the child before it runs the node.
fn with_nofile(command: &mut Command, soft: u64, hard: u64) {
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit, which
    // is async-signal-safe, on a value on its own stack.
    unsafe {
        command.pre_exec(move || {
            let l = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn soft_nofile_of(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("read limits");
    let line = limits.lines().find(|l| l.starts_with("Max open files")).expect("the line");
    line.split_whitespace().nth(3).expect("soft column").parse().expect("a number")
}

#[test]
fn a_low_soft_limit_is_raised_to_what_the_cap_needs() {
    let (_dir, data) = data_dir();
    let hard = 8192;
    let node = Node::try_start_with(&data, "127.0.0.1:0", &["--max-connections", "2000"], |c| {
        with_nofile(c, 256, hard)
    })
    .expect("starts after raising its soft limit");
    let soft = soft_nofile_of(node.pid());
    assert!(soft > 2000 && soft <= hard, "soft limit {soft}: the cap's 2,000 and some");
    node.client().ddl(KV_DDL).expect("serves");
    assert!(node.terminate().success());
}

#[test]
fn a_hard_limit_below_what_the_cap_needs_refuses_to_start() {
    let (_dir, data) = data_dir();
    let result = Node::try_start_with(&data, "127.0.0.1:0", &["--max-connections", "4096"], |c| {
        with_nofile(c, 512, 1024)
    });
    match result {
        Ok(node) => {
            node.kill();
            panic!("started with RLIMIT_NOFILE 1024 for 4,096 connections");
        }
        Err(log) => {
            assert!(log.contains("max_connections 4096 with 2 shards needs about"), "{log}");
            assert!(log.contains("RLIMIT_NOFILE allows 1024"), "{log}");
        }
    }
}
