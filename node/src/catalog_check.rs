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

use ringstore_storage::constants::DMA_ALIGN_BYTES;
use ringstore_storage::table::catalog::{decode_catalog, encode_catalog};
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
        if !same(read(id)?.as_deref(), reference.as_deref()) {
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
        let bytes = reference.as_deref().map(|r| for_shard(r, read(id).ok().flatten().as_deref()));
        copy(data_dir, id, bytes.as_deref())?;
        tracing::warn!(shard = id, "catalog replaced by shard 0's (--catalog-from-shard-0)");
    }
    Ok(())
}

/// Whether two shards' catalog files agree: the same bytes, or catalogs that differ only in how
/// far their index builds have got (each shard builds an index on its own, so a stop during a
/// build leaves one READY where another is still BUILDING; both go on at the next start).
fn same(a: Option<&[u8]>, b: Option<&[u8]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if a != b => match (decode_catalog(a), decode_catalog(b)) {
            (Ok(a), Ok(b)) => {
                encode_catalog(&a.without_build_progress())
                    == encode_catalog(&b.without_build_progress())
            }
            _ => false,
        },
        (a, b) => a == b,
    }
}

/// Shard 0's catalog file as copied over a shard whose file holds `target`: an index READY on
/// shard 0 but not built on that shard is BUILDING in the copy, so that shard builds it. A file
/// that does not decode is copied as it is (the open then refuses it, naming the damage).
fn for_shard(reference: &[u8], target: Option<&[u8]>) -> Vec<u8> {
    let Ok(catalog) = decode_catalog(reference) else { return reference.to_vec() };
    let target = target.and_then(|t| decode_catalog(t).ok());
    let adjusted = catalog.for_shard(target.as_ref());
    if adjusted == catalog {
        return reference.to_vec();
    }
    // Zero-padded to the DMA alignment, as the store writes it (`atomic_file.rs`).
    let mut bytes = encode_catalog(&adjusted);
    bytes.resize(bytes.len().next_multiple_of(DMA_ALIGN_BYTES as usize), 0);
    bytes
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
    use ringstore_storage::table::IndexState;

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

    /// A catalog with table `t` and index `by_v` in `state` (None: without the index).
    fn with_index(state: Option<IndexState>) -> Vec<u8> {
        use ringstore_storage::table::catalog::{Catalog, Plan};
        let text = "CREATE TABLE t (id LONG, v INTEGER, PRIMARY KEY (id)); \
                    CREATE INDEX by_v ON t (v)";
        let statements = ringstore_storage::ddl::parse(text).expect("parses");
        let mut c = Catalog::default();
        for st in statements.iter().take(if state.is_some() { 2 } else { 1 }) {
            let Ok(Plan::Change { next, .. }) = c.plan(st) else { panic!("a change") };
            c = next;
        }
        if let Some(state) = state {
            let t = c.get("t").expect("table").clone();
            let index = t.indexes()[0].id();
            c = c.with_index_state(t.id(), index, state).expect("index");
        }
        encode_catalog(&c)
    }

    #[test]
    fn catalogs_that_differ_only_in_build_progress_pass_and_a_copy_never_claims_a_build() {
        let data = tempfile::tempdir().expect("temp dir");
        write(data.path(), 0, &with_index(Some(IndexState::Ready)));
        write(data.path(), 1, &with_index(Some(IndexState::Building)));
        check(data.path(), 2, false).expect("one shard's build is ahead of the other's");
        // A shard without the index (a crash in the middle of CREATE INDEX) differs; the copy
        // gives it the index BUILDING, so it builds its entries, not READY without them.
        write(data.path(), 1, &with_index(None));
        check(data.path(), 2, false).expect_err("shard 1 lacks the index");
        check(data.path(), 2, true).expect("repair");
        let copied = std::fs::read(catalog_path(data.path(), 1)).expect("catalog");
        let copied = decode_catalog(&copied).expect("decodes");
        let want = decode_catalog(&with_index(Some(IndexState::Building))).expect("decodes");
        assert_eq!(copied, want);
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
