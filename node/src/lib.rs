//! ringstore-node: the thread-per-core daemon. One glommio executor per shard, each with its
//! own store, catalog and connections; requests for another shard's partitions cross the mesh.
//!
//! A request's path (docs/ARCHITECTURE.md "A request through the node"):
//! [`listener`] accepts -> [`connection`] reads a frame -> [`dispatch`] decodes it and asks
//! [`router`] where it runs -> [`table_ops`] runs it on the owning shard's tables (or
//! [`forward`] sends it over the [`mesh`] to the owner, where [`peer`] hands it to [`dispatch`]
//! again, or [`fanout`] coordinates it across shards) -> the response frame goes back through
//! [`connection`]'s output buffer.
//! [`daemon`] starts and stops it all; [`shutdown`] is the drain barrier.

pub mod ack_task;
pub mod budget;
pub mod buffers;
pub mod catalog_check;
pub mod config;
pub mod connection;
pub mod connection_cap;
pub mod counters;
pub mod cpus;
pub mod daemon;
pub mod dispatch;
pub mod durable_acks;
pub mod error;
pub mod fanout;
pub mod fd_limit;
pub mod forward;
pub mod frame_batch;
pub mod idle;
pub mod idle_task;
pub mod index_query;
pub mod inflight;
pub mod inline;
pub mod listener;
pub mod lock;
pub mod logging;
pub mod merge;
pub mod merged_scan;
pub mod mesh;
pub mod mesh_setup;
pub mod metrics_http;
pub mod metrics_text;
pub mod notify;
pub mod output;
pub mod page_budget;
pub mod panic_policy;
pub mod peer;
pub mod ports;
pub mod range_bound;
pub mod read_interrupt;
pub mod readiness;
pub mod resp_batch;
pub mod resp_cluster;
pub mod resp_commands;
pub mod resp_connection;
pub mod resp_exec;
pub mod resp_forwarded;
pub mod resp_key_order;
pub mod resp_keyed;
pub mod resp_scan;
pub mod resp_server;
pub mod resp_session;
pub mod resp_slots;
pub mod resp_table;
pub mod resume;
pub mod router;
pub mod sched_policy;
pub mod shard;
pub mod shutdown;
pub mod sync;
pub mod table_ops;
pub mod wakeup;
