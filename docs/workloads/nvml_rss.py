"""Where NVML's resident memory comes from: RSS after each step of a bare ctypes NVML client."""
import ctypes, sys, os, re
def rss():
    d = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(("VmRSS", "RssAnon", "RssFile", "VmHWM"))}
    return d
def maps():
    return sorted({l.split()[5] for l in open("/proc/self/maps") if len(l.split()) > 5 and ("nvidia" in l or "cuda" in l)})
base = rss(); prev = base
def step(name):
    global prev
    now = rss(); print(f"{name:40s} anon {now['RssAnon']-prev['RssAnon']:+7d} KiB file {now['RssFile']-prev['RssFile']:+7d} KiB  total {now['VmRSS']-base['VmRSS']:7d} KiB above python; threads {len(os.listdir('/proc/self/task'))}", flush=True); prev = now
flags = int(sys.argv[1]) if len(sys.argv) > 1 else 0
n = ctypes.CDLL("libnvidia-ml.so.1"); step("dlopen libnvidia-ml")
print("rc", n.nvmlInitWithFlags(flags)); step(f"nvmlInitWithFlags({flags})")
print("libs:", [m for m in maps()])
h = ctypes.c_void_p(); print("rc", n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))); step("handle 0")
u = (ctypes.c_uint * 2)(); n.nvmlDeviceGetUtilizationRates(h, u); step("utilization")
p = ctypes.c_uint(); n.nvmlDeviceGetPowerUsage(h, ctypes.byref(p)); step("power")
e = ctypes.c_ulonglong(); n.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(e)); step("energy")
cnt = ctypes.c_uint(64); buf = (ctypes.c_ulonglong * (64 * 6))(); n.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(cnt), buf); step("compute processes")
cnt = ctypes.c_uint(64); buf2 = (ctypes.c_ulonglong * (64 * 4))(); n.nvmlDeviceGetProcessUtilization(h, buf2, ctypes.byref(cnt), ctypes.c_ulonglong(0)); step("process utilization")
s1 = ctypes.c_void_p(); s2 = ctypes.c_void_p(); print("rc", n.nvmlGpmSampleAlloc(ctypes.byref(s1)), n.nvmlGpmSampleAlloc(ctypes.byref(s2))); step("2x nvmlGpmSampleAlloc")
print("rc", n.nvmlGpmSampleGet(h, s1)); step("nvmlGpmSampleGet")
import time; time.sleep(0.2); n.nvmlGpmSampleGet(h, s2); step("nvmlGpmSampleGet 2")
print("libs:", [m for m in maps()])
print("final", rss())
