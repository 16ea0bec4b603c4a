//! A client library nobody here wrote against the RESP port: Python's `redis` package (redis-py,
//! which `.ci/run` installs from PyPI where missing) runs `resp_python/mixed.py`: 400 random
//! operations on 60 keys checked against a model, a pipeline of 200 commands, MSET/MGET, TTLs,
//! a SCAN loop that must see exactly the model's keys, DBSIZE, INFO and FLUSHDB.

mod resp_common;

use resp_common::*;

#[test]
fn redis_py_runs_mixed_operations_pipelines_and_a_scan_loop() {
    if !has_redis_py() {
        return;
    }
    let (_dir, node) = node(&[]);
    run_python("mixed.py", resp_addr(&node).port());
}
