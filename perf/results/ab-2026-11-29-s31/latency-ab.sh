#!/usr/bin/env bash
# Latency beside throughput and CPU, builds alternating: the "all" row of ringstore-load
# (ops/s, p50, p90, p99, p999, max in ms) and the server CPU us per op.
#   latency-ab.sh ROUNDS SHARDS BIN_DIR... -- LOAD_FLAGS...
set -euo pipefail
rounds=$1 shards=$2; shift 2
bins=(); while [[ $1 != -- ]]; do bins+=("$1"); shift; done; shift
for r in $(seq "$rounds"); do
  for b in "${bins[@]}"; do
    d=$(mktemp -d /tmp/lat.XXXXXX)
    "$b/ringstore-node" --data-dir "$d/data" --listen 127.0.0.1:7431 --log warn --shards "$shards" >"$d/node.log" 2>&1 &
    pid=$!
    until grep -q "ringstore-node ready" "$d/node.log" 2>/dev/null; do sleep 0.1; done
    "$b/ringstore-load" --addr 127.0.0.1:7431 --server-pid "$pid" --connections 50 --threads 1 --distribution uniform \
      --keys 100000 --key-size 16 --value-size 100 --duration 3s "$@" >"$d/load.txt" 2>&1 || true
    kill "$pid"; wait "$pid" || true
    printf 'round %d %-22s %s  cpu %s\n' "$r" "$b" "$(awk '$1=="all"{print "ops/s",$5,"p50",$6,"p90",$7,"p99",$8,"p999",$9,"max",$10}' "$d/load.txt")" \
      "$(grep -o 'server CPU s per 1M ops [0-9.]*' "$d/load.txt" | awk '{print $NF}')"
    rm -rf "$d"
  done
done
