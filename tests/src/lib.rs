//! ringstore-tests: end-to-end, crash and fault suites that start the real daemon. They arrive
//! with the node; the storage crate's own crash and model tests live in `storage/tests/`.
