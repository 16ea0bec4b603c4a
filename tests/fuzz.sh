#!/usr/bin/env bash
# Coverage-guided fuzzing of the decoders and parsers (docs/FUZZING.md): each cargo-fuzz target
# in fuzz/ runs for SECONDS (default 60) from its checked-in corpus; new interesting inputs are
# added to fuzz/corpus/TARGET/ (commit them after `cargo fuzz cmin`), crashes are written to
# fuzz/artifacts/TARGET/. Needs a nightly toolchain; installs cargo-fuzz if missing.
#
#   tests/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-60}
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    targets=(frame_header request_body ddl cli record checkpoint resp_command)
fi
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
failed=0
for t in "${targets[@]}"; do
    echo "== $t: ${seconds} s"
    log=$(mktemp)
    if cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=2048 \
        >"$log" 2>&1; then
        grep -E '^#[0-9]+.*DONE|Done [0-9]+ runs' "$log" | tail -2
    else
        failed=1
        tail -40 "$log"
        echo "== $t: FAILED (artifact in fuzz/artifacts/$t/)"
    fi
done
exit "$failed"
