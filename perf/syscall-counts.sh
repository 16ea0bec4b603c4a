#!/usr/bin/env bash
# System calls and context switches of a node per request, under a ringstore-load workload.
#
#   perf/syscall-counts.sh [--shards N] [--seconds S] BIN_DIR -- LOAD_FLAGS...
#
# Starts BIN_DIR's ringstore-node (one shard unless --shards) on a fresh temporary directory on
# 127.0.0.1, drives it with BIN_DIR's ringstore-load (50 connections, one thread, 100,000 uniform
# keys of 16 bytes, 100-byte values, plus LOAD_FLAGS, e.g. `--mix read=100 --pipeline 1`), and
# once the load has run 4 seconds counts for S seconds (default 3), with `perf stat` on the
# kernel's syscall tracepoints, the node's `sendto`, `recvfrom`, `io_uring_enter`, `epoll_wait`
# and `epoll_pwait2` calls (the shard's epoll instance: glommio polls it once per loop turn and
# sleeps in it with `epoll_pwait2`; node/src/readiness.rs) and its context switches, divided by the requests it served meanwhile (the shards' ops_get +
# ops_put from BIN_DIR's ringstore-cli, `STATS;`). Prints one line.
#
# Counts move less with the shared host's speed than times do (perf/host-check.sh): a change
# that removes a system call per request shows here in one run where its CPU saving may not
# show in nine rounds of perf/node-ab.sh. They still depend on timing (how many completions a
# loop turn finds), so compare builds in alternating runs.
set -euo pipefail

shards=1
seconds=3
while [[ $# -gt 0 && $1 == --* ]]; do
    case $1 in
        --shards) shards=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        *) echo "syscall-counts.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $# -ge 2 && $2 == -- ]] || { sed -n 2,17p "$0"; exit 2; }
bin=$1
shift 2

cd "$(dirname "$0")/.."
die() { echo "syscall-counts.sh: $*" >&2; exit 1; }
source perf/node-ready.sh
command -v perf >/dev/null || die "perf is missing (Debian: linux-perf)"
for tool in ringstore-node ringstore-load ringstore-cli; do
    [[ -x $bin/$tool ]] || die "$bin has no $tool (it needs all three: node, load tool, cli)"
done

listen=127.0.0.1:7451
dir=$(mktemp -d /tmp/syscall-counts.XXXXXX)
pid=
trap 'if [[ -n $pid ]]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi; rm -rf "$dir"' EXIT

"$bin/ringstore-node" --data-dir "$dir/data" --listen "$listen" --log warn --shards "$shards" \
    >"$dir/node.log" 2>&1 &
pid=$!
node_ready_addr "$dir/node.log" "$pid" >/dev/null
"$bin/ringstore-load" --addr "$listen" --server-pid "$pid" --connections 50 --threads 1 \
    --distribution uniform --keys 100000 --key-size 16 --value-size 100 \
    --duration "$((seconds + 6))s" "$@" >"$dir/load.txt" 2>&1 &
load=$!
sleep 4

requests() {
    "$bin/ringstore-cli" --addr "$listen" -e "STATS;" \
        | awk '$1 == "ops_get" || $1 == "ops_put" { s += $2 } END { print s + 0 }'
}
before=$(requests)
perf stat -x, -e 'syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait2,context-switches' \
    -p "$pid" -- sleep "$seconds" 2>"$dir/stat.txt"
after=$(requests)
wait "$load" || true
n=$((after - before))
[[ $n -gt 0 ]] || { cat "$dir/load.txt" >&2; die "the node served no requests while counting"; }
awk -F, -v n="$n" '
    { name = $3; sub(/^syscalls:sys_enter_/, "", name); printf "%s %.3f  ", name, $1 / n }
    END { print "per request, over " n " requests" }' "$dir/stat.txt"
