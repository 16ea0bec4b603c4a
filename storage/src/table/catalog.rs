//! The durable catalog of table schemas (issue 3).
