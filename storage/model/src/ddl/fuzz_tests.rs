//! A seeded fuzz-style test: random printable text and random mutations of valid statements must
//! come back as `Ok` or a `DdlError`, never a panic, and every error position must lie inside the
//! text. The seed is fixed, so a failure reproduces with plain `cargo test`.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

const VALID: [&str; 6] = [
    "CREATE TABLE IF NOT EXISTS t (a INTEGER, b ENUM(x, y), c STRING, \
     PRIMARY KEY (SHARD(a, b), c DESC)) USING TTL 5 DAYS WITH VERSIONS 3",
    "create table t (a long, primary key (a)); drop table if exists t; describe t; show tables",
    "-- comment\nDESCRIBE TABLE \"q\";;",
    "## Enter into table creation mode table create -name t ## fields add-field -type STRING \
     -name a add-field -type ENUM -name e -enum-values p,q primary-key -field a -field e \
     shard-key -field a ## Exit table creation mode exit plan add-table -name t -wait",
    "table create -name t\nadd-field -type LONG -name a ## the key\nprimary-key -field a\nexit\n\
     plan add-table -name t -wait\n",
    "CREATE TABLE t (k TIMESTAMP, PRIMARY KEY (k ASC)) WITH VERSIONS 2 USING TTL 1 HOURS",
];

/// Characters that make parsers take unusual paths: delimiters, comment starts, quotes, flags,
/// line breaks and multi-byte characters (to catch slicing inside a character).
const ALPHABET: &[char] = &[
    'a',
    'Z',
    '_',
    '0',
    '9',
    ' ',
    '\t',
    '\n',
    '\r',
    '(',
    ')',
    ',',
    ';',
    '-',
    '#',
    '"',
    'é',
    '中',
    '\u{1F600}',
    '.',
    '*',
];

const WORDS: &[&str] = &[
    "CREATE",
    "TABLE",
    "PRIMARY",
    "KEY",
    "SHARD",
    "DESC",
    "ENUM",
    "USING",
    "TTL",
    "WITH",
    "VERSIONS",
    "--",
    "##",
    "exit",
    "table create -name x",
    "add-field -type",
    "-enum-values",
    "plan add-table -name",
    "primary-key -field",
    "-wait",
    "99999999999999999999999",
];

fn random_text(rng: &mut SmallRng) -> String {
    let len = rng.gen_range(0..80);
    let mut text = String::new();
    for _ in 0..len {
        if rng.gen_bool(0.2) {
            text.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
        } else if rng.gen_bool(0.5) {
            text.push(ALPHABET[rng.gen_range(0..ALPHABET.len())]);
        } else {
            text.push(char::from(rng.gen_range(0x20u8..0x7f)));
        }
    }
    text
}

fn mutate(rng: &mut SmallRng, valid: &str) -> String {
    let mut chars: Vec<char> = valid.chars().collect();
    for _ in 0..rng.gen_range(1..4) {
        let at = rng.gen_range(0..=chars.len());
        match rng.gen_range(0..4) {
            0 if at < chars.len() => {
                let end = rng.gen_range(at..=chars.len().min(at + 8));
                chars.drain(at..end);
            }
            1 => chars.insert(at, ALPHABET[rng.gen_range(0..ALPHABET.len())]),
            2 => chars.truncate(at),
            _ => {
                let word = WORDS[rng.gen_range(0..WORDS.len())];
                chars.splice(at..at, word.chars());
            }
        }
    }
    chars.into_iter().collect()
}

fn check(text: &str) {
    for result in [parse(text), parse_sql(text), parse_cli(text)] {
        let Err(error) = result else { continue };
        let _ = error.to_string();
        if let Some(at) = error.position() {
            assert!(at.line >= 1 && at.column >= 1, "{text:?}: {error}");
            assert!(at.line <= text.lines().count().max(1) + 1, "{text:?}: {error}");
        }
    }
}

#[test]
fn the_valid_seeds_parse() {
    for text in VALID {
        assert!(parse(text).is_ok(), "{text:?}: {:?}", parse(text));
    }
}

#[test]
fn random_text_never_panics() {
    let mut rng = SmallRng::seed_from_u64(0x5eed_0dd1);
    for _ in 0..5_000 {
        check(&random_text(&mut rng));
    }
}

#[test]
fn mutated_statements_never_panic() {
    let mut rng = SmallRng::seed_from_u64(0x5eed_0dd2);
    for _ in 0..5_000 {
        let valid = VALID[rng.gen_range(0..VALID.len())];
        check(&mutate(&mut rng, valid));
    }
}
