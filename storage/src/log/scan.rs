//! Reads a segment front to back and classifies every byte range: valid records, alignment
//! padding, damaged records, and a torn tail. Recovery and compaction share it.
//!
//! Rules (docs/FORMAT.md, "Reading a segment"):
//! - A valid header (its checksum covers the key) whose value checksum fails is a damaged record
//!   of a known key, skipped by its length, if a valid record follows it; if none does, it is a
//!   torn tail.
//! - An invalid header followed by zeros up to the next 4096-byte boundary is flush padding.
//! - Any other invalid header is damage: the scanner looks for the next valid record at an 8-byte
//!   boundary. If one exists, the damage is reported as a corrupt record in the middle; if none
//!   does, the rest of the segment is a torn tail (a write cut short by a crash) and is cut off.
//! - A record whose length runs past the end of the file is a torn tail.
//!
//! Reads go through the [`DiskFile`] in chunks of [`SEQUENTIAL_READ_BYTES`], never sized by a
//! length read from disk beyond [`RECORD_BYTES_MAX`].

use std::io;

use crate::constants::*;
use crate::disk::DiskFile;
use crate::record::{self, DecodeError, RecordKind, RecordMeta};

/// One owned record as the scanner found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedRecord {
    pub offset: u64,
    pub padded_len: u64,
    pub meta: RecordMeta,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// What the scanner found next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanItem {
    Record(ScannedRecord),
    /// A record whose header and key are intact but whose value failed its checksum, followed by
    /// more valid data. Its `value` is empty; the value cannot be served.
    Damaged(ScannedRecord),
    /// Damage that names no key, followed by more valid data. `lsn` is known only when the header
    /// was intact.
    Corrupt {
        offset: u64,
        lsn: Option<u64>,
        what: String,
    },
    /// Invalid bytes from `offset` to the end of the segment; nothing after them is read.
    TornTail {
        offset: u64,
        what: String,
    },
    /// A put the caller of [`SegmentScanner::next_unless`] said it does not need: its header and
    /// key were verified (so `padded_len` is the record's own), its value was neither checked
    /// nor copied.
    Skipped {
        offset: u64,
        padded_len: u64,
    },
}

/// A forward reader over one segment file.
#[derive(Debug)]
pub struct SegmentScanner<'f, F: DiskFile> {
    file: &'f F,
    segment_id: u32,
    pos: u64,
    file_size: u64,
    /// The bytes of the last read, used in place (no copy), from `buf_start`.
    buf: Option<F::ReadBuf>,
    buf_start: u64,
    done: bool,
    /// End of the last record or damage classified; trailing padding (the zeros of a
    /// preallocated segment) does not count.
    data_end: u64,
}

impl<'f, F: DiskFile> SegmentScanner<'f, F> {
    /// Starts reading at `start` (the first record offset, or a checkpoint's replay point).
    pub fn new(file: &'f F, segment_id: u32, start: u64, file_size: u64) -> Self {
        SegmentScanner {
            file,
            segment_id,
            pos: start,
            file_size,
            buf: None,
            buf_start: start,
            done: false,
            data_end: start,
        }
    }

    /// Offset just past the last byte classified so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Offset just past the last record or damaged range found so far: where the segment's data
    /// ends, not counting zero padding after it.
    pub fn data_end(&self) -> u64 {
        self.data_end
    }

    /// Makes bytes `pos..pos+len` (clipped at end of file) available in `buf`.
    async fn fill(&mut self, pos: u64, len: u64) -> io::Result<()> {
        let want_end = (pos + len).min(self.file_size);
        let have_end = self.buf_start + self.buf.as_deref().map_or(0, <[u8]>::len) as u64;
        if pos >= self.buf_start && want_end <= have_end {
            return Ok(());
        }
        let read_len = (want_end - pos).max(SEQUENTIAL_READ_BYTES as u64).min(self.file_size - pos);
        let bytes = self.file.read_at(pos, read_len as usize).await?;
        if (bytes.len() as u64) < read_len {
            // The file is shorter than the caller said (a torn tail ends mid-block): believe
            // the file, so nothing below reads past the bytes that exist.
            self.file_size = pos + bytes.len() as u64;
        }
        self.buf = Some(bytes);
        self.buf_start = pos;
        Ok(())
    }

    fn slice(&self, pos: u64) -> &[u8] {
        let from = (pos - self.buf_start) as usize;
        self.buf.as_deref().and_then(|b| b.get(from..)).unwrap_or(&[])
    }

    /// The next item, or None at the end of the segment.
    pub async fn next(&mut self) -> io::Result<Option<ScanItem>> {
        self.next_unless(|_| false).await
    }

    /// The next item, except that a put at an offset for which `unneeded` is true comes back as
    /// [`ScanItem::Skipped`] once its header and key check out: compaction passes the records
    /// its dead-record map names, which under an overwrite load are nearly all it reads, and
    /// saves their value checksum and copies. Never use it where a record's value must be
    /// verified (recovery): a skipped record's value may be damaged.
    pub async fn next_unless(
        &mut self,
        unneeded: impl Fn(u64) -> bool,
    ) -> io::Result<Option<ScanItem>> {
        let item = self.next_item(unneeded).await?;
        if item.is_some() {
            self.data_end = self.pos;
        }
        Ok(item)
    }

    async fn next_item(&mut self, unneeded: impl Fn(u64) -> bool) -> io::Result<Option<ScanItem>> {
        while !self.done && self.pos < self.file_size {
            self.fill_header(self.pos).await?;
            match record::decode_header(self.slice(self.pos)) {
                Ok(h) if h.lsn() != 0 && h.meta().kind == RecordKind::Put && unneeded(self.pos) => {
                    return Ok(Some(self.skip_record(h.padded_len())));
                }
                Ok(h) if h.lsn() != 0 => return self.read_record(h.padded_len()).await.map(Some),
                Ok(_) | Err(_) => {
                    if self.skip_padding().await? {
                        continue;
                    }
                    return self.resync().await.map(Some);
                }
            }
        }
        Ok(None)
    }

    /// Makes the header at `pos` and the key it claims (at most [`KEY_BYTES_MAX`]) available.
    async fn fill_header(&mut self, pos: u64) -> io::Result<()> {
        self.fill(pos, RECORD_HEADER_BYTES as u64).await?;
        if let Some(span) = record::header_and_key_len(self.slice(pos)) {
            self.fill(pos, span as u64).await?;
        }
        Ok(())
    }

    /// Steps over a record whose header and key were verified, without reading its value.
    fn skip_record(&mut self, padded_len: u64) -> ScanItem {
        let offset = self.pos;
        if offset + padded_len > self.file_size {
            self.done = true;
            let what =
                format!("record of {padded_len} bytes runs past end of file at {}", self.file_size);
            return ScanItem::TornTail { offset, what };
        }
        self.pos += padded_len;
        ScanItem::Skipped { offset, padded_len }
    }

    async fn read_record(&mut self, padded_len: u64) -> io::Result<ScanItem> {
        let offset = self.pos;
        if offset + padded_len > self.file_size {
            self.done = true;
            let what =
                format!("record of {padded_len} bytes runs past end of file at {}", self.file_size);
            return Ok(ScanItem::TornTail { offset, what });
        }
        self.fill(offset, padded_len).await?;
        self.pos += padded_len;
        let buf = self.slice(offset);
        match record::decode(buf) {
            Ok(r) if r.meta.segment_id == self.segment_id => Ok(ScanItem::Record(ScannedRecord {
                offset,
                padded_len,
                meta: r.meta,
                key: r.key.to_vec(),
                value: r.value.to_vec(),
            })),
            Ok(r) => Ok(ScanItem::Corrupt {
                offset,
                lsn: Some(r.meta.lsn),
                what: format!("record names segment {}", r.meta.segment_id),
            }),
            Err(DecodeError::BadBody { lsn, .. }) => self.bad_body(offset, lsn).await,
            Err(e) => Ok(ScanItem::Corrupt { offset, lsn: None, what: format!("{e:?}") }),
        }
    }

    /// A record at `offset` with a valid header and key and a value that fails its checksum (the
    /// scan is already past it). With valid records after it, it is damage in the middle, of a
    /// known key; with none, it is a write cut short by a crash: in a preallocated segment a torn
    /// record keeps its length (the zeros after the tear are inside the file), so the length alone
    /// cannot tell.
    async fn bad_body(&mut self, offset: u64, lsn: u64) -> io::Result<ScanItem> {
        if self.find_valid_record(self.pos).await?.is_some() {
            self.fill_header(offset).await?;
            let buf = self.slice(offset);
            if let Ok(h) = record::decode_header(buf) {
                let key = buf[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + h.key_len()].to_vec();
                let padded_len = h.padded_len();
                let meta = h.meta();
                return Ok(ScanItem::Damaged(ScannedRecord {
                    offset,
                    padded_len,
                    meta,
                    key,
                    value: Vec::new(),
                }));
            }
            let what = "value checksum mismatch".into();
            return Ok(ScanItem::Corrupt { offset, lsn: Some(lsn), what });
        }
        self.done = true;
        self.pos = self.file_size;
        let what = "value checksum mismatch and no valid record follows".into();
        Ok(ScanItem::TornTail { offset, what })
    }

    /// If the bytes from `pos` to the next block boundary are all zero, skips them.
    async fn skip_padding(&mut self) -> io::Result<bool> {
        let boundary = align_up(self.pos + 1, DMA_ALIGN_BYTES).min(self.file_size);
        self.fill(self.pos, boundary - self.pos).await?;
        // A short read may have shown the file ends before the boundary.
        let boundary = boundary.min(self.file_size);
        let gap = self.slice(self.pos).get(..(boundary - self.pos) as usize).unwrap_or(&[]);
        if gap.iter().all(|&b| b == 0) {
            self.pos = boundary;
            return Ok(true);
        }
        Ok(false)
    }

    /// After damage at `pos`, finds the next valid record at an 8-byte boundary.
    async fn resync(&mut self) -> io::Result<ScanItem> {
        let offset = self.pos;
        if let Some(probe) = self.find_valid_record(offset + RECORD_ALIGN_BYTES).await? {
            self.pos = probe;
            let what = format!("damaged header; {} bytes skipped", probe - offset);
            return Ok(ScanItem::Corrupt { offset, lsn: None, what });
        }
        self.done = true;
        self.pos = self.file_size;
        Ok(ScanItem::TornTail { offset, what: "no valid record follows".into() })
    }

    /// The first 8-byte boundary at or after `from` where a valid record starts.
    async fn find_valid_record(&mut self, from: u64) -> io::Result<Option<u64>> {
        let mut probe = from;
        while probe + RECORD_HEADER_BYTES as u64 <= self.file_size {
            if self.is_valid_record_at(probe).await? {
                return Ok(Some(probe));
            }
            probe += RECORD_ALIGN_BYTES;
        }
        Ok(None)
    }

    async fn is_valid_record_at(&mut self, probe: u64) -> io::Result<bool> {
        self.fill(probe, RECORD_HEADER_BYTES as u64).await?;
        // The magic is the last two header bytes; checking it first keeps the probe loop cheap.
        let magic = record::RECORD_MAGIC.to_le_bytes();
        if self.slice(probe).get(46..48) != Some(&magic[..]) {
            return Ok(false);
        }
        self.fill_header(probe).await?;
        let Ok(h) = record::decode_header(self.slice(probe)) else { return Ok(false) };
        if probe + h.padded_len() > self.file_size {
            return Ok(false);
        }
        self.fill(probe, h.padded_len()).await?;
        Ok(
            matches!(record::decode(self.slice(probe)), Ok(r) if r.meta.segment_id == self.segment_id),
        )
    }
}
