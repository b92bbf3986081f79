"""Wall and CPU time of each NVML call gpuwatch makes, on this GPU (ctypes, no wrapper)."""
import ctypes as C, time, json, sys
n = C.CDLL("libnvidia-ml.so.1"); assert n.nvmlInit_v2() == 0
h = C.c_void_p(); n.nvmlDeviceGetHandleByIndex_v2(0, C.byref(h))
def cost(name, fn, reps):
    fn(); w0 = time.perf_counter(); c0 = time.thread_time()
    for _ in range(reps): rc = fn()
    w = (time.perf_counter() - w0) / reps * 1e6; c = (time.thread_time() - c0) / reps * 1e6
    print(json.dumps({"call": name, "rc": rc, "wall_us": round(w, 1), "cpu_us": round(c, 1), "reps": reps}), flush=True)
buf = (C.c_ubyte * 65536)(); cnt = C.c_uint()
def putil():
    cnt.value = 0; r1 = n.nvmlDeviceGetProcessUtilization(h, None, C.byref(cnt), C.c_ulonglong(0))
    cnt.value = 1000; return (r1, n.nvmlDeviceGetProcessUtilization(h, buf, C.byref(cnt), C.c_ulonglong(0)), cnt.value)
print(putil())
cost("process_utilization_stats count+fill ts=0", putil, 20)
def putil_count():
    cnt.value = 0; return n.nvmlDeviceGetProcessUtilization(h, None, C.byref(cnt), C.c_ulonglong(int(time.time() * 1e6) - 2_000_000))
cost("process_utilization count only, last 2 s", putil_count, 20)
def putil_recent():
    cnt.value = 1000; return n.nvmlDeviceGetProcessUtilization(h, buf, C.byref(cnt), C.c_ulonglong(int(time.time() * 1e6) - 2_000_000))
cost("process_utilization fill only, last 2 s", putil_recent, 20)
def alloc_free():
    s = C.c_void_p(); n.nvmlGpmSampleAlloc(C.byref(s)); return n.nvmlGpmSampleFree(s)
cost("gpm alloc+free", alloc_free, 50)
s1 = C.c_void_p(); s2 = C.c_void_p(); n.nvmlGpmSampleAlloc(C.byref(s1)); n.nvmlGpmSampleAlloc(C.byref(s2))
n.nvmlGpmSampleGet(h, s1); time.sleep(0.2); n.nvmlGpmSampleGet(h, s2)
class Metric(C.Structure): _fields_ = [("id", C.c_uint), ("ret", C.c_int), ("value", C.c_double), ("s", C.c_char_p), ("l", C.c_char_p), ("u", C.c_char_p)]
class Get(C.Structure): _fields_ = [("version", C.c_uint), ("num", C.c_uint), ("s1", C.c_void_p), ("s2", C.c_void_p), ("m", Metric * 400)]
def metrics(ids):
    g = Get(); g.version = 1; g.num = len(ids); g.s1 = s1; g.s2 = s2
    for i, m in enumerate(ids): g.m[i].id = m
    def f():
        return n.nvmlGpmMetricsGet(C.byref(g))
    f(); print("values", [(g.m[i].id, g.m[i].ret, round(g.m[i].value, 2)) for i in range(len(ids))])
    return f
for ids in ([1], [3], [11, 12, 13], [2, 5, 10, 11, 12, 13, 20, 21], [4], [6, 7, 9]):
    cost(f"gpm_metrics_get{ids}", metrics(ids), 30)
