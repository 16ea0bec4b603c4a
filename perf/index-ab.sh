#!/usr/bin/env bash
# Interleaved A/B of index layouts with the index benchmark (storage/benches/index.rs).
#
#   perf/index-ab.sh ALTERNATIONS KEYS BENCH_BINARY...
#
# Each BENCH_BINARY is a build of `cargo bench -p ringstore-storage --bench index --no-run` (the
# executable it names under target/release/deps/, copied away per variant). The binaries run one
# after another, ALTERNATIONS times, each with two rounds of 500,000 overwrites and gets on KEYS
# keys; the script prints every round and, per binary, the median and minimum ns/op over all its
# rounds. On a shared host the same binary varies by up to 2x from minute to minute, so only
# medians of interleaved rounds say anything. INDEX_AB_ARGS adds arguments to every run, for
# example INDEX_AB_ARGS="--key-prefix key:{06S}: --key-size 22 --other-table-keys 1".
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
alternations=$1 keys=$2
shift 2
out=$(mktemp)
for _ in $(seq "$alternations"); do
    for bin in "$@"; do
        RUST_BACKTRACE=0 "$bin" --keys "$keys" --ops 500000 --rounds 2 ${INDEX_AB_ARGS:-} | grep '^round' |
            sed "s|^|$(basename "$bin") |" | tee -a "$out"
    done
done
python3 - "$out" "$@" <<'PY'
import re, statistics, sys, os
lines = open(sys.argv[1]).read().splitlines()
for bin in sys.argv[2:]:
    name = os.path.basename(bin)
    rows = [l for l in lines if l.startswith(name + " ")]
    up = [float(re.search(r"upsert ([\d.]+)", l).group(1)) for l in rows]
    get = [float(re.search(r"get ([\d.]+)", l).group(1)) for l in rows]
    print(f"{name}: {len(rows)} rounds, upsert median {statistics.median(up):.1f} ns/op "
          f"(min {min(up):.1f}), get median {statistics.median(get):.1f} ns/op (min {min(get):.1f})")
PY
rm -f "$out"
