pub mod entry;
pub use entry::{IndexEntry, Location};
