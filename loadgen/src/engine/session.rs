//! One non-blocking TCP connection to a node port, driven by the worker's mio poll: requests
//! are encoded straight into an output buffer, and replies are parsed in place from an input
//! buffer. Both buffers are reused, so a request costs no allocation once they have grown.
//! A session speaks the binary protocol or RESP ([`Protocol`], `resp.rs`); a RESP reply has no
//! request id, so the session numbers replies in arrival order, which is the order of requests.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use ringstore_model::Durability;
use ringstore_net::frame::{Flags, FRAME_BODY_BYTES_MAX, HEADER_BYTES};
use ringstore_net::request::durability_flags;
use ringstore_net::{FrameHeader, Header, Request, Writer};
use zerocopy::IntoBytes;

use super::resp::{self, RespReply};
use super::Protocol;

/// Bytes read from the socket per `read` call (the input buffer grows past it for large frames).
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Longest wait for a connection to a node port.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A reply frame, borrowed from the input buffer.
#[derive(Debug, Clone, Copy)]
pub struct ReplyFrame<'a> {
    pub id: u64,
    pub status: u16,
    /// The binary reply's body; a RESP error's text (empty for other RESP replies).
    pub body: &'a [u8],
    /// A RESP null: the GET found no key.
    pub nil: bool,
}

/// The status a RESP error reply is counted under (binary statuses are docs/ERRORS.md codes,
/// all below it).
pub const RESP_ERROR_STATUS: u16 = u16::MAX;

/// What one read of [`Session::fill`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// It filled the room it was given (or was interrupted): there may be more.
    Full,
    /// It filled less: the socket's receive queue is empty now.
    Short,
    /// Nothing to read (`WouldBlock`).
    Empty,
}

#[derive(Debug)]
pub struct Session {
    stream: TcpStream,
    addr: SocketAddr,
    /// Queued frames; bytes before `out_sent` are already written.
    out: Vec<u8>,
    out_sent: usize,
    /// Received bytes are `input[in_parsed..in_end]`; the rest is free space.
    input: Vec<u8>,
    in_parsed: usize,
    in_end: usize,
    next_id: u64,
    protocol: Protocol,
    /// RESP: the id of the last reply parsed (replies come in request order).
    replied: u64,
}

impl Session {
    /// Connects (blocking, with TCP_NODELAY) and registers with `registry` under `token`.
    pub fn connect(
        addr: SocketAddr,
        protocol: Protocol,
        registry: &Registry,
        token: Token,
    ) -> Result<Session, String> {
        let err = |e: io::Error| format!("connect to {addr}: {e}");
        let std = std::net::TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(err)?;
        std.set_nodelay(true).map_err(err)?;
        std.set_nonblocking(true).map_err(err)?;
        let mut stream = TcpStream::from_std(std);
        registry
            .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
            .map_err(err)?;
        Ok(Session {
            stream,
            addr,
            out: Vec::new(),
            out_sent: 0,
            input: Vec::new(),
            in_parsed: 0,
            in_end: 0,
            next_id: 1,
            protocol,
            replied: 0,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a request (written by the next [`Session::flush`]); returns its id.
    pub fn queue(&mut self, req: &Request<'_>, durability: Durability, write: bool) -> u64 {
        let start = self.out.len();
        self.out.resize(start + HEADER_BYTES, 0);
        let mut w = Writer { buf: std::mem::take(&mut self.out) };
        req.encode(&mut w);
        self.out = w.buf;
        let body_len = self.out.len() - start - HEADER_BYTES;
        let id = self.next_id;
        self.next_id += 1;
        let flags = if write { durability_flags(durability) } else { Flags(0) };
        let header = FrameHeader::new(req.opcode(), flags, id, body_len as u32, 0);
        self.out[start..start + HEADER_BYTES].copy_from_slice(header.as_bytes());
        id
    }

    /// Queues a RESP `GET key` (`value` None) or `SET key value`; returns its id.
    pub fn queue_resp(&mut self, key: &[u8], value: Option<&[u8]>) -> u64 {
        debug_assert_eq!(self.protocol, Protocol::Resp);
        match value {
            None => resp::encode_get(&mut self.out, key),
            Some(value) => resp::encode_set(&mut self.out, key, value),
        }
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Writes queued bytes until done or the socket is full (the worker then waits for a
    /// writable event).
    pub fn flush(&mut self) -> Result<(), String> {
        while self.out_sent < self.out.len() {
            match self.stream.write(&self.out[self.out_sent..]) {
                Ok(0) => return Err(format!("{}: the node closed the connection", self.addr)),
                Ok(n) => self.out_sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("write to {}: {e}", self.addr)),
            }
        }
        self.out.clear();
        self.out_sent = 0;
        Ok(())
    }

    /// Bytes queued and not yet written.
    pub fn unsent(&self) -> usize {
        self.out.len() - self.out_sent
    }

    /// Reads until the socket has nothing more (the poll is edge-triggered) and hands each
    /// complete reply to `on_reply`.
    /// Replies that arrived before the node closed the connection are handed over before the
    /// error.
    ///
    /// A read that fills less than the room it was given has emptied the socket's receive
    /// queue (epoll(7)), so it is the last one until the next edge, which any later byte
    /// raises: a second read would only return `WouldBlock` (one system call per reply saved at
    /// pipeline 1; Tokio's TCP reads do the same since tokio-rs/tokio#4840). Except when
    /// `peer_closed` (the event carried the node's FIN): no edge follows the end of the
    /// stream, so then it reads on until the read that returns it.
    pub fn receive(
        &mut self,
        peer_closed: bool,
        mut on_reply: impl FnMut(ReplyFrame<'_>),
    ) -> Result<(), String> {
        loop {
            let filled = self.fill();
            self.parse(&mut on_reply)?;
            match filled? {
                Fill::Full => {}
                Fill::Short if peer_closed => {}
                Fill::Short | Fill::Empty => return Ok(()),
            }
        }
    }

    /// One read into the input buffer: what it found (see [`Session::receive`]). The buffer is
    /// zeroed only when it grows: unread bytes move to its front when the free tail gets short.
    fn fill(&mut self) -> Result<Fill, String> {
        if self.in_parsed == self.in_end {
            (self.in_parsed, self.in_end) = (0, 0);
        } else if self.in_parsed > 0 && self.input.len() - self.in_end < READ_CHUNK_BYTES {
            self.input.copy_within(self.in_parsed..self.in_end, 0);
            (self.in_parsed, self.in_end) = (0, self.in_end - self.in_parsed);
        }
        // Room for a whole frame once its header says how long it is, else for one chunk.
        let want = self.frame_len().unwrap_or(0).max(READ_CHUNK_BYTES);
        let wanted_end = self.in_parsed + want.max(self.in_end - self.in_parsed + READ_CHUNK_BYTES);
        if self.input.len() < wanted_end {
            self.input.resize(wanted_end, 0);
        }
        let room = self.input.len() - self.in_end;
        match self.stream.read(&mut self.input[self.in_end..]) {
            Ok(0) => Err(format!("{}: the node closed the connection", self.addr)),
            Ok(n) => {
                self.in_end += n;
                Ok(if n == room { Fill::Full } else { Fill::Short })
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Fill::Empty),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Fill::Full),
            Err(e) => Err(format!("read from {}: {e}", self.addr)),
        }
    }

    /// The length of the frame at the parse position, once its header has arrived.
    fn frame_len(&self) -> Option<usize> {
        if self.protocol == Protocol::Resp {
            return None;
        }
        let buf = &self.input[self.in_parsed..self.in_end];
        match FrameHeader::parse(buf, FRAME_BODY_BYTES_MAX)? {
            Ok(h) => Some(HEADER_BYTES + h.body_len as usize),
            Err(_) => None,
        }
    }

    fn parse(&mut self, on_reply: &mut impl FnMut(ReplyFrame<'_>)) -> Result<(), String> {
        if self.protocol == Protocol::Resp {
            return self.parse_resp(on_reply);
        }
        loop {
            let buf = &self.input[self.in_parsed..self.in_end];
            let header: Header = match FrameHeader::parse(buf, FRAME_BODY_BYTES_MAX) {
                None => return Ok(()),
                Some(Ok(h)) => h,
                Some(Err(e)) => return Err(format!("bad reply frame from {}: {e}", self.addr)),
            };
            let end = HEADER_BYTES + header.body_len as usize;
            if buf.len() < end {
                return Ok(());
            }
            on_reply(ReplyFrame {
                id: header.request_id,
                status: header.status,
                body: &buf[HEADER_BYTES..end],
                nil: false,
            });
            self.in_parsed += end;
        }
    }

    fn parse_resp(&mut self, on_reply: &mut impl FnMut(ReplyFrame<'_>)) -> Result<(), String> {
        loop {
            let buf = &self.input[self.in_parsed..self.in_end];
            let (reply, len) = match resp::parse_reply(buf) {
                None => return Ok(()),
                Some(Ok(parsed)) => parsed,
                Some(Err(e)) => return Err(format!("bad RESP reply from {}: {e}", self.addr)),
            };
            if self.replied + 1 >= self.next_id {
                return Err(format!("{}: a RESP reply to no request", self.addr));
            }
            self.replied += 1;
            let (status, body, nil) = match reply {
                RespReply::Done => (0, &[][..], false),
                RespReply::Nil => (0, &[][..], true),
                RespReply::Error(text) => (RESP_ERROR_STATUS, text, false),
            };
            on_reply(ReplyFrame { id: self.replied, status, body, nil });
            self.in_parsed += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::net::TcpListener;

    use mio::{Events, Poll, Token};

    use super::*;

    /// Longest wait for the next readable event; a reply left unread would hit it.
    const EVENT_WAIT: Duration = Duration::from_secs(10);

    fn connected(requests: usize) -> (Poll, Session, std::net::TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let poll = Poll::new().unwrap();
        let addr = listener.local_addr().unwrap();
        let mut session =
            Session::connect(addr, Protocol::Resp, poll.registry(), Token(0)).unwrap();
        let (server, _) = listener.accept().unwrap();
        for _ in 0..requests {
            session.queue_resp(b"k", None);
        }
        (poll, session, server)
    }

    /// Waits for the session's next readable event (failing after EVENT_WAIT) and receives;
    /// returns the replies handed over.
    fn receive_on_event(poll: &mut Poll, session: &mut Session) -> usize {
        let mut events = Events::with_capacity(8);
        let closed = loop {
            poll.poll(&mut events, Some(EVENT_WAIT)).unwrap();
            assert!(!events.is_empty(), "no readable event within {EVENT_WAIT:?}");
            if let Some(e) = events.iter().find(|e| e.is_readable() || e.is_read_closed()) {
                break e.is_read_closed();
            }
        };
        let mut replies = 0;
        session.receive(closed, |_| replies += 1).unwrap();
        replies
    }

    #[test]
    fn a_reply_split_by_a_short_read_completes_on_the_next_edge() {
        let (mut poll, mut session, mut server) = connected(2);
        server.write_all(b"+O").unwrap();
        // The short read takes the two bytes and stops without a second read.
        assert_eq!(receive_on_event(&mut poll, &mut session), 0);
        server.write_all(b"K\r\n+OK\r\n").unwrap();
        // The bytes that came after it raised a new edge, and both replies are whole.
        assert_eq!(receive_on_event(&mut poll, &mut session), 2);
    }

    #[test]
    fn a_close_behind_the_last_reply_is_seen_in_the_same_event() {
        let (mut poll, mut session, mut server) = connected(1);
        // The reply and the FIN both arrive before the client looks: one edge for both.
        server.write_all(b"+OK\r\n").unwrap();
        server.shutdown(std::net::Shutdown::Write).unwrap();
        let mut events = Events::with_capacity(8);
        let closed = loop {
            poll.poll(&mut events, Some(EVENT_WAIT)).unwrap();
            assert!(!events.is_empty(), "no event within {EVENT_WAIT:?}");
            if let Some(e) = events.iter().find(|e| e.is_read_closed()) {
                break e.is_read_closed();
            }
        };
        let mut replies = 0;
        let err = session.receive(closed, |_| replies += 1).unwrap_err();
        assert_eq!(replies, 1, "the reply before the close is handed over");
        assert!(err.contains("closed the connection"), "{err}");
    }

    #[test]
    fn replies_longer_than_one_read_all_arrive() {
        // 40,000 replies of 5 bytes: about three times READ_CHUNK_BYTES, so full reads
        // (which read again) and short ones (which wait for the next edge) both happen.
        const REPLIES: usize = 40_000;
        let (mut poll, mut session, mut server) = connected(REPLIES);
        let writer = std::thread::spawn(move || {
            server.write_all(&b"+OK\r\n".repeat(REPLIES)).unwrap();
            server
        });
        let mut got = 0;
        while got < REPLIES {
            got += receive_on_event(&mut poll, &mut session);
        }
        assert_eq!(got, REPLIES);
        drop(writer.join().unwrap());
    }
}
