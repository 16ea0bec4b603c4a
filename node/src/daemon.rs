//! Starting and stopping the node: the data-directory lock, one glommio executor per shard
//! (thread `shard-N`, pinned to a CPU or placed by the kernel: `--pin-shards`), the listeners,
//! the mesh, the ready line, and the signals.
//!
//! Start-up order:
//! 1. Lock `DATA_DIR/LOCK` (a second daemon on the directory fails here).
//! 2. Create the mesh channels (`mesh.rs`) and start shard 0, which binds the shared address
//!    first, so that `--listen HOST:0` fixes the shared port before the other shards bind it
//!    too (SO_REUSEPORT); then start shards 1..N. Each also binds its own port (PORT+1+N when
//!    PORT is not 0, a free port otherwise), and with `--resp` its own RESP port (the RESP
//!    port's RPORT+1+N, likewise), and reports its ports.
//! 3. Every shard opens its store (`DATA_DIR/shard-N`: recovery), its catalog and its partition
//!    map, learns every shard's port, and starts accepting.
//! 4. When all shards are ready, the node prints the ready line (also logged):
//!    `ringstore-node ready listen=ADDR shards=N shard_ports=P0,P1,... partitions=K metrics=ADDR|-
//!    resp=ADDR|- resp_shard_ports=R0,R1,...|-`.
//!
//! Stop: SIGTERM or SIGINT requests shutdown (`shutdown.rs`); each shard stops accepting, drains
//! its connections, waits for the others, syncs and checkpoints its store and returns; the
//! process exits 0.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{mpsc, Arc};

use futures::channel::oneshot;
use glommio::channels::shared_channel::ConnectedReceiver;
use glommio::net::TcpListener;
use glommio::sync::Semaphore;
use glommio::{ExecutorJoinHandle, Latency, LocalExecutorBuilder, Placement, Shares, Task};
use ringstore_net::Topology;
use ringstore_storage::disk::dma::DmaDisk;
use ringstore_storage::table::{PartitionCount, PartitionMap, TableStore};
use ringstore_storage::SystemClock;

use crate::ack_task;
use crate::budget::BufferBudget;
use crate::buffers::BufPool;
use crate::config::{shard_dir, NodeConfig};
use crate::connection_cap::ConnectionCap;
use crate::counters::Counters;
use crate::error::NodeError;
use crate::fd_limit;
use crate::lock::DataDirLock;
use crate::mesh::{MeshEnds, Peers, ShardMsg};
use crate::ports;
use crate::resp_connection;
use crate::resp_session::RespSettings;
use crate::shard::Shard;
use crate::shutdown::Shutdown;
use crate::{idle_task, listener, metrics_http, peer, resume};

/// The RESP parser's bounds from the node's limits: a bulk string and a whole command up to the
/// frame limit (which holds the largest value), Redis's argument count.
pub fn resp_limits(limits: &crate::config::Limits) -> ringstore_net::resp::ParseLimits {
    let frame = limits.frame_body_bytes as usize;
    ringstore_net::resp::ParseLimits {
        bulk_bytes_max: frame,
        args_max: ringstore_net::resp::parse::MULTIBULK_ARGS_MAX,
        command_bytes_max: frame,
    }
}

/// What a running node reports once every shard is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub listen: SocketAddr,
    pub shard_ports: Vec<u16>,
    pub partitions: u32,
    pub metrics: Option<SocketAddr>,
    /// The RESP port, if `--resp` was given.
    pub resp: Option<SocketAddr>,
    /// Each shard's own RESP port (Redis Cluster's nodes), if `--resp` was given.
    pub resp_shard_ports: Vec<u16>,
}

impl Ready {
    /// The line printed on stdout (tests and scripts parse it).
    pub fn line(&self) -> String {
        let list = |ports: &[u16]| match ports {
            [] => "-".to_owned(),
            _ => ports.iter().map(u16::to_string).collect::<Vec<_>>().join(","),
        };
        format!(
            "ringstore-node ready listen={} shards={} shard_ports={} partitions={} metrics={} \
             resp={} resp_shard_ports={}",
            self.listen,
            self.shard_ports.len(),
            list(&self.shard_ports),
            self.partitions,
            self.metrics.map_or("-".to_owned(), |m| m.to_string()),
            self.resp.map_or("-".to_owned(), |m| m.to_string()),
            list(&self.resp_shard_ports),
        )
    }
}

/// A shard's report to the starting thread.
enum Report {
    Bound {
        shard: usize,
        shared: SocketAddr,
        own: u16,
        metrics: Option<SocketAddr>,
        resp: Option<SocketAddr>,
        resp_own: Option<u16>,
    },
    Ready {
        shard: usize,
    },
    Failed {
        shard: usize,
        message: String,
    },
}

/// Runs the node until a signal stops it; `on_ready` gets the ready report once.
pub fn run(config: NodeConfig, on_ready: impl FnOnce(&Ready)) -> Result<(), NodeError> {
    let _lock = DataDirLock::acquire(&config.data_dir)?;
    preflight(&config)?;
    // Read before any shard pins itself: the process's CPU mask (taskset, cgroups).
    let cpus = crate::cpus::allowed();
    // Before any thread starts: each inherits the policy (the shards, glommio's blocking-pool
    // threads, io_uring's workers, the signal thread).
    let policy = config
        .sched_policy
        .unwrap_or_else(|| crate::config::sched_policy_default(config.shards, cpus.len()));
    policy.apply_to_this_thread().map_err(NodeError::SchedPolicy)?;
    let placing = ShardPlacing::new(&config, &cpus)?;
    let shutdown = Shutdown::new(config.shards);
    install_signals(shutdown.clone())?;
    let (report_tx, report_rx) = mpsc::channel::<Report>();
    let mut start = start_shards(&config, &placing, &shutdown, &report_tx, &report_rx);
    if start.failure.is_none() {
        let ports =
            ShardPorts { binary: start.own_ports.clone(), resp: start.resp_own_ports.clone() };
        for tx in start.ports_tx.drain(..) {
            let _ = tx.send(ports.clone());
        }
        start.failure = wait_ready(&report_rx, config.shards).err();
    }
    if start.failure.is_none() {
        let r = Ready {
            listen: start.shared,
            shard_ports: start.own_ports,
            partitions: config.partitions,
            metrics: start.metrics,
            resp: start.resp,
            resp_shard_ports: start.resp_own_ports,
        };
        tracing::info!("{}", r.line());
        on_ready(&r);
        crate::notify::ready();
    } else {
        // Shards waiting for their ports see the senders dropped and stop.
        start.ports_tx.clear();
        shutdown.request();
    }
    join_shards(start.handles, start.failure)?;
    tracing::info!("ringstore-node stopped");
    Ok(())
}

/// The checks before any shard starts: enough file descriptors for `max_connections` (the
/// soft limit raised if it must be), and every shard's catalog the same.
fn preflight(config: &NodeConfig) -> Result<(), NodeError> {
    let fds = fd_limit::ensure(config.shards, config.limits.connections_max)
        .map_err(NodeError::FileDescriptors)?;
    if fds.soft != fds.soft_before {
        tracing::info!(
            from = fds.soft_before,
            to = fds.soft,
            needed = fds.needed,
            "raised the soft RLIMIT_NOFILE for max_connections"
        );
    }
    crate::catalog_check::check(&config.data_dir, config.shards, config.catalog_from_shard_0)
        .map_err(NodeError::Catalogs)
}

/// The shards being started: their executors, the ports they bound, and the first failure.
struct Starting {
    handles: Vec<ExecutorJoinHandle<Result<(), String>>>,
    /// Each shard waits on its receiver for every shard's own ports.
    ports_tx: Vec<oneshot::Sender<ShardPorts>>,
    shared: SocketAddr,
    own_ports: Vec<u16>,
    /// Each shard's own RESP port (empty without `--resp`).
    resp_own_ports: Vec<u16>,
    metrics: Option<SocketAddr>,
    /// The RESP address (shard 0 may get port 0 and fix it, as for the shared port).
    resp: Option<SocketAddr>,
    failure: Option<NodeError>,
}

/// Where the shards' executors run and how they wait for work: pinned or not (`--pin-shards`),
/// and how long each spins before it sleeps (`--spin-before-sleep-us`).
struct ShardPlacing {
    /// The process's CPU mask, in order; shard `i` is pinned to `cpus::for_shard`.
    cpus: Vec<usize>,
    pin: bool,
    spin_us: u64,
}

impl ShardPlacing {
    /// The settings, or their defaults for the shard count and the mask. glommio spins only on
    /// an executor bound to a CPU (it drops the setting for an unbound one), so with unpinned
    /// shards the default spin is 0 and a spin asked for is refused rather than dropped.
    fn new(config: &NodeConfig, cpus: &[usize]) -> Result<ShardPlacing, NodeError> {
        let (shards, n) = (config.shards, cpus.len());
        let pin = config.pin_shards.unwrap_or_else(|| crate::config::pin_shards_default(shards, n));
        let spin_us = match config.spin_before_sleep_us {
            Some(us) => us,
            None if pin => crate::config::spin_before_sleep_us_default(shards, n),
            None => 0,
        };
        if spin_us > 0 && !pin {
            return Err(NodeError::Config(crate::config::ConfigError::Invalid {
                setting: "spin_before_sleep_us",
                value: spin_us.to_string(),
                why: "needs pinned shards (glommio spins only on an executor bound to a CPU): \
                      add --pin-shards true, or set --spin-before-sleep-us 0"
                    .to_string(),
            }));
        }
        Ok(ShardPlacing { cpus: cpus.to_vec(), pin, spin_us })
    }

    /// The executor builder of shard `id`.
    fn builder(&self, id: usize, io_memory_bytes: usize) -> LocalExecutorBuilder {
        let placement = if self.pin {
            let cpu = crate::cpus::for_shard(&self.cpus, id);
            tracing::debug!(shard = id, cpu, "pinning");
            Placement::Fixed(cpu)
        } else {
            // The thread keeps the process's mask, within which the kernel places it.
            Placement::Unbound
        };
        let builder = LocalExecutorBuilder::new(placement)
            .name(&format!("shard-{id}"))
            .io_memory(io_memory_bytes);
        if self.spin_us == 0 {
            return builder;
        }
        // glommio's loop polls (its rings, timers and, with the patch, the shard's epoll
        // instance) for this long before it sleeps: vendor/glommio/RINGSTORE-PATCH.md.
        builder.spin_before_park(std::time::Duration::from_micros(self.spin_us))
    }
}

/// Starts one executor per shard (pinned or not: `--pin-shards`), one at a time: each binds its
/// ports before the next starts, because shard 0's bind fixes the shared port the others bind
/// too. Stops at the first
/// failure (in `failure`).
fn start_shards(
    config: &NodeConfig,
    placing: &ShardPlacing,
    shutdown: &Arc<Shutdown>,
    report_tx: &mpsc::Sender<Report>,
    report_rx: &mpsc::Receiver<Report>,
) -> Starting {
    let shards = config.shards;
    let mut mesh = crate::mesh::channels(shards, config.limits.forward_queue);
    let node_connections = Arc::new(ConnectionCap::new(config.limits.connections_max));
    let mut s = Starting {
        handles: Vec::with_capacity(shards),
        ports_tx: Vec::with_capacity(shards),
        shared: config.listen,
        own_ports: vec![0u16; shards],
        resp_own_ports: if config.resp.is_some() { vec![0u16; shards] } else { Vec::new() },
        metrics: None,
        resp: config.resp,
        failure: None,
    };
    for (id, ends) in mesh.drain(..).enumerate() {
        let (tx, rx) = oneshot::channel::<ShardPorts>();
        s.ports_tx.push(tx);
        let start = ShardStart {
            id,
            config: config.clone(),
            shared: s.shared,
            resp: s.resp,
            ends,
            ports: rx,
            report: report_tx.clone(),
            shutdown: shutdown.clone(),
            node_connections: node_connections.clone(),
        };
        match placing.builder(id, config.io_memory_bytes).spawn(move || run_shard(start)) {
            Ok(handle) => s.handles.push(handle),
            Err(e) => {
                s.failure = Some(NodeError::Executor { shard: id, message: e.to_string() });
                break;
            }
        }
        // Wait for this shard's ports before starting the next: shard 0 fixes the shared port.
        match report_rx.recv() {
            Ok(Report::Bound { shard, shared: addr, own, metrics: m, resp, resp_own }) => {
                s.shared = addr;
                s.resp = resp;
                s.own_ports[shard] = own;
                if let Some(port) = resp_own {
                    s.resp_own_ports[shard] = port;
                }
                s.metrics = s.metrics.or(m);
            }
            Ok(Report::Failed { shard, message }) => {
                s.failure = Some(NodeError::Shard { shard, message });
                break;
            }
            Ok(Report::Ready { .. }) | Err(_) => {
                s.failure =
                    Some(NodeError::Shard { shard: id, message: "stopped starting".into() });
                break;
            }
        }
    }
    s
}

/// Waits until all `shards` report ready, or for the first that fails.
fn wait_ready(report_rx: &mpsc::Receiver<Report>, shards: usize) -> Result<(), NodeError> {
    let mut ready = 0;
    while ready < shards {
        match report_rx.recv() {
            Ok(Report::Ready { shard }) => {
                tracing::debug!(shard, "shard ready");
                ready += 1;
            }
            Ok(Report::Failed { shard, message }) => {
                return Err(NodeError::Shard { shard, message });
            }
            Ok(Report::Bound { .. }) => {}
            Err(_) => {
                return Err(NodeError::Shard { shard: 0, message: "stopped starting".into() });
            }
        }
    }
    Ok(())
}

/// Waits for every shard's executor to end; the first failure (`failure`, from start-up, or a
/// shard's own) is the node's.
fn join_shards(
    handles: Vec<ExecutorJoinHandle<Result<(), String>>>,
    mut failure: Option<NodeError>,
) -> Result<(), NodeError> {
    for (id, handle) in handles.into_iter().enumerate() {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(message)) => {
                failure.get_or_insert(NodeError::Shard { shard: id, message });
            }
            Err(e) => {
                failure.get_or_insert(NodeError::Executor { shard: id, message: e.to_string() });
            }
        }
    }
    failure.map_or(Ok(()), Err)
}

/// SIGTERM and SIGINT request shutdown, from a thread of their own.
fn install_signals(shutdown: Arc<Shutdown>) -> Result<(), NodeError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals =
        signal_hook::iterator::Signals::new([SIGTERM, SIGINT]).map_err(NodeError::Signals)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                tracing::info!(signal, "shutdown requested");
                crate::notify::stopping();
                shutdown.request();
            }
        })
        .map_err(NodeError::Signals)?;
    Ok(())
}

/// Every shard's own ports, sent to each shard once all are bound.
#[derive(Debug, Clone)]
struct ShardPorts {
    binary: Vec<u16>,
    /// Empty without `--resp`.
    resp: Vec<u16>,
}

/// What a shard's executor starts with.
struct ShardStart {
    id: usize,
    config: NodeConfig,
    /// The shared address (shard 0 may get port 0 and fix it).
    shared: SocketAddr,
    /// The RESP address, if any (fixed by shard 0 like `shared`).
    resp: Option<SocketAddr>,
    ends: MeshEnds,
    ports: oneshot::Receiver<ShardPorts>,
    report: mpsc::Sender<Report>,
    shutdown: Arc<Shutdown>,
    node_connections: Arc<ConnectionCap>,
}

async fn run_shard(start: ShardStart) -> Result<(), String> {
    let id = start.id;
    let report = start.report.clone();
    let shutdown = start.shutdown.clone();
    let result = serve_shard(start).await;
    if let Err(message) = &result {
        tracing::error!(shard = id, %message, "shard failed");
        let _ = report.send(Report::Failed { shard: id, message: message.clone() });
        shutdown.request();
        shutdown.shard_drained();
    }
    result
}

async fn serve_shard(start: ShardStart) -> Result<(), String> {
    let ShardStart { id, config, shared, resp, ends, ports, report, shutdown, node_connections } =
        start;
    let listeners = bind_listeners(id, &config, shared, resp)?;
    let bound = Report::Bound {
        shard: id,
        shared: listeners.shared_addr,
        own: listeners.own_port,
        metrics: listeners.metrics_addr,
        resp: listeners.resp_addr,
        resp_own: listeners.resp_own_port,
    };
    report.send(bound).map_err(|e| e.to_string())?;
    let opened = open_shard(id, &config, listeners.shared_addr, ends, ports).await?;
    let (shard, receivers) = opened.into_shard(id, &config, &shutdown, node_connections);
    let tasks = spawn_tasks(&shard, listeners, receivers, &config);
    if id == 0 && config.resp.is_some() {
        crate::resp_table::create(&shard).await?;
    }
    report.send(Report::Ready { shard: id }).map_err(|e| e.to_string())?;
    shutdown.requested().await;
    drain_and_stop(&shard, tasks, &shutdown).await
}

/// A shard's listening sockets: the shared port, its own port and (shard 0) the metrics port.
struct Listeners {
    shared: TcpListener,
    shared_addr: SocketAddr,
    own: TcpListener,
    own_port: u16,
    metrics: Option<TcpListener>,
    metrics_addr: Option<SocketAddr>,
    resp: Option<TcpListener>,
    resp_addr: Option<SocketAddr>,
    /// The shard's own RESP port (`--resp` port + 1 + id): Redis Cluster's node for the slots
    /// of the partitions it owns (`resp_slots.rs`).
    resp_own: Option<TcpListener>,
    resp_own_port: Option<u16>,
}

/// Binds the shard's listeners, first thing: shard 0's shared bind fixes the port the others
/// bind. Shard 0 first makes sure nobody else listens there (the shared port is SO_REUSEPORT,
/// see `ports.rs`); the own port is `--listen` port + 1 + id (a free one for port 0).
fn bind_listeners(
    id: usize,
    config: &NodeConfig,
    shared: SocketAddr,
    resp: Option<SocketAddr>,
) -> Result<Listeners, String> {
    if id == 0 {
        ports::check_free(shared, "the shared --listen port")?;
        if let Some(resp) = resp {
            ports::check_free(resp, "the --resp port")?;
        }
    }
    let resp = resp.map(ports::bind_shared).transpose()?;
    let resp_addr = match &resp {
        Some(l) => Some(l.local_addr().map_err(|e| e.to_string())?),
        None => None,
    };
    let shared_listener = ports::bind_shared(shared)?;
    let shared_addr = shared_listener.local_addr().map_err(|e| e.to_string())?;
    let own_what = format!("shard {id}'s own port, --listen port + 1 + {id}");
    let own = ports::bind_own(shared_addr.ip(), config.listen.port(), id, "listen", &own_what)?;
    let own_port = own.local_addr().map_err(|e| e.to_string())?.port();
    let resp_own = match resp_addr {
        Some(resp) => {
            let what = format!("shard {id}'s own RESP port, --resp port + 1 + {id}");
            let base = config.resp.map_or(0, |r| r.port());
            Some(ports::bind_own(resp.ip(), base, id, "resp", &what)?)
        }
        None => None,
    };
    let resp_own_port = match &resp_own {
        Some(l) => Some(l.local_addr().map_err(|e| e.to_string())?.port()),
        None => None,
    };
    let metrics = match config.metrics {
        Some(addr) if id == 0 => Some(ports::bind_exclusive(addr, "--metrics")?),
        _ => None,
    };
    let metrics_addr = match &metrics {
        Some(l) => Some(l.local_addr().map_err(|e| e.to_string())?),
        None => None,
    };
    Ok(Listeners {
        shared: shared_listener,
        shared_addr,
        own,
        own_port,
        metrics,
        metrics_addr,
        resp,
        resp_addr,
        resp_own,
        resp_own_port,
    })
}

/// What a shard opens before it can serve.
struct Opened {
    tables: TableStore,
    map: PartitionMap,
    topology: Topology,
    resp_ports: Vec<u16>,
    peers: Peers,
    receivers: Vec<ConnectedReceiver<ShardMsg>>,
}

/// Opens the shard's store (recovery), catalog and partition map, learns every shard's own
/// port, and connects its ends of the mesh (both ends of a channel wait for each other,
/// `mesh_setup.rs`).
async fn open_shard(
    id: usize,
    config: &NodeConfig,
    shared: SocketAddr,
    ends: MeshEnds,
    ports: oneshot::Receiver<ShardPorts>,
) -> Result<Opened, String> {
    let dir = shard_dir(&config.data_dir, id);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tables = TableStore::open(DmaDisk, &dir, config.store.clone(), Rc::new(SystemClock))
        .await
        .map_err(|e| format!("cannot open the store in {}: {e}", dir.display()))?;
    let count = PartitionCount::new(config.partitions).map_err(|e| e.to_string())?;
    let map =
        PartitionMap::load_or_create(tables.store().disk(), &dir, count, config.shards as u32)
            .await
            .map_err(|e| format!("partition map in {}: {e}", dir.display()))?;
    let ports = ports.await.map_err(|_| "start-up was abandoned".to_owned())?;
    let topology = Topology {
        shard: id as u16,
        shared_port: shared.port(),
        shard_ports: ports.binary,
        partition_owners: (0..count.get()).map(|p| map.shard_of(p) as u16).collect(),
    };
    let (peers, receivers) = crate::mesh::connect(ends, config.limits.forward_queue).await;
    Ok(Opened { tables, map, topology, resp_ports: ports.resp, peers, receivers })
}

impl Opened {
    /// The shard's state, and the mesh receivers its peer tasks serve.
    fn into_shard(
        self,
        id: usize,
        config: &NodeConfig,
        shutdown: &Arc<Shutdown>,
        node_connections: Arc<ConnectionCap>,
    ) -> (Rc<Shard>, Vec<ConnectedReceiver<ShardMsg>>) {
        let shard = Rc::new(Shard {
            id,
            tables: self.tables,
            map: self.map,
            topology: self.topology,
            resp_ports: self.resp_ports,
            limits: config.limits.clone(),
            peers: self.peers,
            counters: Counters::default(),
            inflight: Default::default(),
            connections: Default::default(),
            connection_closed: event_listener::Event::new(),
            node_connections,
            shutdown: shutdown.clone(),
            ddl_lock: Semaphore::new(1),
            buffers: BufPool::default(),
            budget: BufferBudget::new(config.limits.buffer_bytes / config.shards),
            acks: Default::default(),
            scratch: Default::default(),
            idle: Default::default(),
            readiness: Default::default(),
        });
        (shard, self.receivers)
    }
}

/// The tasks of a serving shard. Dropping a task cancels it.
struct Tasks {
    acks: Task<()>,
    peers: Vec<Task<()>>,
    shared: Task<()>,
    own: Task<()>,
    metrics: Option<Task<()>>,
    resume: Task<()>,
    idle: Task<()>,
    resp: Option<Task<()>>,
    resp_own: Option<Task<()>>,
    /// The shard's index worker (background index builds), in its low-priority task queue.
    index_work: Task<()>,
}

/// Starts the shard's tasks: the acknowledger, one per peer channel, the accept loops, the
/// metrics endpoint (shard 0) and the poisoned-store watcher.
fn spawn_tasks(
    shard: &Rc<Shard>,
    listeners: Listeners,
    receivers: Vec<ConnectedReceiver<ShardMsg>>,
    config: &NodeConfig,
) -> Tasks {
    let accept = |l, which| glommio::spawn_local(listener::accept_loop(shard.clone(), l, which));
    let resp_settings = Rc::new(RespSettings {
        durability: config.resp_durability,
        parse: resp_limits(&config.limits),
    });
    let accept_resp = |l, which| {
        let settings = resp_settings.clone();
        let serve = move |shard, stream| resp_connection::serve(shard, settings.clone(), stream);
        glommio::spawn_local(listener::accept_until_shutdown(shard.clone(), l, which, serve))
    };
    Tasks {
        resp: listeners.resp.map(|l| accept_resp(l, "resp")),
        resp_own: listeners.resp_own.map(|l| accept_resp(l, "resp-own")),
        acks: glommio::spawn_local(ack_task::run(shard.clone())),
        peers: receivers
            .into_iter()
            .map(|rx| glommio::spawn_local(peer::serve_peer(shard.clone(), rx)))
            .collect(),
        shared: accept(listeners.shared, "shared"),
        own: accept(listeners.own, "own"),
        metrics: listeners
            .metrics
            .map(|l| glommio::spawn_local(metrics_http::serve(shard.clone(), l))),
        resume: glommio::spawn_local(resume::run(shard.clone(), config.store.segment_size_bytes)),
        idle: glommio::spawn_local(idle_task::run(shard.clone())),
        index_work: spawn_index_work(shard, config),
    }
}

/// The shard's index worker, in a task queue with the store's maintenance shares (against 1000
/// for requests), so a background build takes the core only when requests leave it.
fn spawn_index_work(shard: &Rc<Shard>, config: &NodeConfig) -> Task<()> {
    let queue = glommio::executor().create_task_queue(
        Shares::Static(config.store.maintenance_shares),
        Latency::NotImportant,
        "index-build",
    );
    let shard = shard.clone();
    let work = async move { shard.tables.run_index_work().await };
    glommio::spawn_local_into(work, queue).unwrap_or_else(|e| {
        panic!("the executor refused the index worker's task queue it just made: {e}")
    })
}

/// After shutdown was requested: stops accepting, waits for this shard's connections to
/// close, drains with the other shards (see shutdown.rs), closes the mesh, and syncs and
/// checkpoints the store.
async fn drain_and_stop(
    shard: &Rc<Shard>,
    tasks: Tasks,
    shutdown: &Shutdown,
) -> Result<(), String> {
    // A build stops after its page and goes on at the next start.
    shard.tables.stop_index_work();
    tasks.index_work.await;
    tasks.shared.await;
    tasks.own.await;
    for t in [tasks.resp, tasks.resp_own].into_iter().flatten() {
        t.await;
    }
    if let Some(t) = tasks.metrics {
        t.await;
    }
    tasks.resume.await;
    tasks.idle.await;
    while shard.connections.get() > 0 {
        let listener = shard.connection_closed.listen();
        if shard.connections.get() == 0 {
            break;
        }
        listener.await;
    }
    // Every connection is closed, so no write waits for its acknowledgement any more.
    drop(tasks.acks);
    // A DDL statement still being applied (its client may be gone) finishes on every shard
    // before this shard counts as drained, so no shard closes its channels under it.
    let _ddl = shard.ddl_lock.acquire_permit(1).await;
    shutdown.shard_drained();
    shutdown.wait_all_drained().await;
    shard.peers.close();
    for t in tasks.peers {
        t.await;
    }
    let store = shard.tables.store();
    store.shutdown().await.map_err(|e| format!("final sync or checkpoint failed: {e}"))?;
    tracing::info!(shard = shard.id, "shard stopped");
    Ok(())
}
