#!/bin/bash
# CPU per GET at pipeline 1 against the number of clients: Redis (server cpu0, redis-benchmark cpu1)
# and a one-shard ringstore node (shard on cpu0, ringstore-load cpu1).
set -u
B=/work/bins/s30a
source /work/main/perf/node-ready.sh
tick=$(getconf CLK_TCK)
cpu_s() { awk -v t=$tick '{print ($14+$15)/t}' /proc/$1/stat; }
for round in 1 2; do
 for c in 25 50; do
  redis-server --port 6391 --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /tmp/s30/r.log &
  RP=$!; sleep 0.3; taskset -pc 0 $RP >/dev/null
  python3 - <<'PY' | redis-cli -p 6391 --pipe >/dev/null
import sys
v=b"x"*100
out=sys.stdout.buffer
for i in range(100000):
    k=b"key:%012d"%i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$100\r\n%s\r\n"%(len(k),k,v))
PY
  taskset -c 1 redis-benchmark -p 6391 -c $c -r 100000 -P 1 -n 200000 -t get -q >/dev/null 2>&1
  n=800000; a=$(cpu_s $RP); t0=$(date +%s.%N)
  out=$(taskset -c 1 redis-benchmark -p 6391 -c $c -r 100000 -P 1 -n $n -t get -q 2>&1 | tr '\r' '\n' | tail -1)
  t1=$(date +%s.%N); b=$(cpu_s $RP)
  echo "round $round redis c=$c: $(echo $out | grep -o '[0-9.]* requests per second') cpu_us_per_op $(echo "($b-$a)*1000000/$n" | bc -l | cut -c1-6)"
  kill $RP; wait $RP 2>/dev/null
  rm -rf /tmp/s30/nd && mkdir /tmp/s30/nd
  $B/ringstore-node --data-dir /tmp/s30/nd --listen 127.0.0.1:0 --log warn --shards 1 > /tmp/s30/n1.log 2>&1 & NP=$!
  addr=$(node_ready_addr /tmp/s30/n1.log $NP)
  out=$(taskset -c 1 $B/ringstore-load --addr $addr --server-pid $NP --connections $c --threads 1 --distribution uniform --keys 100000 --key-size 16 --value-size 100 --pipeline 1 --mix read=100 --duration 8s --warmup 2s 2>&1 | grep -E "^ *all|server CPU" | tr '\n' ' ')
  echo "round $round ringstore c=$c: $(echo $out | awk '{print $5" ops/s"}') cpu_us_per_op $(echo $out | grep -o 'per 1M ops [0-9.]*' | head -1 | awk '{print $4}')"
  kill $NP; wait $NP 2>/dev/null
 done
done
