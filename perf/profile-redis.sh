#!/usr/bin/env bash
# Profiles redis-server with perf under redis-benchmark: the Redis side of perf/profile.sh, so a
# node's profile can be read against Redis's under the same load shape (compare.sh's: 50
# clients, 100-byte values, 100,000 keys, uniform).
#
#   perf/profile-redis.sh [options]
#   perf/profile-redis.sh --name set-sync-p1 --persistence aof-always --test set --pipeline 1
#
# Starts redis-server on a fresh temporary directory (loopback, no RDB saves), preloads the
# 100,000 keys redis-benchmark -r 100000 draws from, starts
#   redis-benchmark -c 50 -d 100 -r 100000 -t TEST -P PIPELINE -n 1000000000
# and after DELAY seconds measures two windows of SECONDS each: the first without perf (the CPU
# per operation of redis-server and of redis-benchmark, from /proc/PID/stat, and the operations
# from INFO's total_commands_processed), the second under
#   perf record -e cpu-clock -F 999 --call-graph dwarf,16384 -p REDIS_PID -- sleep SECONDS
#
# Options:
#   --name NAME           names the output directory (default: redis)
#   --persistence MODE    none (appendonly no, the default) or aof-always (appendonly yes,
#                         appendfsync always: the match of the node's Sync writes)
#   --test set|get        redis-benchmark's -t (default set)
#   --pipeline P          redis-benchmark's -P (default 1)
#   --seconds S           length of each window (default 5)
#   --delay S             warm-up before the first window (default 3)
#   --out DIR             where to write (default perf/results/profile-redis-NAME-<UTC date-time>)
#
# Writes header.txt (versions, commands, both windows' figures) and the reports of
# perf/perf-reports.sh: top.txt, top-callers.txt, inclusive.txt, threads.txt, stacks.folded,
# flame.svg.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmdline=$(printf '%q ' "$0" "$@")

NAME=redis
PERSISTENCE=none
TEST=set
PIPELINE=1
SECS=5
DELAY=3
FREQ=999
OUT=

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "profile-redis.sh: $*" >&2; exit 2; }
# shellcheck source=perf/perf-reports.sh
. "$here/perf-reports.sh"
# shellcheck source=perf/redis-common.sh
. "$here/redis-common.sh"

while (($#)); do
    case $1 in
        --name) NAME=${2:?}; shift 2 ;;
        --persistence) PERSISTENCE=${2:?}; shift 2 ;;
        --test) TEST=${2:?}; shift 2 ;;
        --pipeline) PIPELINE=${2:?}; shift 2 ;;
        --seconds) SECS=${2:?}; shift 2 ;;
        --delay) DELAY=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
case $PERSISTENCE in none|aof-always) ;; *) die "--persistence: none or aof-always" ;; esac
case $TEST in set|get) ;; *) die "--test: set or get" ;; esac
[[ $PIPELINE =~ ^[1-9][0-9]*$ ]] || die "--pipeline: a positive whole number"
[[ $SECS =~ ^[1-9][0-9]*$ ]] || die "--seconds: a positive whole number"
[[ $DELAY =~ ^[0-9]+$ ]] || die "--delay: a whole number of seconds"

perf_tools
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "installing redis-server and redis-tools (apt-get)" >&2
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-tools
fi

REDIS_PID=
BENCH_PID=
PERF_PID=
profile_workspace "profile-redis-$NAME" PERF_PID BENCH_PID REDIS_PID

# --- Redis, preloaded -------------------------------------------------------------------------
port=$(free_port)
redis_cmd=(redis-server --port "$port" --bind 127.0.0.1 --dir "$work" --save '' --daemonize no
           --logfile '')
case $PERSISTENCE in
    none) redis_cmd+=(--appendonly no) ;;
    aof-always) redis_cmd+=(--appendonly yes --appendfsync always) ;;
esac
"${redis_cmd[@]}" >"$OUT/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 200); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    kill -0 "$REDIS_PID" 2>/dev/null || die "redis-server exited; see $OUT/redis.log"
    sleep 0.05
done
write_redis_preload "$work/preload.resp"
redis-cli -p "$port" --pipe <"$work/preload.resp" >/dev/null

# --- the load, one window without perf, one with ----------------------------------------------
bench_cmd=(redis-benchmark -p "$port" -c 50 -d 100 -r 100000 -t "$TEST" -P "$PIPELINE"
           -n 1000000000 -q)
"${bench_cmd[@]}" >"$work/bench.out" 2>&1 &
BENCH_PID=$!
sleep "$DELAY"

# sleeps PID: voluntary context switches of every thread of PID so far (times it went to sleep).
sleeps() {
    cat /proc/"$1"/task/*/status 2>/dev/null \
        | awk '$1 == "voluntary_ctxt_switches:" { n += $2 } END { print n + 0 }'
}
commands() { redis-cli -p "$port" info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'; }
# window COMMAND...: runs COMMAND and prints the operations per second, the CPU per operation
# of redis-server and redis-benchmark, and redis-server's sleeps per operation.
window() {
    local s0 b0 v0 c0 t0 s1 b1 v1 c1 t1
    s0=$(cpu_ticks "$REDIS_PID"); b0=$(cpu_ticks "$BENCH_PID"); v0=$(sleeps "$REDIS_PID")
    c0=$(commands); t0=$(date +%s.%N)
    "$@"
    s1=$(cpu_ticks "$REDIS_PID"); b1=$(cpu_ticks "$BENCH_PID"); v1=$(sleeps "$REDIS_PID")
    c1=$(commands); t1=$(date +%s.%N)
    awk -v s="$((s1 - s0))" -v b="$((b1 - b0))" -v v="$((v1 - v0))" -v c="$((c1 - c0 - 1))" \
        -v t0="$t0" -v t1="$t1" -v hz="$TICKS" 'BEGIN {
            printf "%.0f ops/s  redis-server %.3f us/op  redis-benchmark %.3f us/op  ", c / (t1 - t0),
                   s / hz * 1e6 / c, b / hz * 1e6 / c
            printf "redis-server voluntary context switches %.3f/op  (%d ops in %.2f s)\n", v / c, c, t1 - t0 }'
}
plain=$(window sleep "$SECS")
perf_cmd=(perf record -e cpu-clock -F "$FREQ" -g --call-graph dwarf,16384 -p "$REDIS_PID"
          -o "$work/perf.data" -- sleep "$SECS")
perf_start=$(date -u '+%H:%M:%S')
record() { "${perf_cmd[@]}" >"$OUT/perf-record.txt" 2>&1; }
profiled=$(window record)
kill -0 "$BENCH_PID" 2>/dev/null || die "redis-benchmark ended early: $(tail -c 400 "$work/bench.out")"

perf_reports "$work/perf.data" "$OUT" "$FREQ" "$SECS" "redis-server: $NAME ($stamp)"

{
    echo "# perf/profile-redis.sh"
    echo "command: $cmdline"
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC') (perf started $perf_start UTC)"
    echo "redis: $(redis-server --version)"
    echo "kernel: $(uname -srvm)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
    echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "server: ${redis_cmd[*]}"
    echo "load: ${bench_cmd[*]} (after a preload of 100,000 keys by redis-cli --pipe)"
    echo "perf: ${perf_cmd[*]}"
    echo "perf record: $(grep -o 'Captured and wrote .*)' "$OUT/perf-record.txt" || true)"
    echo "window without perf: $plain"
    echo "window under perf:   $profiled"
} >"$OUT/header.txt"

echo
cat "$OUT/header.txt"
perf_summary "$OUT"
