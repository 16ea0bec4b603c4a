//! At start, before any shard opens its store: every shard's catalog file must be the same.
//!
//! Each shard keeps its own copy of the catalog, and DDL is applied on shard 0 (the coordinator)
//! and then on the others in turn (`fanout.rs`). A crash between two shards, or a disk error on
//! one, leaves them with different tables, and requests would then be routed and checked with
//! different schemas. So a start compares the files byte for byte (equal catalogs encode to
//! equal bytes) and refuses to go on if they differ, naming the shards. With
//! `--catalog-from-shard-0` it first copies shard 0's file to every shard that differs (written
//! to `catalog.tmp`, synced, renamed, directory synced), logging each copy: shard 0 applies
//! every statement first, so it holds the newest catalog unless its own write failed. Rows of a
//! table that a copied catalog no longer has become unreachable and compaction removes them, as
//! after a DROP.

use std::io::Write;
use std::path::{Path, PathBuf};

use ringstore_storage::table::{CATALOG_FILE, CATALOG_TMP_FILE};

use crate::config::shard_dir;

/// Compares the catalogs of `shards` shards under `data_dir`; copies shard 0's over the others
/// that differ if `repair`. The error names every shard that differs and what to do.
pub fn check(data_dir: &Path, shards: usize, repair: bool) -> Result<(), String> {
    let read = |id: usize| -> Result<Option<Vec<u8>>, String> {
        let path = catalog_path(data_dir, id);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    };
    let reference = read(0)?;
    let mut differing = Vec::new();
    for id in 1..shards {
        if read(id)? != reference {
            differing.push(id);
        }
    }
    if differing.is_empty() {
        return Ok(());
    }
    if !repair {
        return Err(format!(
            "the catalogs of shards {differing:?} differ from shard 0's ({}): a DDL statement \
             was interrupted by a crash or failed on some shards. Start once with \
             --catalog-from-shard-0 to copy shard 0's catalog to them (tables it lacks lose \
             their rows on those shards), or restore the catalogs from a backup",
            describe(reference.as_deref())
        ));
    }
    for id in differing {
        copy(data_dir, id, reference.as_deref())?;
        tracing::warn!(shard = id, "catalog replaced by shard 0's (--catalog-from-shard-0)");
    }
    Ok(())
}

fn catalog_path(data_dir: &Path, id: usize) -> PathBuf {
    shard_dir(data_dir, id).join(CATALOG_FILE)
}

fn describe(bytes: Option<&[u8]>) -> String {
    match bytes {
        Some(b) => format!("{} bytes", b.len()),
        None => "no catalog file".to_owned(),
    }
}

/// Makes shard `id`'s catalog file hold `bytes` (or removes it if shard 0 has none), durably.
fn copy(data_dir: &Path, id: usize, bytes: Option<&[u8]>) -> Result<(), String> {
    let dir = shard_dir(data_dir, id);
    let target = dir.join(CATALOG_FILE);
    let fail = |what: &str, path: &Path, e: std::io::Error| {
        format!("copying shard 0's catalog to shard {id}: {what} {}: {e}", path.display())
    };
    match bytes {
        Some(bytes) => {
            let tmp = dir.join(CATALOG_TMP_FILE);
            let mut f = std::fs::File::create(&tmp).map_err(|e| fail("create", &tmp, e))?;
            f.write_all(bytes).map_err(|e| fail("write", &tmp, e))?;
            f.sync_all().map_err(|e| fail("fsync", &tmp, e))?;
            std::fs::rename(&tmp, &target).map_err(|e| fail("rename to", &target, e))?;
        }
        None => std::fs::remove_file(&target).map_err(|e| fail("remove", &target, e))?,
    }
    let d = std::fs::File::open(&dir).map_err(|e| fail("open", &dir, e))?;
    d.sync_all().map_err(|e| fail("fsync", &dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(data: &Path, id: usize, bytes: &[u8]) {
        std::fs::create_dir_all(shard_dir(data, id)).expect("shard dir");
        std::fs::write(catalog_path(data, id), bytes).expect("catalog");
    }

    #[test]
    fn equal_or_absent_catalogs_pass() {
        let data = tempfile::tempdir().expect("temp dir");
        check(data.path(), 3, false).expect("no catalogs yet");
        for id in 0..3 {
            write(data.path(), id, b"same");
        }
        check(data.path(), 3, false).expect("equal catalogs");
    }

    #[test]
    fn differing_catalogs_are_refused_then_repaired_from_shard_0() {
        let data = tempfile::tempdir().expect("temp dir");
        write(data.path(), 0, b"newest");
        write(data.path(), 1, b"newest");
        write(data.path(), 2, b"older");
        std::fs::create_dir_all(shard_dir(data.path(), 3)).expect("shard dir");
        let err = check(data.path(), 4, false).expect_err("shards 2 and 3 differ");
        assert!(err.contains("[2, 3]") && err.contains("--catalog-from-shard-0"), "{err}");
        check(data.path(), 4, true).expect("repair");
        for id in 0..4 {
            let got = std::fs::read(catalog_path(data.path(), id)).expect("catalog");
            assert_eq!(got, b"newest", "shard {id}");
        }
        check(data.path(), 4, false).expect("equal after the repair");
    }

    #[test]
    fn a_shard_0_without_a_catalog_removes_the_others_on_repair() {
        let data = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(shard_dir(data.path(), 0)).expect("shard dir");
        write(data.path(), 1, b"stray");
        let err = check(data.path(), 2, false).expect_err("differs");
        assert!(err.contains("no catalog file"), "{err}");
        check(data.path(), 2, true).expect("repair");
        assert!(!catalog_path(data.path(), 1).exists());
    }
}
