#!/usr/bin/env bash
# The load generator's own benchmark set, as docs/BENCHMARKS.md quotes it: YCSB A and C, the
# key-design scenarios, and a key-size sweep, each run by ringstore-load against a node it starts
# itself (2 shards on this machine's disk). Every run writes its JSON, .hgrm/.hlog files and charts.
#
# Usage: perf/loadgen-suite.sh OUT_DIR [rounds]   (needs: cargo build --release --bins)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: perf/loadgen-suite.sh OUT_DIR [rounds]}
ROUNDS=${2:-3}
LOAD=target/release/ringstore-load
mkdir -p "$OUT"

for round in $(seq "$ROUNDS"); do
  for w in a c; do
    cmd=("$LOAD" --workload "$w" --duration 20s --quiet --json "$OUT/ycsb-$w-$round.json"
         --out-dir "$OUT/ycsb-$w-$round")
    echo "\$ ${cmd[*]}" | tee "$OUT/ycsb-$w-$round.txt"
    "${cmd[@]}" | tee -a "$OUT/ycsb-$w-$round.txt"
  done
  cmd=("$LOAD" --scenario all --duration 5s --durability no-sync --quiet
       --json "$OUT/scenarios-$round.json" --out-dir "$OUT/scenarios-$round")
  echo "\$ ${cmd[*]}" | tee "$OUT/scenarios-$round.txt"
  "${cmd[@]}" | tee -a "$OUT/scenarios-$round.txt"
  cmd=("$LOAD" --sweep key-size=16,64,256,1024 --workload c --keys 200000 --duration 10s --quiet
       --node-arg=--cache-capacity-bytes=8388608
       --json "$OUT/sweep-$round.json" --out-dir "$OUT/sweep-$round")
  echo "\$ ${cmd[*]}" | tee "$OUT/sweep-$round.txt"
  "${cmd[@]}" | tee -a "$OUT/sweep-$round.txt"
done
