//! CRC-32C (Castagnoli) of the short inputs on the request path: a frame header
//! (`ringstore-net`), a record's header, key and value (`ringstore-storage`). The values are the
//! `crc32c` crate's, bit for bit; only the way short inputs are walked differs.
//!
//! The crate's hardware path feeds the bytes before the first 8-byte-aligned address and after
//! the last one through the one-byte instruction, one after another (3 cycles each), which for
//! inputs of a few dozen bytes costs more than the 8-byte steps. Here an input up to
//! [`SHORT_BYTES_MAX`] is read as unaligned 8-byte words and its last 0-7 bytes take at most one
//! 4-, one 2- and one 1-byte step; longer inputs go to the crate, whose three interleaved
//! streams are faster there. docs/BENCHMARKS.md (twenty-third session) has the measurement.

/// Longest input walked here; longer ones go to the `crc32c` crate.
pub const SHORT_BYTES_MAX: usize = 256;

/// CRC-32C of `bytes` (the same value as `crc32c::crc32c`).
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c_append(0, bytes)
}

/// CRC-32C of `bytes` continuing from `crc` (the same value as `crc32c::crc32c_append`).
#[inline]
pub fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() <= SHORT_BYTES_MAX && std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE4.2, checked just above.
        return unsafe { short_sse42(crc, bytes) };
    }
    crc32c::crc32c_append(crc, bytes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn short_sse42(crc: u32, bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut words = bytes.chunks_exact(8);
    let mut c = u64::from(!crc);
    for word in &mut words {
        c = _mm_crc32_u64(c, u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    let mut c = c as u32;
    let mut rest = words.remainder();
    if let Some((four, tail)) = rest.split_first_chunk::<4>() {
        c = _mm_crc32_u32(c, u32::from_le_bytes(*four));
        rest = tail;
    }
    if let Some((two, tail)) = rest.split_first_chunk::<2>() {
        c = _mm_crc32_u16(c, u16::from_le_bytes(*two));
        rest = tail;
    }
    if let Some(&one) = rest.first() {
        c = _mm_crc32_u8(c, one);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_crc32c_crate_for_every_length_and_alignment() {
        let buf: Vec<u8> =
            (0..2 * SHORT_BYTES_MAX as u32 + 64).map(|i| (i * 131 + 7) as u8).collect();
        for len in 0..=SHORT_BYTES_MAX + 40 {
            for offset in 0..8 {
                let bytes = &buf[offset..offset + len];
                assert_eq!(crc32c(bytes), crc32c::crc32c(bytes), "len {len} offset {offset}");
                let seed = len as u32 * 2_654_435_761;
                assert_eq!(
                    crc32c_append(seed, bytes),
                    crc32c::crc32c_append(seed, bytes),
                    "append, len {len} offset {offset}"
                );
            }
        }
    }
}
