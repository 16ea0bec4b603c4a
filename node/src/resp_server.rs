//! The RESP commands about the connection and the node: PING, ECHO, QUIT, HELLO, SELECT,
//! CLIENT, COMMAND, CONFIG GET, TIME (answered at once by the connection), and DBSIZE and INFO
//! (from every shard, in a task). Replies are Redis's for the same commands, as far as
//! docs/RESP.md says.

use std::rc::Rc;
use std::time::{SystemTime, UNIX_EPOCH};

use ringstore_net::resp::parse::parse_i64;
use ringstore_net::resp::{reply, Args};
use ringstore_net::ShardStats;
use ringstore_storage::Durability;

use crate::forward::ask;
use crate::mesh::ShardMsg;
use crate::resp_cluster;
use crate::resp_commands::{self, COMMANDS};
use crate::resp_scan;
use crate::resp_session::Conn;
use crate::shard::Shard;

/// The Redis version the port reports (HELLO, INFO): the version whose commands and replies it
/// follows, so clients enable what it has.
pub const REDIS_VERSION: &str = "7.0.0";

/// Runs a connection command; its reply appended to `out`.
pub fn connection_command(
    shard: &Shard,
    conn: &Conn,
    name: &str,
    args: &Args,
    raw: &[u8],
    now_ms: u64,
    out: &mut Vec<u8>,
) {
    let arg = |i: usize| args.get(raw, i);
    let n = args.len();
    match name {
        "PING" if n == 1 => reply::simple(out, "PONG"),
        "PING" if n == 2 => reply::bulk(out, arg(1)),
        "PING" => reply::error(out, "ERR wrong number of arguments for 'ping' command"),
        "ECHO" => reply::bulk(out, arg(1)),
        "QUIT" => {
            reply::ok(out);
            conn.closing.set(true);
        }
        "SELECT" => match parse_i64(arg(1)) {
            Some(0) => reply::ok(out),
            Some(_) => reply::error(out, "ERR DB index is out of range"),
            None => reply::error(out, "ERR value is not an integer or out of range"),
        },
        "TIME" => {
            let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            reply::array(out, 2);
            reply::bulk(out, since.as_secs().to_string().as_bytes());
            reply::bulk(out, since.subsec_micros().to_string().as_bytes());
        }
        "HELLO" => hello(shard, conn, args, raw, out),
        "CLIENT" => client(conn, args, raw, out),
        "CONFIG" => config(shard, conn, args, raw, out),
        "COMMAND" => command(args, raw, out),
        "CLUSTER" => resp_cluster::cluster(shard, conn, args, raw, out),
        "READONLY" | "READWRITE" | "ASKING" => resp_cluster::accept(shard, out),
        _ => reply::error(out, &format!("ERR unknown command '{name}'")),
    }
    let _ = now_ms;
}

fn hello(shard: &Shard, conn: &Conn, args: &Args, raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 1;
    if args.len() > 1 {
        match parse_i64(args.get(raw, 1)) {
            Some(2) => conn.resp3.set(false),
            Some(3) => conn.resp3.set(true),
            Some(_) => return reply::error(out, "NOPROTO unsupported protocol version"),
            None => {
                return reply::error(out, "ERR Protocol version is not an integer or out of range")
            }
        }
        i = 2;
    }
    while i < args.len() {
        let word = args.get(raw, i).to_ascii_uppercase();
        match (word.as_slice(), i + 1 < args.len()) {
            (b"SETNAME", true) => {
                *conn.name.borrow_mut() = Some(args.get(raw, i + 1).to_vec());
                i += 2;
            }
            (b"AUTH", _) => {
                return reply::error(
                    out,
                    "WRONGPASS invalid username-password pair or user is disabled.",
                )
            }
            _ => {
                let w = String::from_utf8_lossy(args.get(raw, i)).into_owned();
                return reply::error(out, &format!("ERR Syntax error in HELLO option '{w}'"));
            }
        }
    }
    let _ = shard;
    let three = conn.resp3.get();
    reply::map(out, 7, three);
    for (k, v) in [("server", "redis"), ("version", REDIS_VERSION)] {
        reply::bulk(out, k.as_bytes());
        reply::bulk(out, v.as_bytes());
    }
    reply::bulk(out, b"proto");
    reply::integer(out, if three { 3 } else { 2 });
    reply::bulk(out, b"id");
    reply::integer(out, conn.id as i64);
    for (k, v) in [("mode", "standalone"), ("role", "master")] {
        reply::bulk(out, k.as_bytes());
        reply::bulk(out, v.as_bytes());
    }
    reply::bulk(out, b"modules");
    reply::array(out, 0);
}

fn client(conn: &Conn, args: &Args, raw: &[u8], out: &mut Vec<u8>) {
    let sub = args.get(raw, 1).to_ascii_uppercase();
    let n = args.len();
    match (sub.as_slice(), n) {
        (b"SETNAME", 3) => {
            let name = args.get(raw, 2);
            if name.iter().any(|&c| c <= b' ' || c > b'~') {
                return reply::error(
                    out,
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            *conn.name.borrow_mut() = (!name.is_empty()).then(|| name.to_vec());
            reply::ok(out);
        }
        (b"GETNAME", 2) => match conn.name.borrow().as_deref() {
            Some(name) => reply::bulk(out, name),
            None => reply::null(out),
        },
        (b"ID", 2) => reply::integer(out, conn.id as i64),
        (b"INFO", 2) => reply::bulk(out, client_line(conn).as_bytes()),
        // Client libraries announce themselves (redis-py, go-redis); nothing to keep.
        (b"SETINFO", 4) => reply::ok(out),
        (b"SETNAME" | b"GETNAME" | b"ID" | b"INFO" | b"SETINFO", _) => {
            let sub = String::from_utf8_lossy(&sub).to_lowercase();
            reply::error(out, &format!("ERR wrong number of arguments for 'client|{sub}' command"));
        }
        _ => {
            let sub = String::from_utf8_lossy(args.get(raw, 1)).into_owned();
            reply::error(out, &format!("ERR unknown subcommand '{sub}'. Try CLIENT HELP."));
        }
    }
}

/// CLIENT INFO's line (the fields Redis gives that mean something here).
fn client_line(conn: &Conn) -> String {
    let name =
        conn.name.borrow().as_deref().map(String::from_utf8_lossy).unwrap_or_default().into_owned();
    format!(
        "id={} addr={} laddr={} name={} db=0 multi=-1 resp=2 qbuf=0 omem={} cmd=client|info\n",
        conn.id,
        conn.peer,
        conn.local,
        name,
        conn.out.committed()
    )
}

/// The settings CONFIG GET knows, with the values that describe this node.
fn config_values(shard: &Shard, conn: &Conn) -> Vec<(&'static str, String)> {
    let appendfsync = match conn.settings.durability {
        Durability::Sync => "always",
        Durability::WriteNoSync | Durability::NoSync => "everysec",
    };
    vec![
        ("appendonly", "yes".into()),
        ("appendfsync", appendfsync.into()),
        ("save", String::new()),
        ("databases", "1".into()),
        ("maxclients", shard.limits.connections_max.to_string()),
        ("maxmemory", "0".into()),
        ("timeout", (shard.limits.idle_timeout_ms / 1000).to_string()),
        ("proto-max-bulk-len", conn.settings.parse.bulk_bytes_max.to_string()),
    ]
}

fn config(shard: &Shard, conn: &Conn, args: &Args, raw: &[u8], out: &mut Vec<u8>) {
    let sub = args.get(raw, 1).to_ascii_uppercase();
    if sub != b"GET" {
        let sub = String::from_utf8_lossy(args.get(raw, 1)).into_owned();
        return reply::error(out, &format!("ERR unknown subcommand '{sub}'. Try CONFIG HELP."));
    }
    if args.len() < 3 {
        return reply::error(out, "ERR wrong number of arguments for 'config|get' command");
    }
    let values = config_values(shard, conn);
    let hits: Vec<&(&str, String)> = values
        .iter()
        .filter(|(name, _)| {
            (2..args.len()).any(|i| resp_scan::glob(args.get(raw, i), name.as_bytes(), true))
        })
        .collect();
    reply::map(out, hits.len(), conn.resp3.get());
    for (name, value) in hits {
        reply::bulk(out, name.as_bytes());
        reply::bulk(out, value.as_bytes());
    }
}

fn command(args: &Args, raw: &[u8], out: &mut Vec<u8>) {
    if args.len() == 1 {
        reply::array(out, COMMANDS.len());
        for spec in COMMANDS {
            command_info(spec, out);
        }
        return;
    }
    match args.get(raw, 1).to_ascii_uppercase().as_slice() {
        b"COUNT" => reply::integer(out, COMMANDS.len() as i64),
        // No documentation: redis-cli then uses the hints it was built with.
        b"DOCS" => reply::array(out, 0),
        b"INFO" => {
            reply::array(out, args.len() - 2);
            for i in 2..args.len() {
                match resp_commands::lookup(args.get(raw, i)) {
                    Some(spec) => command_info(spec, out),
                    None => reply::null_array(out),
                }
            }
        }
        _ => {
            let sub = String::from_utf8_lossy(args.get(raw, 1)).into_owned();
            reply::error(out, &format!("ERR unknown subcommand '{sub}'. Try COMMAND HELP."));
        }
    }
}

/// One command's entry of COMMAND: name, arity, flags, first key, last key, step.
fn command_info(spec: &resp_commands::Spec, out: &mut Vec<u8>) {
    use resp_commands::Kind;
    reply::array(out, 6);
    reply::bulk(out, spec.name.to_lowercase().as_bytes());
    reply::integer(out, i64::from(spec.arity));
    reply::array(out, 0);
    let (first, last, step) = match (spec.kind, spec.name) {
        (Kind::Key, _) => (1, 1, 1),
        (Kind::Keys, "MSET" | "MSETNX") => (1, -1, 2),
        (Kind::Keys, _) => (1, -1, 1),
        _ => (0, 0, 0),
    };
    reply::integer(out, first);
    reply::integer(out, last);
    reply::integer(out, step);
}

/// Runs a command about every key or the node: DBSIZE, INFO, SCAN, KEYS, RANDOMKEY, FLUSHDB,
/// FLUSHALL.
pub async fn node_command(shard: &Rc<Shard>, conn: &Conn, words: &[&[u8]]) -> Vec<u8> {
    let name = String::from_utf8_lossy(words[0]).to_ascii_uppercase();
    match name.as_str() {
        "SCAN" => return resp_scan::scan(shard, conn, words).await,
        "KEYS" => {
            let limit = shard.limits.output_buffer_bytes;
            return resp_scan::keys(shard, resp_scan::scope(shard, conn), words[1], limit).await;
        }
        "RANDOMKEY" => {
            let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            let seed = conn.id ^ u64::from(nanos.subsec_nanos());
            return resp_scan::random_key(shard, resp_scan::scope(shard, conn), seed).await;
        }
        "FLUSHDB" | "FLUSHALL" => {
            let mode = words.get(1).map(|w| w.to_ascii_uppercase());
            return match (words.len(), mode.as_deref()) {
                (1, _) | (2, Some(b"SYNC" | b"ASYNC")) => resp_scan::flush(shard).await,
                _ => resp_commands::error_reply("ERR syntax error"),
            };
        }
        _ => {}
    }
    let mut out = Vec::new();
    if words[0].eq_ignore_ascii_case(b"DBSIZE") {
        match resp_commands::dbsize(shard, resp_scan::scope(shard, conn)).await {
            Ok(n) => reply::integer(&mut out, n as i64),
            Err(e) => reply::error(&mut out, &e),
        }
        return out;
    }
    match info(shard, conn, &words[1..]).await {
        Ok(text) => reply::bulk(&mut out, text.as_bytes()),
        Err(e) => reply::error(&mut out, &e),
    }
    out
}

/// The sum of one statistic over every shard.
fn total(stats: &[ShardStats], name: &str) -> u64 {
    stats.iter().flat_map(|s| s.values.iter()).filter(|(n, _)| n == name).map(|(_, v)| v).sum()
}

/// Every shard's statistics.
async fn all_stats(shard: &Rc<Shard>) -> Result<Vec<ShardStats>, String> {
    let mut stats = Vec::with_capacity(shard.shards());
    for s in 0..shard.shards() {
        stats.push(if s == shard.id {
            shard.stats()
        } else {
            ask(shard, s, |reply| ShardMsg::Stats { reply })
                .await
                .map_err(|e| format!("ERR {e}"))?
        });
    }
    Ok(stats)
}

/// INFO: the server, clients, stats, persistence, cluster and keyspace sections (those asked
/// for, or all), from every shard's statistics.
async fn info(shard: &Rc<Shard>, conn: &Conn, sections: &[&[u8]]) -> Result<String, String> {
    let stats = all_stats(shard).await?;
    let wants = |name: &str| {
        sections.is_empty()
            || sections.iter().any(|s| {
                s.eq_ignore_ascii_case(name.as_bytes())
                    || s.eq_ignore_ascii_case(b"all")
                    || s.eq_ignore_ascii_case(b"everything")
                    || s.eq_ignore_ascii_case(b"default")
            })
    };
    let t = |name: &str| total(&stats, name);
    let mut text = String::new();
    if wants("server") {
        let port = conn.local.rsplit(':').next().unwrap_or("0");
        text += &format!(
            "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_mode:standalone\r\n\
             ringstore_version:{}\r\nprocess_id:{}\r\ntcp_port:{port}\r\nshards:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            std::process::id(),
            shard.shards()
        );
    }
    if wants("clients") {
        text += &format!(
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n",
            t("connections"),
            shard.limits.connections_max
        );
    }
    if wants("stats") {
        text += &format!(
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
             total_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\n\
             keyspace_hits:{}\r\nkeyspace_misses:{}\r\n\r\n",
            t("connections_total"),
            t("resp_commands"),
            t("bytes_in"),
            t("bytes_out"),
            t("connections_refused"),
            t("resp_keyspace_hits"),
            t("resp_keyspace_misses")
        );
    }
    if wants("persistence") {
        text += &format!(
            "# Persistence\r\nloading:0\r\naof_enabled:1\r\nrdb_changes_since_last_save:0\r\n\
             group_commits:{}\r\nfsyncs:{}\r\ndisk_bytes:{}\r\n\r\n",
            t("group_commits"),
            t("fsyncs"),
            t("disk_bytes")
        );
    }
    if wants("cluster") {
        let enabled = u8::from(resp_cluster::enabled(shard));
        text += &format!("# Cluster\r\ncluster_enabled:{enabled}\r\n\r\n");
    }
    if wants("keyspace") {
        let keys = resp_commands::dbsize(shard, resp_scan::scope(shard, conn)).await?;
        text += "# Keyspace\r\n";
        if keys > 0 {
            text += &format!("db0:keys={keys},expires=0,avg_ttl=0\r\n");
        }
    }
    Ok(text)
}
