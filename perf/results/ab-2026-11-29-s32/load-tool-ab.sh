#!/bin/bash
# usage: loadab.sh ROUNDS SHARDS -- loadflags ; alternates s32head and s32load, prints ops/s, server us/op, load tool us/op
rounds=$1; shards=$2; shift 3
for r in $(seq 1 $rounds); do
  for B in /work/bins/s32head /work/bins/s32load; do
    d=$(mktemp -d /tmp/loadab.XXXXXX)
    $B/ringstore-node --data-dir $d/data --listen 127.0.0.1:7453 --log warn --shards $shards > $d/node.log 2>&1 &
    np=$!
    for i in $(seq 1 100); do grep -q "ringstore-node ready" $d/node.log 2>/dev/null && break; sleep 0.05; done
    $B/ringstore-load --addr 127.0.0.1:7453 --server-pid $np --connections 50 --threads 1 --distribution uniform --keys 100000 --key-size 16 --value-size 100 --duration 4s "$@" > $d/load.txt 2>&1
    kill $np; wait $np 2>/dev/null
    ops=$(awk '$1=="all" {print $5}' $d/load.txt)
    srv=$(grep -o 'server CPU s per 1M ops [0-9.]*' $d/load.txt | awk '{print $NF}')
    cli=$(grep -o 'load tool CPU s per 1M ops [0-9.]*' $d/load.txt | awk '{print $NF}')
    printf "round %d %-22s %8s ops/s server %7s us/op load tool %7s us/op\n" $r $B "$ops" "$srv" "$cli"
    rm -rf $d
  done
done
