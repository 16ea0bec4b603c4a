//! glommio tells a running task queue to yield (`need_preempt`) once its preempt period is over.
//! The patched copy in `vendor/glommio` (RINGSTORE-PATCH.md, "Preemption checked in user space")
//! checks a period of at least `PREEMPT_CLOCK_TICKS` coarse-clock ticks against a deadline in
//! user space, and arms only a shorter one as a latency-ring timeout, as upstream arms every
//! period. Either way a busy task queue must be told to yield, and again after it has yielded
//! (the next loop turn starts a new period). A deadline never set, or a timeout not re-armed,
//! fails at the bound below; a deadline not reset stops the executor running any task again,
//! which fails at the bound on the answer. How long a period lasts is timing, not checked here.

use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Checked against the coarse clock, like the node's 100 ms (glommio's default); long enough
/// that a descheduled test thread cannot see it end between a loop turn and its task.
const LONG_PERIOD: Duration = Duration::from_millis(500);
/// Shorter than 8 ticks of any coarse clock Linux has (1-10 ms): armed as a timeout.
const SHORT_PERIOD: Duration = Duration::from_millis(2);
/// How long a busy task waits to be told to yield before the test fails.
const PREEMPT_BOUND: Duration = Duration::from_secs(30);

/// Runs a task that spins until `need_preempt`, yields, and spins again until `need_preempt`;
/// returns whether `need_preempt` was already true right after the yield. The answer comes
/// over a channel with a bound, because an executor whose deadline is never reset runs no
/// task again (every turn is preempted before it starts) and would never finish.
fn spin_until_told(period: Duration) -> bool {
    let (answer, answered) = mpsc::channel();
    let _executor = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .io_memory(512 * 1024)
        .preempt_timer(period)
        .spawn(move || async move {
            let spin = || {
                let start = Instant::now();
                while !glommio::executor().need_preempt() {
                    assert!(
                        start.elapsed() < PREEMPT_BOUND,
                        "a busy task queue was not told to yield within {PREEMPT_BOUND:?}"
                    );
                    std::hint::spin_loop();
                }
            };
            spin();
            glommio::yield_if_needed().await;
            let fresh = glommio::executor().need_preempt();
            spin();
            answer.send(fresh).expect("the test waits for the answer");
        })
        .expect("spawn executor");
    answered
        .recv_timeout(PREEMPT_BOUND * 3)
        .expect("no answer from the executor's task: it panicked, or never ran again")
}

#[test]
fn a_long_period_preempts_by_the_coarse_clock_and_restarts_each_turn() {
    let fresh = spin_until_told(LONG_PERIOD);
    assert!(!fresh, "told to yield right after yielding: the deadline was not reset");
}

#[test]
fn a_short_period_preempts_by_a_timeout_re_armed_each_turn() {
    // A descheduled thread may see a 2 ms timeout fire before its task resumes, so only the
    // bound is checked: both spins must end.
    spin_until_told(SHORT_PERIOD);
}
