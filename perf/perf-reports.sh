# shellcheck shell=bash
# Sourced by perf/profile.sh and perf/profile-redis.sh: what the two profilers share (their
# tools, output directory and clean-up, and the reports of a recording).
#
# perf_reports DATA OUT FREQ SECONDS TITLE: writes the reports of one `perf record -e cpu-clock
# -g` recording (DATA, made at FREQ samples per second per CPU for SECONDS) into OUT:
#   top.txt          perf report --stdio --no-children --sort dso,sym -g none --percent-limit 0.5
#   top-callers.txt  the same with call chains, --percent-limit 2
#   inclusive.txt    --children --sort sym -g none --percent-limit 2
#   threads.txt      --sort comm (with CPUs busy per thread) and --sort comm,dso
#   stacks.folded    perf script | inferno-collapse-perf
#   flame.svg        inferno-flamegraph, titled TITLE
perf_reports() {
    local data=$1 out=$2 freq=$3 secs=$4 title=$5
    local report=(perf report -i "$data" --stdio)
    echo "writing reports (perf script over DWARF stacks takes a while)" >&2
    "${report[@]}" --no-children --sort dso,sym -g none --percent-limit 0.5 >"$out/top.txt" 2>/dev/null
    "${report[@]}" --no-children --sort dso,sym --percent-limit 2 2>/dev/null \
        | head -n 4000 >"$out/top-callers.txt"
    "${report[@]}" --children --sort sym -g none --percent-limit 2 >"$out/inclusive.txt" 2>/dev/null
    {
        "${report[@]}" --no-children --sort comm -n -g none 2>/dev/null
        echo
        echo "# CPUs busy per thread: samples / (--freq $freq x --seconds $secs)"
        "${report[@]}" --no-children --sort comm -n -g none 2>/dev/null | grep -v '^#' \
            | awk -v f="$freq" -v s="$secs" 'NF >= 3 {
                  printf "    %-20s %6.2f CPUs\n", $3, $2 / (f * s); t += $2 }
                  END { printf "    %-20s %6.2f CPUs\n", "all", t / (f * s) }'
        echo
        echo "# per thread and object"
        "${report[@]}" --no-children --sort comm,dso -g none --percent-limit 0.5 2>/dev/null \
            | grep -v '^#' | grep -v '^$'
    } >"$out/threads.txt"
    perf script -i "$data" 2>/dev/null | inferno-collapse-perf >"$out/stacks.folded"
    inferno-flamegraph --title "$title" --countname ns <"$out/stacks.folded" >"$out/flame.svg"
}

# perf_tools: installs perf (Debian linux-perf) and inferno (cargo) where missing.
perf_tools() {
    if ! command -v perf >/dev/null; then
        echo "installing linux-perf (apt-get)" >&2
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y linux-perf
    fi
    export PATH=$PATH:${CARGO_HOME:-$HOME/.cargo}/bin
    if ! command -v inferno-flamegraph >/dev/null || ! command -v inferno-collapse-perf >/dev/null
    then
        echo "installing inferno (cargo install inferno)" >&2
        cargo install inferno
    fi
}

# profile_workspace NAME_PREFIX PID_VAR...: sets `stamp`, `OUT` (when empty: perf/results/
# NAME_PREFIX-<UTC date-time>; created and made absolute) and `work` (a temporary directory), and
# arranges that at exit the processes whose pids the named variables hold then are stopped
# (SIGTERM, then waited for) and `work` is removed.
profile_workspace() {
    local prefix=$1
    shift
    PROFILE_PID_VARS=("$@")
    stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
    OUT=${OUT:-$here/results/$prefix-$stamp}
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    work=$(mktemp -d "${TMPDIR:-/tmp}/$prefix.XXXXXX")
    trap profile_cleanup EXIT
    trap 'exit 130' INT TERM
}

profile_cleanup() {
    local v p
    for v in "${PROFILE_PID_VARS[@]}"; do
        p=${!v}
        [[ -n $p ]] || continue
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$work"
}

# perf_summary OUT: prints the head of OUT's flat profile and its per-thread CPU, then where it is.
perf_summary() {
    local out=$1
    echo
    head -n 40 "$out/top.txt" | grep -v '^#' | grep -v '^$' | head -n 25
    echo
    sed '/^# per thread and object/q' "$out/threads.txt" | grep -v '^#' | grep -v '^$' | head -n 12
    echo
    echo "written to $out"
}
