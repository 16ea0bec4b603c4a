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
    #[error(transparent)]
    Ddl(#[from] DdlError),
    #[error(transparent)]
    Store(#[from] crate::Error),
}

impl OpError {
    pub fn code(&self) -> u16 {
        match self {
            OpError::Table(e) => e.code(),
            OpError::Catalog(e) => e.code(),
            OpError::Ddl(e) => e.code(),
            OpError::Store(e) => e.code(),
        }
    }
}

pub type OpResult<T> = std::result::Result<T, OpError>;
