#!/usr/bin/env python3
"""Compaction victim policies under uniform overwrites, simulated (no ringstore code runs).

N keys live in segments of S records; each write overwrites a uniformly random key, appending
it to the active segment. Every 1,000 writes maintenance compacts, either
  seg:   every sealed segment whose own garbage ratio reaches the threshold (most garbage first),
  store: while the store's garbage share reaches the threshold, the sealed segment with the most
         garbage (only if it is itself over the threshold),
moving each victim's live keys to the log head. Prints, per threshold and policy, the live
records moved per record of garbage reclaimed and the records on disk per live record at the
end. docs/BENCHMARKS.md (twentieth session) quotes the 0.5 lines:

    python3 perf/compaction-policy-sim.py
"""
import random


def sim(n, s, threshold, policy, writes):
    loc, live, size = {}, {0: 0}, {0: 0}
    cur = 0

    def append(k):
        nonlocal cur
        if size[cur] >= s:
            cur += 1
            live[cur] = 0
            size[cur] = 0
        loc[k] = cur
        live[cur] += 1
        size[cur] += 1

    for k in range(n):
        append(k)
    moved = reclaimed = 0
    for w in range(writes):
        k = random.randrange(n)
        live[loc[k]] -= 1
        append(k)
        if w % 1000:
            continue
        while True:
            sealed = sorted((x for x in size if x != cur), key=lambda x: live[x] / size[x])
            total = sum(size.values())
            garbage = total - sum(live.values())
            if policy == "seg":
                over = [x for x in sealed if 1 - live[x] / size[x] >= threshold]
                if not over:
                    break
                victim = over[0]
            else:
                if garbage / total < threshold or not sealed:
                    break
                victim = sealed[0]
                if 1 - live[victim] / size[victim] < threshold:
                    break
            keys = [key for key, x in loc.items() if x == victim]
            moved += len(keys)
            reclaimed += size[victim] - len(keys)
            del size[victim], live[victim]
            for key in keys:
                append(key)
    return moved / reclaimed, sum(size.values()) / n


random.seed(1)
for t in (0.3, 0.5):
    for p in ("seg", "store"):
        per_garbage, disk = sim(20000, 6000, t, p, 400000)
        print(f"threshold {t} {p:5}: moved per garbage reclaimed {per_garbage:.3f}, disk / live {disk:.3f}")
