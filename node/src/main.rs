//! `ringstore-node`: the daemon. See docs/OPERATIONS.md for the flags and docs/ARCHITECTURE.md
//! for what happens to a request.

use std::io::Write;
use std::process::ExitCode;

use ringstore_node::config::{ConfigError, NodeConfig};

fn main() -> ExitCode {
    let config = match NodeConfig::from_args(std::env::args_os()) {
        Ok(config) => config,
        Err(ConfigError::Args(e)) => e.exit(),
        Err(e) => {
            eprintln!("ringstore-node: {e}");
            return ExitCode::from(2);
        }
    };
    // `NodeConfig::validate` refused a filter that does not parse. Colour only on a terminal.
    ringstore_node::logging::init(&config.log);
    // Any panic, in any shard, ends the process (node/src/panic_policy.rs).
    ringstore_node::panic_policy::install();
    let result = ringstore_node::daemon::run(config, |ready| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", ready.line());
        let _ = out.flush();
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringstore-node: {e}");
            ExitCode::FAILURE
        }
    }
}
