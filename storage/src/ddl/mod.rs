//! DDL text (issue 3): SQL-style statements and the Oracle NoSQL admin CLI script, parsed into
//! table schemas.
