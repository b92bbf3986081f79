"""How much of a binary's text a running process has mapped, by crate: the pages of its
executable mapping that /proc/PID/pagemap marks present, each function (nm) counted for the
share of its pages present, grouped by the crate its name starts with.

    python3 textmap.py PID BIN
"""
import collections, re, struct, subprocess, sys

pid, binary = sys.argv[1], sys.argv[2]
base = text = None
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if len(f) < 6 or not f[5].endswith("/" + binary.split("/")[-1]):
        continue
    start, end = (int(x, 16) for x in f[0].split("-"))
    if int(f[2], 16) == 0 and base is None:
        base = start  # position-independent: the file's first mapping is its load address
    if "x" in f[1]:
        text = (start, end)

pages = open(f"/proc/{pid}/pagemap", "rb")
present = set()
for page in range(text[0] // 4096, text[1] // 4096):
    pages.seek(page * 8)
    if struct.unpack("Q", pages.read(8))[0] >> 63:
        present.add(page)
print(f"text pages {(text[1] - text[0]) // 4096}, present {len(present)}: {len(present) * 4} KiB")

mapped, total = collections.Counter(), collections.Counter()
nm = subprocess.run(["nm", "-S", "-C", "--defined-only", binary], capture_output=True, text=True)
for line in nm.stdout.splitlines():
    f = line.split(None, 3)
    if len(f) < 4 or f[2] not in "tT":
        continue
    name = re.sub(r"^(<|_<|&|\*const |\*mut |dyn )+", "", f[3])
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
    crate = m.group(1) if m else "(other)"
    start, size = int(f[0], 16) + base, max(int(f[1], 16), 1)
    span = range(start // 4096, (start + size - 1) // 4096 + 1)
    total[crate] += size
    mapped[crate] += size * sum(p in present for p in span) / len(span)
for crate, kib in mapped.most_common(25):
    print(f"{kib / 1024:7.0f} of {total[crate] / 1024:6.0f} KiB {crate}")

# With ORDER=FILE (src/link-order.txt) set: the present pages outside the span the order's
# first N names (ORDER_TIER, default all) take, by 64 KiB window (the kernel's fault-around),
# each with the functions on its present pages: what ran that the order did not lay together.
import os
if os.environ.get("ORDER"):
    names = [l.strip() for l in open(os.environ["ORDER"]) if l.strip()]
    names = set(names[: int(os.environ.get("ORDER_TIER", len(names)))])
    raw = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True)
    syms = []
    for a, b in zip(raw.stdout.splitlines(), nm.stdout.splitlines()):
        f = a.split()
        if len(f) == 4 and f[2] in "tT":
            syms.append((int(f[0], 16) + base, int(f[1], 16), f[3] in names, b.split(None, 3)[3]))
    ordered = [(s, n) for s, n, o, _ in syms if o]
    lo, hi = min(s for s, _ in ordered), max(s + n for s, n in ordered)
    out = sorted(p for p in present if not lo // 4096 <= p <= hi // 4096)
    windows = collections.defaultdict(list)
    for p in out:
        windows[p * 4096 // 65536].append(p)
    print(f"ordered span {(hi - lo) // 1024} KiB; present outside it: {len(out) * 4} KiB "
          f"in {len(windows)} windows of 64 KiB")
    for w, ps in sorted(windows.items()):
        here = [d for s, n, _, d in syms if any(s // 4096 <= p <= (s + max(n, 1) - 1) // 4096 for p in ps)]
        print(f"  {w * 65536 - base:#x} {len(ps) * 4:3} KiB: " + " | ".join(d[:70] for d in here[:4]))
