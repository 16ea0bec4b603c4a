//! Reaching the node: `--addr HOST:PORT` resolved to a socket address, `--timeout` parsed, and the
//! protocol client connected with them. A malformed address, a host name that does not resolve,
//! a node that can not be reached and a node that does not answer in time are four different
//! messages (the last one its own code, [`CODE_TIMEOUT`]).

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use ringstore_net::{Client, ClientOptions};

use super::run::{CliError, CODE_CONNECTION};

/// How long the CLI waits for a connect or a response unless `--timeout` says otherwise.
pub const TIMEOUT_DEFAULT: Timeout = Timeout(Duration::from_secs(10));
/// The longest `--timeout` (one day); `0` waits forever instead.
pub const TIMEOUT_SECONDS_MAX: u64 = 24 * 60 * 60;

/// A `--timeout`: how long to wait for a connect or a response; zero waits forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout(pub Duration);

impl Timeout {
    /// As the client takes it: None waits forever.
    pub fn as_option(self) -> Option<Duration> {
        Some(self.0).filter(|t| !t.is_zero())
    }
}

impl std::fmt::Display for Timeout {
    /// In seconds, as `--timeout` takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

impl std::str::FromStr for Timeout {
    type Err = String;

    fn from_str(text: &str) -> Result<Timeout, String> {
        parse_timeout(text).map(Timeout)
    }
}

/// The socket address of `addr` (`HOST:PORT`, its first address). `lookup` resolves a host and
/// port (the system resolver in [`connect`]; tests pass their own).
pub fn resolve(
    addr: &str,
    lookup: impl FnOnce(&str, u16) -> io::Result<Vec<SocketAddr>>,
) -> Result<SocketAddr, CliError> {
    let malformed = |why: &str| {
        CliError::new(
            CODE_CONNECTION,
            format!("{addr:?} is not an address: {why}; expected HOST:PORT (127.0.0.1:27379)"),
        )
    };
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(malformed("it has no ':PORT'"));
    };
    let Ok(port) = port.parse::<u16>() else {
        return Err(malformed(&format!("the port {port:?} is not a number from 0 to 65535")));
    };
    // `[::1]:27379`: an IPv6 address in brackets.
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if host.is_empty() {
        return Err(malformed("the host is empty"));
    }
    let failed = |why: String| {
        CliError::new(CODE_CONNECTION, format!("cannot look up the host {host:?}: {why}"))
    };
    match lookup(host, port) {
        Ok(found) => found.first().copied().ok_or_else(|| failed("it has no address".into())),
        Err(e) => Err(failed(e.to_string())),
    }
}

/// The system resolver, as [`resolve`] takes it.
pub fn system_lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    Ok((host, port).to_socket_addrs()?.collect())
}

/// `--timeout SECONDS`: a decimal number of seconds from 0 (wait forever) to
/// [`TIMEOUT_SECONDS_MAX`].
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds (10, 0.5; 0 waits forever)"))?;
    if !(0.0..=TIMEOUT_SECONDS_MAX as f64).contains(&seconds) {
        return Err(format!(
            "{text} seconds is outside 0..={TIMEOUT_SECONDS_MAX} (TIMEOUT_SECONDS_MAX; 0 waits \
             forever)"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A client of the node at `addr`, every connect, read and write bounded by `timeout` (None:
/// forever).
pub fn connect(addr: &str, timeout: Option<Duration>) -> Result<Client, CliError> {
    let socket = resolve(addr, system_lookup)?;
    let options = ClientOptions { timeout, ..ClientOptions::default() };
    Client::connect_with(socket, options).map_err(|e| {
        let e = CliError::from_client(e, timeout);
        CliError::new(e.code, format!("cannot connect to {addr}: {}", e.message))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_malformed_address_is_not_a_lookup_failure() {
        let never = |_: &str, _: u16| -> io::Result<Vec<SocketAddr>> { panic!("no lookup") };
        let e = resolve("nosuchhost", never).expect_err("no port");
        assert_eq!(e.code, 805);
        assert_eq!(
            e.message,
            "\"nosuchhost\" is not an address: it has no ':PORT'; expected HOST:PORT \
             (127.0.0.1:27379)"
        );
        let e = resolve("host:99999", never).expect_err("port too big");
        assert!(e.message.contains("the port \"99999\" is not a number"), "{e}");
        assert!(resolve(":1", never).expect_err("no host").message.contains("the host is empty"));
    }

    #[test]
    fn a_failed_lookup_says_so() {
        let fails = |host: &str, port: u16| -> io::Result<Vec<SocketAddr>> {
            assert_eq!((host, port), ("nosuchhost.invalid", 27379));
            Err(io::Error::other("Name or service not known"))
        };
        let e = resolve("nosuchhost.invalid:27379", fails).expect_err("no such host");
        assert_eq!(e.code, 805);
        assert_eq!(
            e.message,
            "cannot look up the host \"nosuchhost.invalid\": Name or service not known"
        );
        assert!(!e.message.contains("HOST:PORT"), "{e}");
        let e = resolve("h:1", |_, _| Ok(Vec::new())).expect_err("no address");
        assert!(e.message.ends_with("it has no address"), "{e}");
    }

    #[test]
    fn addresses_resolve_to_their_first() {
        let two = |_: &str, port: u16| Ok(vec![local(port), local(port + 1)]);
        assert_eq!(resolve("localhost:5", two).expect("resolves"), local(5));
        let ipv6 = resolve("[::1]:7", system_lookup).expect("an IPv6 literal");
        assert_eq!((ipv6.is_ipv6(), ipv6.port()), (true, 7));
        assert_eq!(resolve("127.0.0.1:9", system_lookup).expect("a literal"), local(9));
    }

    #[test]
    fn timeouts_parse_in_seconds() {
        assert_eq!(parse_timeout("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_timeout("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!("0".parse::<Timeout>().map(Timeout::as_option), Ok(None));
        assert_eq!(TIMEOUT_DEFAULT.to_string(), "10");
        assert_eq!(TIMEOUT_DEFAULT.to_string().parse(), Ok(TIMEOUT_DEFAULT));
        assert_eq!(Timeout(Duration::from_millis(1500)).to_string(), "1.5");
        assert!(parse_timeout("-1").expect_err("negative").contains("TIMEOUT_SECONDS_MAX"));
        assert!(parse_timeout("86401").is_err());
        assert!(parse_timeout("NaN").is_err());
        assert!(parse_timeout("10s").expect_err("a unit").contains("not a number of seconds"));
    }
}
