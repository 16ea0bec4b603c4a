//! The storage crate's one error type. Bad input and operating conditions are variants here;
//! broken invariants panic; a failed log write or fsync poisons the store ([`Error::Poisoned`]).

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("key is {len} bytes; the limit is {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    #[error("key is empty; keys must be at least 1 byte")]
    KeyEmpty,
    #[error("value is {len} bytes; the limit is {max} bytes")]
    ValueTooLarge { len: usize, max: usize },
    #[error("batch has {ops} operations; the limit is {max}")]
    BatchTooManyOps { ops: usize, max: usize },
    #[error("batch encodes to {bytes} bytes; the limit is {max} bytes")]
    BatchTooLarge { bytes: usize, max: usize },
    #[error("batch is empty")]
    BatchEmpty,
    #[error("scan limit {limit} is out of range; it must be 1..={max}")]
    ScanLimit { limit: usize, max: usize },
    #[error("invalid configuration: {what}")]
    Config { what: String },
    #[error("index key arena would grow past {max} bytes; split the shard")]
    IndexFull { max: u64 },
    #[error("no free segment id: {max} segments are live")]
    SegmentIdsExhausted { max: u32 },
    #[error(
        "store refuses writes: {reason}; restart to recover from the log (writes that were \
         not acknowledged may or may not be present)"
    )]
    Poisoned { reason: String },
    #[error("store is closed")]
    Closed,
    #[error("I/O error during {op} on {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error(
        "corrupt record in segment {segment} at offset {offset} (lsn {lsn}): {what}; it is not served"
    )]
    CorruptRecord { segment: u32, offset: u64, lsn: String, what: String },
    #[error("corrupt {file}: {what}")]
    CorruptFile { file: PathBuf, what: String },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { op, path: path.into(), source }
    }
}
