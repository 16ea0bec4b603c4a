//! One benchmark run from start to end: prepare the table, fill the key space (the load phase,
//! with a progress bar), run the workload, and read the node's own figures around it. Scenario
//! runs and sweep points go through here too.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ringstore_model::table::{IndexState, Outcome as DdlOutcome, TableSchema};
use ringstore_model::Durability;
use ringstore_net::{Client, IndexWait, Topology};

use crate::distribution::KeyDistribution;
use crate::embedded::EmbeddedNode;
use crate::engine::{self, Outcome, Pacing, Protocol, RunSpec, Workload};
use crate::keyspace::{index_ddl, resp_topology, IndexOn, KeySpace, CREATE_TABLE, TABLE};
use crate::node_figures;
use crate::output::progress::Progress;
use crate::results::{OpKind, RunResult};
use crate::scenario::Scenario;
use crate::verify::{self, VerifyReport};
use crate::workload::{Mix, SizeSpec};

/// Requests in flight per client during the load phase.
pub const LOAD_PIPELINE: usize = 32;
/// Longest wait for an index of `--index-on` to become READY (a build over rows already in the
/// table, against a node given by address); the CLI's `plan add-index -wait` waits as long.
pub const INDEX_READY_TIMEOUT: Duration = Duration::from_secs(600);

/// The node a run drives: given by address, or started by the tool (and stopped when dropped).
#[derive(Debug)]
pub struct Target {
    pub addr: SocketAddr,
    pub pid: Option<u32>,
    _embedded: Option<EmbeddedNode>,
}

impl Target {
    pub fn remote(addr: SocketAddr, pid: Option<u32>) -> Target {
        Target { addr, pid, _embedded: None }
    }

    pub fn embedded(shards: usize, node_args: &[String]) -> Result<Target, String> {
        let node = EmbeddedNode::start(shards, node_args)?;
        Ok(Target { addr: node.addr, pid: Some(node.pid()), _embedded: Some(node) })
    }
}

/// Everything a run needs besides the node.
#[derive(Debug, Clone)]
pub struct Plan {
    pub workload: Workload,
    pub spec: RunSpec,
    pub key_size: SizeSpec,
    /// Fill keys 0..items before the measured run.
    pub load: bool,
    pub progress: bool,
    /// Verify mode: also save the acknowledged writes here (for `--check-log` after a crash).
    pub write_log: Option<PathBuf>,
    /// Secondary indexes made on the benchmark table before the load (`--index-on`), READY
    /// before the measured phase.
    pub indexes: Vec<IndexOn>,
}

/// What a benchmark run produced.
#[derive(Debug)]
pub struct Finished {
    pub result: RunResult,
    pub verify: Option<VerifyReport>,
}

/// Runs `plan` on the benchmark table.
pub fn bench(target: &Target, plan: &Plan, label: &str) -> Result<Finished, String> {
    if plan.workload.protocol == Protocol::Resp {
        return bench_resp(target, plan, label);
    }
    let mut client = connect(target)?;
    create_table(&mut client, CREATE_TABLE, TABLE)?;
    create_indexes(&mut client, &plan.indexes)?;
    let schema = describe(&mut client, TABLE)?;
    let topology = client.topology().clone();
    let precompute = plan.spec.items + plan.spec.ops.unwrap_or(0).min(plan.spec.items);
    let ks = Arc::new(KeySpace::new(schema, &topology, plan.key_size, precompute)?);
    // Verify mode streams every acknowledged write to the log as it arrives, so a run cut short
    // by a crash of the node (or of this tool) leaves the writes acknowledged before it.
    let mut plan = plan.clone();
    if let (true, Some(path)) = (plan.workload.verify, &plan.write_log) {
        plan.workload.ack_log = Some(verify::AckLogFile::create(path, plan.key_size)?);
    }
    let plan = &plan;
    let mut writes = verify::WriteLog::default();
    if plan.load {
        writes = load(target, &topology, &ks, plan)?.writes;
    }
    let (mut outcome, cpu) =
        measured(target, Some(&mut client), &topology, ks.clone(), plan, label)?;
    outcome.result.server_cpu_seconds = cpu;
    let verify = if plan.workload.verify {
        writes.merge(std::mem::take(&mut outcome.writes));
        Some(verify::read_back(&mut client, &ks, &writes)?)
    } else {
        None
    };
    Ok(Finished { result: outcome.result, verify })
}

/// Runs `plan` over RESP (`--protocol resp`) against any Redis-protocol server: no table to
/// create and no node figures to read (the server may be Redis), one connection per client to
/// the address given; the server's CPU time still comes from /proc with its pid.
fn bench_resp(target: &Target, plan: &Plan, label: &str) -> Result<Finished, String> {
    let ks = Arc::new(KeySpace::resp(plan.key_size)?);
    let topology = resp_topology(target.addr.port());
    if plan.load {
        load(target, &topology, &ks, plan)?;
    }
    let (mut outcome, cpu) = measured(target, None, &topology, ks, plan, label)?;
    outcome.result.server_cpu_seconds = cpu;
    Ok(Finished { result: outcome.result, verify: None })
}

/// Reads back every key of a saved write log (`--check-log`): the check after a crash and
/// restart that the writes acknowledged before it are all there.
pub fn check_log(target: &Target, path: &Path) -> Result<VerifyReport, String> {
    let (log, key_size) = verify::WriteLog::load(path)?;
    let mut client = connect(target)?;
    let t = client.describe(TABLE).map_err(|e| format!("describe {TABLE}: {e}"))?;
    let schema = t.schema().clone();
    let topology = client.topology().clone();
    let ks = KeySpace::new(schema, &topology, key_size, 0)?;
    verify::read_back(&mut client, &ks, &log)
}

/// Runs `plan`'s load (its distribution, clients and pacing) as puts of order rows laid out by
/// `scenario`, on a fresh table, which is dropped afterwards (also after a failed run) unless
/// `keep_table`.
pub fn scenario(
    target: &Target,
    plan: &Plan,
    s: Scenario,
    keep_table: bool,
) -> Result<RunResult, String> {
    let ran = scenario_run(target, plan, s);
    if keep_table {
        return ran;
    }
    let table = s.table();
    // A new connection: the run's may be what failed.
    let dropped = connect(target).and_then(|mut c| {
        c.ddl(&format!("DROP TABLE IF EXISTS {table}"))
            .map(|_| ())
            .map_err(|e| format!("drop the lab table {table} (--keep-tables keeps it): {e}"))
    });
    match (ran, dropped) {
        (Ok(r), Ok(())) => Ok(r),
        (Err(e), Ok(())) | (Ok(_), Err(e)) => Err(e),
        (Err(e), Err(d)) => Err(format!("{e}; then: {d}")),
    }
}

fn scenario_run(target: &Target, plan: &Plan, s: Scenario) -> Result<RunResult, String> {
    let mut client = connect(target)?;
    let table = s.table();
    client.ddl(&format!("DROP TABLE IF EXISTS {table}")).map_err(|e| format!("{table}: {e}"))?;
    let schema = create_table(&mut client, &s.ddl(), &table)?;
    let topology = client.topology().clone();
    let ks = Arc::new(KeySpace::scenario(schema, &topology, s)?);
    let mut plan = plan.clone();
    plan.workload.mix = Mix::of(&[(OpKind::Update, 1)])?;
    plan.workload.verify = false;
    plan.spec.align_to_wall_second = true;
    let (mut outcome, cpu) = measured(target, Some(&mut client), &topology, ks, &plan, s.name())?;
    outcome.result.server_cpu_seconds = cpu;
    Ok(outcome.result)
}

fn connect(target: &Target) -> Result<Client, String> {
    Client::connect(target.addr).map_err(|e| format!("connect to {}: {e}", target.addr))
}

fn create_table(client: &mut Client, ddl: &str, table: &str) -> Result<TableSchema, String> {
    client.ddl(ddl).map_err(|e| format!("create table {table}: {e}"))?;
    describe(client, table)
}

fn describe(client: &mut Client, table: &str) -> Result<TableSchema, String> {
    let t = client.describe(table).map_err(|e| format!("describe {table}: {e}"))?;
    Ok(t.schema().clone())
}

/// Makes the indexes of `list` on the benchmark table (or finds them made by an earlier run)
/// and waits until each is READY. On an empty table, the usual case before the load phase, an
/// index is READY as soon as CREATE INDEX answers; on a table with rows (a node given by
/// address, a table filled by an earlier run) the node builds it in the background first.
pub fn create_indexes(client: &mut Client, list: &[IndexOn]) -> Result<(), String> {
    for ((name, ddl), on) in index_ddl(list).iter().zip(list) {
        let outcomes = client.ddl(ddl).map_err(|e| format!("{ddl}: {e}"))?;
        let ready = outcomes
            .iter()
            .any(|o| matches!(o, DdlOutcome::IndexCreated { state: IndexState::Ready, .. }));
        if !ready {
            wait_until_ready(client, name)?;
        }
        // IF NOT EXISTS keeps an index of that name whatever its fields.
        let found = node_figures::indexes(client, TABLE)?;
        let fields = found.iter().find(|i| &i.name == name).map(|i| i.fields.clone());
        if fields.as_deref() != Some(&[on.field().to_string()][..]) {
            return Err(format!(
                "--index-on {}: table {TABLE} has an index {name} on {fields:?}, not on ({}); \
                 drop it (DROP INDEX {name} ON {TABLE}) or use a fresh node",
                on.name(),
                on.field()
            ));
        }
    }
    Ok(())
}

/// Waits until index `name` is READY on every shard, at most [`INDEX_READY_TIMEOUT`].
fn wait_until_ready(client: &mut Client, name: &str) -> Result<(), String> {
    let waited = client.wait_index_ready(TABLE, name, INDEX_READY_TIMEOUT);
    match waited.map_err(|e| format!("index {name}: {e}"))? {
        IndexWait::Ready => Ok(()),
        IndexWait::Still(state) => Err(format!(
            "index {name} on {TABLE} is still {} after {INDEX_READY_TIMEOUT:?}",
            state.name()
        )),
        IndexWait::Gone => Err(format!(
            "index {name} on {TABLE} is gone: its build failed (a row with a value over the \
             index's limits; the node's log says which) or it was dropped"
        )),
    }
}

/// The measured run, with the node's figures (read through `client`, when there is one) and
/// CPU time around it.
fn measured(
    target: &Target,
    mut client: Option<&mut Client>,
    topology: &Topology,
    ks: Arc<KeySpace>,
    plan: &Plan,
    label: &str,
) -> Result<(Outcome, Option<f64>), String> {
    let before = match client.as_deref_mut() {
        Some(c) => Some(node_figures::read(c, target.pid)?),
        None => None,
    };
    let mut progress =
        Progress::measured(plan.progress, label, plan.spec.duration, plan.spec.warmup);
    let mut spec = plan.spec.clone();
    spec.server_pid = target.pid;
    let table = ks.table.clone();
    let mut outcome =
        engine::run(target.addr, topology, ks, plan.workload.clone(), spec, &mut |iv| {
            progress.interval(iv)
        })?;
    progress.finish();
    outcome.result.label = label.to_string();
    if let (Some(c), Some(before)) = (client, before) {
        let mut after = node_figures::read(c, target.pid)?;
        after.indexes = node_figures::indexes(c, &table)?;
        outcome.result.node = Some(node_figures::since(&before, after));
    }
    let cpu = outcome.server_cpu_seconds;
    Ok((outcome, cpu))
}

/// Fills keys 0..items with puts, `LOAD_PIPELINE` in flight per client.
fn load(
    target: &Target,
    topology: &Topology,
    ks: &Arc<KeySpace>,
    plan: &Plan,
) -> Result<Outcome, String> {
    let items = plan.spec.items;
    let workload = Workload {
        mix: Mix::of(&[(OpKind::Insert, 1)])?,
        distribution: KeyDistribution::Uniform,
        // Verify mode checks the load's writes too, so they are as durable as the run's.
        durability: if plan.workload.verify {
            plan.workload.durability
        } else {
            Durability::NoSync
        },
        ..plan.workload.clone()
    };
    let spec = RunSpec {
        pacing: Pacing::Closed { depth: LOAD_PIPELINE },
        warmup: Duration::ZERO,
        duration: None,
        ops: Some(items),
        items: 0,
        insert_limit: Some(items),
        server_pid: None,
        // Inserts go to their key's owner whatever the binding; said here for the reader.
        bind_clients: false,
        ..plan.spec.clone()
    };
    let mut bar = Progress::load(plan.progress, items);
    let outcome =
        engine::run(target.addr, topology, ks.clone(), workload, spec, &mut |iv| bar.interval(iv))?;
    bar.finish();
    let failed = outcome.result.total_errors();
    if failed > 0 {
        let why = crate::output::table::errors_by_status(&outcome.result);
        return Err(format!("the load phase had {failed} failed puts:\n{}", why.trim_end()));
    }
    Ok(outcome)
}
