#!/usr/bin/env bash
# Crash loop: SIGKILL ringstore-node again and again under Sync writes, and check after every
# restart that no acknowledged write was lost (docs/RELIABILITY.md has the last result).
#
#   tests/crash_loop.sh [--kills N] [--shards N] [--keys N] [--out DIR]
#
# Each round: ringstore-load drives the node (YCSB A, Sync, --verify) and streams every
# acknowledged write to a log (--write-log); after a random 1-3 s the node gets SIGKILL (no
# drain, no checkpoint), the load tool fails, the node is started again on the same data
# directory, and `ringstore-load --check-log` reads back every key of that round's log. A round
# fails on any lost, stale or foreign key or any error reply. The summary line at the end gives
# kills, acknowledged writes logged, keys checked and the findings; the exit status is 1 if any
# round failed. Loopback only; builds what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

kills=50
shards=2
keys=20000
out=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --kills) kills=$2; shift 2 ;;
        --shards) shards=$2; shift 2 ;;
        --keys) keys=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

die() { echo "crash_loop: $*" >&2; exit 2; }
# shellcheck source=../perf/node-ready.sh
source perf/node-ready.sh

command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq; }
cargo build --release --bins --quiet
bin=target/release
work=$(mktemp -d)
out=${out:-$work}
mkdir -p "$out"
data=$work/data
node_pid=""
cleanup() { [[ -n $node_pid ]] && kill -9 "$node_pid" 2>/dev/null; rm -rf "$work/data"; }
trap cleanup EXIT

start_node() {
    local log=$1
    "$bin/ringstore-node" --data-dir "$data" --listen 127.0.0.1:0 --shards "$shards" \
        >"$log" 2>&1 &
    node_pid=$!
    node_addr=$(node_ready_addr "$log" "$node_pid")
}

total_logged=0 total_checked=0 total_ok=0 total_newer=0 total_bad=0 failed_rounds=0
started=$(date -u +%s)
start_node "$out/node-0.log"
for round in $(seq 1 "$kills"); do
    wlog=$out/writes-$round.log
    "$bin/ringstore-load" --addr "$node_addr" --workload a --verify --write-log "$wlog" \
        --keys "$keys" --duration 600s --warmup 0s --durability sync --connections 16 \
        --threads 1 --pipeline 4 --quiet >"$out/load-$round.out" 2>&1 &
    load_pid=$!
    # How long the node runs under load before the kill: 1-3 s, so kills land in the load
    # phase, the measured phase and around segment rolls.
    sleep "$(( (RANDOM % 3) + 1 )).$(( RANDOM % 10 ))"
    kill -9 "$node_pid"
    wait "$node_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
    start_node "$out/node-$round.log"
    check=$out/check-$round.json
    status=0
    "$bin/ringstore-load" --addr "$node_addr" --check-log "$wlog" --json "$check" \
        >"$out/check-$round.out" 2>&1 || status=$?
    logged=$(($(wc -l <"$wlog") - 1))
    read -r checked ok newer lost stale foreign errs < <(jq -r '.extra.verify |
        "\(.checked) \(.ok) \(.newer) \(.lost) \(.stale) \(.foreign) \(.errors | add // 0)"' \
        "$check" 2>/dev/null || echo "0 0 0 -1 -1 -1 -1")
    bad=$((lost + stale + foreign + errs))
    total_logged=$((total_logged + logged))
    total_checked=$((total_checked + checked))
    total_ok=$((total_ok + ok))
    total_newer=$((total_newer + newer))
    if [[ $status -ne 0 || $bad -ne 0 ]]; then
        failed_rounds=$((failed_rounds + 1))
        total_bad=$((total_bad + (bad > 0 ? bad : 0)))
        echo "round $round: FAILED (exit $status, lost $lost stale $stale foreign $foreign errors $errs); see $out"
    else
        echo "round $round: logged $logged acknowledged writes, checked $checked keys, ok $ok, newer $newer"
    fi
done
kill "$node_pid"
wait "$node_pid" 2>/dev/null || true
node_pid=""
elapsed=$(( $(date -u +%s) - started ))
echo "crash_loop: kills $kills, shards $shards, keys $keys, ${elapsed} s; acknowledged writes logged $total_logged, keys checked $total_checked (ok $total_ok, newer $total_newer), lost/stale/foreign/errors $total_bad, failed rounds $failed_rounds"
[[ $failed_rounds -eq 0 ]]
