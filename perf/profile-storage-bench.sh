#!/usr/bin/env bash
# Profiles one phase of the storage benchmark (storage/benches/store.rs) with perf.
#
#   perf/profile-storage-bench.sh <phase> [more bench arguments]
#   phases: load get-hit put-nosync put-write-nosync put-sync get-miss scan recovery
#
# The benchmark always loads the keys first. perf starts with its events disabled (-D -1) and the
# benchmark turns them on and off through a perf control FIFO (RINGSTORE_PERF_CTL) around the
# chosen phase's measured loop, so the profile shows that loop and not the load. The 2-vCPU
# development machines have no hardware counters, hence the software cpu-clock event; Rust release
# code has no frame pointers, hence DWARF call graphs at a lower sampling rate.
#
# Writes perf/perf-report-<phase>.txt (or $OUT): the flat profile, entries at 2% and above, and
# perf/perf-report-<phase>-callers.txt: the same entries with their call chains.
set -euo pipefail

phase=${1:?usage: $0 <phase> [bench arguments]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${OUT:-$here/perf-report-$phase.txt}
cd "$root"

if ! command -v perf >/dev/null; then
    apt-get update
    apt-get install -y linux-perf
fi

# Build with full debug info and find the benchmark executable from cargo's own report.
bin=$(cargo build --profile profiling -p ringstore-storage --benches --message-format=json \
    | grep -o '"executable":"[^"]*/store-[^"]*"' | tail -n 1 | cut -d'"' -f4)
if [[ -z "$bin" ]]; then
    echo "cannot find the store bench executable in cargo's output" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ringstore-perf.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkfifo "$work/ctl"

RINGSTORE_PERF_CTL="$work/ctl" perf record -e cpu-clock -F 999 -g --call-graph dwarf,16384 \
    -D -1 --control "fifo:$work/ctl" -o "$work/perf.data" -- "$bin" --phase "$phase" "$@"

# The flat profile (self time per function) first, then the same entries with their callers.
{
    echo "# perf/profile-storage-bench.sh $phase $*"
    echo "# $(uname -r), $(nproc) CPUs, loadavg $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
    perf report -i "$work/perf.data" --no-children --stdio --percent-limit 2 -g none 2>/dev/null \
        | grep -v '^$' | head -80
} >"$out"
perf report -i "$work/perf.data" --no-children --stdio --percent-limit 2 2>/dev/null \
    | head -1000 >"${out%.txt}-callers.txt"
echo "profile written to $out and ${out%.txt}-callers.txt"
