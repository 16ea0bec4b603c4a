#!/usr/bin/env bash
# ringstore against Redis 7 on loopback, in interleaved rounds, with every raw output kept.
#
#   perf/compare.sh [--bin-dir DIR] [--baseline-bin-dir DIR] [--shards N|default] [--rounds R]
#                   [--seconds S] [--warmup S] [--loads LIST] [--out DIR] [--baseline-own-load]
#                   [--bind-clients]
#
# Six loads, each with 50 clients on one client thread, 16-byte keys, 100-byte values, 100,000
# keys picked uniformly (all of them written before the measured phase):
#
#   load            Redis (redis-benchmark)                      ringstore (ringstore-load)
#   get-p32         -t get -P 32, no persistence                 --mix read=100 --pipeline 32
#   put-nosync-p32  -t set -P 32, no persistence                 --mix update=100 --durability no-sync --pipeline 32
#   get-p1          -t get -P 1, no persistence                  --mix read=100 --pipeline 1
#   put-nosync-p1   -t set -P 1, no persistence                  --mix update=100 --durability no-sync --pipeline 1
#   put-sync-p1     -t set -P 1, appendonly yes, appendfsync always   --mix update=100 --durability sync --pipeline 1
#   put-sync-p32    -t set -P 32, appendonly yes, appendfsync always  --mix update=100 --durability sync --pipeline 32
#
# Same-client loads: one client drives both servers, Redis and the node's RESP port
# (--resp, data in table resp_kv), with matched persistence (Redis without persistence and
# --resp-durability no-sync), and the node's record cache sized to hold every key
# (--cache-capacity-bytes 384 MiB a shard), as Redis holds every key in memory. Before each
# measured run both servers get the same two streams through `redis-cli --pipe`: a SET of every
# key, then a GET of every key (a SET of an uncached key does not cache it, so without
# the GET pass its first reads would come from the disk while Redis's come from memory):
#
#   load            client, both servers
#   rb-get-p32      redis-benchmark -c 50 -d 100 -r 1000000 -t get -P 32 (1,000,000 keys preloaded)
#   rb-set-p32      redis-benchmark -c 50 -d 100 -r 1000000 -t set -P 32
#   rb-get-p1       the same, -P 1
#   rb-set-p1       the same, -P 1
#   resp-ycsb-a     ringstore-load --protocol resp --workload a --pipeline 1 --no-load
#                   (100,000 keys preloaded, in ringstore-load's key format)
#   resp-ycsb-c     ringstore-load --protocol resp --workload c --pipeline 1
#
# Cluster loads, not in `same-client` (ask for them with --loads, or `same-client-cluster`):
# redis-benchmark as above against Redis, and `redis-benchmark --cluster` against the node's RESP
# port (docs/RESP.md, "Cluster mode"), which reads CLUSTER NODES and sends each key to the shard
# that owns it. In cluster mode redis-benchmark's keys carry a hash tag of its node's first slot
# (key:{TAG}:%012d), so each shard gets -r keys; the script learns the tags from a short run on
# the fresh node, then preloads and warms 1,000,000 keys per tag the same way:
#
#   rbc-get-p32     redis-benchmark -c 50 -d 100 -r 1000000 -t get -P 32 (--cluster for the node)
#   rbc-set-p32     the same, -t set
#   rbc-get-p1      the same as rbc-get-p32, -P 1
#   rbc-set-p1      the same as rbc-set-p32, -P 1
#
# Durable same-client loads, not in `same-client` (ask for them with --loads, or
# `same-client-durable`): Redis with appendonly yes and appendfsync always, the node with
# --resp-durability sync (each SET's reply after the fdatasync that covers it):
#
#   rb-set-sync-p1  redis-benchmark -c 50 -d 100 -r 1000000 -t set -P 1
#   rb-set-sync-p32 the same, -P 32
#
# Round 1 runs every load on every server, then round 2, and so on; within a round the order of
# the servers rotates from load to load. Every (round, load, server) gets a freshly started server
# on a fresh temporary directory. Server CPU per operation is user+system time from /proc/PID/stat
# over the measured interval only: for ringstore the figure ringstore-load reports with
# --server-pid (it reads /proc the same way, around its measured phase, leaving out the load
# phase and the warm-up), for Redis read by this script around the measured redis-benchmark run.
#
# Options (environment variables in brackets):
#   --bin-dir DIR           prebuilt ringstore-node and ringstore-load [RINGSTORE_BIN_DIR];
#                           default: cargo build --release --bins here, use target/release
#   --baseline-bin-dir DIR  a second ringstore build run as a third server in the same rounds
#                           [RINGSTORE_BASELINE_BIN_DIR]; it is driven by the --bin-dir
#                           ringstore-load unless --baseline-own-load (use DIR's ringstore-load)
#   --shards N|default      the node's shards (default 1; `default` = the node's default, one per core)
#   --rounds R              rounds (default 3)
#   --seconds S             measured seconds per run (default 10)
#   --warmup S              warm-up seconds before each measured run, both servers (default 2)
#   --loads LIST            comma-separated subset of the loads above (default: the first six;
#                           `same-client` = the six same-client loads;
#                           `same-client-durable` = the two durable ones;
#                           `same-client-cluster` = the four cluster ones)
#   --out DIR               where to write (default perf/results/compare-<UTC date-time>)
#   --bind-clients          the six ringstore-load loads with --bind-clients: each client
#                           bound to one shard, its whole pipeline on one connection, as
#                           redis-benchmark's clients each use one connection (docs/LOADGEN.md);
#                           no effect with one shard
#   --pin-redis             redis-server on the first CPU this script may use and Redis's client
#                           (redis-benchmark, or ringstore-load --protocol resp) on the second,
#                           with taskset: the placement a one-shard node has (its shard pinned
#                           to the first CPU, the load tool left the other), so both servers
#                           are placed alike. Interleaved, it did not change Redis's rate
#                           (docs/BENCHMARKS.md, twenty-fourth session). The node's own
#                           placement and its clients are left as they are either way.
#
# Writes into the output directory: header.txt (revisions, kernel, CPU, date, command line),
# table.txt (the final tables, also printed), results.tsv (one line per run), raw/ (every tool's
# full output, per round/load/server). perf/README.md explains how to read them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline=$(printf '%q ' "$0" "$@")

BIN_DIR=${RINGSTORE_BIN_DIR:-}
BASE_DIR=${RINGSTORE_BASELINE_BIN_DIR:-}
BASE_OWN_LOAD=0
BIND=()
PIN_REDIS=0
SHARDS=1
ROUNDS=3
SECS=10
WARMUP=2
LOADS=get-p32,put-nosync-p32,get-p1,put-nosync-p1,put-sync-p1,put-sync-p32
OUT=

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "compare.sh: $*" >&2; exit 2; }
# shellcheck source=perf/node-ready.sh
. "$here/node-ready.sh"
# shellcheck source=perf/redis-common.sh
. "$here/redis-common.sh"

while (($#)); do
    case $1 in
        --bin-dir) BIN_DIR=${2:?}; shift 2 ;;
        --baseline-bin-dir) BASE_DIR=${2:?}; shift 2 ;;
        --baseline-own-load) BASE_OWN_LOAD=1; shift ;;
        --bind-clients) BIND=(--bind-clients); shift ;;
        --pin-redis) PIN_REDIS=1; shift ;;
        --shards) SHARDS=${2:?}; shift 2 ;;
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --seconds) SECS=${2:?}; shift 2 ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --loads) LOADS=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

[[ $SHARDS == default || $SHARDS =~ ^[1-9][0-9]*$ ]] || die "--shards: a number or 'default'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds: a positive number"
[[ $SECS =~ ^[1-9][0-9]*$ ]] || die "--seconds: a positive whole number"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "--warmup: a whole number of seconds"

# --pin-redis: the commands that place redis-server and its client (empty: the scheduler's choice).
REDIS_PLACE=()
REDIS_CLIENT_PLACE=()
if ((PIN_REDIS)); then
    mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
    ((${#cpus[@]} >= 2)) || die "--pin-redis needs two CPUs; this process may use ${cpus[*]}"
    command -v taskset >/dev/null || die "--pin-redis needs taskset (util-linux)"
    REDIS_PLACE=(taskset -c "${cpus[0]}")
    REDIS_CLIENT_PLACE=(taskset -c "${cpus[1]}")
fi

# load name -> "redis-test pipeline redis-persistence ringstore-args"
declare -A LOAD_DEF=(
    [get-p32]="get 32 none --mix read=100"
    [put-nosync-p32]="set 32 none --mix update=100 --durability no-sync"
    [get-p1]="get 1 none --mix read=100"
    [put-nosync-p1]="set 1 none --mix update=100 --durability no-sync"
    [put-sync-p1]="set 1 aof-always --mix update=100 --durability sync"
    [put-sync-p32]="set 32 aof-always --mix update=100 --durability sync"
)
# Same-client loads: "client redis-test-or-ycsb pipeline persistence"; persistence names
# Redis's, and the node's --resp-durability follows it (none: no-sync, aof-always: sync).
declare -A SAME_CLIENT_DEF=(
    [rb-get-p32]="redis-benchmark get 32 none"
    [rb-set-p32]="redis-benchmark set 32 none"
    [rb-get-p1]="redis-benchmark get 1 none"
    [rb-set-p1]="redis-benchmark set 1 none"
    [resp-ycsb-a]="ringstore-load a 1 none"
    [resp-ycsb-c]="ringstore-load c 1 none"
    [rb-set-sync-p1]="redis-benchmark set 1 aof-always"
    [rb-set-sync-p32]="redis-benchmark set 32 aof-always"
    [rbc-get-p32]="redis-benchmark-cluster get 32 none"
    [rbc-set-p32]="redis-benchmark-cluster set 32 none"
    [rbc-get-p1]="redis-benchmark-cluster get 1 none"
    [rbc-set-p1]="redis-benchmark-cluster set 1 none"
)
# Redis holds every key in memory; so does the node's record cache in the same-client loads:
# 1,000,000 rows at 256 bytes each, with room to spare, on each shard.
SAME_CLIENT_CACHE_BYTES=$((384 * 1024 * 1024))
SAME_CLIENT_LOADS=rb-get-p32,rb-set-p32,rb-get-p1,rb-set-p1,resp-ycsb-a,resp-ycsb-c
SAME_CLIENT_DURABLE_LOADS=rb-set-sync-p1,rb-set-sync-p32
SAME_CLIENT_CLUSTER_LOADS=rbc-get-p32,rbc-set-p32,rbc-get-p1,rbc-set-p1
for l in "${!SAME_CLIENT_DEF[@]}"; do
    read -r -a d <<<"${SAME_CLIENT_DEF[$l]}"
    LOAD_DEF[$l]="${d[1]} ${d[2]} ${d[3]}"
done
# A first guess of Redis's rate (ops/s) for the warm-up's fallback only; the warm-up measures it.
declare -A REDIS_GUESS=(
    [get-p32]=400000 [put-nosync-p32]=300000 [get-p1]=40000 [put-nosync-p1]=40000
    [put-sync-p1]=5000 [put-sync-p32]=50000
    [rb-get-p32]=400000 [rb-set-p32]=300000 [rb-get-p1]=40000 [rb-set-p1]=40000
    [rb-set-sync-p1]=5000 [rb-set-sync-p32]=50000
    [rbc-get-p32]=400000 [rbc-set-p32]=300000 [rbc-get-p1]=40000 [rbc-set-p1]=40000
)
[[ $LOADS != same-client ]] || LOADS=$SAME_CLIENT_LOADS
[[ $LOADS != same-client-durable ]] || LOADS=$SAME_CLIENT_DURABLE_LOADS
[[ $LOADS != same-client-cluster ]] || LOADS=$SAME_CLIENT_CLUSTER_LOADS
IFS=, read -r -a LOAD_LIST <<<"$LOADS"
for l in "${LOAD_LIST[@]}"; do
    [[ -n ${LOAD_DEF[$l]:-} ]] || die "unknown load '$l'; known: ${!LOAD_DEF[*]}"
done

# --- tools and binaries -----------------------------------------------------------------------
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null \
    || ! command -v redis-cli >/dev/null; then
    echo "installing redis-server and redis-tools (apt-get)" >&2
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-tools
fi
redis_version=$(redis-server --version)
[[ $redis_version =~ v=([0-9]+) ]] && ((BASH_REMATCH[1] >= 7)) \
    || echo "compare.sh: warning: expected Redis 7 or later, found: $redis_version" >&2

if [[ -z $BIN_DIR ]]; then
    (cd "$root" && cargo build --release --bins)
    BIN_DIR=$root/target/release
fi
BIN_DIR=$(cd "$BIN_DIR" && pwd)
for b in ringstore-node ringstore-load; do
    [[ -x $BIN_DIR/$b ]] || die "$BIN_DIR/$b missing"
done
if [[ -n $BASE_DIR ]]; then
    BASE_DIR=$(cd "$BASE_DIR" && pwd)
    [[ -x $BASE_DIR/ringstore-node ]] || die "$BASE_DIR/ringstore-node missing"
    ((BASE_OWN_LOAD == 0)) || [[ -x $BASE_DIR/ringstore-load ]] \
        || die "$BASE_DIR/ringstore-load missing"
fi

# Servers in the rounds: redis, ringstore (the --bin-dir build), baseline (--baseline-bin-dir).
SERVERS=(redis ringstore)
[[ -z $BASE_DIR ]] || SERVERS+=(baseline)

# --- output directory and header --------------------------------------------------------------
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-$here/results/compare-$stamp}
mkdir -p "$OUT/raw"
OUT=$(cd "$OUT" && pwd)

rev_of() { # the git revision of the checkout a directory is in, '+dirty' if it has changes
    local d=$1 r
    r=$(git -C "$d" rev-parse HEAD 2>/dev/null) || { echo "(not in a git checkout)"; return; }
    if [[ -n $(git --no-optional-locks -C "$d" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
        r+="+dirty"
    fi
    echo "$r $(git -C "$d" log -1 --format=%s HEAD 2>/dev/null | cut -c1-80)"
}
bin_info() { # revision of the checkout, and each binary's size, time and sha256
    local d=$1
    echo "  dir: $d"
    echo "  checkout revision: $(rev_of "$d")"
    for b in ringstore-node ringstore-load; do
        [[ -x $d/$b ]] || continue
        echo "  $b: $(stat -c '%y %s bytes' "$d/$b") sha256 $(sha256sum "$d/$b" | cut -c1-16)"
    done
}
{
    echo "# perf/compare.sh"
    echo "command: $cmdline"
    echo "cwd: $PWD"
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "script checkout: $(rev_of "$root")"
    echo "ringstore (--bin-dir):"
    bin_info "$BIN_DIR"
    if [[ -n $BASE_DIR ]]; then
        driver="the --bin-dir ringstore-load"
        ((BASE_OWN_LOAD == 0)) || driver="its own ringstore-load"
        echo "baseline (--baseline-bin-dir), driven by $driver:"
        bin_info "$BASE_DIR"
    fi
    echo "redis: $redis_version; $(redis-benchmark --version 2>/dev/null || echo redis-benchmark)"
    if ((PIN_REDIS)); then
        echo "redis placement: server ${REDIS_PLACE[*]}, its client ${REDIS_CLIENT_PLACE[*]} (--pin-redis)"
    else
        echo "redis placement: the scheduler's (no --pin-redis)"
    fi
    echo "kernel: $(uname -srvm)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
    echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "settings: shards=$SHARDS rounds=$ROUNDS seconds=$SECS warmup=$WARMUP loads=$LOADS${BIND[0]:+ bind-clients}"
    echo "shape: 50 clients, 1 client thread, 16-byte keys, 100-byte values, 100000 keys uniform"
    echo "data dirs under: ${TMPDIR:-/tmp} ($(df -T "${TMPDIR:-/tmp}" | awk 'NR == 2 {print $2 " on " $1}'))"
} >"$OUT/header.txt"
cat "$OUT/header.txt"

# --- servers ----------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/ringstore-compare.XXXXXX")
SERVER_PID=
cleanup() {
    if [[ -n $SERVER_PID ]]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}


# start_node BIN_DIR LOG [RESP_DURABILITY]: starts a node on a fresh directory; sets SERVER_PID
# and NODE_ADDR, and with RESP_DURABILITY also RESP_PORT (its --resp port, with that durability)
start_node() {
    local bin=$1 log=$2 resp=${3:-} data
    data=$(mktemp -d "$work/node.XXXXXX")
    local args=(--data-dir "$data" --listen 127.0.0.1:0 --log warn)
    [[ $SHARDS == default ]] || args+=(--shards "$SHARDS")
    [[ -z $resp ]] || args+=(--resp 127.0.0.1:0 --resp-durability "$resp"
                             --cache-capacity-bytes "$SAME_CLIENT_CACHE_BYTES")
    echo "\$ $bin/ringstore-node ${args[*]}" >"$log"
    "$bin/ringstore-node" "${args[@]}" >>"$log" 2>&1 &
    SERVER_PID=$!
    NODE_ADDR=$(node_ready_addr "$log" "$SERVER_PID")
    if [[ -n $resp ]]; then
        RESP_PORT=$(sed -n 's/.*ready .* resp=[^ ]*:\([0-9]*\).*/\1/p' "$log" | head -n 1)
        [[ -n $RESP_PORT ]] || die "ringstore-node did not name its RESP port; see $log"
    fi
}

# start_redis PERSISTENCE LOG: starts redis-server on a fresh directory; sets SERVER_PID, REDIS_PORT
start_redis() {
    local persistence=$1 log=$2 dir
    dir=$(mktemp -d "$work/redis.XXXXXX")
    REDIS_PORT=$(free_port)
    local args=(--port "$REDIS_PORT" --bind 127.0.0.1 --dir "$dir" --save '' --daemonize no
                --logfile '')
    case $persistence in
        none) args+=(--appendonly no) ;;
        aof-always) args+=(--appendonly yes --appendfsync always) ;;
    esac
    echo "\$ ${REDIS_PLACE[*]} redis-server ${args[*]}" >"$log"
    "${REDIS_PLACE[@]}" redis-server "${args[@]}" >>"$log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 200); do
        redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || die "redis-server exited; see $log"
        sleep 0.05
    done
    die "redis-server did not answer; see $log"
}

# The 100,000 keys redis-benchmark -r 100000 draws from (key:%012d, 16 bytes), with its 100-byte
# value, as a redis-cli --pipe stream: the same preload the node gets from ringstore-load.
PRELOAD=$work/preload.resp
write_redis_preload "$PRELOAD"

# The same-client loads' preloads (SETs) and warm passes (GETs): redis-benchmark's keys
# (-r 1000000: key:%012d) and ringstore-load's (100,000 keys: k%015d), 100-byte values.
if [[ ,$LOADS, == *,rb-* || ,$LOADS, == *,rbc-* || ,$LOADS, == *,resp-* ]]; then
    python3 - "$work" <<'EOF'
import sys
v = b"x" * 100
def cmd(*words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
for name, count, fmt in (("1m", 1000000, b"key:%012d"), ("ycsb", 100000, b"k%015d")):
    with open(f"{sys.argv[1]}/preload-{name}.resp", "wb") as f:
        f.writelines(cmd(b"SET", fmt % i, v) for i in range(count))
    with open(f"{sys.argv[1]}/warm-{name}.resp", "wb") as f:
        f.writelines(cmd(b"GET", fmt % i) for i in range(count))
EOF
fi

# cluster_preload PORT RAW_PREFIX: the keys redis-benchmark --cluster will use against the node
# at PORT, SET then GET: a short run learns each node's hash tag (FLUSHALL then removes its
# keys), and 1,000,000 keys per tag (key:{TAG}:%012d) go through redis-cli --pipe.
cluster_preload() {
    local port=$1 raw=$2 tags
    redis-benchmark --cluster -h 127.0.0.1 -p "$port" -c 50 -n 5000 -r 1 -t set -q \
        >"$raw-tags.txt" 2>&1
    tags=$(redis-cli -p "$port" --scan --pattern 'key:{*' | sed -n 's/^key:{\([^}]*\)}:.*/\1/p' \
        | sort -u | tr '\n' ' ')
    echo "tags: $tags" >>"$raw-tags.txt"
    [[ -n $tags ]] || die "redis-benchmark --cluster wrote no tagged keys; see $raw-tags.txt"
    redis-cli -p "$port" flushall >>"$raw-tags.txt" 2>&1
    local tag
    for tag in $tags; do
        [[ -f $work/preload-tag-$tag.resp ]] || python3 - "$work" "$tag" <<'EOF'
import sys
work, tag = sys.argv[1], sys.argv[2].encode()
v = b"x" * 100
def cmd(*words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
keys = [b"key:{%s}:%012d" % (tag, i) for i in range(1000000)]
with open(f"{work}/preload-tag-{tag.decode()}.resp", "wb") as f:
    f.writelines(cmd(b"SET", k, v) for k in keys)
with open(f"{work}/warm-tag-{tag.decode()}.resp", "wb") as f:
    f.writelines(cmd(b"GET", k) for k in keys)
EOF
        { redis-cli -p "$port" --pipe <"$work/preload-tag-$tag.resp"
          redis-cli -p "$port" --pipe <"$work/warm-tag-$tag.resp"
        } >>"$raw-preload.txt" 2>&1
    done
}

# same_client_preload PORT NAME RAW_PREFIX: the SETs, then the GETs, of key set NAME.
same_client_preload() {
    local port=$1 name=$2 raw=$3
    { redis-cli -p "$port" --pipe <"$work/preload-$name.resp"
      redis-cli -p "$port" --pipe <"$work/warm-$name.resp"
    } >"$raw-preload.txt" 2>&1
}

RESULTS=$OUT/results.tsv
printf 'round\tload\tserver\tops_per_s\tp50_ms\tp99_ms\tcpu_us_per_op\tseconds\tops\n' >"$RESULTS"

# run_redis ROUND LOAD RAW_PREFIX
run_redis() {
    local round=$1 load=$2 raw=$3
    local def persistence
    read -r -a def <<<"${LOAD_DEF[$load]}"
    persistence=${def[2]}
    start_redis "$persistence" "$raw-server.log"
    case ${SAME_CLIENT_DEF[$load]:-} in
        ringstore-load*) resp_load "$round" "$load" redis "$REDIS_PORT" "$raw" ;;
        *) redis_benchmark "$round" "$load" redis "$REDIS_PORT" "$raw" ;;
    esac
    stop_server
}

# redis_benchmark ROUND LOAD SERVER PORT RAW_PREFIX: preloads the keys into the RESP server at
# PORT (pid SERVER_PID), runs redis-benchmark against it, and adds its line to the results.
redis_benchmark() {
    local round=$1 load=$2 server=$3 port=$4 raw=$5
    local def test pipeline keys=100000 cluster=()
    read -r -a def <<<"${LOAD_DEF[$load]}"
    test=${def[0]} pipeline=${def[1]}
    if [[ ${SAME_CLIENT_DEF[$load]:-} == redis-benchmark-cluster* && $server != redis ]]; then
        keys=1000000
        cluster=(--cluster)
        cluster_preload "$port" "$raw"
    elif [[ -n ${SAME_CLIENT_DEF[$load]:-} ]]; then
        keys=1000000
        same_client_preload "$port" 1m "$raw"
    else
        redis-cli -p "$port" --pipe <"$PRELOAD" >"$raw-preload.txt" 2>&1
    fi
    local place=()
    [[ $server != redis ]] || place=("${REDIS_CLIENT_PLACE[@]}")
    local bench=("${place[@]}" redis-benchmark "${cluster[@]}" -h 127.0.0.1 -p "$port" -c 50 -d 100
                 -r "$keys" -P "$pipeline" -t "$test" --precision 3)
    # Warm-up: the same benchmark for --warmup seconds, stopped by SIGINT; its last progress
    # line's overall rate sizes the measured run (-n) to last about --seconds.
    local rate=
    if ((WARMUP > 0)); then
        { echo "\$ timeout -s INT ${WARMUP}s ${bench[*]} -n 1000000000"
          timeout -s INT "${WARMUP}s" "${bench[@]}" -n 1000000000 2>&1 || true
        } >"$raw-warmup.txt"
        rate=$(tr '\r' '\n' <"$raw-warmup.txt" | sed -n 's/.*rps=[0-9.]* (overall: \([0-9.]*\)).*/\1/p' \
            | tail -1)
    fi
    [[ $rate =~ ^[0-9.]+$ ]] && awk -v r="$rate" 'BEGIN { exit !(r > 0) }' \
        || rate=${REDIS_GUESS[$load]}
    local n
    n=$(awk -v r="$rate" -v s="$SECS" 'BEGIN { n = int(r * s); print (n < 1000 ? 1000 : n) }')
    # The measured run. The warm-up's rate can be off (fsync speed varies most): a run that
    # ends before 3/4 of --seconds is kept as raw/...-bench-short-K.txt, counted as more
    # warm-up, and repeated with -n from its own rate (at most twice).
    local before after t0 t1 attempt
    for attempt in 1 2 3; do
        echo "\$ ${bench[*]} -n $n" >"$raw-bench.txt"
        before=$(cpu_ticks "$SERVER_PID"); t0=$(date +%s.%N)
        "${bench[@]}" -n "$n" >>"$raw-bench.txt" 2>&1
        t1=$(date +%s.%N); after=$(cpu_ticks "$SERVER_PID")
        if ((attempt == 3)) \
            || ! awk -v a="$t0" -v b="$t1" -v s="$SECS" 'BEGIN { exit !(b - a < 0.75 * s) }'; then
            break
        fi
        mv "$raw-bench.txt" "$raw-bench-short-$attempt.txt"
        n=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v s="$SECS" 'BEGIN { print int(n / (b - a) * s) }')
    done
    redis-cli -p "$port" info stats >"$raw-info.txt" 2>&1 || true
    redis-cli -p "$port" dbsize >>"$raw-info.txt" 2>&1 || true
    # ops/s and percentiles from redis-benchmark's summary; CPU over the measured run.
    tr '\r' '\n' <"$raw-bench.txt" | awk -v round="$round" -v load="$load" -v n="$n" \
        -v b="$before" -v a="$after" -v tk="$TICKS" -v t0="$t0" -v t1="$t1" -v server="$server" '
        /throughput summary:/ { rps = $3 }
        /latency summary/ { getline; getline; p50 = $3; p99 = $5 }
        END {
            if (rps == "" || p50 == "") { print "no summary in redis-benchmark output" > "/dev/stderr"; exit 1 }
            printf "%s\t%s\t%s\t%.0f\t%.3f\t%.3f\t%.3f\t%.2f\t%d\n", round, load, server, rps, p50, p99,
                (a - b) / tk * 1e6 / n, t1 - t0, n
        }' >>"$RESULTS"
    printf '\nscript: wall %.2f s, server cpu %d ticks (%d/s) over the measured run\n' \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" $((after - before)) "$TICKS" \
        >>"$raw-bench.txt"
}

# run_ringstore ROUND LOAD SERVER NODE_BIN_DIR LOAD_BIN_DIR RAW_PREFIX
run_ringstore() {
    local round=$1 load=$2 server=$3 nbin=$4 lbin=$5 raw=$6
    local def
    read -r -a def <<<"${LOAD_DEF[$load]}"
    if [[ -n ${SAME_CLIENT_DEF[$load]:-} ]]; then
        local durability=no-sync
        [[ ${def[2]} != aof-always ]] || durability=sync
        start_node "$nbin" "$raw-server.log" "$durability"
        case ${SAME_CLIENT_DEF[$load]} in
            ringstore-load*) resp_load "$round" "$load" "$server" "$RESP_PORT" "$raw" ;;
            *) redis_benchmark "$round" "$load" "$server" "$RESP_PORT" "$raw" ;;
        esac
        stop_server
        return
    fi
    local pipeline=${def[1]} extra=("${def[@]:3}")
    start_node "$nbin" "$raw-server.log"
    local cmd=("$lbin/ringstore-load" --addr "$NODE_ADDR" --server-pid "$SERVER_PID"
               --connections 50 --threads 1 --distribution uniform --keys 100000
               --key-size 16 --value-size 100 --pipeline "$pipeline" "${extra[@]}" "${BIND[@]}"
               --duration "${SECS}s" --warmup "${WARMUP}s" --json "$raw-load.json")
    load_run "$round" "$load" "$server" "$raw" "${cmd[@]}"
    stop_server
}

# resp_load ROUND LOAD SERVER PORT RAW_PREFIX: ringstore-load --protocol resp (the --bin-dir
# build's) with the load's YCSB workload against the RESP server at PORT (pid SERVER_PID).
resp_load() {
    local round=$1 load=$2 server=$3 port=$4 raw=$5
    local def
    read -r -a def <<<"${LOAD_DEF[$load]}"
    same_client_preload "$port" ycsb "$raw"
    local place=()
    [[ $server != redis ]] || place=("${REDIS_CLIENT_PLACE[@]}")
    local cmd=("${place[@]}" "$BIN_DIR/ringstore-load" --protocol resp --addr "127.0.0.1:$port"
               --server-pid "$SERVER_PID" --workload "${def[0]}" --connections 50 --threads 1
               --keys 100000 --key-size 16 --value-size 100 --pipeline "${def[1]}" --no-load
               --duration "${SECS}s" --warmup "${WARMUP}s" --json "$raw-load.json")
    load_run "$round" "$load" "$server" "$raw" "${cmd[@]}"
}

# load_run ROUND LOAD SERVER RAW_PREFIX CMD...: runs a ringstore-load command and adds the
# figures of its JSON document (CMD writes it to RAW_PREFIX-load.json) to the results.
load_run() {
    local round=$1 load=$2 server=$3 raw=$4
    shift 4
    echo "\$ $*" >"$raw-load.txt"
    local rc=0
    "$@" >>"$raw-load.txt" 2>&1 || rc=$?
    ((rc == 0)) || { echo "ringstore-load exited $rc; see $raw-load.txt" >&2; ((rc == 1)) || exit 2; }
    python3 - "$raw-load.json" "$round" "$load" "$server" >>"$RESULTS" <<'EOF'
import json, sys
path, rnd, load, server = sys.argv[1:5]
r = json.load(open(path))["runs"][0]
print("\t".join([rnd, load, server, "%.0f" % r["ops_per_second"],
                 "%.3f" % (r["latency_us"]["p50"] / 1000), "%.3f" % (r["latency_us"]["p99"] / 1000),
                 "%.3f" % r["server_cpu_seconds_per_million_ops"], "%.2f" % r["seconds"],
                 str(r["ops_total"])]))
EOF
}

run_one() { # ROUND LOAD SERVER
    local round=$1 load=$2 server=$3
    local raw=$OUT/raw/r$round-$load-$server
    case $server in
        redis) run_redis "$round" "$load" "$raw" ;;
        ringstore) run_ringstore "$round" "$load" ringstore "$BIN_DIR" "$BIN_DIR" "$raw" ;;
        baseline)
            local lbin=$BIN_DIR
            ((BASE_OWN_LOAD == 0)) || lbin=$BASE_DIR
            run_ringstore "$round" "$load" baseline "$BASE_DIR" "$lbin" "$raw" ;;
    esac
    tail -1 "$RESULTS" | awk -F'\t' '{ printf "  %-9s %9s ops/s  p50 %7s ms  p99 %7s ms  cpu %7s us/op  (%s s)\n", $3, $4, $5, $6, $7, $8 }'
}

# --- the rounds -------------------------------------------------------------------------------
nserv=${#SERVERS[@]}
for round in $(seq "$ROUNDS"); do
    for li in "${!LOAD_LIST[@]}"; do
        load=${LOAD_LIST[$li]}
        order=()
        for k in $(seq 0 $((nserv - 1))); do
            order+=("${SERVERS[$(((k + li + round - 1) % nserv))]}")
        done
        echo "round $round/$ROUNDS $load: ${order[*]}  (loadavg $(cut -d' ' -f1 /proc/loadavg))"
        for server in "${order[@]}"; do
            run_one "$round" "$load" "$server"
        done
    done
done
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/header.txt"

# --- the tables -------------------------------------------------------------------------------
{
    echo "perf/compare.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), shards=$SHARDS rounds=$ROUNDS" \
        "seconds=$SECS; loadavg $(sed -n 's/^loadavg at start: //p' "$OUT/header.txt") at the" \
        "start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (header.txt has the revisions)"
    echo
} >"$OUT/table.txt"
python3 - "$RESULTS" "$LOADS" "${SERVERS[*]}" >>"$OUT/table.txt" <<'EOF'
import csv, statistics, sys
from collections import defaultdict

path, loads, servers = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split()
rows = list(csv.DictReader(open(path), delimiter="\t"))
by = {(r["round"], r["load"], r["server"]): r for r in rows}
rounds = sorted({r["round"] for r in rows}, key=int)
fields = [("ops_per_s", "ops/s", "%.0f"), ("p50_ms", "p50 ms", "%.3f"),
          ("p99_ms", "p99 ms", "%.3f"), ("cpu_us_per_op", "CPU us/op", "%.2f")]
med = statistics.median
what = {"get-p32": "get, pipeline 32", "put-nosync-p32": "put NoSync / SET, pipeline 32",
        "get-p1": "get, pipeline 1", "put-nosync-p1": "put NoSync / SET, pipeline 1",
        "put-sync-p1": "put Sync / SET appendfsync always, pipeline 1",
        "put-sync-p32": "put Sync / SET appendfsync always, pipeline 32",
        "rb-get-p32": "redis-benchmark GET on both, pipeline 32",
        "rb-set-p32": "redis-benchmark SET on both (no persistence / RESP no-sync), pipeline 32",
        "rb-get-p1": "redis-benchmark GET on both, pipeline 1",
        "rb-set-p1": "redis-benchmark SET on both (no persistence / RESP no-sync), pipeline 1",
        "resp-ycsb-a": "ringstore-load --protocol resp YCSB A on both, pipeline 1",
        "resp-ycsb-c": "ringstore-load --protocol resp YCSB C on both, pipeline 1",
        "rb-set-sync-p1": "redis-benchmark SET on both (appendfsync always / RESP sync), pipeline 1",
        "rb-set-sync-p32": "redis-benchmark SET on both (appendfsync always / RESP sync), pipeline 32",
        "rbc-get-p32": "redis-benchmark GET (--cluster on the node), pipeline 32",
        "rbc-set-p32": "redis-benchmark SET (--cluster on the node, RESP no-sync), pipeline 32",
        "rbc-get-p1": "redis-benchmark GET (--cluster on the node), pipeline 1",
        "rbc-set-p1": "redis-benchmark SET (--cluster on the node, RESP no-sync), pipeline 1"}

def val(rnd, load, server, f):
    r = by.get((rnd, load, server))
    return float(r[f]) if r else None

print(f"Medians over {len(rounds)} round(s); server CPU = user+system time of the server process "
      "over the measured interval / operations.")
print()
print("| load | server | ops/s | p50 ms | p99 ms | CPU us/op |")
print("|---|---|---:|---:|---:|---:|")
for load in loads:
    for s in servers:
        cells = []
        for f, _, fmt in fields:
            vs = [v for v in (val(r, load, s, f) for r in rounds) if v is not None]
            cells.append(fmt % med(vs) if vs else "-")
        print(f"| {load} | {s} | " + " | ".join(cells) + " |")

# Ratios computed within each round, then the median over rounds.
pairs = [(s, "redis") for s in servers if s != "redis"]
if "baseline" in servers:
    pairs.append(("ringstore", "baseline"))
print()
print("Ratios, per round then the median over rounds (throughput: higher is better for the first;"
      " CPU/op: lower is better for the first):")
print()
print("| load | " + " | ".join(f"{a}/{b} ops/s | {a}/{b} CPU/op" for a, b in pairs) + " |")
print("|---|" + "---:|---:|" * len(pairs))
for load in loads:
    cells = []
    for a, b in pairs:
        for f in ("ops_per_s", "cpu_us_per_op"):
            rs = []
            for r in rounds:
                x, y = val(r, load, a, f), val(r, load, b, f)
                if x is not None and y:
                    rs.append(x / y)
            cells.append("%.2f" % med(rs) if rs else "-")
    print(f"| {load} | " + " | ".join(cells) + " |")

print()
print("The same ratios in every round:")
print()
print("| round | load | " + " | ".join(f"{a}/{b} ops/s | {a}/{b} CPU/op" for a, b in pairs) + " |")
print("|---:|---|" + "---:|---:|" * len(pairs))
for r in rounds:
    for load in loads:
        cells = []
        for a, b in pairs:
            for f in ("ops_per_s", "cpu_us_per_op"):
                x, y = val(r, load, a, f), val(r, load, b, f)
                cells.append("%.2f" % (x / y) if x is not None and y else "-")
        print(f"| {r} | {load} | " + " | ".join(cells) + " |")

print()
print("Loads: " + "; ".join(f"{l} = {what[l]}" for l in loads) + ".")
print()
print("Every round:")
print()
print("| round | load | server | ops/s | p50 ms | p99 ms | CPU us/op | seconds | ops |")
print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print("| " + " | ".join(r[k] for k in ("round", "load", "server", "ops_per_s", "p50_ms",
                                          "p99_ms", "cpu_us_per_op", "seconds", "ops")) + " |")
EOF
echo
cat "$OUT/table.txt"
echo
echo "written to $OUT"
