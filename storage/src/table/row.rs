//! The compact, schema-versioned encoding of a row's non-key fields (issue 3).
