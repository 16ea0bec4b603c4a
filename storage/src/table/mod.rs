//! The table model (issue 3): schemas, typed values and the order-preserving key encoding.
