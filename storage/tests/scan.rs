//! Proves that scans return exactly the live rows of their range, in order, and that paging
//! neither loses nor repeats a row.
//!
//! A store on the simulated disk gets a few thousand random short keys (over a small alphabet with
//! 0x00 and 0xff bytes, so prefixes and successor keys are exercised), enough to force an index
//! merge, then more puts, overwrites and deletes so keys sit in both the sorted run and the delta,
//! some values only in memory, some on disk. Some rows carry expiries; a [`ManualClock`] moves past
//! them. Every scan is compared with a `BTreeMap` model: prefix scans and range scans with every
//! combination of `Bound` kinds, forward and reverse, at several page sizes; the concatenated pages
//! must equal the model's rows exactly (so no duplicates and no gaps) in both directions, and
//! `keys_only` must return the same keys with empty values. Limits of 0 and above `SCAN_LIMIT_MAX`
//! are typed errors.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_storage::constants::SCAN_LIMIT_MAX;
use ringstore_storage::{
    Durability, Error, KeyRange, ManualClock, Row, ScanRequest, Store, WriteOptions,
};

/// key -> (value, version, expiry_ms)
type Model = BTreeMap<Vec<u8>, (Vec<u8>, u64, u64)>;

const ALPHABET: [u8; 6] = [0x00, 0x01, b'a', b'b', 0xfe, 0xff];

fn random_key(rng: &mut StdRng) -> Vec<u8> {
    let len = rng.gen_range(1..=6);
    (0..len).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())]).collect()
}

fn random_bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Included(random_key(rng)),
        1 => Bound::Excluded(random_key(rng)),
        _ => Bound::Unbounded,
    }
}

fn in_range(key: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let after_start = match start {
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    };
    let before_end = match end {
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    };
    after_start && before_end
}

/// The rows the model says a scan of `range` returns at time `now`.
fn expected(model: &Model, range: &KeyRange, reverse: bool, now: u64) -> Vec<Row> {
    let mut rows: Vec<Row> = model
        .iter()
        .filter(|(k, _)| match range {
            KeyRange::Prefix(p) => k.starts_with(p),
            KeyRange::Range { start, end } => in_range(k, start, end),
        })
        .filter(|(_, (_, _, expiry))| *expiry == 0 || *expiry > now)
        .map(|(k, (v, version, expiry))| Row {
            key: k.clone().into(),
            value: v.clone().into(),
            version: *version,
            expiry_ms: *expiry,
        })
        .collect();
    if reverse {
        rows.reverse();
    }
    rows
}

/// Scans `range` at several page sizes, both directions, with and without values, and compares
/// every result with the model.
async fn check_range(
    store: &Store<ringstore_storage::disk::sim::SimDisk>,
    model: &Model,
    range: KeyRange,
    now: u64,
) {
    for reverse in [false, true] {
        let want = expected(model, &range, reverse, now);
        let mut limits = vec![3, 64, SCAN_LIMIT_MAX];
        if want.len() <= 300 {
            limits.push(1);
        }
        for limit in limits {
            for keys_only in [false, true] {
                let req =
                    ScanRequest { range: range.clone(), reverse, limit, resume: None, keys_only };
                let pages = common::scan_pages(store, req.clone()).await.expect("scan");
                let got: Vec<Row> = pages.into_iter().flatten().collect();
                let want: Vec<Row> = if keys_only {
                    want.iter().map(|r| Row { value: Default::default(), ..r.clone() }).collect()
                } else {
                    want.clone()
                };
                assert_eq!(got.len(), want.len(), "row count of {req:?}");
                assert!(got == want, "rows of {req:?} differ from the model");
                if keys_only {
                    assert!(got.iter().all(|r| r.value.is_empty()), "keys_only returned values");
                }
            }
        }
    }
}

async fn put(
    store: &Store<ringstore_storage::disk::sim::SimDisk>,
    model: &mut Model,
    rng: &mut StdRng,
    key: Vec<u8>,
    now: u64,
) {
    let value: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
    let expiry_ms = if rng.gen_bool(0.15) { now + rng.gen_range(1..2_000) } else { 0 };
    let version = now + rng.gen_range(0..1_000);
    let durability = match rng.gen_range(0..3) {
        0 => Durability::Sync,
        1 => Durability::WriteNoSync,
        _ => Durability::NoSync,
    };
    let opts = WriteOptions { durability, version: Some(version), expiry_ms };
    store.put(&key, &value, opts).await.expect("put");
    model.insert(key, (value, version, expiry_ms));
}

async fn check_all(
    store: &Store<ringstore_storage::disk::sim::SimDisk>,
    model: &Model,
    rng: &mut StdRng,
    now: u64,
) {
    let prefixes: [&[u8]; 8] =
        [b"", b"a", b"ab", &[0xff], &[0xff, 0xff], &[b'a', 0xff], &[0x00], &[0xfe, 0xff, 0xff]];
    for p in prefixes {
        check_range(store, model, KeyRange::Prefix(p.to_vec()), now).await;
    }
    for _ in 0..6 {
        check_range(store, model, KeyRange::Prefix(random_key(rng)[..1].to_vec()), now).await;
    }
    for start_kind in 0..3 {
        for end_kind in 0..3 {
            for _ in 0..3 {
                let mut pick = |kind: u32| {
                    let k = random_key(rng);
                    match kind {
                        0 => Bound::Included(k),
                        1 => Bound::Excluded(k),
                        _ => Bound::Unbounded,
                    }
                };
                let (start, end) = (pick(start_kind), pick(end_kind));
                check_range(store, model, KeyRange::Range { start, end }, now).await;
            }
        }
    }
    // Bounds taken from existing keys hit the Included/Excluded edge exactly.
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for _ in 0..10 {
        let a = keys[rng.gen_range(0..keys.len())].clone();
        let b = keys[rng.gen_range(0..keys.len())].clone();
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        for (start, end) in [
            (Bound::Included(lo.clone()), Bound::Included(hi.clone())),
            (Bound::Excluded(lo.clone()), Bound::Excluded(hi.clone())),
            (Bound::Included(lo.clone()), Bound::Excluded(hi.clone())),
            (Bound::Excluded(lo.clone()), Bound::Included(hi.clone())),
            (Bound::Included(lo.clone()), Bound::Included(lo.clone())),
            (Bound::Excluded(lo.clone()), Bound::Included(lo.clone())),
            (Bound::Included(hi.clone()), Bound::Excluded(lo.clone())),
        ] {
            check_range(store, model, KeyRange::Range { start, end }, now).await;
        }
    }
    for _ in 0..5 {
        let range = KeyRange::Range { start: random_bound(rng), end: random_bound(rng) };
        check_range(store, model, range, now).await;
    }
}

#[test]
fn scans_match_a_btreemap_in_every_direction_bound_and_page_size() {
    common::run(|| async {
        let mut rng = StdRng::seed_from_u64(0x5ca7);
        let disk = common::sim(11);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        let mut model = Model::new();
        let now = common::T0_MS;
        // Enough distinct keys to push the index past its first merge (4096 delta keys).
        while model.len() < 6_000 {
            let key = random_key(&mut rng);
            put(&store, &mut model, &mut rng, key, now).await;
        }
        store.sync().await.expect("sync");
        check_all(&store, &model, &mut rng, now).await;

        // New keys land in the delta, overwrites and deletes hit both parts.
        for _ in 0..3_000 {
            let key = random_key(&mut rng);
            if rng.gen_bool(0.3) {
                let existed = model.remove(&key).is_some_and(|(_, _, e)| e == 0 || e > now);
                let d = if rng.gen_bool(0.5) { Durability::Sync } else { Durability::NoSync };
                assert_eq!(store.delete(&key, d).await.expect("delete"), existed, "delete result");
            } else {
                put(&store, &mut model, &mut rng, key, now).await;
            }
        }
        check_all(&store, &model, &mut rng, now).await;

        // Every expiry passes: expired rows vanish from every scan.
        let later = now + 5_000;
        clock.set(later);
        let expiring = model.values().filter(|(_, _, e)| *e != 0).count();
        assert!(expiring > 100, "the load must include expiring rows");
        check_all(&store, &model, &mut rng, later).await;
        let live = common::dump(&store).await.expect("dump");
        assert_eq!(live.len(), model.len() - expiring);
        store.close().await.expect("close");
    });
}

#[test]
fn out_of_range_limits_are_typed_errors() {
    common::run(|| async {
        let disk = common::sim(12);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        store.put(b"k", b"v", WriteOptions::default()).await.expect("put");
        for limit in [0, SCAN_LIMIT_MAX + 1, usize::MAX] {
            for reverse in [false, true] {
                let req = ScanRequest { limit, reverse, ..ScanRequest::prefix(b"", 1) };
                match store.scan(&req).await {
                    Err(Error::ScanLimit { limit: l, max }) => {
                        assert_eq!((l, max), (limit, SCAN_LIMIT_MAX));
                    }
                    other => panic!("limit {limit}: expected ScanLimit, got {other:?}"),
                }
            }
        }
        let page = store.scan(&ScanRequest::prefix(b"", SCAN_LIMIT_MAX)).await.expect("max");
        assert_eq!(page.rows.len(), 1);
        assert_eq!(page.resume, None);
        let page = store.scan(&ScanRequest::prefix(b"", 1)).await.expect("one");
        assert_eq!(page.rows.len(), 1);
        assert_eq!(page.resume, Some(b"k".to_vec()), "a full page offers a resume key");
        let next = ScanRequest { resume: page.resume, ..ScanRequest::prefix(b"", 1) };
        assert_eq!(store.scan(&next).await.expect("after").rows.len(), 0);
        store.close().await.expect("close");
    });
}
