//! Test helper: every stable error code must be listed in docs/ERRORS.md. The one copy of the
//! check: the model's tests use it, and so do storage, net, node and the CLI through the
//! `test-support` feature of their dev-dependency on this crate.

/// Panics naming the first code of `codes` that docs/ERRORS.md has no table row for (a row
/// starts `| code | `), so the list cannot fall behind the code.
pub fn assert_documented(codes: &[u16]) {
    const ERRORS_MD: &str = include_str!("../../../docs/ERRORS.md");
    for code in codes {
        assert!(
            ERRORS_MD.contains(&format!("\n| {code} | ")),
            "code {code} is not in docs/ERRORS.md"
        );
    }
}
