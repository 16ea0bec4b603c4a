#!/usr/bin/env bash
# Steady-state cost of redis-benchmark --cluster SET -P 32 on a two-shard node, over a longer
# window than perf/compare.sh's: compaction runs in bursts of seconds, so a short run may or may
# not hold one. For each build (interleaved, ROUNDS rounds) it starts a node, preloads and
# warms 1,000,000 keys per shard hash tag (as compare.sh's rbc loads do), runs the benchmark for
# DUR seconds and samples the node's metrics every STEP seconds. It prints per round the SET
# rate, the node's CPU per SET, and compaction's moved records per SET, from the first sample
# after the warm-up (WARM seconds) to the end.
#
#   perf/steady-set.sh ROUNDS BIN_DIR...      (each BIN_DIR holds a ringstore-node)
#   DUR=80 STEP=20 WARM=20 OUT=dir perf/steady-set.sh 2 /work/bins/a /work/bins/b
set -eu
ROUNDS=$1; shift
DUR=${DUR:-80}; STEP=${STEP:-20}; WARM=${WARM:-20}
OUT=${OUT:-$(mktemp -d)}
WORK=${WORK:-/tmp/steady-set-keys}
mkdir -p "$OUT" "$WORK"
command -v redis-benchmark >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-tools >/dev/null; }
hz=$(getconf CLK_TCK)

metric() { curl -s 127.0.0.1:7499/metrics | awk -v k="$1" '$1 ~ "^ringstore_"k"\\{" {s+=$2} END {printf "%d", s}'; }

run_one() { # BIN_DIR -> sample table on stdout
  local bin=$1 dir np rb t
  dir=$(mktemp -d)
  "$bin/ringstore-node" --data-dir "$dir" --listen 127.0.0.1:7441 --resp 127.0.0.1:7460 \
    --cache-capacity-bytes 402653184 --metrics 127.0.0.1:7499 --log warn >"$dir.log" 2>&1 &
  np=$!
  for _ in $(seq 100); do redis-cli -p 7460 ping >/dev/null 2>&1 && break; sleep 0.1; done
  # The shards' hash tags, learnt from a short run, as compare.sh does.
  redis-benchmark --cluster -h 127.0.0.1 -p 7460 -c 50 -n 5000 -r 1 -t set -q >/dev/null 2>&1
  local tags
  tags=$(redis-cli -p 7460 --scan --pattern 'key:{*' | sed -n 's/^key:{\([^}]*\)}:.*/\1/p' | sort -u)
  redis-cli -p 7460 flushall >/dev/null
  for tag in $tags; do
    [[ -f $WORK/preload-$tag.resp ]] || python3 - "$WORK" "$tag" <<'PYEOF'
import sys
work, tag = sys.argv[1], sys.argv[2].encode()
def cmd(*words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
keys = [b"key:{%s}:%012d" % (tag, i) for i in range(1000000)]
with open(f"{work}/preload-{tag.decode()}.resp", "wb") as f:
    f.writelines(cmd(b"SET", k, b"x" * 100) for k in keys)
with open(f"{work}/warm-{tag.decode()}.resp", "wb") as f:
    f.writelines(cmd(b"GET", k) for k in keys)
PYEOF
    redis-cli -p 7460 --pipe <"$WORK/preload-$tag.resp" >/dev/null
    redis-cli -p 7460 --pipe <"$WORK/warm-$tag.resp" >/dev/null
  done
  redis-benchmark --cluster -h 127.0.0.1 -p 7460 -c 50 -n 1000000000 -d 100 -r 1000000 -t set -P 32 -q >/dev/null 2>&1 &
  rb=$!
  echo "t resp_commands log_records compactions checkpoints disk_MB live_MB cpu_s"
  for t in $(seq 0 "$STEP" "$DUR"); do
    echo "$t $(metric resp_commands) $(metric group_commit_records) $(metric compactions)" \
      "$(metric checkpoints) $(( $(metric disk_bytes) / 1048576 )) $(( $(metric live_bytes) / 1048576 ))" \
      "$(awk -v hz="$hz" '{printf "%.2f", ($14+$15)/hz}' /proc/$np/stat)"
    [[ $t -lt $DUR ]] && sleep "$STEP"
  done
  kill $rb 2>/dev/null || true; wait $rb 2>/dev/null || true
  kill $np; wait $np 2>/dev/null || true
  rm -rf "$dir" "$dir.log"
}

for r in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    name=$(basename "$bin")
    run_one "$bin" >"$OUT/$name-$r.txt"
    # Every logged record beyond the SETs is a record compaction moved.
    awk -v b="$name" -v r="$r" -v w="$WARM" 'NR > 1 && $1 >= w && !s {c0=$2; l0=$3; k0=$4; u0=$8; t0=$1; s=1}
      END {d=$2-c0; printf "%s round %d: %.0f SET/s, %.3f us CPU per SET, %.3f records moved per SET, %d segments compacted, disk %d MB for %d MB live\n",
        b, r, d/($1-t0), ($8-u0)/d*1e6, ($3-l0-d)/d, $4-k0, $6, $7}' "$OUT/$name-$r.txt"
  done
done
echo "raw samples in $OUT"
