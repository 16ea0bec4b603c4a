//! The limits of one DDL text. Their own module because the parser's parts and its errors
//! (`error.rs`) all name them, and `mod.rs` uses those parts.

/// Largest DDL text accepted in one call. DDL is small; the limit bounds the parser's time and
/// memory for hostile input.
pub const DDL_TEXT_BYTES_MAX: usize = 1 << 20;

/// Most statements in one DDL text. Every statement of a request runs before the shard serves
/// anything else, and the response counts its outcomes in a `u16` (docs/PROTOCOL.md); 80,000
/// `SHOW TABLES;` fit in 1 MiB and once overflowed that count.
pub const DDL_STATEMENTS_MAX: usize = 1024;

const _: () = assert!(DDL_STATEMENTS_MAX <= u16::MAX as usize);
