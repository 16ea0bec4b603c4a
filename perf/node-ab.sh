#!/usr/bin/env bash
# Interleaved A/B of ringstore builds on one ringstore-load workload, no Redis.
#
#   perf/node-ab.sh [--shards N] [--seconds S] [--host-check] ROUNDS BIN_DIR... -- LOAD_FLAGS...
#
# Each round runs every BIN_DIR (a directory holding ringstore-node and ringstore-load) once, in
# the order given: a fresh node on a fresh temporary directory on 127.0.0.1, driven by that
# directory's ringstore-load with 50 connections, one thread, 100,000 uniform keys of 16 bytes,
# 100-byte values, for S measured seconds (default 6) plus LOAD_FLAGS (e.g. `--mix update=100
# --durability no-sync --pipeline 32`). Prints every run's ops/s and server CPU us per op
# (ringstore-load's --server-pid figure, the measured interval only), then per build the medians
# and, for every build after the first, the median of its per-round ratios to the first build,
# the range of those ratios and the number of rounds in which it cost less CPU per op.
# The machine must be quiet: see perf/README.md. With --host-check, each round starts with a line
# of perf/host-check.sh (the guest's CPU speed and disk round trip at that moment), so rounds
# measured in a slow phase of a shared host show as such.
set -euo pipefail

shards=1
seconds=6
host_check=0
while [[ $# -gt 0 && $1 == --* ]]; do
    case $1 in
        --shards) shards=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --host-check) host_check=1; shift ;;
        *) echo "node-ab.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $# -ge 3 ]] || { sed -n 2,16p "$0"; exit 2; }
rounds=$1; shift
bins=()
while [[ $# -gt 0 && $1 != -- ]]; do bins+=("$1"); shift; done
[[ ${1:-} == -- ]] || { echo "node-ab.sh: LOAD_FLAGS must follow --" >&2; exit 2; }
shift

cd "$(dirname "$0")/.."
die() { echo "node-ab.sh: $*" >&2; exit 1; }
# shellcheck source=perf/node-ready.sh
source perf/node-ready.sh
listen=127.0.0.1:7431
results=$(mktemp)
trap 'rm -f "$results"' EXIT

run_one() { # BIN_DIR -> "ops_per_s cpu_us_per_op"
    local bin=$1 dir pid
    shift
    dir=$(mktemp -d /tmp/node-ab.XXXXXX)
    "$bin/ringstore-node" --data-dir "$dir/data" --listen "$listen" --log warn \
        --shards "$shards" >"$dir/node.log" 2>&1 &
    pid=$!
    node_ready_addr "$dir/node.log" "$pid" >/dev/null
    "$bin/ringstore-load" --addr "$listen" --server-pid "$pid" --connections 50 --threads 1 \
        --distribution uniform --keys 100000 --key-size 16 --value-size 100 \
        --duration "${seconds}s" "$@" >"$dir/load.txt" 2>&1 || true
    kill "$pid"
    wait "$pid" || true
    # "all" row: ops/s is the 5th column; "server CPU s per 1M ops" is us per op.
    awk '$1 == "all" { ops = $5 }
         match($0, /server CPU s per 1M ops [0-9.]+/) { n = split(substr($0, RSTART, RLENGTH), f, " "); cpu = f[n] }
         END { if (ops == "" || cpu == "") exit 1; print ops, cpu }' "$dir/load.txt" \
        || { echo "node-ab.sh: no figures from $bin; its output:" >&2; cat "$dir/load.txt" "$dir/node.log" >&2; exit 1; }
    rm -rf "$dir"
}

for r in $(seq "$rounds"); do
    if [[ $host_check == 1 ]]; then
        perf/host-check.sh
    fi
    for i in "${!bins[@]}"; do
        read -r ops cpu < <(run_one "${bins[$i]}" "$@")
        printf 'round %d  %-30s %10s ops/s  %7s us/op\n' "$r" "${bins[$i]}" "$ops" "$cpu"
        echo "$r $i $ops $cpu" >>"$results"
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "medians over $rounds rounds:"
for i in "${!bins[@]}"; do
    ops=$(awk -v i="$i" '$2 == i { print $3 }' "$results" | median)
    cpu=$(awk -v i="$i" '$2 == i { print $4 }' "$results" | median)
    line=$(printf '  %-30s %10s ops/s  %7s us/op' "${bins[$i]}" "$ops" "$cpu")
    if [[ $i -gt 0 ]]; then
        tput=$(awk -v i="$i" '$2 == 0 { a[$1] = $3 } $2 == i { b[$1] = $3 } END { for (r in b) printf "%.3f\n", b[r] / a[r] }' "$results" | median)
        cost=$(awk -v i="$i" '$2 == 0 { a[$1] = $4 } $2 == i { b[$1] = $4 } END { for (r in b) printf "%.3f\n", b[r] / a[r] }' "$results" | median)
        line+="  vs first: throughput ${tput}x, CPU per op ${cost}x"
        # The spread behind those medians: the per-round ratios' range, and in how many rounds
        # this build was the cheaper one (a change that wins 3 of 7 rounds has shown nothing).
        spread=$(awk -v i="$i" '$2 == 0 { a[$1] = $3; c[$1] = $4 } $2 == i { b[$1] = $3; d[$1] = $4 }
            END { tmin = cmin = 1e9; tmax = cmax = 0
                  for (r in b) { t = b[r] / a[r]; k = d[r] / c[r]; n++
                      if (t < tmin) tmin = t; if (t > tmax) tmax = t
                      if (k < cmin) cmin = k; if (k > cmax) cmax = k
                      if (k < 1) cheaper++ }
                  printf "per round: throughput %.3f-%.3fx, CPU per op %.3f-%.3fx, cheaper in %d of %d", tmin, tmax, cmin, cmax, cheaper, n }' "$results")
        line+=$'\n'"    $spread"
    fi
    echo "$line"
done
