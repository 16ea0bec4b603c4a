//! The seed document's admin CLI scripts, shared by the DDL and table operation tests (they live
//! in the library, `ringstore_storage::ddl::seed_scripts`, so the node's tests use them too).
#![allow(unused_imports, reason = "each test binary uses a different subset")]

pub use ringstore_storage::ddl::seed_scripts::*;
