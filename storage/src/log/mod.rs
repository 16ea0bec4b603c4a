//! The write-ahead log of one shard: segment files, the in-memory tail, group commit, and the
//! scanner that reads segments back.

pub mod group_commit;
pub mod preallocate;
pub mod prepared;
pub mod scan;
pub mod segment_file;
pub mod writer;
