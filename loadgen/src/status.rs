//! Status codes by name, for the error breakdown of a run. The names are read from the code list
//! in docs/ERRORS.md (built into the binary), which the node's unit tests keep in step with the
//! code, so the load tool never carries a second copy that could drift.

use std::collections::HashMap;
use std::sync::OnceLock;

/// docs/ERRORS.md, whose tables have rows `| code | name | when |`.
const ERRORS_MD: &str = include_str!("../../docs/ERRORS.md");

/// BUSY: the node refused a request because one of its queues was full.
pub const BUSY: u16 = 720;

/// The name of status `code` (`Busy` for 720), or `unknown` for a code not in docs/ERRORS.md.
pub fn name(code: u16) -> &'static str {
    static NAMES: OnceLock<HashMap<u16, &'static str>> = OnceLock::new();
    NAMES.get_or_init(|| parse(ERRORS_MD)).get(&code).copied().unwrap_or("unknown")
}

/// What to do about a status, where the load tool's own flags are the likely cause.
pub fn hint(code: u16) -> Option<&'static str> {
    (code == BUSY).then_some(
        "the node refused requests past one of its queues (the message says which); a \
         --pipeline above the node's --max-inflight-per-connection (default 256) is one cause",
    )
}

fn parse(text: &'static str) -> HashMap<u16, &'static str> {
    let mut names = HashMap::new();
    for line in text.lines() {
        let mut cells = line.split('|').map(str::trim).skip(1);
        let (Some(code), Some(name)) = (cells.next(), cells.next()) else {
            continue;
        };
        if let Ok(code) = code.parse::<u16>() {
            names.insert(code, name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_their_documented_names() {
        assert_eq!(name(BUSY), "Busy");
        assert_eq!(name(614), "CorruptRecord");
        assert_eq!(name(721), "TooManyConnections");
        assert_eq!(name(1), "unknown");
        assert!(hint(BUSY).is_some_and(|h| h.contains("--pipeline")));
        assert_eq!(hint(614), None);
    }
}
