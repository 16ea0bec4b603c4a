//! How long one key draw takes, per distribution, over 1,000,000 keys: our choosers and
//! `rand_distr::Zipf` (rejection-inversion), which the issue says is about 10x slower than the
//! YCSB zipfian. Each distribution draws 10M keys three times and the median ns per draw is
//! printed; the sum of the keys goes through `black_box` so the draws cannot be optimised away.
//!
//! Run with `cargo bench -p ringstore-loadgen --bench sampling` (plain `Instant` timing, no
//! harness), on a quiet machine: it is a single thread and takes about ten seconds.

use std::hint::black_box;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::Distribution;
use ringstore_loadgen::distribution::{KeyChooser, KeyDistribution, ZIPFIAN_THETA_YCSB};

/// Key count: the one million.
const ITEMS: u64 = 1_000_000;

/// Draws per repetition: long enough (tens of milliseconds) that timer overhead vanishes.
const SAMPLES: u64 = 10_000_000;

/// Repetitions per distribution; the median of three shrugs off one disturbed run.
const REPETITIONS: usize = 3;

/// Seed of every run, so each distribution sees the same random stream.
const SEED: u64 = 0x5EED;

/// Median ns per draw of `REPETITIONS` runs of `SAMPLES` calls of `draw`.
fn median_ns_per_draw(mut draw: impl FnMut(&mut SmallRng) -> u64) -> f64 {
    let mut runs: Vec<f64> = (0..REPETITIONS)
        .map(|_| {
            let mut rng = SmallRng::seed_from_u64(SEED);
            let started = Instant::now();
            let mut sum = 0u64;
            for _ in 0..SAMPLES {
                sum = sum.wrapping_add(draw(&mut rng));
            }
            black_box(sum);
            started.elapsed().as_nanos() as f64 / SAMPLES as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[REPETITIONS / 2]
}

fn bench_chooser(name: &str, dist: &KeyDistribution) -> f64 {
    let mut chooser = KeyChooser::new(dist, ITEMS, 0);
    let ns = median_ns_per_draw(|rng| chooser.next(rng, black_box(ITEMS)));
    println!("{name:<28} {ns:>7.2} ns/sample");
    ns
}

fn main() {
    let theta = ZIPFIAN_THETA_YCSB;
    // The first zipfian chooser sums zeta over all items; the second finds it in the memo.
    for attempt in ["first", "memoized"] {
        let started = Instant::now();
        black_box(KeyChooser::new(&KeyDistribution::Zipfian { theta }, ITEMS, 0));
        println!("zipfian chooser build, {attempt:<9} {:>9.3} ms", ms_since(started));
    }
    println!("ns per sample over {ITEMS} items, median of {REPETITIONS} x {SAMPLES} samples:");
    bench_chooser("uniform", &KeyDistribution::Uniform);
    let ours = bench_chooser("zipfian (ours)", &KeyDistribution::Zipfian { theta });
    bench_chooser("scrambled zipfian (ours)", &KeyDistribution::ScrambledZipfian { theta });
    bench_chooser("hotspot 0.2/0.8", &"hotspot".parse().unwrap_or(KeyDistribution::Uniform));
    bench_chooser("latest (ours)", &KeyDistribution::Latest { theta });

    let zipf = match rand_distr::Zipf::new(ITEMS, theta) {
        Ok(zipf) => zipf,
        Err(e) => panic!("rand_distr::Zipf::new: {e}"),
    };
    // rand_distr draws ranks 1..=ITEMS as f64; shifting to 0.. is part of what a chooser costs.
    let theirs = median_ns_per_draw(|rng| {
        let rank: f64 = zipf.sample(rng);
        rank as u64 - 1
    });
    println!("{:<28} {theirs:>7.2} ns/sample", "rand_distr::Zipf");
    println!("rand_distr::Zipf / ours: {:.2}x", theirs / ours);
}

fn ms_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}
