//! A client library nobody here wrote against the RESP port: Python's `redis` package (redis-py,
//! which `.ci/run` installs from PyPI where missing) runs `resp_python/mixed.py`: 400 random
//! operations on 60 keys checked against a model, a pipeline of 200 commands, MSET/MGET, TTLs,
//! a SCAN loop that must see exactly the model's keys, DBSIZE, INFO and FLUSHDB.

mod resp_common;

use std::path::Path;
use std::process::Command;

use resp_common::*;

#[test]
fn redis_py_runs_mixed_operations_pipelines_and_a_scan_loop() {
    let has_redis_py =
        Command::new("python3").args(["-c", "import redis"]).status().is_ok_and(|s| s.success());
    if !has_redis_py {
        assert!(std::env::var_os("CI").is_none(), "CI installs redis-py (.ci/run)");
        return;
    }
    let (_dir, node) = node(&[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/resp_python/mixed.py");
    let out = Command::new("timeout")
        .arg("120")
        .arg("python3")
        .arg(&script)
        .arg(resp_addr(&node).port().to_string())
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.starts_with("ok "),
        "{script:?} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
