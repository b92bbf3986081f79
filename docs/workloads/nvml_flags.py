"""Does nvmlInitWithFlags' flag change what NVML keeps resident (#28)? For FLAGS: a bare ctypes
client initialises NVML with it, makes the calls a monitor makes (their return codes printed:
a flag that breaks a call is no use), then prints RSS above the interpreter and every
anonymous mapping that grew by 64 KiB or more, with its size, to see what the 15 MiB are.

    python3 nvml_flags.py FLAGS
"""
import ctypes, os, sys, time

def status():
    keys = ("VmRSS", "RssAnon", "RssFile")
    return {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(keys)}

def anon_maps():
    out, cur = [], None
    for line in open("/proc/self/smaps"):
        f = line.split()
        if "-" in f[0] and ":" not in f[0]:
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            cur = [f[0], (hi - lo) // 1024, f[1], f[5] if len(f) > 5 else ""]
        elif f[0] == "Rss:" and cur is not None:
            if not cur[3] or cur[3].startswith("["):
                if int(f[1]) >= 64:
                    out.append((int(f[1]), cur[1], cur[2], cur[3], cur[0]))
    return sorted(out, reverse=True)

flags = int(sys.argv[1])
base = status()
before = {m[4]: m[0] for m in anon_maps()}
n = ctypes.CDLL("libnvidia-ml.so.1")
t = time.time()
rc = n.nvmlInitWithFlags(flags)
print(f"flags {flags}: init rc {rc} in {1000 * (time.time() - t):.0f} ms")
h = ctypes.c_void_p()
rcs = {"handle": n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))}
u = (ctypes.c_uint * 2)(); rcs["util"] = n.nvmlDeviceGetUtilizationRates(h, u)
p = ctypes.c_uint(); rcs["power"] = n.nvmlDeviceGetPowerUsage(h, ctypes.byref(p))
m = (ctypes.c_ulonglong * 3)(); rcs["memory"] = n.nvmlDeviceGetMemoryInfo(h, m)
c = ctypes.c_uint(); rcs["sm clock"] = n.nvmlDeviceGetClockInfo(h, 1, ctypes.byref(c))
cnt = ctypes.c_uint(64); buf = (ctypes.c_ulonglong * (64 * 6))()
rcs["processes"] = n.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(cnt), buf)
s1 = ctypes.c_void_p(); rcs["gpm alloc"] = n.nvmlGpmSampleAlloc(ctypes.byref(s1))
rcs["gpm get"] = n.nvmlGpmSampleGet(h, s1)
print("  rcs", rcs, f"util {u[0]} % power {p.value} mW mem used {m[2] >> 20} MiB sm {c.value} MHz")
now = status()
print("  above python: RSS", now["VmRSS"] - base["VmRSS"], "anon", now["RssAnon"] - base["RssAnon"],
      "file", now["RssFile"] - base["RssFile"], "KiB; threads", len(os.listdir("/proc/self/task")))
grown = [m for m in anon_maps() if m[0] - before.get(m[4], 0) >= 64]
for rss, size, perms, name, rng in grown[:14]:
    print(f"  anon {rss:7d} KiB resident of {size:8d} KiB {perms} {name} {rng}")
