//! The shard's idle sweeper: the task that looks at the shard's [`IdleWatch`] four times per
//! idle timeout (`idle.rs` says why there is no timer per read), and at shutdown wakes every
//! connection's wait for input (`read_interrupt.rs` says why that wait has no listener of its
//! own).
//!
//! [`IdleWatch`]: crate::idle::IdleWatch

use std::rc::Rc;

use futures_lite::future::or;

use crate::idle::{sweep_interval, IDLE_SWEEPS_PER_TIMEOUT};
use crate::shard::Shard;

/// The shard's sweeper: runs until shutdown (sweeping nothing when the idle timeout is 0,
/// never), then wakes every connection's wait for input so that it sees the shutdown.
pub async fn run(shard: Rc<Shard>) {
    sweep_until_shutdown(&shard).await;
    let woken = shard.idle.wake_reads();
    tracing::debug!(shard = shard.id, woken, "woke the connections' reads for shutdown");
}

async fn sweep_until_shutdown(shard: &Shard) {
    if shard.limits.idle_timeout_ms == 0 {
        shard.shutdown.requested().await;
        return;
    }
    let interval = sweep_interval(shard.limits.idle_timeout_ms);
    loop {
        let stopping = or(
            async {
                glommio::timer::sleep(interval).await;
                false
            },
            async {
                shard.shutdown.requested().await;
                true
            },
        )
        .await;
        if stopping {
            return;
        }
        let killed = shard.idle.sweep(IDLE_SWEEPS_PER_TIMEOUT);
        if killed > 0 {
            tracing::debug!(
                shard = shard.id,
                killed,
                "closed connections idle past the idle timeout"
            );
        }
    }
}
