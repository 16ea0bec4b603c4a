//! A read batch's commands, parsed ahead of running them, so that the memory their keys will
//! touch can be asked for all at once (the store's batch prefetch, `storage/src/batch_prefetch.rs`)
//! and each command then finds its lines on the way instead of waiting for them one miss after
//! another.
//!
//! The read loop (`resp_connection.rs`) parses up to [`BATCH_COMMANDS_MAX`] complete commands
//! from its buffer into a [`Batch`], which looks each one up, encodes each one-key command's key
//! once (as the table stores it) to find its owner shard, and hands the keys this shard owns to
//! the store's prefetch. The commands then run in order from the parsed form, each with its
//! looked-up spec, its owner and its encoded key, so neither the parse nor the key's encoding is
//! done twice. A command the loop does not reach this time (the output is full, or it must wait for
//! earlier ones) is parsed again the next time: the batch only saves work, it decides nothing.

use ringstore_net::resp::{parse_command, Args, ParseLimits, Parsed};
use ringstore_storage::{Upcoming, PREFETCH_BATCH_KEYS_MAX};

use crate::resp_commands::{self as commands, Kind, Spec};
use crate::resp_table;
use crate::shard::Shard;

/// Most commands parsed ahead at a time: one round of the store's batch prefetch.
pub const BATCH_COMMANDS_MAX: usize = PREFETCH_BATCH_KEYS_MAX;

/// One command of a [`Batch`]: where it is in the read buffer, and what was found about it.
#[derive(Debug, Clone, Copy)]
pub struct Ahead {
    /// Its bytes: `buf[start..start + len]` of the buffer the batch was parsed from.
    pub start: usize,
    pub len: usize,
    /// The command its name names (None: unknown, or no words).
    pub spec: Option<&'static Spec>,
    /// The shard that owns its key, for a one-key command whose key encoded (None otherwise:
    /// the command finds out itself, with the error if there is one).
    pub owner: Option<usize>,
    /// Where its key's encoding is in the batch's keys ([`Batch::stored_key`]), when this shard
    /// owns it: the command writes with it instead of encoding the key again.
    stored: Option<(usize, usize)>,
}

/// Commands parsed ahead of running (see the module docs). Its buffers are kept from one read
/// batch to the next, so a connection in steady state allocates nothing here.
#[derive(Debug)]
pub struct Batch {
    args: Vec<Args>,
    commands: Vec<Ahead>,
    /// The encoded keys of the one-key commands this shard owns, back to back.
    keys: Vec<u8>,
    /// One key being encoded.
    scratch: Vec<u8>,
}

impl Default for Batch {
    fn default() -> Batch {
        Batch {
            args: (0..BATCH_COMMANDS_MAX).map(|_| Args::default()).collect(),
            commands: Vec::with_capacity(BATCH_COMMANDS_MAX),
            keys: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

/// What [`Batch::parse`] found at its start.
#[derive(Debug)]
pub enum Next {
    /// This many commands, parsed (at least one).
    Commands(usize),
    /// A command is not complete yet.
    Incomplete,
    /// The first command is malformed: the protocol error.
    Malformed(String),
}

impl Batch {
    /// Parses up to [`BATCH_COMMANDS_MAX`] complete commands of `buf` from `from` on, stopping
    /// before an incomplete or malformed one (a malformed one is reported when it comes first,
    /// so that the commands before it run and are answered before the error).
    pub fn parse(&mut self, buf: &[u8], from: usize, limits: &ParseLimits) -> Next {
        self.commands.clear();
        let mut at = from;
        while self.commands.len() < BATCH_COMMANDS_MAX && at < buf.len() {
            let args = &mut self.args[self.commands.len()];
            match parse_command(&buf[at..], limits, args) {
                Parsed::Incomplete => break,
                Parsed::Error(e) if self.commands.is_empty() => {
                    return Next::Malformed(e.to_string())
                }
                Parsed::Error(_) => break,
                Parsed::Command { consumed } => {
                    let raw = &buf[at..at + consumed];
                    let spec =
                        if args.is_empty() { None } else { commands::lookup(args.get(raw, 0)) };
                    self.commands.push(Ahead {
                        start: at,
                        len: consumed,
                        spec,
                        owner: None,
                        stored: None,
                    });
                    at += consumed;
                }
            }
        }
        match self.commands.len() {
            0 => Next::Incomplete,
            n => Next::Commands(n),
        }
    }

    /// Command `i` of the last [`Self::parse`] and its arguments.
    pub fn command(&self, i: usize) -> (&Ahead, &Args) {
        (&self.commands[i], &self.args[i])
    }

    /// The stored key of `ahead` (a command of this batch), if [`Self::prefetch`] encoded it
    /// and this shard owns it.
    pub fn stored_key(&self, ahead: &Ahead) -> Option<&[u8]> {
        ahead.stored.map(|(start, end)| &self.keys[start..end])
    }

    /// Finds the owner of each parsed one-key command's key, and asks the store to prefetch
    /// the keys this shard owns when there are two or more (one has no misses to overlap).
    pub fn prefetch(&mut self, shard: &Shard, buf: &[u8]) {
        let Ok(t) = resp_table::table(shard) else { return };
        self.keys.clear();
        for (c, args) in self.commands.iter_mut().zip(&self.args) {
            if !c.spec.is_some_and(|s| s.kind == Kind::Key && args.len() >= 2) {
                continue;
            }
            let raw = &buf[c.start..c.start + c.len];
            let key = args.get(raw, 1);
            let Ok(owner) = resp_table::encode_key(shard, &t, key, &mut self.scratch) else {
                continue;
            };
            c.owner = Some(owner);
            if owner == shard.id {
                let start = self.keys.len();
                self.keys.extend_from_slice(&self.scratch);
                c.stored = Some((start, self.keys.len()));
            }
        }
        let mut upcoming = [Upcoming { key: &[], write: false }; BATCH_COMMANDS_MAX];
        let mut owned = 0;
        for c in &self.commands {
            if let (Some(key), Some(spec)) = (self.stored_key(c), c.spec) {
                upcoming[owned] = Upcoming { key, write: writes(spec) };
                owned += 1;
            }
        }
        shard.tables.store().prefetch(&upcoming[..owned]);
    }
}

/// Whether a one-key command may write its key (a read needs only the record cache's lines).
fn writes(spec: &Spec) -> bool {
    !matches!(spec.name, "GET" | "STRLEN" | "GETRANGE" | "SUBSTR" | "TTL" | "PTTL" | "TYPE")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ParseLimits {
        ParseLimits::default()
    }

    fn set(key: &str) -> String {
        format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$1\r\nv\r\n", key.len())
    }

    #[test]
    fn parses_up_to_a_batch_and_keeps_each_commands_place_and_spec() {
        let buf: String = (0..BATCH_COMMANDS_MAX + 3).map(|i| set(&format!("k{i}"))).collect();
        let buf = buf.as_bytes();
        let mut batch = Batch::default();
        let Next::Commands(n) = batch.parse(buf, 0, &limits()) else { panic!("commands") };
        assert_eq!(n, BATCH_COMMANDS_MAX, "a batch stops at its size");
        let mut at = 0;
        for i in 0..n {
            let (ahead, args) = batch.command(i);
            assert_eq!(ahead.start, at, "command {i} starts where the one before ended");
            let raw = &buf[ahead.start..ahead.start + ahead.len];
            assert_eq!(args.get(raw, 1), format!("k{i}").as_bytes());
            assert_eq!(ahead.spec.map(|s| s.name), Some("SET"));
            assert_eq!(ahead.owner, None, "owners are found by the prefetch");
            at += ahead.len;
        }
        let Next::Commands(rest) = batch.parse(buf, at, &limits()) else { panic!("the rest") };
        assert_eq!(rest, 3);
        let (last, _) = batch.command(2);
        assert_eq!(last.start + last.len, buf.len());
    }

    #[test]
    fn stops_before_an_incomplete_or_malformed_command_and_reports_it_when_first() {
        let mut batch = Batch::default();
        let good = set("a");
        let partial = format!("{good}*3\r\n$3\r\nSET\r\n$1\r\n");
        let Next::Commands(1) = batch.parse(partial.as_bytes(), 0, &limits()) else {
            panic!("the complete command only")
        };
        assert!(matches!(batch.parse(partial.as_bytes(), good.len(), &limits()), Next::Incomplete));
        let malformed = format!("{good}*x\r\n");
        let Next::Commands(1) = batch.parse(malformed.as_bytes(), 0, &limits()) else {
            panic!("the command before the malformed one runs first")
        };
        let Next::Malformed(e) = batch.parse(malformed.as_bytes(), good.len(), &limits()) else {
            panic!("then the protocol error")
        };
        assert!(e.contains("Protocol error"), "{e}");
        let unknown = "*1\r\n$6\r\nNOSUCH\r\n";
        let Next::Commands(1) = batch.parse(unknown.as_bytes(), 0, &limits()) else { panic!() };
        assert!(batch.command(0).0.spec.is_none(), "an unknown name has no spec");
    }
}
