//! Proves the index behaves like `std::collections::BTreeMap` under random operations that cross
//! many merges, that checkpoints round-trip and reject every kind of damaged section without
//! panicking, and that `memory_bytes()` is the exact sum of buffer capacities within 32 B/key.
//! Randomized tests use `StdRng` with a fixed seed that every assertion message prints.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zerocopy::IntoBytes;

use super::entry::dead_entry;
use super::*;

type Model = BTreeMap<Vec<u8>, IndexEntry>;

/// The hints a record cache would keep: per key, the one its last upsert returned (a delete drops
/// it, as the cache drops the key). Hints outlive merges here, so stale ones are offered too.
type Hints = HashMap<Vec<u8>, IndexHint>;

fn random_entry(rng: &mut StdRng) -> IndexEntry {
    let loc = Location::new(
        rng.gen_range(0..1000),
        rng.gen_range(0..1 << 20) * 8,
        8 * rng.gen_range(1..512),
    );
    IndexEntry::new(loc, rng.gen(), rng.gen_range(0..3))
}

/// Keys from a small space so that operations hit existing keys often: short keys, keys behind a
/// shared table prefix, and long keys that share more than 8 bytes so samples tie.
fn random_key(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0..=2 => (0..rng.gen_range(1..4)).map(|_| rng.gen_range(0..4u8)).collect(),
        3..=7 => {
            let mut k = b"table\x00\x01/".to_vec();
            k.extend_from_slice(&rng.gen_range(0..2000u32).to_be_bytes());
            k
        }
        8 => {
            let mut k = vec![b'L'; rng.gen_range(9..40)];
            k.push(rng.gen_range(0..50));
            k
        }
        _ => {
            let mut k = vec![0xFF; rng.gen_range(1..=KEY_BYTES_MAX)];
            k[0] = rng.gen_range(0xF0..=0xFF);
            k
        }
    }
}

fn random_bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(random_key(rng)),
        _ => Bound::Excluded(random_key(rng)),
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(|k| k.as_slice())
}

fn model_range(
    model: &Model,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    rev: bool,
) -> Vec<(Vec<u8>, IndexEntry)> {
    let in_range = |k: &[u8]| {
        let above = match start {
            Bound::Included(s) => k >= s,
            Bound::Excluded(s) => k > s,
            Bound::Unbounded => true,
        };
        let below = match end {
            Bound::Included(e) => k <= e,
            Bound::Excluded(e) => k < e,
            Bound::Unbounded => true,
        };
        above && below
    };
    let mut out: Vec<_> =
        model.iter().filter(|(k, _)| in_range(k)).map(|(k, e)| (k.clone(), *e)).collect();
    if rev {
        out.reverse();
    }
    out
}

fn index_range(
    index: &Index,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    rev: bool,
) -> Vec<(Vec<u8>, IndexEntry)> {
    index.range(start, end, rev).map(|(k, e)| (k.to_vec(), e)).collect()
}

/// Memory as computed independently from the fields' capacities.
fn memory_from_fields(index: &Index) -> usize {
    let remap = index.remap.as_ref().map_or(0, |r| r.starts.capacity() * size_of::<u32>());
    index.run.memory_bytes() + index.delta.memory_bytes() + remap
}

fn check_totals(index: &Index, model: &Model, seed: u64) {
    assert_eq!(index.len(), model.len(), "seed {seed}");
    assert_eq!(index.key_bytes(), model.keys().map(Vec::len).sum::<usize>(), "seed {seed}");
    assert_eq!(index.memory_bytes(), memory_from_fields(index), "seed {seed}");
}

fn apply_random_op(
    index: &mut Index,
    model: &mut Model,
    hints: &mut Hints,
    rng: &mut StdRng,
    seed: u64,
) {
    let key = random_key(rng);
    match rng.gen_range(0..100) {
        0..=19 => {
            let e = random_entry(rng);
            let got = index.upsert(&key, e).expect("valid key fits");
            assert_eq!(got, model.insert(key, e), "seed {seed}");
        }
        20..=39 => {
            let e = random_entry(rng);
            let hint = hints.get(&key).copied().unwrap_or(IndexHint::NONE);
            let (got, now) = index.upsert_hinted(&key, e, hint).expect("valid key fits");
            if hint != IndexHint::NONE && hint.generation() == index.generation {
                assert_eq!(now, hint, "seed {seed}: a valid hint stays");
            }
            hints.insert(key.clone(), now);
            assert_eq!(got, model.insert(key, e), "seed {seed}");
        }
        40..=59 => {
            hints.remove(&key);
            assert_eq!(index.remove(&key), model.remove(&key), "seed {seed}");
        }
        60..=64 => {
            let (from, to) = random_move(model, &key, rng);
            let want = model_relocate(model, &key, from, to);
            assert_eq!(index.relocate(&key, from, to), want, "seed {seed}");
        }
        65..=69 => {
            // A batch in key order, as compaction applies its deferred moves (a key may come
            // twice, as it could from two records of one segment).
            // Half of the batches hold only keys of one shape, which share a prefix (as a
            // segment's keys often do), so that the forward pass steps over runs of neighbours.
            let family = rng.gen_bool(0.5);
            let table_key = |rng: &mut StdRng| {
                let mut k = b"table\x00\x01/".to_vec();
                k.extend_from_slice(&rng.gen_range(0..2000u32).to_be_bytes());
                k
            };
            let mut keys: Vec<Vec<u8>> = (0..rng.gen_range(0..24))
                .map(|_| if family { table_key(rng) } else { random_key(rng) })
                .collect();
            keys.push(if family { table_key(rng) } else { key });
            keys.sort();
            let moves: Vec<_> = keys.iter().map(|k| (k, random_move(model, k, rng))).collect();
            let want: Vec<_> = moves
                .iter()
                .map(|(k, (from, to))| (*from, *to, model_relocate(model, k, *from, *to)))
                .collect();
            let mut got = Vec::new();
            index.relocate_sorted(
                moves.iter().map(|(k, (f, t))| (k.as_slice(), *f, *t)),
                |f, t, m| got.push((f, t, m)),
            );
            assert_eq!(got, want, "seed {seed}");
        }
        70..=84 => assert_eq!(index.get(&key), model.get(&key).copied(), "seed {seed}"),
        85..=98 => {
            let (start, end, rev) = (random_bound(rng), random_bound(rng), rng.gen_bool(0.5));
            let want = model_range(model, as_ref(&start), as_ref(&end), rev);
            let got = index_range(index, as_ref(&start), as_ref(&end), rev);
            assert_eq!(got, want, "seed {seed} start {start:?} end {end:?} rev {rev}");
        }
        _ => {
            let snap = index.snapshot();
            assert_eq!(snap.len(), model.len(), "seed {seed}");
        }
    }
}

/// A move compaction could ask for: mostly from where the key is now, sometimes from elsewhere
/// (the key was written since the copy), to a random place.
fn random_move(model: &Model, key: &[u8], rng: &mut StdRng) -> (Location, Location) {
    let from = match (rng.gen_bool(0.8), model.get(key)) {
        (true, Some(e)) => e.location(),
        _ => random_entry(rng).location(),
    };
    (from, random_entry(rng).location())
}

/// What a relocation does to the model: re-points a live key that is at `from`.
fn model_relocate(model: &mut Model, key: &[u8], from: Location, to: Location) -> bool {
    match model.get_mut(key) {
        Some(e) if e.location() == from => {
            *e = IndexEntry::new(to, e.version(), e.expiry_ms());
            true
        }
        _ => false,
    }
}

fn run_model_test(seed: u64, ops: usize, delta_keys_min: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut index = Index::with_limits(delta_keys_min, INDEX_KEY_ARENA_BYTES_MAX);
    let mut model = Model::new();
    let mut hints = Hints::new();
    let mut merges = 0;
    for op in 0..ops {
        let delta_before = index.delta.node_count();
        apply_random_op(&mut index, &mut model, &mut hints, &mut rng, seed);
        merges += usize::from(index.delta.node_count() < delta_before);
        if op % 500 == 0 {
            check_totals(&index, &model, seed);
        }
    }
    // Merges triggered by the delta, by dead slots, and by snapshots all count here.
    assert!(merges >= 3, "seed {seed}: only {merges} merges");
    println!("seed {seed}: {merges} merges, {} live keys", model.len());
    check_totals(&index, &model, seed);
    let all = model_range(&model, Bound::Unbounded, Bound::Unbounded, false);
    assert_eq!(index_range(&index, Bound::Unbounded, Bound::Unbounded, false), all, "seed {seed}");
}

#[test]
fn matches_btreemap_with_frequent_merges() {
    for seed in 0..4 {
        run_model_test(seed, 20_000, 16);
    }
}

#[test]
fn matches_btreemap_with_default_thresholds() {
    run_model_test(100, 30_000, DELTA_KEYS_MIN);
}

#[test]
fn rejects_bad_keys_without_change() {
    let mut index = Index::new();
    let e = IndexEntry::new(Location::new(0, 0, 8), 1, 0);
    assert!(matches!(index.upsert(b"", e), Err(crate::Error::KeyEmpty)));
    let long = vec![1; KEY_BYTES_MAX + 1];
    assert!(matches!(index.upsert(&long, e), Err(crate::Error::KeyTooLarge { .. })));
    assert!(index.is_empty());
    assert_eq!((index.get(b""), index.remove(&long)), (None, None));
}

#[test]
fn index_full_leaves_index_unchanged_and_merge_reclaims_dead_keys() {
    let max = 100;
    let mut index = Index::with_limits(4, max);
    let e = IndexEntry::new(Location::new(0, 0, 8), 1, 0);
    for i in 0..10u8 {
        index.upsert(&[i; 10], e).expect("fits");
    }
    let before = index_range(&index, Bound::Unbounded, Bound::Unbounded, false);
    assert!(matches!(index.upsert(&[200], e), Err(crate::Error::IndexFull { max: 100 })));
    assert_eq!(index_range(&index, Bound::Unbounded, Bound::Unbounded, false), before);
    assert_eq!(index.len(), 10);
    // Overwriting and reviving need no new arena bytes.
    index.upsert(&[3; 10], e).expect("overwrite fits");
    index.remove(&[4; 10]);
    index.upsert(&[4; 10], e).expect("revive fits");
    index.remove(&[5; 10]);
    index.upsert(&[201], e).expect("a merge drops the dead key and makes room");
    assert_eq!(index.len(), 10);
    assert!(index.arena_fits(0));
}

fn filled_index(seed: u64, n: usize) -> Index {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut index = Index::with_limits(64, INDEX_KEY_ARENA_BYTES_MAX);
    for _ in 0..n {
        let key = random_key(&mut rng);
        index.upsert(&key, random_entry(&mut rng)).expect("fits");
        if rng.gen_bool(0.2) {
            index.remove(&random_key(&mut rng));
        }
    }
    index
}

#[test]
fn snapshot_round_trips_through_checkpoint() {
    let seed = 5;
    let mut index = filled_index(seed, 5000);
    let snap = index.snapshot();
    assert_eq!(snap.len(), index.len());
    let loaded = Index::from_checkpoint(&snap.keys, snap.ends_bytes(), snap.entries_bytes())
        .expect("a snapshot is a valid checkpoint");
    let all = |i: &Index| index_range(i, Bound::Unbounded, Bound::Unbounded, false);
    assert_eq!(all(&loaded), all(&index), "seed {seed}");
    assert_eq!((loaded.len(), loaded.key_bytes()), (index.len(), index.key_bytes()));
    // The same but for the remap the snapshot's merge kept (a loaded index has had no merge).
    let remap = index.remap.as_ref().map_or(0, |r| r.starts.capacity() * size_of::<u32>());
    assert!(remap > 0 && loaded.remap.is_none(), "seed {seed}");
    assert_eq!(loaded.memory_bytes() + remap, index.memory_bytes(), "seed {seed}");
    let empty = Index::new().snapshot();
    let loaded = Index::from_checkpoint(&empty.keys, empty.ends_bytes(), empty.entries_bytes());
    assert!(loaded.expect("empty checkpoint loads").is_empty());
}

/// A name and damaged sections: keys, end offsets, entries.
type Case = (&'static str, Vec<u8>, Vec<u32>, Vec<IndexEntry>);

/// Valid sections for keys "a", "b", "cc", "d".
fn sections() -> (Vec<u8>, Vec<u32>, Vec<IndexEntry>) {
    let e = IndexEntry::new(Location::new(1, 8, 16), 2, 0);
    (b"abccd".to_vec(), vec![1, 2, 4, 5], vec![e; 4])
}

fn load(keys: &[u8], ends: &[u32], entries: &[IndexEntry]) -> Result<Index, String> {
    let ends: Vec<U32> = ends.iter().map(|&e| U32::new(e)).collect();
    Index::from_checkpoint(keys, ends.as_bytes(), entries.as_bytes())
}

#[test]
fn from_checkpoint_rejects_damage() {
    let (keys, ends, entries) = sections();
    assert!(load(&keys, &ends, &entries).is_ok());
    let long_key = vec![b'z'; KEY_BYTES_MAX + 1];
    let cases: Vec<Case> = vec![
        ("unsorted", b"baccd".to_vec(), ends.clone(), entries.clone()),
        ("duplicate", b"aaccd".to_vec(), ends.clone(), entries.clone()),
        ("decreasing end", keys.clone(), vec![1, 3, 2, 5], entries.clone()),
        ("empty key", keys.clone(), vec![1, 1, 4, 5], entries.clone()),
        ("end past keys", keys.clone(), vec![1, 2, 4, 6], entries.clone()),
        ("last end short", keys.clone(), vec![1, 2, 3, 4], entries.clone()),
        ("too few entries", keys.clone(), ends.clone(), entries[..3].to_vec()),
        ("too few ends", keys.clone(), ends[..3].to_vec(), entries.clone()),
        (
            "dead entry",
            keys.clone(),
            ends.clone(),
            vec![entries[0], dead_entry(), entries[0], entries[0]],
        ),
        ("key too long", long_key.clone(), vec![long_key.len() as u32], vec![entries[0]]),
        ("keys without ends", keys.clone(), vec![], vec![]),
    ];
    for (what, k, e, en) in cases {
        let got = load(&k, &e, &en);
        assert!(got.is_err(), "{what} was accepted");
        println!("{what}: {}", got.err().unwrap_or_default());
    }
}

#[test]
fn from_checkpoint_rejects_truncated_sections() {
    let (keys, ends, entries) = sections();
    let ends: Vec<U32> = ends.iter().map(|&e| U32::new(e)).collect();
    let (ends, entries) = (ends.as_bytes(), entries.as_bytes());
    for cut in 0..ends.len() {
        assert!(Index::from_checkpoint(&keys, &ends[..cut], entries).is_err(), "ends cut {cut}");
    }
    for cut in 0..entries.len() {
        assert!(Index::from_checkpoint(&keys, ends, &entries[..cut]).is_err(), "entries cut {cut}");
    }
    for cut in 0..keys.len() {
        assert!(Index::from_checkpoint(&keys[..cut], ends, entries).is_err(), "keys cut {cut}");
    }
}

#[test]
fn memory_is_exact_and_within_budget_after_merge() {
    let seed = 3;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut index = Index::new();
    let e = IndexEntry::new(Location::new(1, 8, 16), 2, 0);
    for _ in 0..100_000 {
        let key: [u8; 16] = rng.gen();
        index.upsert(&key, e).expect("fits");
        assert_eq!(index.memory_bytes(), memory_from_fields(&index));
    }
    index.snapshot();
    assert_eq!(index.memory_bytes(), memory_from_fields(&index), "seed {seed}");
    // After a merge the delta is empty and every buffer has exact size, so the memory is
    // 28 B/key for offsets and entries, plus the two sample levels (a sample's 8 bytes and its
    // key's 4-byte end offset; per group of 256 keys an 8-byte top entry, a copy of its first
    // key, 16 bytes here, with its 4-byte end, a 2-byte prefix length, and the tie level's
    // 2-byte prefix length and 8-byte head), plus the keys.
    let n = index.len();
    let samples = n.div_ceil(sorted_run::SAMPLE_STRIDE);
    let groups = n.div_ceil(sorted_run::GROUP_KEYS);
    // The remap of the run before the merge: 4 bytes per 64 of its slots, and one more.
    let before = index.remap.as_ref().map_or(0, |r| r.starts.len() - 1);
    assert!(before <= n.div_ceil(REMAP_BLOCK_SLOTS), "seed {seed}: {before} blocks");
    let remap = 4 * (before + 1);
    let expected =
        index.key_bytes() + 28 * n + 12 * samples + (8 + 16 + 4 + 2 + 2 + 8) * groups + remap;
    assert_eq!(index.memory_bytes(), expected, "seed {seed}");
    let per_key = (index.memory_bytes() - index.key_bytes()) as f64 / n as f64;
    assert!(per_key <= 32.0, "seed {seed}: {per_key} B/key");
}

#[test]
fn a_hint_names_the_key_slot_until_the_next_merge() {
    let seed = 21;
    let mut index = filled_index(seed, 5000);
    index.snapshot();
    let e = IndexEntry::new(Location::new(2, 64, 64), 9, 0);
    let key = index.range(Bound::Unbounded, Bound::Unbounded, false).nth(77).expect("key").0;
    let key = key.to_vec();
    let (_, hint) = index.upsert_hinted(&key, e, IndexHint::NONE).expect("fits");
    assert_ne!(hint, IndexHint::NONE, "seed {seed}: a key of the run gets a hint");
    let e2 = IndexEntry::new(Location::new(3, 64, 64), 10, 0);
    assert_eq!(index.upsert_hinted(&key, e2, hint).expect("fits"), (Some(e), hint), "seed {seed}");
    assert_eq!(index.get(&key), Some(e2), "seed {seed}");
    // A new key goes to the delta: no hint. A merge makes the old hint stale, and an upsert
    // that offers it searches and returns the slot's new hint.
    let (_, none) = index.upsert_hinted(b"\x00new", e, IndexHint::NONE).expect("fits");
    assert_eq!(none, IndexHint::NONE, "seed {seed}");
    index.snapshot();
    let (prev, fresh) = index.upsert_hinted(&key, e, hint).expect("fits");
    assert_eq!(prev, Some(e2), "seed {seed}");
    assert_ne!(fresh, hint, "seed {seed}: a merge makes a new generation");
    assert_eq!(index.get(&key), Some(e), "seed {seed}");
}

/// A hint into the run before a merge still finds its key's slot after the merge, through the
/// remap's window and without the run's search, for every key the merge kept: with keys
/// inserted before, between and after the old ones, and dead slots dropped. A deleted key's
/// hint finds nothing, and a hint from two merges back names nothing.
#[test]
fn hints_from_before_the_last_merge_find_their_keys_through_the_remap() {
    // No merge but the ones this test asks for.
    let mut index = Index::with_limits(1 << 30, INDEX_KEY_ARENA_BYTES_MAX);
    let entry = |n: usize| IndexEntry::new(Location::new(1, 8 * n as u64, 64), n as u64, 0);
    let key = |n: usize| format!("key:{n:07}").into_bytes();
    let old: Vec<usize> = (0..3000).map(|k| 10 + 3 * k).collect();
    for &n in &old {
        index.upsert(&key(n), entry(n)).expect("fits");
    }
    index.merge();
    let hints: Vec<IndexHint> =
        old.iter().map(|&n| index.get_hinted(&key(n)).expect("in the run").1).collect();
    // Dead slots (one in 20: under the share that would merge at once), and new keys before,
    // among (whole runs of them inside some blocks, single ones in others) and after the old.
    let deleted = |i: usize| i % 20 == 7;
    for (i, &n) in old.iter().enumerate() {
        if deleted(i) {
            index.remove(&key(n)).expect("live");
        }
    }
    let mut new: Vec<usize> = (0..10).collect();
    new.extend(old.iter().filter(|&&n| n % 5 == 0 || (3000..3600).contains(&n)).map(|n| n + 1));
    new.extend(10_000..10_050);
    for &n in &new {
        index.upsert(&key(n), entry(n)).expect("fits");
    }
    assert_eq!(index.run.dead(), old.len().div_ceil(20));
    index.merge();
    let remap = index.remap.as_ref().expect("a merge keeps a remap");
    let widest = remap.starts.windows(2).map(|w| w[1] - w[0]).max().expect("blocks");
    assert!(widest as usize > REMAP_BLOCK_SLOTS, "some block gained keys: {widest}");
    for (i, (&n, &hint)) in old.iter().zip(&hints).enumerate() {
        let k = key(n);
        let found = index.hinted(&k, hint);
        if deleted(i) {
            assert_eq!(found, None, "deleted key {n} found");
        } else {
            assert_eq!(found, index.run.find(&k), "key {n}");
            assert!(found.is_some(), "key {n} not found through the remap");
        }
    }
    // An upsert with a pre-merge hint returns the previous entry and a hint into this run.
    let (i, &n) = old.iter().enumerate().find(|(i, _)| !deleted(*i)).expect("a live key");
    let (prev, fresh) = index.upsert_hinted(&key(n), entry(n + 1), hints[i]).expect("fits");
    assert_eq!(prev, Some(entry(n)));
    assert_eq!(fresh, index.get_hinted(&key(n)).expect("live").1);
    // One merge more: the first hints are two runs old and name nothing.
    index.upsert(b"key:9999999", entry(1)).expect("fits");
    index.merge();
    assert!(hints.iter().zip(&old).all(|(&h, &n)| index.hinted(&key(n), h).is_none()));
}
