"""Reads a stepcost run (steps.jsonl: steps per second since ready; windows.txt: `on A B`, the
ms since ready between which the stacks were read) and compares each read window's steps per
second with the mean of the windows just before and after it (the seconds wholly inside each,
half a second of margin at each end): the mean and 95 % interval of (on / off - 1) over the
pairs. A slowdown is negative. usage: stepcost_pairs.py DIR"""
import json, math, statistics as st, sys

d = sys.argv[1]
rate = {r["t"]: r["steps"] for r in map(json.loads, open(f"{d}/steps.jsonl"))}
wins = [tuple(map(int, l.split()[1:])) for l in open(f"{d}/windows.txt")]


def inside(a, b):
    return [n for s, n in rate.items() if s * 1000 >= a + 500 and (s + 1) * 1000 <= b - 500]


pairs = []
for k, (a, b) in enumerate(wins):
    before = inside(wins[k - 1][1] if k else a - 5000, a)
    after = inside(b, wins[k + 1][0] if k + 1 < len(wins) else b + 5000)
    on = inside(a, b)
    if on and before and after:
        pairs.append(st.mean(on) / ((st.mean(before) + st.mean(after)) / 2) - 1)
m, se = st.mean(pairs), st.stdev(pairs) / math.sqrt(len(pairs))
t = 2.02 if len(pairs) >= 40 else 2.57
print(f"{len(pairs)} pairs: read/unread - 1 = {m * 100:+.2f} % (sd {st.stdev(pairs) * 100:.2f} %), "
      f"95 % interval [{(m - t * se) * 100:+.2f}, {(m + t * se) * 100:+.2f}] %")
