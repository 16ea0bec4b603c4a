//! The one error type of the table operations: a table-model error, a catalog or DDL error, or a
//! store error, each keeping its own stable code.

use crate::ddl::DdlError;
use crate::table::{CatalogError, TableError};

/// Why a table operation failed. [`OpError::code`] is the stable code the protocol reports:
/// 1xx-3xx table model, 4xx DDL, 5xx catalog, 6xx store (`docs/ERRORS.md`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// Reading or writing the catalog file failed (I/O, a corrupt file naming the file and what
    /// is wrong), or the catalog is poisoned by an earlier failed write: code 503.
    #[error(transparent)]
    CatalogStore(crate::Error),
    #[error(transparent)]
    Ddl(#[from] DdlError),
    #[error(transparent)]
    Store(#[from] crate::Error),
}

/// Code of [`OpError::CatalogStore`].
pub const CATALOG_STORE_CODE: u16 = 503;

impl OpError {
    pub fn code(&self) -> u16 {
        match self {
            OpError::Table(e) => e.code(),
            OpError::Catalog(e) => e.code(),
            OpError::CatalogStore(_) => CATALOG_STORE_CODE,
            OpError::Ddl(e) => e.code(),
            OpError::Store(e) => e.code(),
        }
    }
}

pub type OpResult<T> = std::result::Result<T, OpError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalog file's code is part of the protocol: pinned, and listed in docs/ERRORS.md.
    #[test]
    fn catalog_store_code_is_stable() {
        let e = OpError::CatalogStore(crate::Error::Closed);
        assert_eq!(e.code(), 503);
        ringstore_model::error_codes::assert_documented(&[e.code()]);
    }
}
