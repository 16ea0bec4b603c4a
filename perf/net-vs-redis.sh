#!/usr/bin/env bash
# Side-by-side network benchmark: ringstore-node driven by ringstore-load, and redis-server driven
# by redis-benchmark, with the same shape (50 connections, pipeline 1 and 32, 16-byte keys,
# 100-byte values), each server's CPU seconds per million operations read from /proc.
#
# Usage: perf/net-vs-redis.sh [seconds]    (needs: cargo build --release --bins; apt-get install
# redis-server redis-tools). Prints one line per run; docs/BENCHMARKS.md quotes them.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
BIN=target/release
TICKS=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

data=$(mktemp -d)
trap 'kill $NODE_PID $REDIS_PID 2>/dev/null || true; rm -rf "$data"' EXIT

"$BIN/ringstore-node" --data-dir "$data/node" --listen 127.0.0.1:0 --shards 2 --log warn \
    > "$data/node.out" &
NODE_PID=$!
for _ in $(seq 100); do grep -q ready "$data/node.out" && break; sleep 0.1; done
ADDR=$(sed -n 's/.*listen=\([^ ]*\).*/\1/p' "$data/node.out")
echo "ringstore-node pid $NODE_PID at $ADDR"

# get = --mix read=100, put = --mix update=100; uniform keys like redis-benchmark -r.
load() {
  "$BIN/ringstore-load" --addr "$ADDR" --server-pid "$NODE_PID" --distribution uniform \
      --connections 50 --threads 2 --duration "${SECONDS_PER_RUN}s" --warmup 2s --keys 100000 \
      --quiet "$@" | tail -2
}
for op in update read; do
  for depth in 1 32; do
    echo "ringstore op=$op pipeline=$depth durability=Sync"
    load --mix "$op=100" --pipeline "$depth" $([ "$op" = read ] || echo --no-load)
  done
done
echo "ringstore op=update pipeline=32 durability=NoSync"
load --mix update=100 --pipeline 32 --durability no-sync --no-load
kill -TERM "$NODE_PID"; wait "$NODE_PID" || true

REDIS_PORT=${REDIS_PORT:-6399}
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    > /dev/null &
REDIS_PID=$!
for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping > /dev/null 2>&1 && break; sleep 0.1; done
echo "redis-server pid $REDIS_PID (no persistence)"
for depth in 1 32; do
  for t in set get; do
    n=$(( depth == 1 ? 400000 : 4000000 ))
    before=$(cpu_ticks "$REDIS_PID"); start=$(date +%s.%N)
    line=$(redis-benchmark -p "$REDIS_PORT" -c 50 -P "$depth" -n "$n" -d 100 -r 100000 -t "$t" -q \
        --precision 3 2>/dev/null | tr '\r' '\n' | grep -i "^$t" | tail -1)
    end=$(date +%s.%N); after=$(cpu_ticks "$REDIS_PID")
    awk -v b="$before" -v a="$after" -v n="$n" -v tk="$TICKS" -v l="$line" -v d="$depth" \
        -v s="$start" -v e="$end" 'BEGIN {
          printf "redis %s pipeline=%d: %s | wall=%.2fs server_cpu_s_per_mop=%.3f\n",
                 l ~ /SET/ ? "set" : "get", d, l, e - s, (a - b) / tk / (n / 1e6) }'
  done
done
