//! The node's own errors: refusals it answers a request with (codes 711 and 720-729, listed in
//! `docs/ERRORS.md`), and the reasons the daemon fails to start.

use ringstore_net::ErrorReply;
use ringstore_storage::table::{OpError, TableError};

/// A request the node refuses or cannot complete; each has a stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    #[error("durability bits are {code}; they must be 0 (Sync), 1 (WriteNoSync) or 2 (NoSync)")]
    BadDurability { code: u8 },
    #[error("busy: {what} is full ({limit}); retry later")]
    Busy { what: &'static str, limit: usize },
    #[error("too many connections: the node allows {limit}")]
    TooManyConnections { limit: usize },
    #[error("the node is shutting down")]
    ShuttingDown,
    #[error("shard {shard} is not reachable (it stopped)")]
    ShardUnavailable { shard: usize },
    #[error(
        "shard {shard} got a forwarded request whose partition its catalog assigns to shard \
         {owner}: a table change was being applied while the request was routed; retry"
    )]
    NotOwner { shard: usize, owner: usize },
    #[error("{0}")]
    Server(ErrorReply),
}

impl RequestError {
    pub fn code(&self) -> u16 {
        match self {
            RequestError::BadDurability { .. } => 711,
            RequestError::Busy { .. } => 720,
            RequestError::TooManyConnections { .. } => 721,
            RequestError::ShuttingDown => 722,
            RequestError::ShardUnavailable { .. } => 723,
            RequestError::NotOwner { .. } => 724,
            RequestError::Server(e) => e.code,
        }
    }

    /// The error as the reply a client gets.
    pub fn reply(&self) -> ErrorReply {
        match self {
            RequestError::Server(e) => e.clone(),
            other => ErrorReply { code: other.code(), message: other.to_string() },
        }
    }
}

impl From<OpError> for RequestError {
    fn from(e: OpError) -> RequestError {
        RequestError::Server(ErrorReply { code: e.code(), message: e.to_string() })
    }
}

impl From<TableError> for RequestError {
    fn from(e: TableError) -> RequestError {
        RequestError::Server(ErrorReply { code: e.code(), message: e.to_string() })
    }
}

impl From<ringstore_net::WireError> for RequestError {
    fn from(e: ringstore_net::WireError) -> RequestError {
        RequestError::Server(ErrorReply { code: e.code(), message: e.to_string() })
    }
}

impl From<ErrorReply> for RequestError {
    fn from(e: ErrorReply) -> RequestError {
        RequestError::Server(e)
    }
}

/// Why the daemon did not start or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Lock(#[from] crate::lock::LockError),
    #[error("shard {shard}: {message}")]
    Shard { shard: usize, message: String },
    #[error("cannot start shard {shard}'s executor: {message}")]
    Executor { shard: usize, message: String },
    #[error("cannot install the signal handler: {0}")]
    Signals(std::io::Error),
    #[error("{0}")]
    FileDescriptors(String),
    #[error("{0}")]
    Catalogs(String),
    #[error("{0}")]
    SchedPolicy(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_pinned_and_documented() {
        let all = [
            RequestError::BadDurability { code: 3 },
            RequestError::Busy { what: "x", limit: 1 },
            RequestError::TooManyConnections { limit: 1 },
            RequestError::ShuttingDown,
            RequestError::ShardUnavailable { shard: 1 },
        ];
        let codes: Vec<u16> = all.iter().map(RequestError::code).collect();
        assert_eq!(codes, [711, 720, 721, 722, 723]);
        ringstore_model::error_codes::assert_documented(&codes);
    }
}
