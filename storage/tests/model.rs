//! A seeded model test: random sequences of operations on the simulated disk, checked against a
//! `BTreeMap` model, prove that reads always see every write, that acknowledged durable writes
//! survive any crash, and that atomic batches stay atomic across crashes.
//!
//! Each seed drives one store (smallest segments, a small key space, occasional large values, so
//! segments rotate and compaction has garbage to collect) through puts, deletes, atomic
//! batches and range deletes (one range tombstone each) of mixed durability, issued alone or several at once (their first polls append them in
//! submission order, which is log order); gets and paged scans; checkpoints, compactions and
//! syncs; clean close and reopen; power losses (`SimDisk::crash` with seeded loss and tearing, or
//! `crash_losing_all_unsynced`), sometimes in the middle of an operation; and injected write or
//! fsync failures, after which the store must refuse writes with `Error::Poisoned` until a crash
//! and reopen. Every value is unique (it starts with the write's sequence number), so a recovered
//! value names the write it came from.
//!
//! While no crash happens, every get and scan must equal the model exactly. After each recovery,
//! per key: the recovered value must come from the last write ordered at or before the durable
//! frontier (the newest `Sync` acknowledgement, or a successful sync, checkpoint, close or
//! compaction that compacted something), or from any later write; a key whose last durable write is
//! a delete must be absent or hold a later write. If any key holds exactly the value a batch wrote,
//! every key of that batch must hold the batch's write or a later one. A crash never yields a
//! corrupt-record report (the simulated disk tears and loses writes but never flips bits); a clean
//! close loses nothing.
//!
//! Seeds: 500 by default (split over two test functions that run in parallel, many seeds per
//! executor), `RINGSTORE_MODEL_SEEDS=N` for another count, `RINGSTORE_MODEL_SEED=N` to replay one.
//! A failure prints the seed, the replay command and the last operations.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::ops::Bound;
use std::pin::Pin;
use std::rc::Rc;

use futures_lite::future::{poll_once, yield_now};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_storage::disk::sim::{SimDisk, SimOp};
use ringstore_storage::{
    BatchOp, Durability, Error, KeyRange, ManualClock, ScanRequest, Store, StoreConfig, Upcoming,
    WriteOptions,
};

const SEEDS_DEFAULT: u64 = 500;
const OPS_PER_SEED: usize = 250;
const KEYS: u32 = 24;
const NO_SEED: u64 = u64::MAX;

thread_local! {
    /// The seed running on this thread (the panic hook runs on the panicking thread).
    static CURRENT_SEED: Cell<u64> = const { Cell::new(NO_SEED) };
    /// The last operations of the current seed, printed when it fails.
    static TRACE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// How often the interesting paths ran, so the test can prove it exercised them.
#[derive(Debug, Default, Clone, Copy)]
struct Coverage {
    recoveries: u64,
    torn_tails: u64,
    batches_discarded: u64,
    compactions: u64,
    poisonings: u64,
    preparer_faults: u64,
    max_segments: u64,
}

thread_local! {
    static COVERAGE: Cell<Coverage> = const { Cell::new(Coverage {
        recoveries: 0,
        torn_tails: 0,
        batches_discarded: 0,
        compactions: 0,
        poisonings: 0,
        preparer_faults: 0,
        max_segments: 0,
    }) };
}

fn cover(f: impl FnOnce(&mut Coverage)) {
    COVERAGE.with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v);
    });
}

fn trace(what: String) {
    TRACE.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() >= 40 {
            t.remove(0);
        }
        t.push(what);
    });
}

/// Prints the seed, the replay command and the trace when the model fails.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let seed = CURRENT_SEED.with(Cell::get);
            if seed != NO_SEED {
                eprintln!("\nmodel test failed at seed {seed}; replay it with:");
                eprintln!(
                    "  RINGSTORE_MODEL_SEED={seed} cargo test --release -p ringstore-storage \
                     --test model"
                );
                TRACE.with(|t| {
                    if let Ok(t) = t.try_borrow() {
                        eprintln!("last operations:\n  {}", t.join("\n  "));
                    }
                });
            }
            default(info);
        }));
    });
}

type Value = Option<Vec<u8>>;

/// One write of a batch: key, sequence number, value (None for a delete).
type BatchWrite = (Vec<u8>, u64, Value);

/// What the store must hold, and what it may hold after a crash.
#[derive(Debug, Default)]
struct Model {
    /// The exact view while the store runs.
    current: BTreeMap<Vec<u8>, Vec<u8>>,
    /// What the last recovery found; all of it is durable.
    baseline: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Writes since the last recovery, per key, in log order.
    history: BTreeMap<Vec<u8>, Vec<(u64, Value)>>,
    batches: Vec<Vec<BatchWrite>>,
    /// Sequence number of the next write (starting at 1).
    next_seq: u64,
    /// Every write with a sequence number up to this one is durable.
    durable_seq: u64,
}

impl Model {
    fn new() -> Model {
        Model { next_seq: 1, ..Model::default() }
    }

    /// Records a write in log order and returns its sequence number.
    fn record(&mut self, key: &[u8], value: Value) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.history.entry(key.to_vec()).or_default().push((seq, value.clone()));
        match value {
            Some(v) => self.current.insert(key.to_vec(), v),
            None => self.current.remove(key),
        };
        seq
    }

    fn durable_upto(&mut self, seq: u64) {
        self.durable_seq = self.durable_seq.max(seq);
    }

    fn all_durable(&mut self) {
        self.durable_upto(self.next_seq - 1);
    }

    /// The values `key` may hold after a crash.
    fn allowed(&self, key: &[u8]) -> Vec<Value> {
        let hist = self.history.get(key).map_or(&[][..], |h| &h[..]);
        let durable = hist.iter().rposition(|(seq, _)| *seq <= self.durable_seq);
        let base = match durable {
            Some(i) => hist[i].1.clone(),
            None => self.baseline.get(key).cloned(),
        };
        let later = durable.map_or(0, |i| i + 1);
        std::iter::once(base).chain(hist[later..].iter().map(|(_, v)| v.clone())).collect()
    }

    /// Sequence number of the write that produced `value` for `key`, if it is a write of the
    /// current history.
    fn seq_of(&self, key: &[u8], value: &Value) -> Option<u64> {
        let hist = self.history.get(key)?;
        hist.iter().find(|(_, v)| v.is_some() && v == value).map(|(seq, _)| *seq)
    }

    /// Whether `value` is `key`'s write `seq` or a later write of it.
    fn is_at_or_after(&self, key: &[u8], seq: u64, value: &Value) -> bool {
        let hist = self.history.get(key).map_or(&[][..], |h| &h[..]);
        hist.iter().any(|(s, v)| *s >= seq && v == value)
    }

    /// Checks a recovered state against the crash rules, then makes it the new baseline.
    fn recovered(&mut self, seed: u64, found: BTreeMap<Vec<u8>, Vec<u8>>) {
        let keys: BTreeSet<&Vec<u8>> =
            self.baseline.keys().chain(self.history.keys()).chain(found.keys()).collect();
        for key in keys {
            let got = found.get(key).cloned();
            let allowed = self.allowed(key);
            assert!(
                allowed.contains(&got),
                "seed {seed}: key {} recovered as {} but only {} are allowed (durable up to {})",
                show(key),
                show_value(&got),
                allowed.iter().map(show_value).collect::<Vec<_>>().join(", "),
                self.durable_seq,
            );
        }
        for batch in &self.batches {
            let applied = batch.iter().any(|(key, seq, value)| {
                value.is_some() && self.seq_of(key, &found.get(key).cloned()) == Some(*seq)
            });
            if !applied {
                continue;
            }
            for (key, seq, _) in batch {
                let got = found.get(key).cloned();
                assert!(
                    self.is_at_or_after(key, *seq, &got),
                    "seed {seed}: batch at {seq} is half applied: key {} holds {}",
                    show(key),
                    show_value(&got)
                );
            }
        }
        self.baseline = found.clone();
        self.current = found;
        self.history.clear();
        self.batches.clear();
        self.all_durable();
    }
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

fn show_value(v: &Value) -> String {
    match v {
        None => "absent".into(),
        Some(v) => format!("write {}", String::from_utf8_lossy(&v[..v.len().min(16)])),
    }
}

fn key_name(k: u32) -> Vec<u8> {
    format!("k{k:02}").into_bytes()
}

/// A value unique to write `seq`: its sequence number in hex, then `len` filler bytes.
fn value_for(seq: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{seq:016x}").into_bytes();
    v.resize(16 + len, seq as u8);
    v
}

/// One write the runner issues: a put, a delete or a batch, with its durability.
#[derive(Clone)]
enum Write {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<BatchOp>),
    /// Every key from the first up to the second (None: no end), one range tombstone.
    RangeDelete(Vec<u8>, Option<Vec<u8>>),
}

impl std::fmt::Debug for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let put = |f: &mut std::fmt::Formatter<'_>, k: &[u8], v: &[u8]| {
            write!(f, "put {}={}+{}", show(k), show(&v[..16]), v.len() - 16)
        };
        match self {
            Write::Put(k, v) => put(f, k, v),
            Write::Delete(k) => write!(f, "delete {}", show(k)),
            Write::RangeDelete(lo, hi) => {
                write!(f, "delete range {}..{}", show(lo), hi.as_deref().map_or("".into(), show))
            }
            Write::Batch(ops) => {
                write!(f, "batch [")?;
                for op in ops {
                    match op {
                        BatchOp::Put { key, value, .. } => put(f, key, value)?,
                        BatchOp::Delete { key } => write!(f, "delete {}", show(key))?,
                    }
                    write!(f, "; ")?;
                }
                write!(f, "]")
            }
        }
    }
}

struct Runner {
    seed: u64,
    rng: StdRng,
    disk: SimDisk,
    clock: ManualClock,
    config: StoreConfig,
    store: Option<Store<SimDisk>>,
    m: Model,
}

type Acks = Rc<RefCell<Vec<Option<bool>>>>;

/// The durability of an issued write and the sequence number of its last record.
type WriteMeta = (Durability, u64);

impl Runner {
    fn store(&self) -> &Store<SimDisk> {
        self.store.as_ref().expect("the store is open")
    }

    fn durability(&mut self) -> Durability {
        [Durability::Sync, Durability::WriteNoSync, Durability::NoSync][self.rng.gen_range(0..3)]
    }

    fn value_len(&mut self) -> usize {
        if self.rng.gen_bool(0.08) {
            self.rng.gen_range(128 * 1024..700 * 1024)
        } else {
            self.rng.gen_range(0..200)
        }
    }

    /// Builds a random write, records it in the model (in the order it will be appended) and
    /// returns it with the sequence number of its last record.
    fn make_write(&mut self) -> (Write, u64) {
        match self.rng.gen_range(0..10) {
            0..=5 => {
                let key = key_name(self.rng.gen_range(0..KEYS));
                let value = value_for(self.m.next_seq, self.value_len());
                let seq = self.m.record(&key, Some(value.clone()));
                (Write::Put(key, value), seq)
            }
            6..=7 => {
                let key = key_name(self.rng.gen_range(0..KEYS));
                let seq = self.m.record(&key, None);
                (Write::Delete(key), seq)
            }
            _ if self.rng.gen_bool(0.25) => self.make_range_delete(),
            _ => self.make_batch(),
        }
    }

    /// A range delete over a few neighbouring keys, sometimes with no end. In the model it is a
    /// delete of every key of the range, in key order (absent keys too: after a crash the
    /// range must be empty unless a later write refilled it).
    fn make_range_delete(&mut self) -> (Write, u64) {
        let lo = self.rng.gen_range(0..KEYS);
        let hi = lo + self.rng.gen_range(1..=8);
        let mut last = 0;
        for k in lo..hi.min(KEYS) {
            last = self.m.record(&key_name(k), None);
        }
        let end = (hi < KEYS || self.rng.gen_bool(0.5)).then(|| key_name(hi));
        (Write::RangeDelete(key_name(lo), end), last)
    }

    fn make_batch(&mut self) -> (Write, u64) {
        let mut keys = BTreeSet::new();
        for _ in 0..self.rng.gen_range(2..7) {
            keys.insert(self.rng.gen_range(0..KEYS));
        }
        let mut ops = Vec::new();
        let mut batch = Vec::new();
        let mut last = 0;
        for k in keys {
            let key = key_name(k);
            if self.rng.gen_bool(0.25) {
                last = self.m.record(&key, None);
                batch.push((key.clone(), last, None));
                ops.push(BatchOp::Delete { key });
            } else {
                let value = value_for(self.m.next_seq, self.rng.gen_range(0..300));
                last = self.m.record(&key, Some(value.clone()));
                batch.push((key.clone(), last, Some(value.clone())));
                ops.push(BatchOp::Put { key, value, version: None, expiry_ms: 0 });
            }
        }
        self.m.batches.push(batch);
        (Write::Batch(ops), last)
    }

    /// Issues `writes` at once (first polls in order, so in log order); each result lands in
    /// `acks` as Some(ok) when its future finishes.
    fn issue<'a>(
        store: &'a Store<SimDisk>,
        writes: Vec<(Write, Durability)>,
        acks: &'a Acks,
    ) -> Pin<Box<dyn Future<Output = ()> + 'a>> {
        // The batch prefetch over the keys about to be written, as the node's read loop asks
        // for it before running a pipeline: a hint that must change nothing the model checks.
        let upcoming: Vec<Upcoming<'_>> = writes
            .iter()
            .filter_map(|(w, _)| match w {
                Write::Put(k, _) | Write::Delete(k) => Some(Upcoming { key: k, write: true }),
                Write::Batch(_) | Write::RangeDelete(..) => None,
            })
            .collect();
        store.prefetch(&upcoming);
        drop(upcoming);
        let futures: Vec<_> = writes
            .into_iter()
            .enumerate()
            .map(move |(i, (w, d))| {
                let acks = acks.clone();
                async move {
                    let r = match &w {
                        Write::Put(k, v) => {
                            store.put(k, v, WriteOptions::durability(d)).await.map(drop)
                        }
                        Write::Delete(k) => store.delete(k, d).await.map(drop),
                        Write::Batch(ops) => store.write_batch(ops, d).await.map(drop),
                        Write::RangeDelete(lo, hi) => {
                            let end = hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                            store.delete_range(Bound::Included(lo), end, d).await.map(drop)
                        }
                    };
                    if let Err(e) = &r {
                        assert!(matches!(e, Error::Poisoned { .. }), "write failed: {e:?}");
                    }
                    acks.borrow_mut()[i] = Some(r.is_ok());
                }
            })
            .collect();
        Box::pin(async move {
            futures::future::join_all(futures).await;
        })
    }

    /// Random writes issued together; returns them with their durabilities and last sequences.
    fn make_group(&mut self, n: usize) -> (Vec<(Write, Durability)>, Vec<WriteMeta>) {
        let mut writes = Vec::new();
        let mut meta = Vec::new();
        for _ in 0..n {
            let (w, seq) = self.make_write();
            let d = self.durability();
            trace(format!("  {w:?} {d:?} -> seq {seq}"));
            writes.push((w, d));
            meta.push((d, seq));
        }
        (writes, meta)
    }

    /// Advances the durable frontier for every acknowledged Sync write.
    fn note_acks(&mut self, meta: &[WriteMeta], acks: &Acks) {
        for (i, (d, seq)) in meta.iter().enumerate() {
            if *d == Durability::Sync && acks.borrow()[i] == Some(true) {
                self.m.durable_upto(*seq);
            }
        }
    }

    async fn writes(&mut self) {
        let n = if self.rng.gen_bool(0.3) { self.rng.gen_range(2..6) } else { 1 };
        let (writes, meta) = self.make_group(n);
        let acks: Acks = Rc::new(RefCell::new(vec![None; n]));
        Self::issue(self.store(), writes, &acks).await;
        assert!(
            acks.borrow().iter().all(|a| *a == Some(true)),
            "seed {}: a write failed",
            self.seed
        );
        self.note_acks(&meta, &acks);
    }

    async fn get(&mut self) {
        let key = key_name(self.rng.gen_range(0..KEYS));
        let got = self.store().get(&key).await.expect("get").map(|v| v.value.to_vec());
        assert!(
            got.as_ref() == self.m.current.get(&key),
            "seed {}: get {} returned {} but the model has {}",
            self.seed,
            show(&key),
            show_value(&got),
            show_value(&self.m.current.get(&key).cloned())
        );
    }

    fn random_range(&mut self) -> KeyRange {
        let bound = |rng: &mut StdRng| {
            let key = format!("k{}", rng.gen_range(0..30)).into_bytes();
            match rng.gen_range(0..3) {
                0 => Bound::Included(key),
                1 => Bound::Excluded(key),
                _ => Bound::Unbounded,
            }
        };
        match self.rng.gen_range(0..3) {
            0 => KeyRange::Prefix(format!("k{}", self.rng.gen_range(0..3)).into_bytes()),
            1 => KeyRange::Prefix(Vec::new()),
            _ => KeyRange::Range { start: bound(&mut self.rng), end: bound(&mut self.rng) },
        }
    }

    async fn scan(&mut self) {
        let range = self.random_range();
        let reverse = self.rng.gen_bool(0.5);
        let limit = self.rng.gen_range(1..12);
        let keys_only = self.rng.gen_bool(0.2);
        let req = ScanRequest { range: range.clone(), reverse, limit, resume: None, keys_only };
        let pages = common::scan_pages(self.store(), req.clone()).await.expect("scan");
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            pages.into_iter().flatten().map(|r| (r.key.to_vec(), r.value.to_vec())).collect();
        let mut want: Vec<(Vec<u8>, Vec<u8>)> = self
            .m
            .current
            .iter()
            .filter(|(k, _)| match &range {
                KeyRange::Prefix(p) => k.starts_with(p),
                KeyRange::Range { start, end } => {
                    (match start {
                        Bound::Included(s) => *k >= s,
                        Bound::Excluded(s) => *k > s,
                        Bound::Unbounded => true,
                    }) && (match end {
                        Bound::Included(e) => *k <= e,
                        Bound::Excluded(e) => *k < e,
                        Bound::Unbounded => true,
                    })
                }
            })
            .map(|(k, v)| (k.clone(), if keys_only { Vec::new() } else { v.clone() }))
            .collect();
        if reverse {
            want.reverse();
        }
        assert!(got == want, "seed {}: scan {req:?} differs from the model", self.seed);
    }

    async fn maintenance(&mut self) {
        let what = self.rng.gen_range(0..3);
        trace(format!("  {}", ["checkpoint", "compact", "sync"][what]));
        let store = self.store();
        // A checkpoint and a sync make every earlier write durable; a compaction only does so
        // when it found something to compact (it checkpoints then).
        let durable = match what {
            0 => store.checkpoint().await.map(|_| true),
            1 => store.compact().await.map(|r| {
                cover(|c| c.compactions += r.segments_compacted);
                r.segments_compacted > 0
            }),
            _ => store.sync().await.map(|()| true),
        };
        if durable.expect("maintenance") {
            self.m.all_durable();
        }
    }

    /// Power loss, then recovery and the crash checks.
    async fn crash_and_recover(&mut self) {
        if self.rng.gen_bool(0.6) {
            trace("  power loss (seeded)".into());
            self.disk.crash();
        } else {
            trace("  power loss (all unsynced lost)".into());
            self.disk.crash_losing_all_unsynced();
        }
        self.store = None;
        self.reopen().await;
    }

    async fn reopen(&mut self) {
        let store = common::open_sim(&self.disk, self.config.clone(), &self.clock)
            .await
            .unwrap_or_else(|e| panic!("seed {}: reopen failed: {e}", self.seed));
        let report = store.recovery_report().clone();
        trace(format!(
            "  recovered: {} replayed, torn {:?}, corrupt {}, batches dropped {}",
            report.records_replayed,
            report.torn_tails.iter().map(|t| (t.0, t.1)).collect::<Vec<_>>(),
            report.corrupt.len(),
            report.batches_discarded
        ));
        cover(|c| {
            c.recoveries += 1;
            c.torn_tails += report.torn_tails.len() as u64;
            c.batches_discarded += report.batches_discarded;
            c.max_segments = c.max_segments.max(report.segments);
        });
        assert!(
            report.corrupt.is_empty(),
            "seed {}: a crash must not produce corrupt records: {:?}",
            self.seed,
            report.corrupt
        );
        let found = common::dump(&store).await.expect("scan after recovery");
        for k in 0..KEYS {
            let key = key_name(k);
            let got = store.get(&key).await.expect("get after recovery").map(|v| v.value.to_vec());
            assert!(got.as_ref() == found.get(&key), "seed {}: get and scan disagree", self.seed);
        }
        self.m.recovered(self.seed, found);
        self.store = Some(store);
    }

    async fn close_and_reopen(&mut self) {
        let store = self.store.take().expect("open");
        store.close().await.expect("close");
        self.m.all_durable();
        let want = self.m.current.clone();
        self.reopen().await;
        assert!(self.m.current == want, "seed {}: a clean close lost writes", self.seed);
    }

    /// An injected write or fsync failure: the store must poison itself.
    async fn fault(&mut self) {
        let op = if self.rng.gen_bool(0.5) { SimOp::Write } else { SimOp::Fsync };
        trace(format!("  inject {op:?} failure"));
        self.disk.fail_next(op);
        let key = key_name(self.rng.gen_range(0..KEYS));
        let value = value_for(self.m.next_seq, 10);
        self.m.record(&key, Some(value.clone()));
        let faults = self.disk.stats().injected_faults;
        let r = self.store().put(&key, &value, WriteOptions::durability(Durability::Sync)).await;
        if r.is_ok() {
            // The segment preparer's zero writes and its fdatasync share the disk with the log:
            // the failure went to one of them, and a failed preparation must not poison. The
            // synced put made every earlier write durable.
            assert!(self.disk.stats().injected_faults > faults, "seed {}: no fault", self.seed);
            assert!(self.store().stats().poisoned.is_none(), "seed {}", self.seed);
            cover(|c| c.preparer_faults += 1);
            self.m.all_durable();
            return;
        }
        assert!(matches!(r, Err(Error::Poisoned { .. })), "seed {}: got {r:?}", self.seed);
        cover(|c| c.poisonings += 1);
        let again = self.store().put(&key, b"refused", WriteOptions::default()).await;
        assert!(matches!(again, Err(Error::Poisoned { .. })), "seed {}: got {again:?}", self.seed);
        self.crash_and_recover().await;
    }

    /// Starts an operation, lets it run for a random number of steps, then cuts the power.
    async fn crash_during(&mut self) {
        let steps = self.rng.gen_range(0..60);
        let kind = self.rng.gen_range(0..4);
        let n = self.rng.gen_range(1..5);
        let (writes, meta) = if kind == 0 { self.make_group(n) } else { (Vec::new(), Vec::new()) };
        let acks: Acks = Rc::new(RefCell::new(vec![None; writes.len()]));
        let done = Rc::new(RefCell::new(false));
        trace(format!("  crash during op {kind} after {steps} steps"));
        let store = self.store.take().expect("open");
        {
            let s = &store;
            let mut fut: Pin<Box<dyn Future<Output = ()> + '_>> = match kind {
                0 => Self::issue(s, writes, &acks),
                1 => {
                    let done = done.clone();
                    Box::pin(async move {
                        *done.borrow_mut() =
                            s.compact().await.is_ok_and(|r| r.segments_compacted > 0)
                    })
                }
                2 => {
                    let done = done.clone();
                    Box::pin(async move { *done.borrow_mut() = s.checkpoint().await.is_ok() })
                }
                _ => Box::pin(async { yield_now().await }),
            };
            for _ in 0..steps {
                if poll_once(&mut fut).await.is_some() {
                    break;
                }
                yield_now().await;
            }
        }
        self.note_acks(&meta, &acks);
        if *done.borrow() {
            self.m.all_durable();
        }
        drop(store);
        self.crash_and_recover().await;
    }

    async fn step(&mut self, i: usize) {
        let pick = self.rng.gen_range(0..100);
        trace(format!(
            "op {i}: {}",
            match pick {
                0..=49 => "writes",
                50..=61 => "get",
                62..=71 => "scan",
                72..=79 => "maintenance",
                80..=85 => "crash",
                86..=88 => "close and reopen",
                89..=92 => "fault",
                _ => "crash during",
            }
        ));
        match pick {
            0..=49 => self.writes().await,
            50..=61 => self.get().await,
            62..=71 => self.scan().await,
            72..=79 => self.maintenance().await,
            80..=85 => self.crash_and_recover().await,
            86..=88 => self.close_and_reopen().await,
            89..=92 => self.fault().await,
            _ => self.crash_during().await,
        }
    }
}

async fn run_seed(seed: u64) {
    CURRENT_SEED.with(|c| c.set(seed));
    TRACE.with(|t| t.borrow_mut().clear());
    let disk = common::sim(seed);
    let clock = ManualClock::new(common::T0_MS);
    let config = common::test_config();
    let mut runner = Runner {
        seed,
        rng: StdRng::seed_from_u64(seed),
        disk,
        clock,
        config,
        store: None,
        m: Model::new(),
    };
    runner.reopen().await;
    for i in 0..OPS_PER_SEED {
        runner.step(i).await;
    }
    // A final power loss checks whatever the last operations left behind.
    runner.crash_and_recover().await;
    runner.close_and_reopen().await;
    runner.store.take().expect("open").close().await.expect("close");
    CURRENT_SEED.with(|c| c.set(NO_SEED));
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(v.parse().unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}")))
}

/// Runs this half's share of the seeds on one executor; returns how many ran.
fn run_half(half: u64) -> u64 {
    install_panic_hook();
    let seeds: Vec<u64> = match env_u64("RINGSTORE_MODEL_SEED") {
        Some(seed) => vec![seed],
        None => (0..env_u64("RINGSTORE_MODEL_SEEDS").unwrap_or(SEEDS_DEFAULT)).collect(),
    };
    let mine: Vec<u64> = seeds.into_iter().filter(|s| s % 2 == half).collect();
    let count = mine.len() as u64;
    let coverage = common::run(move || async move {
        for seed in mine {
            run_seed(seed).await;
        }
        COVERAGE.with(Cell::get)
    });
    eprintln!("model half {half}: {count} seeds, {coverage:?}");
    if count >= 100 {
        // Enough seeds must reach every path the test is about.
        assert!(coverage.torn_tails > 0, "no torn tail recovered: {coverage:?}");
        assert!(coverage.batches_discarded > 0, "no batch discarded: {coverage:?}");
        assert!(coverage.compactions > 0, "nothing compacted: {coverage:?}");
        assert!(coverage.poisonings > 0, "no store poisoned: {coverage:?}");
        assert!(coverage.max_segments >= 3, "segments never rotated: {coverage:?}");
    }
    count
}

fn expected_count(half: u64) -> u64 {
    match env_u64("RINGSTORE_MODEL_SEED") {
        Some(seed) => u64::from(seed % 2 == half),
        None => (env_u64("RINGSTORE_MODEL_SEEDS").unwrap_or(SEEDS_DEFAULT) + 1 - half) / 2,
    }
}

#[test]
fn model_even_seeds() {
    assert_eq!(run_half(0), expected_count(0));
}

#[test]
fn model_odd_seeds() {
    assert_eq!(run_half(1), expected_count(1));
}
