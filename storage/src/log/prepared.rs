//! Who owns the prepared segment file's names (`preallocate.rs`): the store's state
//! (`state.rs`) holds a [`Prepared`], the preparer and the flusher claim and release it.
//!
//! Its own module because the preparer is built on the store's state: with the type inside
//! `preallocate.rs` the state would depend on the preparer and close a cycle.

/// The prepared file and who owns its name (the names are `preallocate.rs`'s
/// `READY_SEGMENT_FILE` and `PREPARING_SEGMENT_FILE`).
#[derive(Debug, Default)]
pub(crate) enum Prepared<F> {
    /// No file under `READY_SEGMENT_FILE`; a partial `PREPARING_SEGMENT_FILE` at most.
    #[default]
    Absent,
    /// A task is writing or renaming the file; nobody else touches the name.
    Busy,
    /// Zero-filled, fsynced, under `READY_SEGMENT_FILE`, ready to become a segment.
    Ready(F),
}
