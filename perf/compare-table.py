#!/usr/bin/env python3
"""Issue 11's table rows from a perf/compare.sh run, as docs/BENCHMARKS.md gives them.

    perf/compare-table.py RESULTS_TSV RUN_LABEL

RESULTS_TSV is the `results.tsv` compare.sh writes into its --out directory (one line per
round, load and server). Prints one Markdown row per load, in the order of the file:

    | load | RUN_LABEL | Redis ops/s, CPU us/op | ringstore ops/s, CPU us/op |
      ringstore/Redis throughput (per round) | ringstore/Redis CPU per op (per round) |
      [ringstore/baseline throughput, CPU per op |]

ops/s and CPU are the medians over the rounds; each ratio is taken per round (the servers of a
round ran minutes apart, the rounds up to half an hour), and the median of those is given,
then every round's. Ratios are cut, not rounded, to RATIO_PLACES places, so a target such as
"<= 1.0x" is never met by rounding. The last column appears when the run had a baseline
(compare.sh --baseline-bin-dir).
"""

import csv
import math
import statistics
import sys

RATIO_PLACES = 4

LOAD_NAMES = {
    "get-p32": "get p32",
    "put-nosync-p32": "NoSync put p32",
    "get-p1": "get p1",
    "put-nosync-p1": "NoSync put p1",
    "put-sync-p1": "Sync put p1",
    "put-sync-p32": "Sync put p32",
}


def cut(x):
    scale = 10**RATIO_PLACES
    return f"{math.floor(x * scale) / scale:.{RATIO_PLACES}f}"


def count(x):
    return f"{x:,.0f}" if x == int(x) else f"{x:,.1f}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, label = sys.argv[1], sys.argv[2]
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    by_round = {}
    loads = []
    for r in rows:
        by_round.setdefault((r["load"], r["round"]), {})[r["server"]] = r
        if r["load"] not in loads:
            loads.append(r["load"])
    has_baseline = any("baseline" in servers for servers in by_round.values())
    for load in loads:
        rounds = sorted((k[1] for k in by_round if k[0] == load), key=int)

        def field(server, key, rnd):
            return float(by_round[(load, rnd)][server][key])

        def median(server, key):
            return statistics.median(field(server, key, r) for r in rounds)

        def ratios(a, b, key):
            return [field(a, key, r) / field(b, key, r) for r in rounds]

        def ratio_cell(values):
            return f"{cut(statistics.median(values))} ({', '.join(cut(v) for v in values)})"

        line = (
            f"| {LOAD_NAMES.get(load, load)} | {label} "
            f"| {count(median('redis', 'ops_per_s'))}, {median('redis', 'cpu_us_per_op'):.3f} "
            f"| {count(median('ringstore', 'ops_per_s'))}, {median('ringstore', 'cpu_us_per_op'):.3f} "
            f"| {ratio_cell(ratios('ringstore', 'redis', 'ops_per_s'))} "
            f"| {ratio_cell(ratios('ringstore', 'redis', 'cpu_us_per_op'))} |"
        )
        if has_baseline:
            throughput = statistics.median(ratios("ringstore", "baseline", "ops_per_s"))
            cpu = statistics.median(ratios("ringstore", "baseline", "cpu_us_per_op"))
            line += f" {cut(throughput)}, {cut(cpu)} |"
        print(line)


if __name__ == "__main__":
    main()
