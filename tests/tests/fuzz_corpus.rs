//! Replays every checked-in fuzz corpus file (`fuzz/corpus/TARGET/`) through the same target
//! bodies that cargo-fuzz runs (`ringstore_tests::fuzz_targets`), plus seeded mutations of each
//! file (bit flips, byte changes, insertions, deletions, truncations), so `cargo test` keeps
//! every input a fuzz run ever kept (and every crash it found, once its input is added) passing.
//! A failure names the target, the file and, for a mutation, the seed.
//!
//! `RINGSTORE_WRITE_FUZZ_SEEDS=1` (re)writes the encoder-made seed inputs (`seed-*` files) of
//! every corpus; docs/FUZZING.md says when.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_net::frame::{Flags, FrameHeader};
use ringstore_net::request::{Bound, IndexBody, RangeBody};
use ringstore_net::{FieldsBuf, Opcode, Request};
use ringstore_storage::record::{self, RecordMeta};
use ringstore_storage::table::{ValueRef, VersionSelect};
use ringstore_tests::fuzz_targets::{encode_request, TARGETS};
use ringstore_tests::Node;

/// Mutations run per corpus file in `cargo test` (the coverage-guided runs are tests/fuzz.sh).
const MUTATIONS_PER_FILE: u64 = 300;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target)
}

fn files(target: &str) -> Vec<PathBuf> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

fn run(target: &str, f: fn(&[u8]), input: &[u8], what: &str) {
    if catch_unwind(AssertUnwindSafe(|| f(input))).is_err() {
        panic!("fuzz target {target} panicked on {what} ({} bytes: {input:02x?})", input.len());
    }
}

fn mutate(rng: &mut StdRng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.gen_range(1..4) {
        let at = if out.is_empty() { 0 } else { rng.gen_range(0..out.len()) };
        match rng.gen_range(0..5) {
            0 if !out.is_empty() => out[at] ^= 1 << rng.gen_range(0..8),
            1 if !out.is_empty() => out[at] = rng.gen(),
            2 => out.insert(at, rng.gen()),
            3 if !out.is_empty() => {
                out.remove(at);
            }
            _ => out.truncate(at),
        }
    }
    out
}

#[test]
fn every_corpus_file_and_its_mutations_pass_their_target() {
    if std::env::var_os("RINGSTORE_WRITE_FUZZ_SEEDS").is_some() {
        write_seeds();
    }
    for &(target, f) in TARGETS {
        let files = files(target);
        assert!(!files.is_empty(), "fuzz/corpus/{target} is empty");
        for (i, path) in files.iter().enumerate() {
            let input = std::fs::read(path).expect("corpus file");
            run(target, f, &input, &path.display().to_string());
            let seed = i as u64;
            let mut rng = StdRng::seed_from_u64(seed);
            for m in 0..MUTATIONS_PER_FILE {
                let mutated = mutate(&mut rng, &input);
                let what = format!("mutation {m} of {} (seed {seed})", path.display());
                run(target, f, &mutated, &what);
            }
        }
    }
}

/// Writes inputs made by the real encoders: valid ones, which the mutations and the fuzzer
/// start from.
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn write_seeds() {
    let write = |target: &str, name: &str, bytes: &[u8]| {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).expect("corpus dir");
        std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed file");
    };
    for (i, op) in Opcode::ALL.iter().enumerate() {
        let h = FrameHeader::new(*op, Flags(0), 7 + i as u64, 100, 0);
        write("frame_header", &format!("{op:?}"), zerocopy::IntoBytes::as_bytes(&h));
    }
    let reply = FrameHeader::new(Opcode::Get, Flags(Flags::RESPONSE), 9, 0, 614);
    write("frame_header", "error-reply", zerocopy::IntoBytes::as_bytes(&reply));

    let key = FieldsBuf::of([("team", ValueRef::String("red")), ("id", ValueRef::Long(42))]);
    let partial = FieldsBuf::of([("team", ValueRef::String("red"))]);
    let requests = [
        Request::Ping,
        Request::Stats,
        Request::Ddl { text: "CREATE TABLE t (id LONG, v STRING, PRIMARY KEY (id))" },
        Request::Describe { table: "people" },
        Request::Get { table: "people", key: key.list(), versions: VersionSelect::Newest },
        Request::Get { table: "people", key: key.list(), versions: VersionSelect::Latest(3) },
        Request::MultiGet { table: "people", range: RangeBody::new(partial.list(), 100) },
        Request::Scan { table: "people", range: RangeBody::new(partial.list(), 10) },
        Request::MultiDelete { table: "people", range: RangeBody::new(partial.list(), 5) },
        Request::IndexQuery {
            table: "people",
            query: IndexBody {
                range: Some((Some(Bound { value: ValueRef::Long(30), inclusive: false }), None)),
                reverse: true,
                resume: Some(b"\x00\x00\x00\x09\x01"),
                ..IndexBody::new("by_team_age", vec![ValueRef::String("red")], 50)
            },
        },
    ];
    for (i, req) in requests.iter().enumerate() {
        let opcode = Opcode::ALL.iter().position(|o| *o == req.opcode()).expect("known opcode");
        let mut bytes = vec![opcode as u8];
        bytes.extend(encode_request(req));
        write("request_body", &format!("{i}-{:?}", req.opcode()), &bytes);
    }

    let ddl = [
        "CREATE TABLE people (team STRING, id LONG, name STRING, age INTEGER, score DOUBLE, \
         PRIMARY KEY (SHARD(team), id))",
        "CREATE TABLE IF NOT EXISTS t (k STRING, v BINARY, PRIMARY KEY (k)) USING TTL 5 days",
        "DROP TABLE IF EXISTS t; SHOW TABLES; DESCRIBE TABLE people",
        "## admin script\nplan add-table -name shop\n  add-field -name id -type LONG\n  \
         primary-key -field id\nexit\nplan end",
    ];
    for (i, text) in ddl.iter().enumerate() {
        write("ddl", &i.to_string(), text.as_bytes());
    }
    let cli = [
        "SELECT * FROM people WHERE team = 'red' AND id = 42",
        "UPSERT INTO people (team, id, name) VALUES ('red', 1, 'ann'); DELETE FROM people WHERE \
         team = 'red' AND id = 1",
        "-- a comment\nSHOW TABLES; DESCRIBE TABLE people",
    ];
    for (i, text) in cli.iter().enumerate() {
        write("cli", &i.to_string(), text.as_bytes());
    }

    for (i, (key, value)) in
        [(&b"k1"[..], &b"v"[..]), (b"\x00\x00\x00\x01key\x00\x01", &[7; 200])].iter().enumerate()
    {
        let meta = RecordMeta {
            kind: record::RecordKind::Put,
            lsn: 10 + i as u64,
            version: 1_700_000_000_000,
            expiry_ms: 0,
            segment_id: 3,
            flags: 0,
            batch_remaining: i as u16,
        };
        let mut out = Vec::new();
        record::encode(&mut out, &meta, key, value);
        write("record", &i.to_string(), &out);
    }

    // A real checkpoint: a node with a few rows, stopped cleanly.
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start(dir.path(), &[]);
    let mut c = node.client();
    c.ddl("CREATE TABLE t (id LONG, v STRING, PRIMARY KEY (id))").expect("create");
    for id in 0..8 {
        let v = ringstore_storage::table::Value::String(format!("row {id}"));
        c.put("t", &[("id", ringstore_storage::table::Value::Long(id)), ("v", v)]).expect("put");
    }
    drop(c);
    assert!(node.terminate().success());
    let bytes = std::fs::read(dir.path().join("shard-0/checkpoint")).expect("checkpoint");
    write("checkpoint", "8-rows", &bytes);
}
