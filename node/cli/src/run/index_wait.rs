//! `plan add-index ... -wait` (issue 15): CREATE INDEX returns with the index BUILDING while each
//! shard builds it in the background; with `-wait` the CLI then looks at the node's state of the
//! index (`SHOW INDEXES`, READY only when every shard is) every
//! [`ringstore_net::client::INDEX_WAIT_POLL`] until it is READY, at most [`INDEX_WAIT_MS_MAX`].
//! Past that it stops with 807 (the build goes on); an index that is gone meanwhile (its build
//! met a value it cannot index, and dropped it) is 505.

use std::time::Duration;

use ringstore_model::ddl::{self, Statement};
use ringstore_model::table::Outcome;
use ringstore_net::IndexWait;

use super::{CliError, Result, Session, CODE_TIMEOUT};

/// Longest wait for READY.
pub const INDEX_WAIT_MS_MAX: u64 = 10 * 60 * 1000;

/// Code of an index that is gone while the CLI waited for it.
const CODE_UNKNOWN_INDEX: u16 = 505;

/// The indexes of `text`'s statements that ask to be waited for (`-wait`) and that `outcomes`
/// (one per statement) say exist: (table, index).
fn waits(text: &str, outcomes: &[Outcome]) -> Vec<(String, String)> {
    let Ok(statements) = ddl::parse(text) else { return Vec::new() };
    statements
        .iter()
        .zip(outcomes)
        .filter_map(|(s, o)| match (s, o) {
            (
                Statement::CreateIndex { table, index, wait: true, .. },
                Outcome::IndexCreated { .. } | Outcome::IndexAlreadyExists { .. },
            ) => Some((table.to_string(), index.to_string())),
            _ => None,
        })
        .collect()
}

impl Session {
    /// After DDL `text` gave `outcomes`: waits for every index its statements ask to wait for
    /// (`-wait`); the lines to print.
    pub(super) fn wait_for_indexes(&mut self, text: &str, outcomes: &[Outcome]) -> Result<String> {
        let mut out = String::new();
        for (table, index) in waits(text, outcomes) {
            out += &self.wait_ready(&table, &index)?;
        }
        Ok(out)
    }

    /// Waits until index `index` of `table` is READY on every shard; the line to print.
    fn wait_ready(&mut self, table: &str, index: &str) -> Result<String> {
        let limit = Duration::from_millis(INDEX_WAIT_MS_MAX);
        match self.client.wait_index_ready(table, index, limit)? {
            IndexWait::Ready => {
                let line = format!("index {index} on {table} READY");
                Ok(self.format.message(&line))
            }
            IndexWait::Gone => Err(CliError::new(
                CODE_UNKNOWN_INDEX,
                format!(
                    "index {index} on {table} is gone: its build met a row it cannot index and \
                     dropped it (the node's log says why)"
                ),
            )),
            IndexWait::Still(state) => Err(CliError::new(
                CODE_TIMEOUT,
                format!(
                    "index {index} on {table} is still {state} after {} s (-wait waits at most \
                     that long); its build goes on in the background: SHOW INDEXES ON {table} \
                     shows when it is READY",
                    INDEX_WAIT_MS_MAX / 1000
                ),
            )),
        }
    }
}
