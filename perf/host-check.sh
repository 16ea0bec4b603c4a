#!/usr/bin/env bash
# How fast this host is right now, in one line, so a benchmark run can say which phase of a
# shared host it was measured in.
#
#   perf/host-check.sh [DIR]
#
# The development machines are guests on shared hosts: within one session the same build's
# Sync puts at pipeline 1 ran at 100,066 puts/s at 19:58 UTC and 42,002 at 20:40 (docs/BENCHMARKS.md,
# twenty-seventh session), with nothing else running in the guest. Ratios measured in one
# interleaved run still compare builds; absolute figures and runs made an hour apart do not.
# This prints three readings, each taken in a few seconds:
#   cpu_ms       one thread's time for a fixed Python loop (CPU_LOOP_N iterations): the CPU's
#                speed as this guest gets it
#   dsync_p50_us, dsync_p99_us, dsync_iops
#                4 KiB O_DIRECT + O_DSYNC writes at queue depth 1 over a preallocated 64 MiB file
#                in DIR (default: a temporary directory under /tmp), for DSYNC_SECONDS seconds
#                with fio: the device round trip a Sync put's flush waits for
#   steal_pct    the share of CPU time the hypervisor reported as stolen during those readings
#                (/proc/stat; some hypervisors never report any)
# fio comes from Debian (installed with apt-get when missing, as compare.sh installs Redis).
set -euo pipefail

CPU_LOOP_N=${CPU_LOOP_N:-3000000}
DSYNC_SECONDS=${DSYNC_SECONDS:-3}

die() { echo "host-check.sh: $*" >&2; exit 1; }

if ! command -v fio >/dev/null; then
    echo "host-check.sh: installing fio (Debian)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio; } >/dev/null \
        || die "fio is missing and apt-get could not install it"
fi

parent=${1:-/tmp}
dir=$(mktemp -d "$parent/host-check.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# steal and total jiffies of all CPUs (the "cpu" line: user nice system idle iowait irq softirq steal)
cpu_jiffies() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t }' /proc/stat; }
read -r steal0 total0 < <(cpu_jiffies)

cpu_ms=$(python3 - "$CPU_LOOP_N" <<'PY'
import sys, time
n = int(sys.argv[1])
t = time.perf_counter()
s = 0
for i in range(n):
    s += i * i
print(f"{(time.perf_counter() - t) * 1000:.1f}")
PY
)

fio --name=dsync --filename="$dir/f" --size=64M --rw=write --bs=4k --direct=1 --sync=dsync \
    --ioengine=io_uring --iodepth=1 --runtime="$DSYNC_SECONDS" --time_based \
    --output-format=json >"$dir/fio.json" 2>"$dir/fio.err" \
    || { cat "$dir/fio.err" >&2; die "fio failed"; }
read -r p50 p99 iops < <(python3 - "$dir/fio.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["jobs"][0]["write"]
pct = w["clat_ns"]["percentile"]
print(f'{pct["50.000000"] / 1000:.0f} {pct["99.000000"] / 1000:.0f} {w["iops"]:.0f}')
PY
)

read -r steal1 total1 < <(cpu_jiffies)
steal_pct=$(awk -v s="$((steal1 - steal0))" -v t="$((total1 - total0))" \
    'BEGIN { printf "%.1f", (t > 0) ? 100 * s / t : 0 }')

echo "host-check $(date -u +%H:%M:%S) UTC: cpu_ms $cpu_ms dsync_p50_us $p50 dsync_p99_us $p99" \
    "dsync_iops $iops steal_pct $steal_pct"
