#!/usr/bin/env bash
# Interrupts per second on each CPU while ringstore-load drives a fresh node: which interrupts a
# load causes (reschedule IPIs, function-call IPIs, disk and timer interrupts), next to the
# load's throughput and the node's CPU.
#
#   perf/interrupts.sh [--bin-dir DIR] [--shards N|default] [--seconds S] [--who] -- RINGSTORE-LOAD-ARGS...
#   perf/interrupts.sh --bin-dir /tmp/bin-new -- --mix update=100 --durability sync \
#       --pipeline 1 --connections 50 --threads 1 --distribution uniform
#
# Starts `ringstore-node --shards 1` on a temporary directory under /work (or $TMPDIR), runs
# ringstore-load with the arguments after `--` (the script adds --addr, --server-pid, --warmup 1s
# and --duration), reads /proc/interrupts and the shard threads' context switches
# (/proc/PID/task/*/status) twice, S seconds apart, 2 s into the measured phase, and prints every
# interrupt line that fired more than 100 times a second on some CPU, per CPU, and the shards'
# voluntary (it slept) and involuntary (it was preempted) context switches per second and per
# operation (at the run's ops/s).
#
# Options:
#   --bin-dir DIR   ringstore-node and ringstore-load from DIR (default target/release)
#   --shards N      the node's shard count (default 1; `default` = one per core)
#   --seconds S     the window between the two reads (default 2); the load runs S + 4 s
#   --who           also record which code sent the IPIs during one second
#                   (`perf record -e ipi:ipi_send_cpu -a -g`) and print the top senders
set -euo pipefail
cd "$(dirname "$0")/.."

BIN_DIR=target/release
SHARDS=1
SECONDS_WINDOW=2
WHO=0
while [ $# -gt 0 ]; do
    case "$1" in
        --bin-dir) BIN_DIR=${2:?}; shift 2 ;;
        --shards) SHARDS=${2:?}; shift 2 ;;
        --seconds) SECONDS_WINDOW=${2:?}; shift 2 ;;
        --who) WHO=1; shift ;;
        --) shift; break ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "give the ringstore-load arguments after --" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/work}/interrupts-XXXXXX")
node_pid=
cleanup() {
    [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

shard_args=()
[ "$SHARDS" = default ] || shard_args=(--shards "$SHARDS")
"$BIN_DIR/ringstore-node" --data-dir "$dir/data" --listen 127.0.0.1:0 "${shard_args[@]}" >"$dir/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 100); do grep -q "listen=" "$dir/node.log" && break; sleep 0.1; done
addr=$(grep -o "listen=[0-9.:]*" "$dir/node.log" | head -1 | cut -d= -f2)
[ -n "$addr" ] || { echo "the node did not start:" >&2; cat "$dir/node.log" >&2; exit 1; }

"$BIN_DIR/ringstore-load" --addr "$addr" --server-pid "$node_pid" --warmup 1s \
    --duration "$((SECONDS_WINDOW + 4))s" "$@" >"$dir/load.txt" 2>&1 &
load_pid=$!
# The load phase writes every key first; wait for the measured phase's first per-second line.
until grep -q "ops/s" "$dir/load.txt" 2>/dev/null; do
    kill -0 "$load_pid" 2>/dev/null || break
    sleep 0.2
done
sleep 1
if [ "$WHO" = 1 ]; then
    perf record -q -e ipi:ipi_send_cpu -a -g -o "$dir/ipi.data" -- sleep 1 2>/dev/null
fi
# switches KIND: the shard threads' KIND context switches so far (voluntary or nonvoluntary).
# Only the shards (glommio names them shard-N-ID): helper threads come and go between reads.
switches() {
    local t n=0
    for t in /proc/"$node_pid"/task/*; do
        [[ $(cat "$t/comm" 2>/dev/null) == shard-* ]] || continue
        n=$((n + $(awk -v k="$1_ctxt_switches:" '$1 == k { print $2 }' "$t/status" 2>/dev/null || echo 0)))
    done
    echo "$n"
}
cp /proc/interrupts "$dir/irq.before"
vol0=$(switches voluntary); invol0=$(switches nonvoluntary)
sleep "$SECONDS_WINDOW"
cp /proc/interrupts "$dir/irq.after"
vol1=$(switches voluntary); invol1=$(switches nonvoluntary)
wait "$load_pid"

echo "== ringstore-load $*"
grep -E "^ *(read|update|insert|scan|rmw) |shard CPU" "$dir/load.txt" | tail -2
ops=$(awk '$1 == "all" { print $5 }' "$dir/load.txt" | tail -1)
awk -v v="$((vol1 - vol0))" -v i="$((invol1 - invol0))" -v s="$SECONDS_WINDOW" -v ops="${ops:-0}" 'BEGIN {
    printf "  shard threads context switches: voluntary %d/s, involuntary %d/s", v / s, i / s
    if (ops > 0) printf "; per op %.3f, %.3f (at %d ops/s)", v / s / ops, i / s / ops, ops
    printf "\n" }'
awk -v s="$SECONDS_WINDOW" '
    NR == FNR { if (FNR > 1) { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) before[$1, i] = $i } ; next }
    FNR == 1 { ncpu = NF; next }
    {
        line = ""; busy = 0
        for (i = 2; i <= ncpu + 1; i++) {
            d = ($i - before[$1, i]) / s
            line = line sprintf(" cpu%d/s %8d", i - 2, d)
            if (d > 100) busy = 1
        }
        name = ""; for (j = ncpu + 2; j <= NF; j++) name = name " " $j
        if (busy) printf "  %-6s%s %s\n", $1, line, substr(name, 1, 40)
    }' "$dir/irq.before" "$dir/irq.after"
if [ "$WHO" = 1 ]; then
    echo "== IPI senders (perf record -e ipi:ipi_send_cpu -a -g, 1 s)"
    perf report -i "$dir/ipi.data" --stdio --no-children -G --percent-limit 2 2>/dev/null \
        | grep -v '^#' | grep -v '^$' | head -60
fi
