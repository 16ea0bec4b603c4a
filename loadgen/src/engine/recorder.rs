//! One worker's measurements: latency histograms per operation type (corrected and, in open
//! loop, uncorrected), per-interval figures sent to the controller each second, and how many
//! requests went to each shard and partition.

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

#[derive(Debug)]
pub struct Recorder {
    open_loop: bool,
    ok: [u64; 5],
    errors: [u64; 5],
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

    /// An operation completed during the measured phase.
    pub fn done(&mut self, kind: OpKind, ok: bool, intended: Instant, sent: Instant, at: Instant) {
        let i = kind.index();
        if ok {
            self.ok[i] += 1;
        } else {
            self.errors[i] += 1;
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
                errors: self.errors[kind.index()],
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
                o.errors += r.errors;
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
