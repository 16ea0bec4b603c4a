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
        "store refuses writes: {reason}; writes resume once the store recovers from its log \
         (Store::resume: the node tries each second once the disk has room for two segments) \
         or at a restart (writes that were not acknowledged may or may not be present)"
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
    #[error(
        "the log has {count} damaged range(s) that name no key (first: {first}); acknowledged \
         writes in them cannot be attributed to keys, so the store does not open. To open it \
         without those bytes, set accept_log_damage (ringstore-node --accept-log-damage): each \
         dropped range is logged, and the next checkpoint makes the choice permanent"
    )]
    DamagedLog { count: usize, first: String },
}

impl Error {
    /// The error's stable numeric code (6xx), as the protocol reports it. Codes are never reused
    /// or renumbered; `docs/ERRORS.md` lists them.
    pub fn code(&self) -> u16 {
        match self {
            Error::KeyTooLarge { .. } => 601,
            Error::KeyEmpty => 602,
            Error::ValueTooLarge { .. } => 603,
            Error::BatchTooManyOps { .. } => 604,
            Error::BatchTooLarge { .. } => 605,
            Error::BatchEmpty => 606,
            Error::ScanLimit { .. } => 607,
            Error::Config { .. } => 608,
            Error::IndexFull { .. } => 609,
            Error::SegmentIdsExhausted { .. } => 610,
            Error::Poisoned { .. } => 611,
            Error::Closed => 612,
            Error::Io { .. } => 613,
            Error::CorruptRecord { .. } => 614,
            Error::CorruptFile { .. } => 615,
            Error::DamagedLog { .. } => 616,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { op, path: path.into(), source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes are part of the protocol: this list pins them, and no two variants share one.
    #[test]
    fn codes_are_stable_and_unique() {
        let io = || std::io::Error::other("x");
        let all = [
            Error::KeyTooLarge { len: 0, max: 0 },
            Error::KeyEmpty,
            Error::ValueTooLarge { len: 0, max: 0 },
            Error::BatchTooManyOps { ops: 0, max: 0 },
            Error::BatchTooLarge { bytes: 0, max: 0 },
            Error::BatchEmpty,
            Error::ScanLimit { limit: 0, max: 0 },
            Error::Config { what: String::new() },
            Error::IndexFull { max: 0 },
            Error::SegmentIdsExhausted { max: 0 },
            Error::Poisoned { reason: String::new() },
            Error::Closed,
            Error::Io { op: "", path: PathBuf::new(), source: io() },
            Error::CorruptRecord { segment: 0, offset: 0, lsn: String::new(), what: String::new() },
            Error::CorruptFile { file: PathBuf::new(), what: String::new() },
            Error::DamagedLog { count: 0, first: String::new() },
        ];
        let codes: Vec<u16> = all.iter().map(Error::code).collect();
        assert_eq!(codes, (601..=616).collect::<Vec<u16>>());
        ringstore_model::error_codes::assert_documented(&codes);
    }
}
