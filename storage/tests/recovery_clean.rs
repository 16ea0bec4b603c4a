//! Proves that a cleanly closed store reopens with exactly what was written: every value with its
//! version and expiry, every delete, every batch, and expiries judged by the clock at read time.
//!
//! Each scenario runs three sessions on the simulated disk against a `BTreeMap` model: write a mix
//! of puts (all three durabilities, explicit and clock versions, expiring and permanent),
//! overwrites, deletes and atomic batches; close; reopen and compare every key with `get` and a
//! full scan; write more; close; reopen and compare again. It runs once trusting the checkpoint
//! that `close` writes and once deleting that checkpoint before each reopen, which forces recovery
//! to rebuild the index by replaying the whole log (the report must then show no checkpoint and
//! replayed records). Both also prove that a reopened store keeps accepting writes and that LSNs
//! keep increasing across sessions, never reusing one.

mod common;

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_storage::disk::sim::SimDisk;
use ringstore_storage::disk::Disk;
use ringstore_storage::{BatchOp, Clock, Durability, ManualClock, Store, WriteOptions};

/// key -> (value, version, expiry_ms)
type Model = BTreeMap<Vec<u8>, (Vec<u8>, u64, u64)>;

struct Session<'a> {
    store: &'a Store<SimDisk>,
    model: &'a mut Model,
    rng: StdRng,
    clock: &'a ManualClock,
    /// The highest LSN any receipt has shown so far.
    lsn_max: u64,
}

impl Session<'_> {
    fn key(&mut self) -> Vec<u8> {
        format!("key-{:04}", self.rng.gen_range(0..400)).into_bytes()
    }

    fn durability(&mut self) -> Durability {
        [Durability::Sync, Durability::WriteNoSync, Durability::NoSync][self.rng.gen_range(0..3)]
    }

    fn expiry(&mut self) -> u64 {
        let now = self.clock.now_ms();
        match self.rng.gen_range(0..6) {
            0 => now + 500,
            1 => now + 1_000_000,
            _ => 0,
        }
    }

    fn note_lsn(&mut self, lsn: u64, records: u64) {
        assert!(lsn > self.lsn_max, "LSN {lsn} does not follow {}", self.lsn_max);
        self.lsn_max = lsn + records - 1;
    }

    async fn put(&mut self) {
        let key = self.key();
        let value = format!("value of {key:?} #{}", self.rng.gen::<u32>()).into_bytes();
        let version = self.rng.gen_bool(0.5).then(|| self.rng.gen_range(1..1_000_000));
        let expiry_ms = self.expiry();
        let opts = WriteOptions { durability: self.durability(), version, expiry_ms };
        let receipt = self.store.put(&key, &value, opts).await.expect("put");
        assert_eq!(receipt.version, version.unwrap_or(self.clock.now_ms()));
        self.note_lsn(receipt.lsn, 1);
        self.model.insert(key, (value, receipt.version, expiry_ms));
    }

    async fn delete(&mut self) {
        let key = self.key();
        let d = self.durability();
        self.store.delete(&key, d).await.expect("delete");
        self.model.remove(&key);
        self.lsn_max += 1;
    }

    async fn batch(&mut self) {
        let mut ops = Vec::new();
        let mut keys = std::collections::BTreeSet::new();
        for _ in 0..self.rng.gen_range(1..8) {
            let key = self.key();
            if !keys.insert(key.clone()) {
                continue;
            }
            if self.rng.gen_bool(0.3) {
                ops.push(BatchOp::Delete { key });
            } else {
                let value = format!("batch value #{}", self.rng.gen::<u32>()).into_bytes();
                let expiry_ms = self.expiry();
                ops.push(BatchOp::Put { key, value, version: None, expiry_ms });
            }
        }
        let d = self.durability();
        let receipt = self.store.write_batch(&ops, d).await.expect("batch");
        self.note_lsn(receipt.lsn, ops.len() as u64);
        for op in ops {
            match op {
                BatchOp::Put { key, value, expiry_ms, .. } => {
                    self.model.insert(key, (value, receipt.version, expiry_ms));
                }
                BatchOp::Delete { key } => {
                    self.model.remove(&key);
                }
            }
        }
    }

    async fn write_some(&mut self, ops: usize) {
        for _ in 0..ops {
            match self.rng.gen_range(0..10) {
                0..=5 => self.put().await,
                6..=7 => self.delete().await,
                _ => self.batch().await,
            }
        }
    }
}

/// Every key of the model (and some never written) reads back as the model says at `now`.
async fn verify(store: &Store<SimDisk>, model: &Model, now: u64) {
    let live: BTreeMap<Vec<u8>, Vec<u8>> = model
        .iter()
        .filter(|(_, (_, _, e))| *e == 0 || *e > now)
        .map(|(k, (v, _, _))| (k.clone(), v.clone()))
        .collect();
    assert_eq!(common::dump(store).await.expect("scan"), live, "full scan after reopen");
    for i in 0..400 {
        let key = format!("key-{i:04}").into_bytes();
        let got = store.get(&key).await.expect("get");
        let want = model.get(&key).filter(|(_, _, e)| *e == 0 || *e > now);
        match (got, want) {
            (None, None) => {}
            (Some(g), Some((v, version, expiry))) => {
                assert_eq!(&g.value[..], &v[..], "value of key {i}");
                assert_eq!((g.version, g.expiry_ms), (*version, *expiry), "meta of key {i}");
            }
            (g, w) => panic!("key {i}: store has {g:?}, model has {w:?}"),
        }
    }
}

async fn remove_checkpoint(disk: &SimDisk) {
    disk.remove(&common::checkpoint_path()).await.expect("remove checkpoint");
    disk.sync_dir(std::path::Path::new(common::SIM_DIR)).await.expect("sync dir");
}

fn three_sessions(drop_checkpoint: bool) {
    common::run(move || async move {
        let disk = common::sim(21);
        let clock = ManualClock::new(common::T0_MS);
        let mut model = Model::new();
        let mut lsn_max = 0;
        let mut rng = StdRng::seed_from_u64(u64::from(drop_checkpoint));
        for session in 0..3 {
            let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
            let report = store.recovery_report().clone();
            if session > 0 {
                if drop_checkpoint {
                    assert_eq!(report.checkpoint_lsn, None, "checkpoint was removed");
                    assert!(report.records_replayed > 0, "the log must be replayed: {report:?}");
                } else {
                    assert_eq!(report.checkpoint_lsn, Some(lsn_max), "close checkpoints all");
                }
                assert!(report.corrupt.is_empty(), "{report:?}");
                assert!(report.torn_tails.is_empty(), "{report:?}");
                assert!(store.stats().next_lsn > lsn_max, "LSNs go on after the last one");
                verify(&store, &model, clock.now_ms()).await;
            }
            let mut s = Session {
                store: &store,
                model: &mut model,
                rng: StdRng::seed_from_u64(rng.gen()),
                clock: &clock,
                lsn_max,
            };
            s.write_some(1_500).await;
            lsn_max = s.lsn_max;
            verify(&store, &model, clock.now_ms()).await;
            store.close().await.expect("close");
            // Between sessions time passes: the short expiries lapse.
            clock.advance(1_000);
            if drop_checkpoint {
                remove_checkpoint(&disk).await;
            }
        }
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        verify(&store, &model, clock.now_ms()).await;
        let receipt = store.put(b"after", b"last", WriteOptions::default()).await.expect("put");
        assert!(receipt.lsn > lsn_max);
        store.close().await.expect("close");
    });
}

#[test]
fn clean_reopen_with_checkpoint_restores_everything() {
    three_sessions(false);
}

#[test]
fn clean_reopen_replaying_the_whole_log_restores_everything() {
    three_sessions(true);
}
