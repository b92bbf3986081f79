"""Reads stepcost3.py's bins and windows: steps per second in each read window and in the idle
windows on either side (bins wholly inside a window, 200 ms trimmed at each edge), the
relative difference pair by pair, and its mean with a 95 % interval (t, n-1).
usage: python3 stepcost3_report.py DIR"""
import json, math, statistics as st, sys

d = sys.argv[1]
bins = {int(k): v for k, v in json.load(open(f"{d}/stepcost3-bins.json")).items()}
win = json.load(open(f"{d}/stepcost3-windows.json"))["windows"]


def rate(a, b):
    lo, hi = math.ceil((a + 0.2) * 10), math.floor((b - 0.2) * 10)
    n = [bins.get(k, 0) for k in range(lo, hi)]
    return sum(n) / (len(n) / 10) if n else None


on = [rate(*w["on"]) for w in win]
off = [rate(*w["off"]) for w in win]
diffs = []
for k in range(1, len(win)):
    ref = (off[k - 1] + off[k]) / 2
    diffs.append(on[k] / ref - 1)
m, s = st.mean(diffs), st.stdev(diffs)
t = {10: 2.23, 20: 2.09, 30: 2.05, 40: 2.02, 60: 2.0}.get(min((10, 20, 30, 40, 60), key=lambda x: abs(x - len(diffs))), 2.0)
half = t * s / math.sqrt(len(diffs))
out = {}
try:
    cpu = {int(k): v for k, v in json.load(open(f"{d}/stepcost3-cpu.json")).items()}

    def per_cpu(a, b):
        lo, hi = math.ceil((a + 0.2) * 10), math.floor((b - 0.2) * 10)
        steps = sum(bins.get(k, 0) for k in range(lo, hi))
        ns = sum(cpu.get(k, 0) for k in range(lo, hi))
        return steps / (ns / 1e9) if ns else None

    on_c = [per_cpu(*w["on"]) for w in win]
    off_c = [per_cpu(*w["off"]) for w in win]
    dc = [on_c[k] / ((off_c[k - 1] + off_c[k]) / 2) - 1 for k in range(1, len(win))]
    mc, sc = st.mean(dc), st.stdev(dc)
    hc = t * sc / math.sqrt(len(dc))
    out = {"per_cpu_second_slowdown_pct_mean": round(-mc * 100, 3),
           "per_cpu_second_ci95_pct": [round(-(mc + hc) * 100, 3), round(-(mc - hc) * 100, 3)]}
except FileNotFoundError:
    pass
print(json.dumps({**out, "pairs": len(diffs), "steps_per_s_idle_median": round(st.median(off), 1),
                  "steps_per_s_read_median": round(st.median(on), 1),
                  "slowdown_pct_mean": round(-m * 100, 3), "ci95_pct": [round(-(m + half) * 100, 3), round(-(m - half) * 100, 3)],
                  "read_window_s_median": round(st.median(w["on"][1] - w["on"][0] for w in win), 2)}))
