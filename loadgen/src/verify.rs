//! Verify mode: every acknowledged write is remembered (key, row token, which write it was),
//! and after the run every remembered key is read back. A value says which write made it: its
//! first 16 bytes are the key number and the write id, and the rest is a pattern derived from
//! the write id, so a read can tell a value this tool wrote from anything else.
//!
//! Findings: `lost` (acknowledged, not found), `stale` (found, but older than the newest
//! acknowledged write: its row token is lower), `foreign` (the value is not one this tool
//! wrote for this key: corrupt or never written), and `newer` (a write that was sent but whose
//! acknowledgement did not arrive landed on top: allowed, counted for information).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ahash::RandomState;
use ringstore_model::table::{Value, VersionSelect};
use ringstore_model::Durability;
use ringstore_net::response::decode_get;
use ringstore_net::{Client, FieldsBuf, Request, ValueRef};

use crate::keyspace::{write_key, KeySpace, KEY_FIELD, TABLE, VALUE_FIELD};
use crate::workload::SizeSpec;

/// Bytes at the start of every value that identify the write: key number and write id.
pub const VALUE_HEADER_BYTES: usize = 16;
/// Gets in flight per connection while reading back.
pub const READBACK_PIPELINE: usize = 64;

/// Writes the value of write `write_id` to key `key_no`, `size` bytes (at least the header
/// when `size` allows; shorter values carry a prefix of it).
pub fn fill_value(out: &mut Vec<u8>, key_no: u64, write_id: u64, size: usize) {
    out.clear();
    out.extend_from_slice(&key_no.to_le_bytes());
    out.extend_from_slice(&write_id.to_le_bytes());
    let pattern = crate::workload::mix64(write_id).to_le_bytes();
    while out.len() < size {
        let n = (size - out.len()).min(pattern.len());
        out.extend_from_slice(&pattern[..n]);
    }
    out.truncate(size);
}

/// The write id a value carries if it is exactly what [`fill_value`] writes for `key_no`.
pub fn write_id_of(value: &[u8], key_no: u64) -> Option<u64> {
    if value.len() < VALUE_HEADER_BYTES {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(value[i..i + 8].try_into().expect("8 bytes"));
    let write_id = word(8);
    let mut expected = Vec::with_capacity(value.len());
    fill_value(&mut expected, key_no, write_id, value.len());
    (word(0) == key_no && expected == value).then_some(write_id)
}

/// The token and version of a Written outcome (a Put's success body).
pub fn parse_write_ack(body: &[u8]) -> Option<(u64, u64)> {
    if body.len() != 17 || body[0] != 0 {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(body[i..i + 8].try_into().expect("8 bytes"));
    Some((word(1), word(9)))
}

/// The newest acknowledged write per key; with a [`AckSink`], each acknowledgement is also
/// appended to the `--write-log` file as it arrives.
#[derive(Debug, Default)]
pub struct WriteLog {
    newest: HashMap<u64, (u64, u64), RandomState>,
    sink: Option<AckSink>,
}

impl WriteLog {
    /// A log that also streams every acknowledgement to `file`.
    pub fn streaming(file: Arc<AckLogFile>) -> WriteLog {
        WriteLog { sink: Some(AckSink::new(file)), ..WriteLog::default() }
    }

    /// Write `write_id` to `key_no` was acknowledged with row token `token`.
    pub fn acked(&mut self, key_no: u64, token: u64, write_id: u64) {
        self.keep(key_no, token, write_id);
        if let Some(sink) = &mut self.sink {
            sink.line(key_no, token, write_id);
        }
    }

    fn keep(&mut self, key_no: u64, token: u64, write_id: u64) {
        let e = self.newest.entry(key_no).or_insert((token, write_id));
        if token > e.0 {
            *e = (token, write_id);
        }
    }

    /// Adds `other`'s acknowledgements (already streamed by `other`, if it streams).
    pub fn merge(&mut self, other: WriteLog) {
        for (&k, &(t, w)) in &other.newest {
            self.keep(k, t, w);
        }
    }

    pub fn len(&self) -> usize {
        self.newest.len()
    }

    pub fn is_empty(&self) -> bool {
        self.newest.is_empty()
    }
}

/// First line of a write-log file; the key-size spec follows it on the same line.
pub const WRITE_LOG_HEADER: &str = "ringstore-load write log v1 key-size";

/// A worker appends its buffered acknowledgement lines to the file once they reach this size...
pub const ACK_LOG_FLUSH_BYTES: usize = 64 * 1024;
/// ...or once the oldest has waited this long, so a crash of the node (or of this tool) leaves
/// at most this much of the acknowledgements unlogged.
pub const ACK_LOG_FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// The `--write-log` file, shared by every worker: created with its header at the start of the
/// run; each worker appends whole lines with one `write` call (O_APPEND, under a lock).
#[derive(Debug)]
pub struct AckLogFile {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl AckLogFile {
    /// Creates (truncates) `path` and writes the header naming `key_size`.
    pub fn create(path: &Path, key_size: SizeSpec) -> Result<Arc<AckLogFile>, String> {
        let err = |e: std::io::Error| format!("write log {}: {e}", path.display());
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(err)?;
        writeln!(file, "{WRITE_LOG_HEADER} {key_size}").map_err(err)?;
        // Appends from here on, so whole lines from several workers never overlap.
        let file = std::fs::OpenOptions::new().append(true).open(path).map_err(err)?;
        Ok(Arc::new(AckLogFile { path: path.to_owned(), file: Mutex::new(file) }))
    }

    fn append(&self, bytes: &[u8]) {
        let mut file = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(e) = file.write_all(bytes) {
            // The run goes on; the check reads what was logged.
            eprintln!("ringstore-load: write log {}: {e}", self.path.display());
        }
    }
}

/// One worker's buffer of acknowledgement lines for the shared file; flushed by size, by age
/// and when dropped (the end of the run, or a run that ends in an error).
#[derive(Debug)]
struct AckSink {
    file: Arc<AckLogFile>,
    buf: Vec<u8>,
    oldest: Option<Instant>,
}

impl AckSink {
    fn new(file: Arc<AckLogFile>) -> AckSink {
        AckSink { file, buf: Vec::with_capacity(ACK_LOG_FLUSH_BYTES), oldest: None }
    }

    fn line(&mut self, key_no: u64, token: u64, write_id: u64) {
        let now = Instant::now();
        let oldest = *self.oldest.get_or_insert(now);
        let _ = writeln!(self.buf, "{key_no} {token} {write_id}");
        if self.buf.len() >= ACK_LOG_FLUSH_BYTES || now - oldest >= ACK_LOG_FLUSH_INTERVAL {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.file.append(&self.buf);
            self.buf.clear();
        }
        self.oldest = None;
    }
}

impl Drop for AckSink {
    fn drop(&mut self) {
        self.flush();
    }
}

impl WriteLog {
    /// Saves the log as text: a header naming the key-size spec (keys are rebuilt from their
    /// numbers with it), then one `key token write_id` line per key.
    pub fn save(&self, path: &Path, key_size: SizeSpec) -> Result<(), String> {
        let err = |e: std::io::Error| format!("write log {}: {e}", path.display());
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(err)?);
        writeln!(out, "{WRITE_LOG_HEADER} {key_size}").map_err(err)?;
        let mut keys: Vec<_> = self.newest.iter().collect();
        keys.sort_unstable();
        for (k, (token, wid)) in keys {
            writeln!(out, "{k} {token} {wid}").map_err(err)?;
        }
        out.flush().map_err(err)
    }

    /// Reads a log written by [`WriteLog::save`] or streamed through an [`AckLogFile`] (a key
    /// may have several lines; the highest token wins), and the key-size spec it was written
    /// with. A last line without its newline was cut by a crash while being written and is
    /// skipped.
    pub fn load(path: &Path) -> Result<(WriteLog, SizeSpec), String> {
        let mut text = std::fs::read_to_string(path)
            .map_err(|e| format!("write log {}: {e}", path.display()))?;
        if !text.ends_with('\n') {
            let complete = text.rfind('\n').map_or(0, |i| i + 1);
            text.truncate(complete);
        }
        let mut lines = text.lines();
        let bad = |n: usize, what: &str| format!("write log {} line {n}: {what}", path.display());
        let header = lines.next().unwrap_or_default();
        let spec = header
            .strip_prefix(WRITE_LOG_HEADER)
            .ok_or_else(|| bad(1, &format!("expected a header starting {WRITE_LOG_HEADER:?}")))?;
        let key_size: SizeSpec = spec.trim().parse().map_err(|e: String| bad(1, &e))?;
        let mut log = WriteLog::default();
        for (i, line) in lines.enumerate() {
            let n: Vec<u64> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
            let [k, token, wid] = n[..] else {
                return Err(bad(i + 2, "expected three numbers: key, token, write id"));
            };
            log.keep(k, token, wid);
        }
        Ok((log, key_size))
    }
}

/// What reading everything back found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub checked: u64,
    pub ok: u64,
    pub lost: u64,
    pub stale: u64,
    pub foreign: u64,
    pub newer: u64,
    /// Keys whose read was answered with an error, by status code (614: a damaged record):
    /// counted, and the check goes on with the next key.
    pub errors: BTreeMap<u16, u64>,
}

impl VerifyReport {
    pub fn passed(&self) -> bool {
        self.lost == 0 && self.stale == 0 && self.foreign == 0 && self.errors.is_empty()
    }

    /// Keys answered with an error, all codes together.
    pub fn errored(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Reads back every key in `log` through each shard's own port and classifies what it finds.
pub fn read_back(
    client: &mut Client,
    ks: &KeySpace,
    log: &WriteLog,
) -> Result<VerifyReport, String> {
    let shards = ks.shards();
    let mut by_shard: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); shards];
    let mut key = String::new();
    for (&k, &(token, wid)) in &log.newest {
        write_key(&mut key, k, ks.key_size.of(k));
        by_shard[ks.shard_of(ks.partition(k, &key))].push((k, token, wid));
    }
    let mut report = VerifyReport::default();
    for (shard, keys) in by_shard.iter().enumerate() {
        let conn = client.connection(Some(shard)).map_err(|e| e.to_string())?;
        for chunk in keys.chunks(READBACK_PIPELINE) {
            let mut ids = Vec::with_capacity(chunk.len());
            for &(k, _, _) in chunk {
                write_key(&mut key, k, ks.key_size.of(k));
                let fields = FieldsBuf::of([(KEY_FIELD, ValueRef::String(&key))]);
                let req = Request::Get {
                    table: TABLE,
                    key: fields.list(),
                    versions: VersionSelect::Newest,
                };
                ids.push(conn.send_request(&req, Durability::Sync).map_err(|e| e.to_string())?);
            }
            for (&(k, token, wid), &id) in chunk.iter().zip(&ids) {
                let reply = conn.recv_id(id).map_err(|e| e.to_string())?;
                if reply.status != 0 {
                    report.checked += 1;
                    *report.errors.entry(reply.status).or_default() += 1;
                    continue;
                }
                let (columns, row) =
                    decode_get(&reply.body).map_err(|e| format!("read back key {k}: {e}"))?;
                let v = columns.iter().position(|c| c == VALUE_FIELD);
                classify(
                    &mut report,
                    k,
                    token,
                    wid,
                    row.map(|r| {
                        let value = v.and_then(|i| r.newest().fields.get(i).cloned().flatten());
                        (r.token.0, value)
                    }),
                );
            }
        }
    }
    Ok(report)
}

/// Adds one key's finding: `found` is the row's token and value, if the key was found.
fn classify(
    r: &mut VerifyReport,
    key_no: u64,
    token: u64,
    write_id: u64,
    found: Option<(u64, Option<Value>)>,
) {
    r.checked += 1;
    let Some((found_token, value)) = found else {
        r.lost += 1;
        return;
    };
    let wid = match value {
        Some(Value::Binary(b)) => write_id_of(&b, key_no),
        _ => None,
    };
    match wid {
        None => r.foreign += 1,
        Some(_) if found_token < token => r.stale += 1,
        Some(w) if found_token == token && w == write_id => r.ok += 1,
        Some(_) if found_token > token => r.newer += 1,
        Some(_) => r.foreign += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_identify_their_write() {
        let mut v = Vec::new();
        fill_value(&mut v, 7, 0x1_0000_0002, 100);
        assert_eq!(v.len(), 100);
        assert_eq!(write_id_of(&v, 7), Some(0x1_0000_0002));
        assert_eq!(write_id_of(&v, 8), None, "another key's value");
        v[50] ^= 1;
        assert_eq!(write_id_of(&v, 7), None, "a flipped bit");
        fill_value(&mut v, 7, 1, 8);
        assert_eq!(write_id_of(&v, 7), None, "too short to tell");
    }

    #[test]
    fn acks_parse_and_keep_the_newest() {
        let mut body = vec![0u8];
        body.extend_from_slice(&5u64.to_le_bytes());
        body.extend_from_slice(&9u64.to_le_bytes());
        assert_eq!(parse_write_ack(&body), Some((5, 9)));
        assert_eq!(parse_write_ack(&body[..16]), None);
        let mut log = WriteLog::default();
        log.acked(1, 10, 100);
        log.acked(1, 5, 50);
        let mut other = WriteLog::default();
        other.acked(1, 12, 120);
        other.acked(2, 1, 7);
        log.merge(other);
        assert_eq!(log.newest.get(&1), Some(&(12, 120)));
        assert_eq!(log.len(), 2);
    }

    #[test]
    fn write_logs_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut log = WriteLog::default();
        log.acked(3, 10, 30);
        log.acked(1, 20, 40);
        log.save(&path, "16..64".parse().unwrap()).unwrap();
        let (back, size) = WriteLog::load(&path).unwrap();
        assert_eq!(back.newest, log.newest);
        assert_eq!(size.to_string(), "16..64");
        std::fs::write(&path, "something else\n").unwrap();
        assert!(WriteLog::load(&path).unwrap_err().contains("line 1"));
        std::fs::write(&path, format!("{WRITE_LOG_HEADER} 16\n1 2\n")).unwrap();
        assert!(WriteLog::load(&path).unwrap_err().contains("line 2"));
    }

    /// Several workers stream to one file; lines of a key may repeat (the highest token wins)
    /// and a last line cut by a crash is skipped.
    #[test]
    fn streamed_logs_load_with_repeats_and_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let file = AckLogFile::create(&path, "16".parse().unwrap()).unwrap();
        let (mut a, mut b) = (WriteLog::streaming(file.clone()), WriteLog::streaming(file));
        a.acked(1, 10, 100);
        b.acked(2, 20, 200);
        a.acked(1, 11, 101);
        let mut merged = WriteLog::default();
        merged.merge(a);
        merged.merge(b);
        let (back, _) = WriteLog::load(&path).unwrap();
        assert_eq!(back.newest, merged.newest);
        assert_eq!(back.newest.get(&1), Some(&(11, 101)));
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("3 30");
        std::fs::write(&path, &text).unwrap();
        let (back, _) = WriteLog::load(&path).unwrap();
        assert_eq!(back.len(), 2, "the torn line is skipped");
    }

    #[test]
    fn findings_are_classified() {
        let mut r = VerifyReport::default();
        let mut v = Vec::new();
        fill_value(&mut v, 3, 42, 32);
        let found = |t, v: &Vec<u8>| Some((t, Some(Value::Binary(v.clone()))));
        classify(&mut r, 3, 10, 42, found(10, &v));
        classify(&mut r, 3, 10, 42, None);
        classify(&mut r, 3, 10, 42, found(9, &v));
        classify(&mut r, 3, 10, 41, found(11, &v));
        classify(&mut r, 3, 10, 42, Some((10, Some(Value::Binary(vec![1; 32])))));
        let want = VerifyReport {
            checked: 5,
            ok: 1,
            lost: 1,
            stale: 1,
            foreign: 1,
            newer: 1,
            ..Default::default()
        };
        assert_eq!(r, want);
        assert!(!r.passed());
    }
}
