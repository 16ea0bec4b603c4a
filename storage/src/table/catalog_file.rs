//! The catalog file: loading a shard's [`Catalog`] from its directory and making a DDL change
//! durable before it becomes visible.
//!
//! What a statement does is worked out without I/O by [`Catalog::plan`] (`ringstore-model`);
//! this module writes a change to the catalog file atomically (`table/atomic_file.rs`) and only
//! then swaps it in, so a caller that got `Ok` knows the change survives a crash, and one that
//! got an error sees the catalog unchanged in memory. A failed write poisons the catalog (the
//! file may hold either version until the next load), so later changes are refused.
//! `docs/FORMAT.md` ("Catalog file") holds the bytes.

use std::path::Path;

use crate::ddl::Statement;
use crate::disk::Disk;
use crate::table::atomic_file::{self, AtomicFile};
use crate::table::catalog::{decode_catalog, encode_catalog, Catalog, Outcome, Plan};
use crate::table::op_error::{OpError, OpResult};

pub const CATALOG_FILE: &str = "catalog";
pub const CATALOG_TMP_FILE: &str = "catalog.tmp";
const FILE: AtomicFile = AtomicFile { name: CATALOG_FILE, tmp: CATALOG_TMP_FILE };

/// Loads the catalog of store directory `dir`: empty if it has no catalog file yet. A leftover
/// `catalog.tmp` is removed. A corrupt file is an [`OpError::CatalogStore`] holding a
/// [`crate::Error::CorruptFile`].
pub async fn load<D: Disk>(disk: &D, dir: &Path) -> OpResult<Catalog> {
    let Some(bytes) = atomic_file::read(disk, dir, FILE).await.map_err(OpError::CatalogStore)?
    else {
        return Ok(Catalog::default());
    };
    decode_catalog(&bytes).map_err(|what| {
        OpError::CatalogStore(crate::Error::CorruptFile { file: dir.join(CATALOG_FILE), what })
    })
}

/// Executes one statement on `catalog`; a change is durable in `dir` before this returns `Ok`.
pub async fn apply<D: Disk>(
    catalog: &mut Catalog,
    disk: &D,
    dir: &Path,
    statement: &Statement,
) -> OpResult<Outcome> {
    match catalog.plan(statement)? {
        Plan::Unchanged(outcome) => Ok(outcome),
        Plan::Change { next, outcome } => {
            commit(catalog, disk, dir, next).await?;
            Ok(outcome)
        }
    }
}

/// A change no statement makes (an index's state, an index forgotten; `table/index_work.rs`):
/// `next` becomes the catalog once the file holds it, as for a statement.
pub async fn change<D: Disk>(
    catalog: &mut Catalog,
    disk: &D,
    dir: &Path,
    next: Catalog,
) -> OpResult<()> {
    commit(catalog, disk, dir, next).await
}

/// Writes `next` to the file and, once it is durable, makes it the catalog.
async fn commit<D: Disk>(
    catalog: &mut Catalog,
    disk: &D,
    dir: &Path,
    next: Catalog,
) -> OpResult<()> {
    if let Some(reason) = catalog.poisoned() {
        let reason = reason.to_string();
        return Err(OpError::CatalogStore(crate::Error::Poisoned { reason }));
    }
    let bytes = encode_catalog(&next);
    // Checked on write as on read: what is written must load back as the same catalog.
    debug_assert_eq!(decode_catalog(&bytes).as_ref(), Ok(&next));
    if let Err(e) = atomic_file::write(disk, dir, FILE, &bytes).await {
        catalog.poison(format!("writing the catalog failed: {e}"));
        return Err(OpError::CatalogStore(e));
    }
    *catalog = next;
    Ok(())
}
