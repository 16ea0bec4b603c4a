//! Test helper: every stable error code must be listed in docs/ERRORS.md.

/// Panics naming the first code of `codes` that docs/ERRORS.md has no table row for.
pub(crate) fn assert_documented(codes: &[u16]) {
    const ERRORS_MD: &str = include_str!("../../../docs/ERRORS.md");
    for code in codes {
        assert!(
            ERRORS_MD.contains(&format!("\n| {code} | ")),
            "code {code} is not in docs/ERRORS.md"
        );
    }
}
