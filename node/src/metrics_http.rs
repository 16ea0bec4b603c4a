//! The Prometheus endpoint (`--metrics HOST:PORT`), served by shard 0: one request per
//! connection, the same per-shard statistics as the Stats request (`metrics_text.rs` renders
//! them).

use std::rc::Rc;

use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};

use crate::forward::ask;
use crate::mesh::ShardMsg;
use crate::metrics_text::{
    http_not_found, http_response, is_metrics_request, render, request_head_len, ShardMetrics,
    REQUEST_HEAD_BYTES_MAX,
};
use crate::shard::Shard;

pub async fn serve(shard: Rc<Shard>, listener: TcpListener) {
    crate::listener::accept_until_shutdown(shard, listener, "metrics", answer).await;
}

async fn answer(shard: Rc<Shard>, mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut head = vec![0u8; REQUEST_HEAD_BYTES_MAX];
    let mut filled = 0;
    while request_head_len(&head[..filled]).is_none() && filled < head.len() {
        match stream.read(&mut head[filled..]).await {
            Ok(0) | Err(_) => return,
            Ok(n) => filled += n,
        }
    }
    let reply = if is_metrics_request(&head[..filled]) {
        let mut shards = Vec::with_capacity(shard.shards());
        for s in 0..shard.shards() {
            let stats = if s == shard.id {
                shard.stats()
            } else {
                match ask(&shard, s, |reply| ShardMsg::Stats { reply }).await {
                    Ok(stats) => stats,
                    Err(_) => return,
                }
            };
            shards.push(ShardMetrics { shard: u32::from(stats.shard), values: stats.values });
        }
        http_response(&render(&shards))
    } else {
        http_not_found()
    };
    let _ = stream.write_all(&reply).await;
    let _ = stream.close().await;
}
