//! The read path: get by key, and scans by prefix or range, forward or reverse, paged.
//!
//! A get looks in the record cache first (one hash lookup), then the index; a record not yet
//! flushed is decoded from the log's memory, anything else is read from its segment with one
//! io_uring DMA read, verified (checksums and key) and cached. A scan collects up to `limit`
//! live index entries first, synchronously, so it sees one consistent moment of the index, then
//! reads their values with up to [`SCAN_READS_IN_FLIGHT_MAX`] reads in flight.

use std::ops::Bound;
use std::rc::Rc;

use bytes::Bytes;
use futures::stream::{self, StreamExt};

use crate::cache::CachedRecord;
use crate::constants::*;
use crate::disk::{Disk, DiskFile};
use crate::index::IndexEntry;
use crate::record;
use crate::state::{check_key, Shared};
use crate::store::{Store, Value};
use crate::table::KeyByteRange;
use crate::{Error, Result};

/// A value borrowed from the store's memory (the record cache or the unflushed log) for the
/// length of a [`Store::read_now`] callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueView<'a> {
    pub value: &'a [u8],
    pub version: u64,
    pub expiry_ms: u64,
}

/// What [`Store::read_now`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadNow<T> {
    /// The answer came from memory: the callback's result.
    Done(T),
    /// The value must be read from its segment, where its record (header, key and value,
    /// padded) takes `record_bytes`, so a caller can size what it sets aside for the reply
    /// before it waits for the read.
    OnDisk { record_bytes: usize },
}

impl<T> ReadNow<T> {
    /// The answer, if it came from memory.
    pub fn done(self) -> Option<T> {
        match self {
            ReadNow::Done(t) => Some(t),
            ReadNow::OnDisk { .. } => None,
        }
    }

    /// The answer mapped by `f`, or the same record size.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ReadNow<U> {
        match self {
            ReadNow::Done(t) => ReadNow::Done(f(t)),
            ReadNow::OnDisk { record_bytes } => ReadNow::OnDisk { record_bytes },
        }
    }
}

/// Which keys a scan covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRange {
    /// Every key starting with these bytes (empty: every key).
    Prefix(Vec<u8>),
    /// `start <= key < end` style bounds.
    Range { start: Bound<Vec<u8>>, end: Bound<Vec<u8>> },
}

/// A table's key range (`start` included, `end` excluded) as a scan of the store.
impl From<KeyByteRange> for KeyRange {
    fn from(r: KeyByteRange) -> KeyRange {
        let end = r.end.map_or(Bound::Unbounded, Bound::Excluded);
        KeyRange::Range { start: Bound::Included(r.start), end }
    }
}

/// A scan request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRequest {
    pub range: KeyRange,
    pub reverse: bool,
    /// Rows per page, 1..=[`SCAN_LIMIT_MAX`].
    pub limit: usize,
    /// Continue after this key (the `resume` of the previous page).
    pub resume: Option<Vec<u8>>,
    /// Return keys, versions and expiries without reading values.
    pub keys_only: bool,
}

impl ScanRequest {
    pub fn prefix(prefix: &[u8], limit: usize) -> ScanRequest {
        ScanRequest {
            range: KeyRange::Prefix(prefix.to_vec()),
            reverse: false,
            limit,
            resume: None,
            keys_only: false,
        }
    }
}

/// One row of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: Bytes,
    pub value: Bytes,
    pub version: u64,
    pub expiry_ms: u64,
}

/// One page of a scan; `resume` is Some when more rows may follow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScanPage {
    pub rows: Vec<Row>,
    pub resume: Option<Vec<u8>>,
}

/// Where a row's value comes from, decided while the index is borrowed.
enum Source<F> {
    Ready(Bytes),
    File(Rc<F>),
}

impl<D: Disk> Store<D> {
    /// The newest value of `key`, or None if absent, deleted or expired.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Value>> {
        let owned = |v: Option<ValueView<'_>>| {
            v.map(|v| Value {
                value: Bytes::copy_from_slice(v.value),
                version: v.version,
                expiry_ms: v.expiry_ms,
            })
        };
        let shared = &self.shared;
        // One clock reading for both steps: with a second one the entry could expire in between.
        let now = shared.clock.now_ms();
        if let ReadNow::Done(answer) = self.read_now(key, now, owned) {
            return answer;
        }
        let (entry, file) = {
            let st = shared.state.borrow();
            // read_now found the key live at `now` and on disk, and nothing ran since.
            let entry = st.index.get(key).filter(|e| !e.is_expired(now)).expect("key is live");
            (entry, st.segments.file(entry.location().segment()))
        };
        let value = read_value(shared, file, key, &entry).await?;
        let mut st = shared.state.borrow_mut();
        // Cache only if no write replaced the record while it was being read.
        if let Some((now_entry, hint)) = st.index.get_hinted(key) {
            if now_entry.location() == entry.location() {
                let rec = CachedRecord {
                    value: value.clone(),
                    version: entry.version(),
                    expiry_ms: entry.expiry_ms(),
                };
                st.cache.insert(key, rec, hint);
            }
        }
        Ok(Some(Value { value, version: entry.version(), expiry_ms: entry.expiry_ms() }))
    }

    /// Reads `key` without waiting, when its answer is in memory: a record cache hit, a record
    /// not flushed yet, or a key that is absent, deleted or expired. Calls `f` with the value
    /// borrowed from memory (None: no live value) and returns its result; returns None, without
    /// calling `f`, when the value must be read from its segment ([`Store::get`] does that).
    /// Nothing is copied or allocated. `f` runs while the store's state is borrowed, so it must
    /// not call back into the store. `now` is the store's clock ([`Store::now_ms`]) as the
    /// caller last read it (the node reads it once per batch of requests).
    pub fn read_now<R>(
        &self,
        key: &[u8],
        now: u64,
        f: impl FnOnce(Option<ValueView<'_>>) -> R,
    ) -> ReadNow<Result<R>> {
        if let Err(e) = check_key(key) {
            return ReadNow::Done(Err(e));
        }
        let shared = &self.shared;
        let mut st = shared.state.borrow_mut();
        st.counters.gets += 1;
        let st = &*st;
        // The cache first: every write updates or drops its key's entry, so a hit is current, and it costs
        // one hash lookup instead of an ordered-index search.
        if let Some(c) = st.cache.get_ref(key) {
            let expired = c.expiry_ms != 0 && c.expiry_ms <= now;
            let value = ValueView { value: c.value, version: c.version, expiry_ms: c.expiry_ms };
            return ReadNow::Done(Ok(f((!expired).then_some(value))));
        }
        let Some(entry) = st.index.get(key).filter(|e| !e.is_expired(now)) else {
            return ReadNow::Done(Ok(f(None)));
        };
        let location = entry.location();
        let Some(bytes) = st.find_unflushed(location) else {
            return ReadNow::OnDisk { record_bytes: location.len() as usize };
        };
        ReadNow::Done(check_record(bytes, key, &entry).map(|value| {
            f(Some(ValueView { value, version: entry.version(), expiry_ms: entry.expiry_ms() }))
        }))
    }

    /// One page of rows in key order (or reverse order), skipping expired rows.
    pub async fn scan(&self, req: &ScanRequest) -> Result<ScanPage> {
        if req.limit == 0 || req.limit > SCAN_LIMIT_MAX {
            return Err(Error::ScanLimit { limit: req.limit, max: SCAN_LIMIT_MAX });
        }
        let (start, end) = bounds(req);
        let found = self.collect(req, start, end);
        let shared = &self.shared;
        let rows: Vec<Result<Row>> = stream::iter(found)
            .map(|(key, entry, source)| async move {
                let value = match source {
                    Source::Ready(v) => v,
                    Source::File(f) => read_value(shared, Some(f), &key, &entry).await?,
                };
                Ok(Row {
                    key: Bytes::from(key),
                    value,
                    version: entry.version(),
                    expiry_ms: entry.expiry_ms(),
                })
            })
            .buffered(SCAN_READS_IN_FLIGHT_MAX)
            .collect()
            .await;
        let rows = rows.into_iter().collect::<Result<Vec<Row>>>()?;
        let resume =
            (rows.len() == req.limit).then(|| rows.last().map(|r| r.key.to_vec())).flatten();
        Ok(ScanPage { rows, resume })
    }

    /// Collects up to `limit` live entries and where their values come from.
    fn collect(
        &self,
        req: &ScanRequest,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    ) -> Vec<(Vec<u8>, IndexEntry, Source<D::File>)> {
        let now = self.shared.clock.now_ms();
        let mut st = self.shared.state.borrow_mut();
        st.counters.scans += 1;
        let st = &*st;
        let range = st.index.range(as_ref(&start), as_ref(&end), req.reverse);
        let mut out = Vec::with_capacity(req.limit.min(1024));
        for (key, entry) in range.filter(|(_, e)| !e.is_expired(now)).take(req.limit) {
            let loc = entry.location();
            let source = if req.keys_only {
                Source::Ready(Bytes::new())
            } else if let Some(c) = st.cache.get(key) {
                Source::Ready(c.value)
            } else if let Some(bytes) = st.find_unflushed(loc) {
                // Decoding can only fail on a broken invariant here: these bytes never left memory.
                Source::Ready(decode_value(bytes, key, &entry).expect("in-memory record decodes"))
            } else {
                match st.segments.file(loc.segment()) {
                    Some(f) => Source::File(f),
                    None => panic!("index points at segment {} which has no file", loc.segment()),
                }
            };
            out.push((key.to_vec(), entry, source));
        }
        out
    }
}

/// The effective bounds of a request, with the resume key applied.
pub(crate) fn bounds(req: &ScanRequest) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let (mut start, mut end) = match &req.range {
        KeyRange::Prefix(p) => (Bound::Included(p.clone()), prefix_end(p)),
        KeyRange::Range { start, end } => (start.clone(), end.clone()),
    };
    if let Some(r) = &req.resume {
        if req.reverse {
            end = tighter_end(end, r.clone());
        } else {
            start = tighter_start(start, r.clone());
        }
    }
    (start, end)
}

fn tighter_start(start: Bound<Vec<u8>>, resume: Vec<u8>) -> Bound<Vec<u8>> {
    match &start {
        Bound::Included(s) | Bound::Excluded(s) if *s > resume => start,
        _ => Bound::Excluded(resume),
    }
}

fn tighter_end(end: Bound<Vec<u8>>, resume: Vec<u8>) -> Bound<Vec<u8>> {
    match &end {
        Bound::Included(e) | Bound::Excluded(e) if *e < resume => end,
        _ => Bound::Excluded(resume),
    }
}

/// The first key after every key with prefix `p` (unbounded if `p` is empty or all 0xff).
pub fn prefix_end(p: &[u8]) -> Bound<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Bound::Excluded(end);
        }
    }
    Bound::Unbounded
}

pub(crate) fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Reads, verifies and returns the value of the record at `entry`.
async fn read_value<D: Disk>(
    shared: &Shared<D>,
    file: Option<Rc<D::File>>,
    key: &[u8],
    entry: &IndexEntry,
) -> Result<Bytes> {
    let loc = entry.location();
    let path = shared.segment_path(loc.segment());
    let file = file
        .unwrap_or_else(|| panic!("index points at segment {} which has no file", loc.segment()));
    let bytes = file
        .read_at(loc.offset(), loc.len() as usize)
        .await
        .map_err(|e| Error::io("read", path, e))?;
    decode_value(&bytes, key, entry)
        .inspect_err(|_| shared.state.borrow_mut().counters.corrupt_reads += 1)
}

/// Verifies a record's checksums and key and returns a copy of its value.
fn decode_value(bytes: &[u8], key: &[u8], entry: &IndexEntry) -> Result<Bytes> {
    check_record(bytes, key, entry).map(Bytes::copy_from_slice)
}

/// Verifies a record's checksums and key and returns its value.
fn check_record<'a>(bytes: &'a [u8], key: &[u8], entry: &IndexEntry) -> Result<&'a [u8]> {
    let loc = entry.location();
    let corrupt = |lsn: String, what: String| Error::CorruptRecord {
        segment: loc.segment(),
        offset: loc.offset(),
        lsn,
        what,
    };
    match record::decode(bytes) {
        Ok(r) if r.key == key => Ok(r.value),
        Ok(r) => Err(corrupt(r.meta.lsn.to_string(), "record holds a different key".into())),
        Err(e) => Err(corrupt("unknown".into(), format!("{e:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_handles_ff_and_empty() {
        assert_eq!(prefix_end(b"ab"), Bound::Excluded(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xff]), Bound::Excluded(vec![2]));
        assert_eq!(prefix_end(&[0xff, 0xff]), Bound::Unbounded);
        assert_eq!(prefix_end(b""), Bound::Unbounded);
    }

    #[test]
    fn resume_tightens_the_right_bound() {
        let mut req = ScanRequest::prefix(b"k", 10);
        req.resume = Some(b"k5".to_vec());
        assert_eq!(bounds(&req).0, Bound::Excluded(b"k5".to_vec()));
        req.reverse = true;
        assert_eq!(bounds(&req).1, Bound::Excluded(b"k5".to_vec()));
    }
}
