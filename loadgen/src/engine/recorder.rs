//! One worker's measurements: latency histograms per operation type (corrected and, in open
//! loop, uncorrected), per-interval figures sent to the controller each second, and how many
//! requests went to each shard and partition.

use std::collections::BTreeMap;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::results::{latency_histogram, OpKind, OpResult};

/// One worker's part of one interval, sent to the controller.
#[derive(Debug)]
pub struct IntervalPart {
    pub index: u64,
    pub ops: u64,
    pub errors: u64,
    /// Latency per operation type (by [`OpKind::index`]); None where nothing completed.
    pub latency_us: Vec<Option<Histogram<u64>>>,
    pub shard_ops: Vec<u64>,
}

/// When an operation was due, sent and answered.
#[derive(Debug, Clone, Copy)]
pub struct OpTimes {
    /// When the schedule meant to send it (open loop), or when it was sent (closed loop).
    pub intended: Instant,
    pub sent: Instant,
    pub at: Instant,
}

#[derive(Debug)]
pub struct Recorder {
    open_loop: bool,
    ok: [u64; 5],
    errors: [u64; 5],
    /// Reads (and read-modify-writes) answered "no such row".
    not_found: [u64; 5],
    /// Errors per status code, per operation type.
    by_status: [BTreeMap<u16, u64>; 5],
    latency: Vec<Histogram<u64>>,
    uncorrected: Vec<Histogram<u64>>,
    interval: IntervalPart,
    pub shard_ops: Vec<u64>,
    pub partition_ops: Vec<u64>,
    /// Completion time of the last measured operation.
    pub last_done: Option<Instant>,
}

impl Recorder {
    pub fn new(open_loop: bool, shards: usize, partitions: usize) -> Recorder {
        let hists = |n| (0..n).map(|_| latency_histogram()).collect::<Vec<_>>();
        Recorder {
            open_loop,
            ok: [0; 5],
            errors: [0; 5],
            not_found: [0; 5],
            by_status: Default::default(),
            latency: hists(5),
            uncorrected: hists(if open_loop { 5 } else { 0 }),
            interval: IntervalPart {
                index: 0,
                ops: 0,
                errors: 0,
                latency_us: (0..5).map(|_| None).collect(),
                shard_ops: vec![0; shards],
            },
            shard_ops: vec![0; shards],
            partition_ops: vec![0; partitions],
            last_done: None,
        }
    }

    /// A request sent during the measured phase.
    pub fn sent(&mut self, shard: usize, partition: Option<u32>) {
        self.shard_ops[shard] += 1;
        self.interval.shard_ops[shard] += 1;
        if let Some(p) = partition {
            self.partition_ops[p as usize] += 1;
        }
    }

    /// An operation completed during the measured phase with `status` (0: success;
    /// `not_found`: a read that found no row).
    pub fn done(&mut self, kind: OpKind, status: u16, not_found: bool, times: OpTimes) {
        let OpTimes { intended, sent, at } = times;
        let i = kind.index();
        if status == 0 {
            self.ok[i] += 1;
            self.not_found[i] += u64::from(not_found);
        } else {
            self.errors[i] += 1;
            *self.by_status[i].entry(status).or_insert(0) += 1;
            self.interval.errors += 1;
        }
        self.interval.ops += 1;
        let us = |from: Instant| (at.saturating_duration_since(from).as_micros() as u64).max(1);
        let corrected = us(intended);
        self.latency[i].saturating_record(corrected);
        self.interval.latency_us[i]
            .get_or_insert_with(latency_histogram)
            .saturating_record(corrected);
        if self.open_loop {
            self.uncorrected[i].saturating_record(us(sent));
        }
        self.last_done = Some(at);
    }

    /// Hands over the current interval's figures and starts the next one.
    pub fn take_interval(&mut self) -> IntervalPart {
        let shards = self.interval.shard_ops.len();
        let next = IntervalPart {
            index: self.interval.index + 1,
            ops: 0,
            errors: 0,
            latency_us: (0..5).map(|_| None).collect(),
            shard_ops: vec![0; shards],
        };
        std::mem::replace(&mut self.interval, next)
    }

    /// The per-type results, for the types that occurred.
    pub fn results(&self) -> Vec<OpResult> {
        OpKind::ALL
            .iter()
            .filter(|k| self.ok[k.index()] + self.errors[k.index()] > 0)
            .map(|&kind| OpResult {
                kind,
                ok: self.ok[kind.index()],
                not_found: self.not_found[kind.index()],
                errors: self.errors[kind.index()],
                errors_by_status: self.by_status[kind.index()].clone(),
                latency_us: self.latency[kind.index()].clone(),
                uncorrected_us: self.open_loop.then(|| self.uncorrected[kind.index()].clone()),
            })
            .collect()
    }
}

/// Adds `from` into `into`, matching operation types.
pub fn merge_results(into: &mut Vec<OpResult>, from: Vec<OpResult>) {
    for r in from {
        match into.iter_mut().find(|o| o.kind == r.kind) {
            Some(o) => {
                o.ok += r.ok;
                o.not_found += r.not_found;
                o.errors += r.errors;
                for (code, n) in r.errors_by_status {
                    *o.errors_by_status.entry(code).or_insert(0) += n;
                }
                o.latency_us.add(&r.latency_us).expect("same bounds");
                if let (Some(a), Some(b)) = (o.uncorrected_us.as_mut(), r.uncorrected_us.as_ref()) {
                    a.add(b).expect("same bounds");
                }
            }
            None => into.push(r),
        }
    }
    into.sort_by_key(|o| o.kind);
}

/// Adds one count vector into another of the same length.
pub fn add_counts(into: &mut [u64], from: &[u64]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}
