//! Loom models of everything in the node that crosses threads, run by plain `cargo test`.
//!
//! The node's cross-thread files name their primitives through `crate::sync` only
//! (`node/src/sync.rs`). This test crate includes the same source files and gives them loom's
//! primitives instead (`loom/sync.rs`), so the unit tests in those files run here as loom
//! models, under every interleaving of their threads:
//!
//! - `node/src/shutdown.rs`: the stop request reaches every waiting shard (no lost wake-up
//!   between a shard's check and its listener), the drain barrier opens only when every shard
//!   has drained, and a shard failing at start stops the others.
//! - `node/src/connection_cap.rs`: the node-wide connection cap is never exceeded by racing
//!   accepts on different shards, a refusal means the cap was held, and every slot comes back.
//! - `node/src/mesh_setup.rs`: the mesh set-up, below with a channel that keeps glommio's
//!   connect contract: three shards connecting all their ends at once always finish and are
//!   wired pair by pair, and a shard that fails before connecting releases the others. (The
//!   naive order, every sender before any receiver, makes loom report `deadlock; threads =
//!   [(Id(0), Blocked ..), (Id(1), Blocked ..)]`, checked by hand; it is not a test because loom
//!   aborts the process while unwinding out of a deadlocked model.)
//!
//! Not modelled: statistics and metrics cross threads only as messages on the mesh, answered on
//! `futures` one-shot channels (no shared memory of the node's own); glommio's channels and
//! executors themselves are glommio's to test. docs/RELIABILITY.md has the same list.

#![allow(dead_code)]

#[path = "loom/sync.rs"]
mod sync;

#[path = "../src/connection_cap.rs"]
mod connection_cap;
#[path = "../src/mesh_setup.rs"]
mod mesh_setup;
#[path = "../src/shutdown.rs"]
mod shutdown;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use std::sync::Arc;

use loom::sync::Mutex;
use mesh_setup::{connect_all, full_mesh, MeshEnds};

/// One end's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Idle,
    Connected,
    Dropped,
}

/// A channel with glommio's shared-channel connect contract: `connect` on one end returns once
/// the other end has begun connecting or was dropped unconnected. It carries one message.
#[derive(Debug)]
struct Link {
    state: Mutex<LinkState>,
}

#[derive(Debug)]
struct LinkState {
    ends: [End; 2],
    wakers: Vec<Waker>,
    message: Option<usize>,
}

const SENDER: usize = 0;
const RECEIVER: usize = 1;

/// An unconnected end (`side` is SENDER or RECEIVER).
#[derive(Debug)]
struct Unconnected {
    link: Option<Arc<Link>>,
    side: usize,
}

/// A connected end.
#[derive(Debug)]
struct Connected {
    link: Arc<Link>,
}

fn link() -> (Unconnected, Unconnected) {
    let link = Arc::new(Link {
        state: Mutex::new(LinkState {
            ends: [End::Idle, End::Idle],
            wakers: Vec::new(),
            message: None,
        }),
    });
    (
        Unconnected { link: Some(link.clone()), side: SENDER },
        Unconnected { link: Some(link), side: RECEIVER },
    )
}

impl Link {
    /// Marks one end and wakes whoever waits for it.
    fn set(&self, side: usize, end: End) {
        let wakers = {
            let mut state = self.state.lock().expect("a model thread panicked holding the lock");
            state.ends[side] = end;
            std::mem::take(&mut state.wakers)
        };
        for w in wakers {
            w.wake();
        }
    }
}

impl Unconnected {
    async fn connect(mut self) -> Connected {
        let link = self.link.take().expect("connected once");
        link.set(self.side, End::Connected);
        PeerStarted { link: &link, peer: 1 - self.side }.await;
        Connected { link }
    }
}

impl Drop for Unconnected {
    fn drop(&mut self) {
        // Not while unwinding: loom's own state is torn down after a failed model.
        if std::thread::panicking() {
            return;
        }
        if let Some(link) = self.link.take() {
            link.set(self.side, End::Dropped);
        }
    }
}

/// Resolves once the peer end is no longer idle.
struct PeerStarted<'a> {
    link: &'a Link,
    peer: usize,
}

impl Future for PeerStarted<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.link.state.lock().expect("a model thread panicked holding the lock");
        if state.ends[self.peer] != End::Idle {
            Poll::Ready(())
        } else {
            state.wakers.push(cx.waker().clone());
            Poll::Pending
        }
    }
}

impl Connected {
    fn send(&self, message: usize) {
        self.link.state.lock().expect("a model thread panicked holding the lock").message =
            Some(message);
    }

    fn received(&self) -> Option<usize> {
        self.link.state.lock().expect("a model thread panicked holding the lock").message
    }
}

type Ends = MeshEnds<Unconnected, Unconnected>;
type Wired = (Vec<Option<Connected>>, Vec<Option<Connected>>);

/// One shard's start: connect all ends as the node does, then send its number to every peer.
fn start_shard(id: usize, ends: Ends) -> Wired {
    let (senders, receivers) =
        loom::future::block_on(connect_all(ends, Unconnected::connect, Unconnected::connect));
    for s in senders.iter().flatten() {
        s.send(id);
    }
    (senders, receivers)
}

fn model_bounded(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(f);
}

/// Three shards connect their meshes at once (two on threads, one on the model's own thread):
/// every shard finishes, and shard `to`'s receiver at index `from` carries what `from` sent.
/// Bounded at 2 preemptions per execution (loom's recommended bound; the full space of 12
/// rendezvous is too large for a test).
#[test]
fn three_shards_connect_the_mesh_without_deadlock() {
    model_bounded(2, || {
        let mut ends = full_mesh(3, link).into_iter();
        let mine = ends.next().unwrap();
        let others: Vec<_> = ends
            .enumerate()
            .map(|(i, e)| loom::thread::spawn(move || start_shard(i + 1, e)))
            .collect();
        let mut wired = vec![start_shard(0, mine)];
        wired.extend(others.into_iter().map(|t| t.join().expect("a shard finished connecting")));
        for (to, (_, receivers)) in wired.iter().enumerate() {
            for (from, rx) in receivers.iter().enumerate() {
                match rx {
                    None => assert_eq!(from, to),
                    Some(rx) => assert_eq!(rx.received(), Some(from), "channel {from} -> {to}"),
                }
            }
        }
    });
}

/// A shard that fails before connecting drops its ends; the other two still finish.
#[test]
fn a_shard_that_fails_before_connecting_releases_the_others() {
    model_bounded(2, || {
        let mut ends = full_mesh(3, link).into_iter();
        let mine = ends.next().unwrap();
        let healthy = ends.next().unwrap();
        let failed = ends.next().unwrap();
        let other = loom::thread::spawn(move || start_shard(1, healthy));
        let failing = loom::thread::spawn(move || drop(failed));
        let (_, receivers) = start_shard(0, mine);
        let (_, other_receivers) = other.join().expect("shard 1 finished connecting");
        failing.join().unwrap();
        assert_eq!(receivers[1].as_ref().and_then(Connected::received), Some(1));
        assert_eq!(other_receivers[0].as_ref().and_then(Connected::received), Some(0));
        assert_eq!(receivers[2].as_ref().and_then(Connected::received), None);
    });
}
