pub mod chart;
pub mod hdr;
pub mod json;
pub mod progress;
pub mod table;
