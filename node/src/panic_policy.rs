//! What the daemon does on a panic: log it, then end the whole process at once.
//!
//! A panic in one shard's thread used to leave the others running: the dead shard's requests
//! timed out, the shutdown barrier waited for it forever (SIGTERM no longer stopped the node), and
//! a supervisor saw a live process and never restarted it. A shard cannot be restarted alone
//! (its store, connections and mesh channels died with its thread), so the only safe answer is
//! the one Redis and TigerBeetle give: crash the process. [`install`] sets a panic hook that
//! logs the panic as an ERROR (thread, location, message), prints it as Rust's default hook does,
//! and calls `abort`: the process ends with SIGABRT, a non-zero status, and systemd's
//! `Restart=on-failure` restarts it. Recovery then replays the log as after any crash.

/// Installs the hook. Call once, before any shard starts.
pub fn install() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        tracing::error!(thread, ?location, %message, "panic: ending the process (abort)");
        default_hook(info);
        eprintln!("ringstore-node: panic in thread '{thread}': aborting the process");
        std::process::abort();
    }));
}
