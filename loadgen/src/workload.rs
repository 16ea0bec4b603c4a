//! What a run asks of the node: the operation mix (YCSB A-F or `--mix read=90,update=10`), key and
//! value sizes (fixed or a range), and the scan length. The key distribution lives in
//! `distribution.rs`.

use std::fmt;
use std::str::FromStr;

use rand::rngs::SmallRng;
use rand::Rng;

use crate::distribution::{KeyDistribution, ZIPFIAN_THETA_YCSB};
use crate::results::OpKind;

/// Longest scan YCSB E asks for (its `maxscanlength`); lengths are uniform in 1..=this.
pub const SCAN_LENGTH_MAX_DEFAULT: u32 = 100;
/// Largest key the table layer accepts for a STRING key value (Tablestore's 1 KB rule).
pub const KEY_SIZE_MAX: usize = 1024;
/// Smallest key: the key number must fit (`k` and up to 20 digits are padded to the size).
pub const KEY_SIZE_MIN: usize = 4;
/// Largest value the tool writes: the node's row limit is 1 MiB including the key (up to
/// [`KEY_SIZE_MAX`]) and the row's own encoding, so a value gets 1 MiB less 2 KiB.
pub const VALUE_BYTES_MAX: usize = (1 << 20) - 2048;

/// A size in bytes, fixed (`100`) or a range (`16..64`, both ends included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeSpec {
    pub min: usize,
    pub max: usize,
}

impl SizeSpec {
    pub const fn fixed(n: usize) -> SizeSpec {
        SizeSpec { min: n, max: n }
    }

    /// The size of item `n`: always the same for the same item (a key must be rebuilt with the
    /// size it was written with), spread evenly over the range.
    pub fn of(&self, n: u64) -> usize {
        if self.min == self.max {
            return self.min;
        }
        let span = (self.max - self.min + 1) as u64;
        self.min + (mix64(n) % span) as usize
    }

    /// Checks the range against `[lo, hi]`, naming `what` in the error.
    pub fn check(&self, what: &str, lo: usize, hi: usize) -> Result<(), String> {
        if self.min < lo || self.max > hi {
            return Err(format!("{what} {self} is outside {lo}..{hi} bytes"));
        }
        Ok(())
    }
}

impl FromStr for SizeSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<SizeSpec, String> {
        let num = |t: &str| {
            t.trim().parse::<usize>().map_err(|_| {
                format!("size {s:?}: expected a byte count like 100 or a range like 16..64")
            })
        };
        let spec = match s.split_once("..") {
            Some((a, b)) => SizeSpec { min: num(a)?, max: num(b)? },
            None => SizeSpec::fixed(num(s)?),
        };
        if spec.min > spec.max {
            return Err(format!("size {s:?}: the range's start is larger than its end"));
        }
        Ok(spec)
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}..{}", self.min, self.max)
        }
    }
}

/// A 64-bit mix (splitmix64's finaliser): a cheap, well-spread hash of an item number.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Operation weights; an operation is drawn with probability weight / total.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// Cumulative weights in [`OpKind::ALL`] order.
    cumulative: [u32; 5],
}

impl Mix {
    pub fn of(weights: &[(OpKind, u32)]) -> Result<Mix, String> {
        let mut w = [0u32; 5];
        for &(kind, weight) in weights {
            w[kind.index()] += weight;
        }
        let mut cumulative = [0u32; 5];
        let mut sum = 0u32;
        for (i, x) in w.iter().enumerate() {
            sum = sum.checked_add(*x).ok_or("mix weights overflow")?;
            cumulative[i] = sum;
        }
        if sum == 0 {
            return Err("the mix has no operation with a weight above 0".into());
        }
        Ok(Mix { cumulative })
    }

    pub fn weight(&self, kind: OpKind) -> u32 {
        let i = kind.index();
        self.cumulative[i] - if i == 0 { 0 } else { self.cumulative[i - 1] }
    }

    pub fn total(&self) -> u32 {
        self.cumulative[4]
    }

    /// Draws one operation.
    pub fn pick(&self, rng: &mut SmallRng) -> OpKind {
        let x = rng.gen_range(0..self.total());
        let i = self.cumulative.iter().position(|&c| x < c).expect("x < total");
        OpKind::ALL[i]
    }
}

impl FromStr for Mix {
    type Err = String;

    /// `read=90,update=10` (names: read|get, update|put, insert, scan, rmw).
    fn from_str(s: &str) -> Result<Mix, String> {
        let mut weights = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, w) = part
                .split_once('=')
                .ok_or_else(|| format!("mix part {part:?}: expected NAME=WEIGHT"))?;
            let kind = match name.trim() {
                "read" | "get" => OpKind::Read,
                "update" | "put" => OpKind::Update,
                "insert" => OpKind::Insert,
                "scan" => OpKind::Scan,
                "rmw" | "read-modify-write" => OpKind::ReadModifyWrite,
                other => {
                    return Err(format!(
                        "mix: unknown operation {other:?}; known: read (get), update (put), \
                         insert, scan, rmw"
                    ))
                }
            };
            let w: u32 = w.trim().parse().map_err(|_| format!("mix part {part:?}: bad weight"))?;
            weights.push((kind, w));
        }
        Mix::of(&weights)
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = OpKind::ALL
            .iter()
            .filter(|k| self.weight(**k) > 0)
            .map(|k| format!("{}={}", k.name(), self.weight(*k)))
            .collect();
        write!(f, "{}", parts.join(","))
    }
}

/// The YCSB core workloads, with their mixes and request distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Ycsb {
    /// Update heavy: 50% read, 50% update, zipfian.
    A,
    /// Read mostly: 95% read, 5% update, zipfian.
    B,
    /// Read only: 100% read, zipfian.
    C,
    /// Read latest: 95% read, 5% insert, latest.
    D,
    /// Short ranges: 95% scan, 5% insert, zipfian.
    E,
    /// Read-modify-write: 50% read, 50% read-modify-write, zipfian.
    F,
}

impl Ycsb {
    pub fn mix(self) -> Mix {
        use OpKind::*;
        let w: &[(OpKind, u32)] = match self {
            Ycsb::A => &[(Read, 50), (Update, 50)],
            Ycsb::B => &[(Read, 95), (Update, 5)],
            Ycsb::C => &[(Read, 100)],
            Ycsb::D => &[(Read, 95), (Insert, 5)],
            Ycsb::E => &[(Scan, 95), (Insert, 5)],
            Ycsb::F => &[(Read, 50), (ReadModifyWrite, 50)],
        };
        Mix::of(w).expect("preset weights are valid")
    }

    /// YCSB's `requestdistribution=zipfian` is its scrambled zipfian generator (hot keys spread
    /// over the key space, not the lowest key numbers), and D's is `latest`.
    pub fn distribution(self) -> KeyDistribution {
        match self {
            Ycsb::D => KeyDistribution::Latest { theta: ZIPFIAN_THETA_YCSB },
            _ => KeyDistribution::ScrambledZipfian { theta: ZIPFIAN_THETA_YCSB },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn sizes_parse_and_stay_put_per_item() {
        assert_eq!("100".parse(), Ok(SizeSpec::fixed(100)));
        let r: SizeSpec = "16..64".parse().unwrap();
        assert_eq!((r.min, r.max), (16, 64));
        assert!("64..16".parse::<SizeSpec>().is_err());
        assert!("x".parse::<SizeSpec>().unwrap_err().contains("16..64"));
        assert_eq!(r.of(7), r.of(7));
        let sizes: Vec<usize> = (0..10_000).map(|n| r.of(n)).collect();
        assert!(sizes.iter().all(|s| (16..=64).contains(s)));
        assert_eq!(*sizes.iter().min().unwrap(), 16);
        assert_eq!(*sizes.iter().max().unwrap(), 64);
        assert_eq!(r.to_string(), "16..64");
    }

    #[test]
    fn mixes_parse_and_draw_in_proportion() {
        let m: Mix = "get=90, put=10".parse().unwrap();
        assert_eq!((m.weight(OpKind::Read), m.weight(OpKind::Update), m.total()), (90, 10, 100));
        assert_eq!(m.to_string(), "read=90,update=10");
        assert!("fly=1".parse::<Mix>().unwrap_err().contains("unknown operation"));
        assert!("read=0".parse::<Mix>().is_err());
        let mut rng = SmallRng::seed_from_u64(1);
        let reads = (0..100_000).filter(|_| m.pick(&mut rng) == OpKind::Read).count();
        // 90% of 100k, binomial sd ~95: 1% is over 10 sd.
        assert!((89_000..91_000).contains(&reads), "{reads}");
    }

    #[test]
    fn ycsb_presets_match_the_paper() {
        assert_eq!(Ycsb::A.mix().to_string(), "read=50,update=50");
        assert_eq!(Ycsb::E.mix().to_string(), "insert=5,scan=95");
        assert_eq!(Ycsb::F.mix().to_string(), "read=50,rmw=50");
        assert!(matches!(Ycsb::D.distribution(), KeyDistribution::Latest { .. }));
        assert_eq!(Ycsb::C.distribution(), KeyDistribution::ScrambledZipfian { theta: 0.99 });
    }
}
