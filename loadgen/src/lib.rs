//! ringstore-load: the load generator. So far (issue 4) a closed-loop driver: N connections,
//! each keeping a pipeline of D requests in flight (send D, receive D), Gets or Puts of fixed-size
//! keys and values, shard-aware (each connection talks to one shard's port and draws keys that
//! shard owns) or through the shared port. It reports throughput, latency percentiles and the
//! server's CPU time per million operations. Issue 5 adds open loop, YCSB workloads, key
//! distributions, scenarios and sweeps.

pub mod cpu;
pub mod distribution;
pub mod embedded;
pub mod engine;
pub mod keyspace;
pub mod node_figures;
pub mod output;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod status;
pub mod verify;
pub mod workload;
