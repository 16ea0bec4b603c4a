//! How durable a write must be before it is acknowledged: a wire concept (each write request
//! carries one) that the engine's group commit (`storage/src/log/group_commit.rs`) carries out.

/// How durable a write must be before it is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Acknowledged after the record is written and fdatasync'd.
    #[default]
    Sync,
    /// Acknowledged after the write to the device completes (survives a process crash, not a
    /// power loss).
    WriteNoSync,
    /// Acknowledged once buffered; written within the flush interval.
    NoSync,
}
