//! The bodies of the fuzz targets, in one place: `fuzz/fuzz_targets/*.rs` (cargo-fuzz,
//! coverage-guided, `tests/fuzz.sh`) and `tests/tests/fuzz_corpus.rs` (every checked-in corpus
//! file plus seeded mutations, in `cargo test`) call exactly these functions. docs/FUZZING.md
//! lists what each one checks.
//!
//! Every target takes arbitrary bytes and must not panic; where the format has an encoder, what
//! decodes must encode back to what decodes again the same (a round trip).

use ringstore_net::frame::{FrameHeader, HEADER_BYTES};
use ringstore_net::{Opcode, Request, Writer};
use ringstore_storage::constants::RECORD_HEADER_BYTES;
use ringstore_storage::record;

/// Body limits the frame header is checked against: none, a small one, the default.
const FRAME_LIMITS: [u32; 3] = [0, 4096, 4 * 1024 * 1024];

/// A target: arbitrary bytes in, a panic on failure.
pub type Target = fn(&[u8]);

/// Every target, by the name of its corpus directory and cargo-fuzz target.
pub const TARGETS: &[(&str, Target)] = &[
    ("frame_header", frame_header),
    ("request_body", request_body),
    ("ddl", ddl),
    ("cli", cli),
    ("record", record_bytes),
    ("checkpoint", checkpoint),
    ("resp_command", resp_command),
];

/// A frame header: parsed against several body limits; one that passes encodes back to the same
/// 32 bytes.
pub fn frame_header(data: &[u8]) {
    for limit in FRAME_LIMITS {
        let Some(Ok(h)) = FrameHeader::parse(data, limit) else { continue };
        let again = FrameHeader::new(h.opcode, h.flags, h.request_id, h.body_len, h.status);
        assert_eq!(
            zerocopy::IntoBytes::as_bytes(&again),
            &data[..HEADER_BYTES],
            "a valid header encodes back to its bytes"
        );
    }
}

/// A request body: the first byte picks the opcode, the rest is the body. A body that decodes
/// encodes to bytes that decode and encode to the same bytes again (bytes, not values, are
/// compared, so a NaN field compares equal to itself).
pub fn request_body(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else { return };
    let opcode = Opcode::ALL[usize::from(pick) % Opcode::ALL.len()];
    let Ok(req) = Request::decode(opcode, body) else { return };
    let once = encode_request(&req);
    let again = Request::decode(opcode, &once).expect("an encoded request decodes");
    assert_eq!(encode_request(&again), once, "request round trip ({opcode:?})");
}

/// The body bytes of `req`.
pub fn encode_request(req: &Request<'_>) -> Vec<u8> {
    let mut w = Writer { buf: Vec::new() };
    req.encode(&mut w);
    w.buf
}

/// DDL text (SQL or the admin CLI script), as the node's DDL request carries it.
pub fn ddl(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ringstore_storage::ddl::parse(text);
    }
}

/// A `ringstore-cli` script (statements and row operations).
pub fn cli(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ringstore_cli::statement::parse_script(text);
    }
}

/// A log record as recovery and reads decode it. One that decodes encodes back to the same
/// header, key and value bytes.
pub fn record_bytes(data: &[u8]) {
    if let Some(len) = record::header_and_key_len(data) {
        if data.len() >= len {
            let _ = record::decode_header(data);
        }
    }
    let Ok(r) = record::decode(data) else { return };
    let mut out = Vec::new();
    record::encode(&mut out, &r.meta, r.key, r.value);
    let used = RECORD_HEADER_BYTES + r.key.len() + r.value.len();
    assert_eq!(&out[..used], &data[..used], "record round trip");
}

/// A checkpoint file as recovery reads it: header, sections and their checksums, the index
/// rebuilt and validated.
pub fn checkpoint(data: &[u8]) {
    let _ = ringstore_storage::checkpoint::parse(data);
}

/// Bytes a RESP client sends: every command parsed from the front in turn, under small and
/// default limits, until one is incomplete or malformed. A command that parses takes at least
/// one byte and stays within the limits; encoded again as a multibulk command it parses back to
/// the same arguments. The same bytes taken as replies convert to RESP3 without a panic, and
/// bytes holding no null convert to themselves.
pub fn resp_command(data: &[u8]) {
    use ringstore_net::resp::{parse_command, reply, Args, ParseLimits, Parsed};
    let mut three = Vec::new();
    reply::to_resp3(data, &mut three);
    if !data.windows(2).any(|w| w == b"-1") {
        assert_eq!(three, data, "a reply without a null is unchanged");
    }
    let small = ParseLimits { bulk_bytes_max: 64, args_max: 8, command_bytes_max: 256 };
    for limits in [small, ParseLimits::default()] {
        let mut args = Args::default();
        let mut pos = 0;
        while let Parsed::Command { consumed } = parse_command(&data[pos..], &limits, &mut args) {
            assert!(consumed > 0 && pos + consumed <= data.len(), "a command takes bytes");
            let buf = &data[pos..pos + consumed];
            let words: Vec<&[u8]> = args.iter(buf).collect();
            if !words.is_empty() {
                let mut encoded = Vec::new();
                reply::command(&mut encoded, words.iter().copied());
                let mut again = Args::default();
                let whole = ParseLimits::default();
                assert_eq!(
                    parse_command(&encoded, &whole, &mut again),
                    Parsed::Command { consumed: encoded.len() }
                );
                assert!(again.iter(&encoded).eq(words.iter().copied()), "round trip");
            }
            pos += consumed;
        }
    }
}
