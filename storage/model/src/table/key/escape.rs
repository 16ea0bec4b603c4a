//! Escaping of STRING and BINARY key fields, so that a field's encoding is self-delimiting and
//! byte order equals the order of the raw bytes.
//!
//! Every 0x00 byte becomes 0x00 0xFF and the field ends with 0x00 0x01. A 0x00 in the output is
//! therefore always followed by 0xFF (more data) or 0x01 (the end), and the end sorts below any
//! continuation: "ab" (61 62 00 01) < "ab\0" (61 62 00 FF 00 01) < "abc" (61 62 63 00 01). No
//! encoding is a proper prefix of another, so the next key field starts right after the end mark
//! and a prefix of fields is a byte prefix of the key. A DESC field is stored inverted; `mask` is
//! 0xFF then, and every byte is read through it.

use super::corrupt::Corrupt;

const ESCAPE: u8 = 0x00;
const ESCAPED_ZERO: u8 = 0xFF;
const END: u8 = 0x01;

/// Appends the escaped form of `bytes` and the end mark.
pub(super) fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    // The runs between zero bytes in one copy each (a key without zeros: one search, one copy);
    // byte by byte this was the larger part of encoding a RESP key (docs/BENCHMARKS.md, lever 26).
    let mut rest = bytes;
    while let Some(zero) = memchr::memchr(ESCAPE, rest) {
        out.extend_from_slice(&rest[..zero]);
        out.extend_from_slice(&[ESCAPE, ESCAPED_ZERO]);
        rest = &rest[zero + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[ESCAPE, END]);
}

/// Reads one escaped field starting at `input[pos]`; returns the raw bytes and the position after
/// the end mark.
pub(super) fn unescape(
    input: &[u8],
    mut pos: usize,
    mask: u8,
) -> Result<(Vec<u8>, usize), Corrupt> {
    let mut raw = Vec::new();
    loop {
        // Copy the run of plain bytes up to the next escape byte in one go.
        let rest = input.get(pos..).unwrap_or_default();
        let Some(run) = rest.iter().position(|&b| b == ESCAPE ^ mask) else {
            return Err(Corrupt { offset: input.len(), what: "escaped field has no end mark" });
        };
        if mask == 0 {
            raw.extend_from_slice(&rest[..run]);
        } else {
            raw.extend(rest[..run].iter().map(|b| b ^ mask));
        }
        pos += run;
        match input.get(pos + 1).map(|n| n ^ mask) {
            Some(ESCAPED_ZERO) => raw.push(0),
            Some(END) => return Ok((raw, pos + 2)),
            _ => {
                return Err(Corrupt { offset: pos + 1, what: "0x00 not followed by 0xFF or 0x01" })
            }
        }
        pos += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        escape_into(&mut out, bytes);
        out
    }

    #[test]
    fn escapes_zero_and_marks_the_end() {
        assert_eq!(esc(b""), [0x00, 0x01]);
        assert_eq!(esc(&[0x61, 0x00, 0xFF]), [0x61, 0x00, 0xFF, 0xFF, 0x00, 0x01]);
    }

    #[test]
    fn order_and_round_trip() {
        let inputs: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"\0\x01", b"a", b"a\0", b"a\xFF"];
        for pair in inputs.windows(2) {
            assert!(esc(pair[0]) < esc(pair[1]), "{pair:?}");
        }
        for input in inputs {
            let mut encoded = esc(input);
            encoded.push(0x42);
            assert_eq!(unescape(&encoded, 0, 0).ok(), Some((input.to_vec(), encoded.len() - 1)));
            let inverted: Vec<u8> = encoded.iter().map(|b| !b).collect();
            assert_eq!(
                unescape(&inverted, 0, 0xFF).ok(),
                Some((input.to_vec(), encoded.len() - 1))
            );
        }
    }

    #[test]
    fn runs_between_zeros_escape_as_byte_by_byte_and_round_trip() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(26);
        for _ in 0..2_000 {
            let len = rng.gen_range(0..40);
            // Zeros a third of the time: runs of every length between them, and at both ends.
            let input: Vec<u8> =
                (0..len).map(|_| if rng.gen_bool(0.3) { 0 } else { rng.gen() }).collect();
            let mut expected: Vec<u8> =
                input.iter().flat_map(|&b| if b == 0 { vec![0, 0xFF] } else { vec![b] }).collect();
            expected.extend([0x00, 0x01]);
            assert_eq!(esc(&input), expected, "{input:?}");
            assert_eq!(unescape(&expected, 0, 0).ok(), Some((input, expected.len())));
        }
    }

    #[test]
    fn rejects_bad_escapes() {
        assert!(unescape(&[0x61], 0, 0).is_err());
        assert!(unescape(&[0x61, 0x00], 0, 0).is_err());
        assert!(unescape(&[0x00, 0x02], 0, 0).is_err());
    }
}
