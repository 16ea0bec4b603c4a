#!/usr/bin/env bash
# Profiles a ringstore node with perf while ringstore-load drives it with a chosen workload.
#
#   perf/profile.sh [options] -- RINGSTORE-LOAD-ARGS...
#   perf/profile.sh --name get-p32 -- --mix read=100 --pipeline 32 --connections 50 --threads 1 \
#       --distribution uniform
#
# Starts a node on a temporary directory (or attaches to a running one with --pid and --addr),
# runs ringstore-load against it with the arguments after `--` (the script adds --addr,
# --server-pid and --json, and --duration when neither --duration nor --ops is given), and
# once the load tool's measured phase has begun (its first per-second line: the load phase and
# the warm-up are over) records the node with
#   perf record -e cpu-clock -F 999 --call-graph dwarf,16384 -p NODE_PID -- sleep SECONDS
# The development machines have no hardware counters, hence the software cpu-clock event; Rust
# release code and its standard library have no frame pointers, hence DWARF call graphs.
#
# Options (environment variables in brackets):
#   --name NAME         names the output directory (default: run)
#   --bin-dir DIR       use ringstore-node and ringstore-load from DIR [RINGSTORE_BIN_DIR];
#                       default: cargo build --profile profiling --bins here, use target/profiling
#   --shards N|default  shards of the node it starts (default 1; `default` = one per core)
#   --node-arg ARG      one more flag for the node it starts (repeatable)
#   --pid PID --addr ADDR   profile this running node instead (it is left running)
#   --seconds S         length of the perf recording (default 5)
#   --delay S           seconds into the measured phase before perf starts (default 1, the
#                       first per-second line; more waits longer)
#   --freq F            samples per second per CPU (default 999)
#   --call-graph MODE   perf's --call-graph (default dwarf,16384; fp gives broken stacks here)
#   --out DIR           where to write (default perf/results/profile-NAME-<UTC date-time>)
#
# Writes into the output directory (perf.data itself stays in a temporary directory and is
# deleted): header.txt, top.txt, top-callers.txt, inclusive.txt, threads.txt, stacks.folded,
# flame.svg, load.txt, load.json, node.log, perf-record.txt. perf/README.md explains them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline=$(printf '%q ' "$0" "$@")

NAME=run
BIN_DIR=${RINGSTORE_BIN_DIR:-}
SHARDS=1
NODE_ARGS=()
PID=
ADDR=
PERF_SECS=5
DELAY=1
FREQ=999
CALL_GRAPH=dwarf,16384
OUT=

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "profile.sh: $*" >&2; exit 2; }
# shellcheck source=perf/node-ready.sh
. "$here/node-ready.sh"
# shellcheck source=perf/perf-reports.sh
. "$here/perf-reports.sh"

while (($#)); do
    case $1 in
        --name) NAME=${2:?}; shift 2 ;;
        --bin-dir) BIN_DIR=${2:?}; shift 2 ;;
        --shards) SHARDS=${2:?}; shift 2 ;;
        --node-arg) NODE_ARGS+=("${2:?}"); shift 2 ;;
        --node-arg=*) NODE_ARGS+=("${1#--node-arg=}"); shift ;;
        --pid) PID=${2:?}; shift 2 ;;
        --addr) ADDR=${2:?}; shift 2 ;;
        --seconds) PERF_SECS=${2:?}; shift 2 ;;
        --delay) DELAY=${2:?}; shift 2 ;;
        --freq) FREQ=${2:?}; shift 2 ;;
        --call-graph) CALL_GRAPH=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        *) die "unknown argument $1 (ringstore-load's arguments go after --; see --help)" ;;
    esac
done
LOAD_ARGS=("$@")

[[ $NAME =~ ^[A-Za-z0-9._-]+$ ]] || die "--name: letters, digits, . _ - only"
[[ $SHARDS == default || $SHARDS =~ ^[1-9][0-9]*$ ]] || die "--shards: a number or 'default'"
[[ $PERF_SECS =~ ^[1-9][0-9]*$ ]] || die "--seconds: a positive whole number"
[[ $DELAY =~ ^[1-9][0-9]*$ ]] || die "--delay: a whole number of seconds, at least 1"
[[ -z $PID && -z $ADDR || -n $PID && -n $ADDR ]] || die "--pid and --addr go together"
[[ -z $PID ]] || [[ -d /proc/$PID ]] || die "no process $PID"

# The load tool's own flags that this script sets or that would hide the progress lines.
has_duration=0
for a in "${LOAD_ARGS[@]}"; do
    case $a in
        --addr|--addr=*|--server-pid|--server-pid=*|--json|--json=*|--shards|--shards=*)
            die "leave $a out of ringstore-load's arguments; the script sets it" ;;
        --quiet) die "leave --quiet out: the script waits for the per-second lines" ;;
        --scenario*|--sweep*|--check-log*)
            die "$a starts its own nodes or runs no load; profile a plain run" ;;
        --duration|--duration=*|--ops|--ops=*) has_duration=1 ;;
    esac
done
((has_duration)) || LOAD_ARGS+=(--duration "$((DELAY + PERF_SECS + 2))s")

# --- tools and binaries -----------------------------------------------------------------------
perf_tools
if [[ -z $BIN_DIR ]]; then
    (cd "$root" && cargo build --profile profiling --bins)
    BIN_DIR=$root/target/profiling
fi
BIN_DIR=$(cd "$BIN_DIR" && pwd)
[[ -x $BIN_DIR/ringstore-load ]] || die "$BIN_DIR/ringstore-load missing"
[[ -n $PID ]] || [[ -x $BIN_DIR/ringstore-node ]] || die "$BIN_DIR/ringstore-node missing"

NODE_STARTED=
LOAD_PID=
PERF_PID=
profile_workspace "profile-$NAME" PERF_PID LOAD_PID NODE_STARTED

# --- the node ---------------------------------------------------------------------------------
if [[ -z $PID ]]; then
    node_cmd=("$BIN_DIR/ringstore-node" --data-dir "$work/data" --listen 127.0.0.1:0 --log warn)
    [[ $SHARDS == default ]] || node_cmd+=(--shards "$SHARDS")
    node_cmd+=("${NODE_ARGS[@]}")
    echo "\$ ${node_cmd[*]}" >"$OUT/node.log"
    "${node_cmd[@]}" >>"$OUT/node.log" 2>&1 &
    PID=$!
    NODE_STARTED=$PID
    ADDR=$(node_ready_addr "$OUT/node.log" "$PID")
else
    node_cmd=("(attached to running pid $PID: $(tr '\0' ' ' <"/proc/$PID/cmdline"))")
    echo "${node_cmd[*]}" >"$OUT/node.log"
fi
node_exe=$(readlink "/proc/$PID/exe")

# --- the load, and perf during its measured phase ---------------------------------------------
load_cmd=("$BIN_DIR/ringstore-load" --addr "$ADDR" --server-pid "$PID" "${LOAD_ARGS[@]}"
          --json "$OUT/load.json")
perf_cmd=(perf record -e cpu-clock -F "$FREQ" -g --call-graph "$CALL_GRAPH" -p "$PID"
          -o "$work/perf.data" -- sleep "$PERF_SECS")
echo "\$ ${load_cmd[*]}" >"$OUT/load.txt"
"${load_cmd[@]}" >>"$OUT/load.txt" 2>&1 &
LOAD_PID=$!

# The first per-second line, `[label]    1s ...`, means the measured phase has run for a second.
while ! grep -qE '^\[[^]]*\] +[0-9]+s ' "$OUT/load.txt"; do
    kill -0 "$LOAD_PID" 2>/dev/null \
        || die "ringstore-load ended before its measured phase; see $OUT/load.txt"
    sleep 0.1
done
((DELAY <= 1)) || sleep $((DELAY - 1))
echo "perf recording node pid $PID for $PERF_SECS s" >&2
perf_start=$(date -u '+%H:%M:%S')
"${perf_cmd[@]}" >"$OUT/perf-record.txt" 2>&1 &
PERF_PID=$!
wait "$PERF_PID" || die "perf record failed; see $OUT/perf-record.txt"
PERF_PID=
# Did the measured phase outlast the recording? (the load tool prints its table when it ends)
if kill -0 "$LOAD_PID" 2>/dev/null; then
    window="inside the measured phase"
else
    window="WARNING: ringstore-load had finished before perf stopped (give a longer --duration)"
    echo "profile.sh: $window" >&2
fi
load_rc=0
wait "$LOAD_PID" || load_rc=$?
LOAD_PID=
if [[ -n $NODE_STARTED ]]; then
    kill -TERM "$NODE_STARTED"
    wait "$NODE_STARTED" 2>/dev/null || true
    NODE_STARTED=
fi
((load_rc == 0)) || echo "profile.sh: ringstore-load exited $load_rc; see $OUT/load.txt" >&2

# --- reports ----------------------------------------------------------------------------------
perf_reports "$work/perf.data" "$OUT" "$FREQ" "$PERF_SECS" "ringstore-node: $NAME ($stamp)"

{
    echo "# perf/profile.sh"
    echo "command: $cmdline"
    echo "cwd: $PWD"
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC') (perf started $perf_start UTC)"
    rev=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
    [[ -z $(git --no-optional-locks -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]] || rev+="+dirty"
    echo "script checkout: $rev"
    brev=$(git -C "$BIN_DIR" rev-parse HEAD 2>/dev/null || echo "not in a git checkout")
    [[ -z $(git --no-optional-locks -C "$BIN_DIR" status --porcelain --untracked-files=no 2>/dev/null) ]] \
        || brev+="+dirty"
    echo "binaries: $BIN_DIR (checkout $brev)"
    echo "node executable: $node_exe ($(stat -c '%y' "$node_exe"))"
    echo "kernel: $(uname -srvm)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
    echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "node: ${node_cmd[*]}"
    echo "load: ${load_cmd[*]}"
    echo "perf: ${perf_cmd[*]}"
    echo "perf window: $window"
    echo "perf record: $(grep -o 'Captured and wrote .*)' "$OUT/perf-record.txt" || true)"
    echo "reports: perf report --stdio --no-children --sort dso,sym -g none --percent-limit 0.5 (top.txt);"
    echo "  the same with call chains, --percent-limit 2 (top-callers.txt);"
    echo "  --children --sort sym -g none --percent-limit 2 (inclusive.txt);"
    echo "  --sort comm and --sort comm,dso (threads.txt);"
    echo "  perf script | inferno-collapse-perf (stacks.folded) | inferno-flamegraph (flame.svg)"
    echo "ringstore-load result:"
    grep -vE '^\[|^load:' "$OUT/load.txt" | sed 's/^/  /'
} >"$OUT/header.txt"

perf_summary "$OUT"
