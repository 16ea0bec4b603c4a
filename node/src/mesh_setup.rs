//! Wiring the cross-shard mesh and connecting each shard's ends, written over any channel type
//! so the loom models (`node/tests/loom_models.rs`) can run this very code with a channel that
//! keeps glommio's connect contract.
//!
//! The contract of glommio's shared channels, which this code relies on: an end's `connect`
//! returns once the other end has begun connecting, or has been dropped without connecting (a
//! shard that failed to start). So two shards that each connected all their senders before any
//! receiver would wait on each other forever; [`connect_all`] connects a shard's senders (in
//! shard order) and its receivers (in shard order) as two concurrent sequences, which cannot
//! deadlock: the models check it for three shards (and loom finds the naive order's deadlock).

use std::future::Future;

/// The channel ends one shard starts with: a sender to and a receiver from every other shard
/// (None at its own index).
#[derive(Debug)]
pub struct MeshEnds<S, R> {
    pub senders: Vec<Option<S>>,
    pub receivers: Vec<Option<R>>,
}

/// Creates one channel per ordered pair of distinct shards with `make` and hands out each
/// shard's ends (index = shard number): `ends[from].senders[to]` and `ends[to].receivers[from]`
/// are the two ends of the channel from `from` to `to`.
pub fn full_mesh<S, R>(shards: usize, mut make: impl FnMut() -> (S, R)) -> Vec<MeshEnds<S, R>> {
    let mut ends: Vec<MeshEnds<S, R>> = (0..shards)
        .map(|_| MeshEnds {
            senders: (0..shards).map(|_| None).collect(),
            receivers: (0..shards).map(|_| None).collect(),
        })
        .collect();
    for from in 0..shards {
        for to in 0..shards {
            if from != to {
                let (tx, rx) = make();
                ends[from].senders[to] = Some(tx);
                ends[to].receivers[from] = Some(rx);
            }
        }
    }
    ends
}

/// Connects every end of one shard: senders and receivers as two concurrent sequences (see the
/// module comment). Returns the connected ends at their shard numbers.
pub async fn connect_all<S, R, CS, CR, FS, FR>(
    ends: MeshEnds<S, R>,
    mut connect_sender: impl FnMut(S) -> FS,
    mut connect_receiver: impl FnMut(R) -> FR,
) -> (Vec<Option<CS>>, Vec<Option<CR>>)
where
    FS: Future<Output = CS>,
    FR: Future<Output = CR>,
{
    let senders = async {
        let mut connected = Vec::with_capacity(ends.senders.len());
        for end in ends.senders {
            connected.push(match end {
                Some(end) => Some(connect_sender(end).await),
                None => None,
            });
        }
        connected
    };
    let receivers = async {
        let mut connected = Vec::with_capacity(ends.receivers.len());
        for end in ends.receivers {
            connected.push(match end {
                Some(end) => Some(connect_receiver(end).await),
                None => None,
            });
        }
        connected
    };
    futures::join!(senders, receivers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_channel_joins_the_sender_of_one_shard_to_the_receiver_of_another() {
        let mut next = 0;
        let ends = full_mesh(3, || {
            next += 1;
            (next, next)
        });
        for (from, end) in ends.iter().enumerate() {
            assert!(end.senders[from].is_none() && end.receivers[from].is_none());
            for to in (0..3).filter(|&to| to != from) {
                assert_eq!(end.senders[to], ends[to].receivers[from], "channel {from} -> {to}");
            }
        }
        assert_eq!(next, 6, "one channel per ordered pair");
    }
}
