//! A shard built as the daemon builds it (store, catalog, partition map, topology), for tests
//! that run the node's request path inside one glommio executor without sockets.

use std::rc::Rc;
use std::sync::Arc;

use ringstore_node::buffers::BufPool;
use ringstore_node::config::Limits;
use ringstore_node::connection_cap::ConnectionCap;
use ringstore_node::counters::Counters;
use ringstore_node::mesh;
use ringstore_node::shard::Shard;
use ringstore_node::shutdown::Shutdown;
use ringstore_storage::disk::dma::DmaDisk;
use ringstore_storage::table::{PartitionCount, PartitionMap, TableStore};
use ringstore_storage::{StoreConfig, SystemClock};

/// Runs `test` on a glommio executor of its own thread (512 KiB of io memory, glommio's
/// minimum), with a temporary directory for its stores, and waits for it.
pub fn on_executor<F, Fut>(test: F)
where
    F: FnOnce(std::path::PathBuf) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_path_buf();
    let ex = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .io_memory(512 * 1024)
        .spawn(move || async move { test(path).await })
        .expect("executor");
    ex.join().expect("executor thread");
}

/// Partitions of the test shards' map.
pub const PARTITIONS: u32 = 64;

/// Shard `id` of a node of `shards` shards, its store in `dir`. Its mesh has no peers (a
/// request routed to another shard is not sent anywhere in these tests).
pub async fn shard(dir: &std::path::Path, shards: u32, id: usize) -> Rc<Shard> {
    let config = StoreConfig::default();
    let tables = TableStore::open(DmaDisk, dir, config, Rc::new(SystemClock)).await.expect("open");
    let count = PartitionCount::new(PARTITIONS).expect("partition count");
    let map = PartitionMap::load_or_create(tables.store().disk(), dir, count, shards)
        .await
        .expect("partition map");
    let topology = ringstore_net::Topology {
        shard: id as u16,
        shared_port: 0,
        shard_ports: vec![0; shards as usize],
        partition_owners: (0..PARTITIONS).map(|p| map.shard_of(p) as u16).collect(),
    };
    Rc::new(Shard {
        id,
        tables,
        map,
        topology,
        resp_ports: Vec::new(),
        limits: Limits::default(),
        peers: mesh::connect(mesh::channels(1, 16).remove(0), 16).await.0,
        counters: Counters::default(),
        inflight: Default::default(),
        connections: Default::default(),
        connection_closed: event_listener::Event::new(),
        node_connections: Arc::new(ConnectionCap::new(Limits::default().connections_max)),
        shutdown: Shutdown::new(shards as usize),
        ddl_lock: glommio::sync::Semaphore::new(1),
        buffers: BufPool::default(),
        budget: ringstore_node::budget::BufferBudget::new(Limits::default().buffer_bytes),
        acks: Default::default(),
        scratch: Default::default(),
        idle: Default::default(),
        readiness: Default::default(),
    })
}
