//! The daemon's log: tracing events on stderr, filtered by `--log`. ANSI colour codes are written
//! only when stderr is a terminal, so a log that goes to a file, a pipe or journald holds plain
//! text (`NO_COLOR` in the environment turns colour off on a terminal too).

use std::io::IsTerminal;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// Whether the log on stderr is coloured: only on a terminal, and not with `NO_COLOR` set.
pub fn stderr_colour() -> bool {
    colour_for(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").is_some())
}

/// Colour for a writer that is (or is not) a terminal, with or without `NO_COLOR`.
pub fn colour_for(terminal: bool, no_colour: bool) -> bool {
    terminal && !no_colour
}

/// The subscriber the daemon installs: `filter`, then `writer`, with or without `colour`.
pub fn subscriber<W>(
    filter: EnvFilter,
    colour: bool,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(colour).with_writer(writer).finish()
}

/// Installs the daemon's subscriber: `filter` (an `EnvFilter` directive that does not parse
/// falls back to `info`; the config refused it already) on stderr, coloured per
/// [`stderr_colour`].
pub fn init(filter: &str) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let subscriber = subscriber(filter, stderr_colour(), std::io::stderr);
    // As `fmt().init()` does: also routes `log` records (glommio's) into it. Only fails when a
    // subscriber is installed already, and main installs one once.
    let _ = subscriber.try_init();
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What one INFO event prints through the daemon's subscriber.
    fn logged(colour: bool) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = subscriber(EnvFilter::new("info"), colour, move || writer.clone());
        tracing::subscriber::with_default(subscriber, || tracing::info!(shard = 1, "started"));
        let bytes = captured.0.lock().expect("not poisoned").clone();
        String::from_utf8(bytes).expect("UTF-8 log")
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour_for(true, false));
        assert!(!colour_for(false, false), "a file or a pipe gets no colour");
        assert!(!colour_for(true, true), "NO_COLOR turns it off");
    }

    #[test]
    fn a_log_without_colour_has_no_escape_codes() {
        let plain = logged(false);
        assert!(plain.contains("INFO") && plain.contains("started") && plain.contains("shard=1"));
        assert!(!plain.contains('\x1b'), "{plain:?}");
        // The same event with colour does have them, so the check above can fail.
        assert!(logged(true).contains("\x1b["), "colour on writes ANSI codes");
    }
}
