//! Proves what compaction's cheap scan (`SegmentScanner::next_unless`) may and may not skip:
//! a put the caller names is stepped over on its verified header, without its value being
//! checked, and comes back as `Skipped` with its own length; every other record, and every
//! record of a plain `next` scan, is read and verified as before, so a damaged value is still
//! reported where it matters. Also that a tombstone is never skipped, even when named.

mod common;

use std::path::Path;

use ringstore_storage::constants::SEGMENT_HEADER_BYTES;
use ringstore_storage::disk::Disk;
use ringstore_storage::log::scan::{ScanItem, SegmentScanner};
use ringstore_storage::record::{self, RecordKind, RecordMeta};

const SEGMENT: u32 = 7;

/// Four records after an empty header block: put a, put b, delete c, put d. Returns the bytes
/// and each record's offset.
fn segment() -> (Vec<u8>, Vec<u64>) {
    let mut bytes = vec![0u8; SEGMENT_HEADER_BYTES as usize];
    let mut offsets = Vec::new();
    let records: [(RecordKind, &[u8], &[u8]); 4] = [
        (RecordKind::Put, b"a", b"value of a"),
        (RecordKind::Put, b"b", b"value of b, the one whose value is damaged"),
        (RecordKind::Delete, b"c", b""),
        (RecordKind::Put, b"d", b"value of d"),
    ];
    for (i, (kind, key, value)) in records.into_iter().enumerate() {
        offsets.push(bytes.len() as u64);
        let meta = RecordMeta {
            kind,
            lsn: 100 + i as u64,
            version: 1,
            expiry_ms: 0,
            segment_id: SEGMENT,
            flags: 0,
            batch_remaining: 0,
        };
        record::encode(&mut bytes, &meta, key, value);
    }
    (bytes, offsets)
}

/// What each item of a scan was: kind letter and offset.
async fn scan(bytes: Vec<u8>, skip: &[u64], plain: bool) -> Vec<(char, u64)> {
    let disk = common::sim(3);
    let path = Path::new("/sim/seg");
    let size = bytes.len() as u64;
    disk.set_file_bytes(path, bytes);
    let file = disk.open(path).await.expect("open");
    let mut scanner = SegmentScanner::new(&file, SEGMENT, SEGMENT_HEADER_BYTES, size);
    let mut seen = Vec::new();
    loop {
        let item = if plain {
            scanner.next().await
        } else {
            scanner.next_unless(|offset| skip.contains(&offset)).await
        };
        let Some(item) = item.expect("read") else { break };
        seen.push(match item {
            ScanItem::Record(r) => ('R', r.offset),
            ScanItem::Damaged(r) => ('D', r.offset),
            ScanItem::Skipped { offset, .. } => ('S', offset),
            ScanItem::Corrupt { offset, .. } => ('C', offset),
            ScanItem::TornTail { offset, .. } => ('T', offset),
        });
    }
    assert_eq!(scanner.position(), size, "the scan reaches the end of the records");
    seen
}

#[test]
fn a_named_put_is_skipped_on_its_header_and_nothing_else_is() {
    common::run(|| async {
        let (mut bytes, at) = segment();
        // Damage the last byte of b's value: its header and key still verify.
        let b_end = at[2] as usize;
        let last_value_byte = (at[1] as usize..b_end).rev().find(|&i| bytes[i] != 0).unwrap();
        bytes[last_value_byte] ^= 0x40;

        let plain = scan(bytes.clone(), &[], true).await;
        assert_eq!(plain, [('R', at[0]), ('D', at[1]), ('R', at[2]), ('R', at[3])]);

        // Compaction names b (and the tombstone c, which must still be read).
        let cheap = scan(bytes.clone(), &[at[1], at[2]], false).await;
        assert_eq!(cheap, [('R', at[0]), ('S', at[1]), ('R', at[2]), ('R', at[3])]);

        // Naming nothing is a plain scan.
        assert_eq!(scan(bytes, &[], false).await, plain);
    });
}

#[test]
fn a_named_put_with_a_damaged_header_is_not_skipped() {
    common::run(|| async {
        let (mut bytes, at) = segment();
        // A bit of b's key: the header checksum fails, so its length cannot be trusted and the
        // scanner must classify the damage as before instead of stepping over it.
        bytes[at[1] as usize + ringstore_storage::constants::RECORD_HEADER_BYTES] ^= 0x01;
        let cheap = scan(bytes, &[at[1]], false).await;
        assert_eq!(cheap[0], ('R', at[0]));
        assert_eq!(cheap[1], ('C', at[1]), "{cheap:?}");
        assert!(!cheap.iter().any(|(k, _)| *k == 'S'), "{cheap:?}");
        assert_eq!(cheap.last(), Some(&('R', at[3])));
    });
}
