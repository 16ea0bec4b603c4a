//! One blocking client connection: frames out, frames in, over one `TcpStream` (std::net, no
//! async runtime).
//!
//! Requests are appended to an output buffer ([`Connection::send`], [`Connection::send_request`])
//! and written when the caller flushes, when the buffer passes [`OUT_BUFFER_FLUSH_BYTES`], or
//! before a receive, so many requests can be pipelined in one write. The server may answer them in
//! any order: every reply is matched to its request by id, never by position. A reply read while
//! waiting for another id is kept ([`Connection::recv_id`]), so synchronous calls and pipelined
//! traffic can share a connection.
//!
//! Any failure that leaves the byte stream out of step (an I/O error or timeout, the server
//! closing, a bad header, a frame that is not a response) breaks the connection: it is shut down
//! and every later call returns [`ClientError::Broken`]. Open a new one.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use ringstore_model::Durability;
use zerocopy::IntoBytes;

use crate::frame::{Flags, FrameError, FrameHeader, Opcode, FRAME_BODY_BYTES_MAX, HEADER_BYTES};
use crate::request::{durability_flags, Request};
use crate::response::{decode_error, ErrorReply};
use crate::wire::{WireError, Writer};

/// Most requests one connection may have sent and not yet handed back a reply for.
pub const IN_FLIGHT_MAX: usize = 65_536;
/// Queued request bytes that trigger a write without waiting for a flush.
pub const OUT_BUFFER_FLUSH_BYTES: usize = 256 * 1024;
/// The receive buffer: several small pipelined replies are read with one system call.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Largest first allocation for a reply body; a larger body grows as its bytes arrive, so a
/// header that announces a large body costs nothing until the body really comes.
const BODY_RESERVE_BYTES: usize = 64 * 1024;

const _: () = assert!(OUT_BUFFER_FLUSH_BYTES <= FRAME_BODY_BYTES_MAX as usize);
const _: () = assert!(HEADER_BYTES <= BODY_RESERVE_BYTES);

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// A system call on the connection failed (including a connect, read or write timeout).
    #[error("{op} {addr}: {source}")]
    Io {
        op: &'static str,
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// The server answered with an error: its code (`docs/ERRORS.md`) and message.
    #[error("server error {}: {}", .0.code, .0.message)]
    Server(ErrorReply),
    /// A response body that does not decode as its opcode's response.
    #[error("malformed response body: {0}")]
    Wire(#[from] WireError),
    /// A response header that does not check.
    #[error("bad response header: {0}")]
    Frame(#[from] FrameError),
    /// The server broke the protocol (a frame without the response flag, a reply whose opcode
    /// is not its request's, a topology that cannot be routed by ...).
    #[error("protocol violation by {addr}: {detail}")]
    Protocol { addr: SocketAddr, detail: String },
    /// The server closed the connection.
    #[error("the server at {addr} closed the connection {during}")]
    Closed { addr: SocketAddr, during: &'static str },
    /// The connection failed earlier and can no longer be used.
    #[error("the connection to {addr} is unusable after an earlier error: {reason}")]
    Broken { addr: SocketAddr, reason: String },
    /// The request cannot be sent as asked (too large, a name over 255 bytes, an id not in
    /// flight ...); nothing was sent.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl ClientError {
    /// The server's error code, for [`ClientError::Server`].
    pub fn code(&self) -> Option<u16> {
        match self {
            ClientError::Server(e) => Some(e.code),
            _ => None,
        }
    }

    fn io(op: &'static str, addr: SocketAddr, source: io::Error) -> ClientError {
        use io::ErrorKind::*;
        match source.kind() {
            UnexpectedEof => ClientError::Closed { addr, during: "in the middle of a frame" },
            ConnectionReset | ConnectionAborted | BrokenPipe => {
                ClientError::Closed { addr, during: "(connection reset)" }
            }
            // A read or write timeout shows as EAGAIN on Unix; say what it means.
            WouldBlock | TimedOut => ClientError::Io {
                op,
                addr,
                source: io::Error::new(TimedOut, format!("timed out ({source})")),
            },
            _ => ClientError::Io { op, addr, source },
        }
    }
}

/// One response frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub request_id: u64,
    pub opcode: Opcode,
    /// 0 on success, else the error code; the body is then the UTF-8 message.
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    /// The reply if it is a success, else [`ClientError::Server`] with the code and message.
    pub fn into_result(self) -> Result<Reply> {
        match self.status {
            0 => Ok(self),
            code => Err(ClientError::Server(decode_error(code, &self.body))),
        }
    }
}

/// Whether the header flags of a request with this opcode carry the durability.
fn is_write(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::Put | Opcode::Update | Opcode::Delete | Opcode::Execute | Opcode::MultiDelete
    )
}

/// A blocking connection to one port of a node.
pub struct Connection {
    reader: BufReader<TcpStream>,
    peer: SocketAddr,
    /// Frames queued and not yet written.
    out: Vec<u8>,
    next_id: u64,
    /// Requests sent and not yet answered, with their opcodes.
    outstanding: HashMap<u64, Opcode>,
    /// Replies read while waiting for another id, not yet handed out.
    pending: BTreeMap<u64, Reply>,
    body_limit: u32,
    /// Why the connection is unusable, once it is.
    broken: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("peer", &self.peer)
            .field("queued_bytes", &self.out.len())
            .field("in_flight", &self.in_flight())
            .field("broken", &self.broken)
            .finish()
    }
}

impl Connection {
    /// Connects to `addr` with TCP_NODELAY set. `timeout` bounds the connect and every later
    /// read and write (None or zero: wait forever).
    pub fn connect(addr: SocketAddr, timeout: Option<Duration>) -> Result<Connection> {
        let timeout = timeout.filter(|t| !t.is_zero());
        let io = |source| ClientError::Io { op: "connect to", addr, source };
        let stream = match timeout {
            Some(t) => TcpStream::connect_timeout(&addr, t),
            None => TcpStream::connect(addr),
        }
        .map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        stream.set_read_timeout(timeout).map_err(io)?;
        stream.set_write_timeout(timeout).map_err(io)?;
        Ok(Connection {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, stream),
            peer: addr,
            out: Vec::new(),
            next_id: 1,
            outstanding: HashMap::new(),
            pending: BTreeMap::new(),
            body_limit: FRAME_BODY_BYTES_MAX,
            broken: None,
        })
    }

    /// The address this connection was opened to.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// Sets the largest reply body accepted (at most [`FRAME_BODY_BYTES_MAX`], the default).
    pub fn set_body_limit(&mut self, limit: u32) {
        self.body_limit = limit.min(FRAME_BODY_BYTES_MAX);
    }

    /// Requests sent whose replies have not been handed to the caller yet (including replies
    /// read and kept for a later [`Connection::recv_id`]).
    pub fn in_flight(&self) -> usize {
        self.outstanding.len() + self.pending.len()
    }

    /// Whether an earlier failure made the connection unusable.
    pub fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    /// Whether the node closed this connection while it was quiet (nothing in flight, queued or
    /// buffered): its idle timeout (`--idle-timeout-ms`) or a restart. One non-blocking peek
    /// that consumes nothing; false while a request is outstanding, whose reply tells instead.
    pub fn closed_while_quiet(&self) -> bool {
        if self.broken.is_some() {
            return true;
        }
        if self.in_flight() > 0 || !self.out.is_empty() || !self.reader.buffer().is_empty() {
            return false;
        }
        let stream = self.reader.get_ref();
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let closed = match stream.peek(&mut [0u8; 1]) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != io::ErrorKind::WouldBlock,
        };
        // A stream that cannot go back to blocking reads would break the next call: say closed,
        // so that the caller opens a new one.
        stream.set_nonblocking(false).is_err() || closed
    }

    /// Queues a frame with this opcode, flags and body; returns its request id.
    pub fn send(&mut self, opcode: Opcode, flags: Flags, body: &[u8]) -> Result<u64> {
        self.usable()?;
        check_body_len(body.len())?;
        let start = self.begin_frame()?;
        self.out.extend_from_slice(body);
        self.end_frame(start, opcode, flags)
    }

    /// Queues a request, encoded in place; write requests carry `durability` in their flags.
    pub fn send_request(&mut self, req: &Request<'_>, durability: Durability) -> Result<u64> {
        self.usable()?;
        let opcode = req.opcode();
        let flags = if is_write(opcode) { durability_flags(durability) } else { Flags(0) };
        let start = self.begin_frame()?;
        let mut w = Writer { buf: std::mem::take(&mut self.out) };
        req.encode(&mut w);
        self.out = w.buf;
        self.end_frame(start, opcode, flags)
    }

    /// Reserves the header of a frame at the end of the output buffer.
    fn begin_frame(&mut self) -> Result<usize> {
        if self.in_flight() >= IN_FLIGHT_MAX {
            return Err(ClientError::InvalidRequest(format!(
                "{IN_FLIGHT_MAX} requests are already in flight on this connection; receive \
                 some replies first"
            )));
        }
        let start = self.out.len();
        self.out.resize(start + HEADER_BYTES, 0);
        Ok(start)
    }

    /// Writes the header of the frame that starts at `start`, now that its body is queued.
    fn end_frame(&mut self, start: usize, opcode: Opcode, flags: Flags) -> Result<u64> {
        let body_len = self.out.len() - start - HEADER_BYTES;
        if let Err(e) = check_body_len(body_len) {
            self.out.truncate(start);
            return Err(e);
        }
        let id = self.next_id;
        self.next_id += 1;
        let header = FrameHeader::new(opcode, flags, id, body_len as u32, 0);
        self.out[start..start + HEADER_BYTES].copy_from_slice(header.as_bytes());
        self.outstanding.insert(id, opcode);
        if self.out.len() >= OUT_BUFFER_FLUSH_BYTES {
            self.flush()?;
        }
        Ok(id)
    }

    /// Queues bytes as they are, unchecked and untracked (tests send malformed frames). A reply
    /// to them has an id this connection did not give out; [`Connection::recv`] returns it.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.usable()?;
        self.out.extend_from_slice(bytes);
        Ok(())
    }

    /// Writes every queued frame.
    pub fn flush(&mut self) -> Result<()> {
        self.usable()?;
        if self.out.is_empty() {
            return Ok(());
        }
        let result = self.reader.get_mut().write_all(&self.out);
        self.out.clear();
        result.map_err(|e| self.fail(ClientError::io("write to", self.peer, e)))
    }

    /// Sends a request and waits for its reply (replies to other requests that arrive first are
    /// kept for [`Connection::recv_id`]). The reply may be an error: see [`Reply::into_result`].
    pub fn call(&mut self, req: &Request<'_>, durability: Durability) -> Result<Reply> {
        let id = self.send_request(req, durability)?;
        self.recv_id(id)
    }

    /// The next reply: one kept earlier, else the next frame from the server (after a flush).
    /// A reply to no request of this connection (an answer to [`Connection::send_raw`] bytes,
    /// or the server refusing the connection) is returned as it is.
    pub fn recv(&mut self) -> Result<Reply> {
        self.flush()?;
        if let Some((_, reply)) = self.pending.pop_first() {
            return Ok(reply);
        }
        Ok(self.read_reply()?.0)
    }

    /// The reply to request `id`, keeping replies to other requests that arrive first.
    pub fn recv_id(&mut self, id: u64) -> Result<Reply> {
        if let Some(reply) = self.pending.remove(&id) {
            return Ok(reply);
        }
        if !self.outstanding.contains_key(&id) {
            return Err(ClientError::InvalidRequest(format!(
                "request {id} is not in flight on this connection"
            )));
        }
        loop {
            match self.read_reply()? {
                (reply, true) if reply.request_id == id => return Ok(reply),
                (reply, true) => {
                    self.pending.insert(reply.request_id, reply);
                }
                (reply, false) => return Err(self.unsolicited(reply)),
            }
        }
    }

    /// A reply to no request of ours, read while waiting for one: the server speaking about
    /// the connection itself (refusing it, say). An error is returned as the server's error;
    /// anything else breaks the protocol.
    fn unsolicited(&mut self, reply: Reply) -> ClientError {
        let id = reply.request_id;
        match reply.into_result() {
            Err(e) => e,
            Ok(_) => self.protocol(format!("a successful reply to request {id}, never sent")),
        }
    }

    /// Reads one reply frame and checks it against its request; true if it answers a request
    /// in flight.
    fn read_reply(&mut self) -> Result<(Reply, bool)> {
        self.flush()?;
        let reply = self.read_frame()?;
        match self.outstanding.remove(&reply.request_id) {
            Some(sent) if reply.status == 0 && sent != reply.opcode => Err(self.protocol(format!(
                "the reply to request {} (a {sent:?}) has opcode {:?}",
                reply.request_id, reply.opcode
            ))),
            Some(_) => Ok((reply, true)),
            None => Ok((reply, false)),
        }
    }

    fn read_frame(&mut self) -> Result<Reply> {
        let mut header = [0u8; HEADER_BYTES];
        match read_full(&mut self.reader, &mut header) {
            Ok(HEADER_BYTES) => {}
            Ok(0) => return Err(self.closed("before a response")),
            Ok(_) => return Err(self.closed("in the middle of a response header")),
            Err(e) => return Err(self.fail(ClientError::io("read from", self.peer, e))),
        }
        let h = match FrameHeader::parse(&header, self.body_limit) {
            Some(Ok(h)) => h,
            Some(Err(e)) => return Err(self.fail(e.into())),
            None => unreachable!("a full header buffer always parses"),
        };
        if !h.flags.is_response() {
            return Err(self.protocol(format!(
                "frame {} ({:?}) lacks the response flag",
                h.request_id, h.opcode
            )));
        }
        let body = self.read_body(h.body_len as usize)?;
        Ok(Reply { request_id: h.request_id, opcode: h.opcode, status: h.status, body })
    }

    /// Reads a body of `len` bytes (already checked against the limit), growing the buffer as
    /// bytes arrive.
    fn read_body(&mut self, len: usize) -> Result<Vec<u8>> {
        let mut body = Vec::with_capacity(len.min(BODY_RESERVE_BYTES));
        let read = (&mut self.reader).take(len as u64).read_to_end(&mut body);
        match read {
            Ok(n) if n == len => Ok(body),
            Ok(_) => Err(self.closed("in the middle of a response body")),
            Err(e) => Err(self.fail(ClientError::io("read from", self.peer, e))),
        }
    }

    fn usable(&self) -> Result<()> {
        match &self.broken {
            None => Ok(()),
            Some(reason) => Err(ClientError::Broken { addr: self.peer, reason: reason.clone() }),
        }
    }

    /// Marks the connection unusable (the stream is out of step) and returns the error.
    fn fail(&mut self, e: ClientError) -> ClientError {
        if self.broken.is_none() {
            self.broken = Some(e.to_string());
            // The peer may be gone already; there is nothing to do about a failed shutdown.
            let _ = self.reader.get_ref().shutdown(Shutdown::Both);
        }
        e
    }

    fn closed(&mut self, during: &'static str) -> ClientError {
        self.fail(ClientError::Closed { addr: self.peer, during })
    }

    fn protocol(&mut self, detail: String) -> ClientError {
        self.fail(ClientError::Protocol { addr: self.peer, detail })
    }
}

fn check_body_len(len: usize) -> Result<()> {
    if len > FRAME_BODY_BYTES_MAX as usize {
        return Err(ClientError::InvalidRequest(format!(
            "request body of {len} bytes is over the largest frame ({FRAME_BODY_BYTES_MAX} bytes)"
        )));
    }
    Ok(())
}

/// Fills `buf` unless the stream ends first; returns the bytes read (short only at end of
/// stream).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A fake server for the tests of this crate: real sockets on loopback, frames read and
/// answered by a closure.
#[cfg(test)]
pub(crate) mod fake {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::time::Duration;

    use zerocopy::IntoBytes;

    use crate::frame::{Flags, FrameHeader, Header, Opcode, FRAME_BODY_BYTES_MAX, HEADER_BYTES};

    /// Bounds every test: a client or server bug fails the test instead of hanging it.
    pub const TIMEOUT: Duration = Duration::from_secs(10);

    /// One request frame as the server read it.
    #[derive(Debug)]
    pub struct Frame {
        pub header: Header,
        pub body: Vec<u8>,
    }

    /// Reads one frame; None at end of stream.
    pub fn read_frame(s: &mut TcpStream) -> Option<Frame> {
        let mut h = [0u8; HEADER_BYTES];
        s.read_exact(&mut h).ok()?;
        let header = FrameHeader::parse(&h, FRAME_BODY_BYTES_MAX)?.expect("client header checks");
        let mut body = vec![0; header.body_len as usize];
        s.read_exact(&mut body).ok()?;
        Some(Frame { header, body })
    }

    /// The bytes of a response frame.
    pub fn response(opcode: Opcode, id: u64, status: u16, body: &[u8]) -> Vec<u8> {
        let h = FrameHeader::new(opcode, Flags(Flags::RESPONSE), id, body.len() as u32, status);
        let mut out = h.as_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    pub fn write_response(s: &mut TcpStream, opcode: Opcode, id: u64, status: u16, body: &[u8]) {
        // The client may have gone; the test's assertions say whether that was expected.
        let _ = s.write_all(&response(opcode, id, status, body));
    }

    /// A listener on loopback whose every connection is served on its own thread by `serve`.
    pub fn listen<F>(serve: F) -> SocketAddr
    where
        F: Fn(TcpStream) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let serve = std::sync::Arc::new(serve);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
                let serve = serve.clone();
                std::thread::spawn(move || serve(stream));
            }
        });
        addr
    }

    /// A listener that answers each request frame with `answer(frame) -> (status, body)`.
    pub fn answering<F>(answer: F) -> SocketAddr
    where
        F: Fn(&Frame) -> (u16, Vec<u8>) + Send + Sync + 'static,
    {
        listen(move |mut s| {
            while let Some(f) = read_frame(&mut s) {
                let (status, body) = answer(&f);
                write_response(&mut s, f.header.opcode, f.header.request_id, status, &body);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fake::*;
    use super::*;
    use crate::frame::FRAME_BODY_BYTES_DEFAULT;

    fn connect(addr: SocketAddr) -> Connection {
        Connection::connect(addr, Some(TIMEOUT)).expect("connect")
    }

    /// Echoes each request's id in its reply body.
    fn echo(f: &Frame) -> (u16, Vec<u8>) {
        (0, f.header.request_id.to_le_bytes().to_vec())
    }

    #[test]
    fn ping_and_write_flags() {
        let addr = answering(|f| (0, vec![f.header.flags.durability_code()]));
        let mut c = connect(addr);
        let reply = c.call(&Request::Ping, Durability::NoSync).expect("ping");
        assert_eq!((reply.request_id, reply.opcode, reply.status), (1, Opcode::Ping, 0));
        assert_eq!(reply.body, [0], "durability flags only on writes");
        let del = Request::Write {
            table: "t",
            body: crate::request::WriteBody::Delete { key: crate::FieldList::empty() },
            options: Default::default(),
        };
        let reply = c.call(&del, Durability::NoSync).expect("delete");
        assert_eq!((reply.request_id, reply.body), (2, vec![2]));
        assert_eq!(c.in_flight(), 0);
    }

    /// Three pipelined requests answered in reverse order, then three answered in order while a
    /// synchronous call waits for the last: every reply reaches the request it answers.
    #[test]
    fn replies_out_of_order_reach_their_requests() {
        let addr = listen(|mut s| {
            for reverse in [true, false] {
                let mut batch: Vec<Frame> = (0..3).filter_map(|_| read_frame(&mut s)).collect();
                if reverse {
                    batch.reverse();
                }
                for f in batch {
                    let (_, body) = echo(&f);
                    write_response(&mut s, f.header.opcode, f.header.request_id, 0, &body);
                }
            }
        });
        let mut c = connect(addr);
        let ids: Vec<u64> = [Opcode::Ping, Opcode::Stats, Opcode::Hello]
            .into_iter()
            .map(|op| c.send(op, Flags(0), &[]).expect("queued"))
            .collect();
        assert_eq!((ids.clone(), c.in_flight()), (vec![1, 2, 3], 3));
        let first = c.recv_id(1).expect("reply 1");
        assert_eq!((first.opcode, first.body), (Opcode::Ping, 1u64.to_le_bytes().to_vec()));
        assert_eq!(c.in_flight(), 2, "replies 3 and 2 were read and kept");
        for (id, op) in [(3, Opcode::Hello), (2, Opcode::Stats)] {
            let r = c.recv_id(id).expect("kept reply");
            assert_eq!((r.request_id, r.opcode, r.body), (id, op, id.to_le_bytes().to_vec()));
        }

        let a = c.send(Opcode::Ping, Flags(0), &[]).expect("queued");
        let b = c.send(Opcode::Stats, Flags(0), &[]).expect("queued");
        let r = c.call(&Request::Hello, Durability::Sync).expect("call");
        assert_eq!((r.request_id, r.opcode), (6, Opcode::Hello));
        assert_eq!(c.recv().expect("kept").request_id, a);
        assert_eq!(c.recv_id(b).expect("kept").request_id, b);
        assert_eq!(c.in_flight(), 0);
        let e = c.recv_id(b).expect_err("already handed out");
        assert!(matches!(e, ClientError::InvalidRequest(_)), "{e}");
    }

    #[test]
    fn error_reply_keeps_code_and_message() {
        let addr = answering(|_| (203, b"table nope does not exist".to_vec()));
        let mut c = connect(addr);
        let reply = c.call(&Request::Describe { table: "nope" }, Durability::Sync).expect("reply");
        let e = reply.into_result().expect_err("an error reply");
        assert_eq!(e.code(), Some(203));
        let ClientError::Server(ErrorReply { code, message }) = &e else { panic!("{e:?}") };
        assert_eq!((*code, message.as_str()), (203, "table nope does not exist"));
        assert!(e.to_string().contains("203") && e.to_string().contains("nope"), "{e}");
        // The connection goes on after an error reply.
        assert!(!c.is_broken());
        assert_eq!(c.call(&Request::Ping, Durability::Sync).expect("reply").status, 203);
    }

    /// The server closes before, inside a header and inside a body: each is Closed, at once,
    /// and the connection refuses further use.
    #[test]
    fn server_closing_is_closed_not_a_hang() {
        for cut in [0, 10, HEADER_BYTES + 3] {
            let addr = listen(move |mut s| {
                let f = read_frame(&mut s).expect("request");
                let mut frame = response(f.header.opcode, f.header.request_id, 0, &[7; 40]);
                frame.truncate(cut);
                let _ = s.write_all(&frame);
            });
            let mut c = connect(addr);
            let e = c.call(&Request::Ping, Durability::Sync).expect_err("closed");
            assert!(matches!(e, ClientError::Closed { .. }), "cut {cut}: {e}");
            assert!(c.is_broken());
            let e = c.send(Opcode::Ping, Flags(0), &[]).expect_err("broken");
            assert!(matches!(e, ClientError::Broken { .. }), "{e}");
        }
    }

    /// A server that stops in the middle of a frame and keeps the connection open: the read
    /// timeout ends the wait, and breaking the connection shuts it down, which ends the server.
    #[test]
    fn stalled_server_times_out() {
        let addr = listen(|mut s| {
            let f = read_frame(&mut s).expect("request");
            let frame = response(f.header.opcode, f.header.request_id, 0, &[]);
            let _ = s.write_all(&frame[..5]);
            let _ = s.read(&mut [0; 1]);
        });
        let mut c = Connection::connect(addr, Some(Duration::from_millis(200))).expect("connect");
        let e = c.call(&Request::Ping, Durability::Sync).expect_err("timed out");
        let ClientError::Io { source, .. } = &e else { panic!("{e:?}") };
        assert_eq!(source.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("timed out"), "{e}");
        assert!(c.is_broken());
    }

    #[test]
    fn protocol_violations_are_reported() {
        // A request frame sent back, a reply with another opcode, a header over the limit.
        type Answer = fn(u64) -> Vec<u8>;
        let cases: [(Answer, &str); 3] = [
            (
                |id| FrameHeader::new(Opcode::Ping, Flags(0), id, 0, 0).as_bytes().to_vec(),
                "response flag",
            ),
            (|id| response(Opcode::Get, id, 0, &[]), "opcode"),
            (|id| response(Opcode::Ping, id, 0, &[0; 100]), "limit"),
        ];
        for (answer, what) in cases {
            let addr = listen(move |mut s| {
                let f = read_frame(&mut s).expect("request");
                let _ = s.write_all(&answer(f.header.request_id));
            });
            let mut c = connect(addr);
            c.set_body_limit(99);
            let e = c.call(&Request::Ping, Durability::Sync).expect_err(what);
            assert!(e.to_string().contains(what), "{what}: {e}");
            assert!(c.is_broken());
        }
    }

    /// Raw bytes reach the server as they are, and a reply to no request of ours is still
    /// handed out by recv.
    #[test]
    fn raw_frames_and_unknown_ids() {
        let addr = listen(|mut s| {
            let mut magic = [0u8; 4];
            s.read_exact(&mut magic).expect("raw bytes");
            write_response(&mut s, Opcode::Ping, 0, 701, format!("{magic:?}").as_bytes());
        });
        let mut c = connect(addr);
        c.set_body_limit(FRAME_BODY_BYTES_DEFAULT);
        c.send_raw(b"JUNK").expect("queued");
        let reply = c.recv().expect("error frame");
        assert_eq!((reply.request_id, reply.status), (0, 701));
        let e = c.recv().expect_err("closed after the error frame");
        assert!(matches!(e, ClientError::Closed { .. }), "{e}");
    }

    /// A connection refused with an error frame for request 0 while a call waits: the call
    /// returns the server's error.
    #[test]
    fn unsolicited_error_reaches_a_waiting_call() {
        let addr = listen(|mut s| {
            read_frame(&mut s).expect("request");
            write_response(&mut s, Opcode::Ping, 0, 902, b"too many connections");
        });
        let mut c = connect(addr);
        let e = c.call(&Request::Ping, Durability::Sync).expect_err("refused");
        assert_eq!(e.code(), Some(902), "{e}");
    }

    #[test]
    fn oversized_request_is_refused_before_sending() {
        let addr = answering(echo);
        let mut c = connect(addr);
        let body = vec![0u8; FRAME_BODY_BYTES_MAX as usize + 1];
        let e = c.send(Opcode::Ddl, Flags(0), &body).expect_err("too large");
        assert!(matches!(e, ClientError::InvalidRequest(_)), "{e}");
        assert_eq!(c.in_flight(), 0);
        assert_eq!(c.call(&Request::Ping, Durability::Sync).expect("still usable").request_id, 1);
    }
}
