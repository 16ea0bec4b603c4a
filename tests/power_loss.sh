#!/usr/bin/env bash
# The long run of the simulated power-loss suite (storage/tests/model.rs): SEEDS seeded runs of
# the store on the simulated disk, each with power losses that drop, tear and garble unsynced
# writes and lose unsynced directory entries, checked against a model (every acknowledged Sync
# write recovered, nothing unacknowledged invented, atomic batches atomic). `cargo test` runs 500
# seeds; this runs 10,000 by default. A failure prints its seed and the command that replays it.
#
#   tests/power_loss.sh [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10000}
started=$(date -u +%s)
log=$(mktemp)
status=0
RINGSTORE_MODEL_SEEDS=$seeds cargo test --release -p ringstore-storage --test model -- --nocapture \
    >"$log" 2>&1 || status=$?
grep -E '^model half|test result|seed [0-9]+|replay it' "$log" || true
echo "power_loss: $seeds seeds, $(( $(date -u +%s) - started )) s, exit $status (full output: $log)"
exit "$status"
