# shellcheck shell=bash
# Sourced by perf/compare.sh and perf/profile.sh (they define `die`).
#
# node_ready_addr LOG PID: waits (at most 10 s) until the ringstore-node with pid PID, whose
# output goes to LOG, prints its ready line, and prints the address it listens on.
node_ready_addr() {
    local log=$1 pid=$2 addr
    for _ in $(seq 200); do
        grep -q 'ringstore-node ready' "$log" && break
        kill -0 "$pid" 2>/dev/null || die "ringstore-node exited; see $log"
        sleep 0.05
    done
    addr=$(sed -n 's/.*ready listen=\([^ ]*\).*/\1/p' "$log" | head -n 1)
    [[ -n $addr ]] || die "ringstore-node did not print its ready line; see $log"
    echo "$addr"
}
