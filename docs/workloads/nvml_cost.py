"""Wall and CPU time of each NVML call gpuwatch makes, on this GPU (ctypes, no wrapper)."""
import ctypes as C, time, json, sys
n = C.CDLL("libnvidia-ml.so.1"); assert n.nvmlInit_v2() == 0
h = C.c_void_p(); n.nvmlDeviceGetHandleByIndex_v2(0, C.byref(h))
def cost(name, fn, reps):
    fn(); w0 = time.perf_counter(); c0 = time.thread_time()
    for _ in range(reps): rc = fn()
    w = (time.perf_counter() - w0) / reps * 1e6; c = (time.thread_time() - c0) / reps * 1e6
    print(json.dumps({"call": name, "rc": rc, "wall_us": round(w, 1), "cpu_us": round(c, 1), "reps": reps}), flush=True)
u = (C.c_uint * 2)(); p = C.c_uint(); e = C.c_ulonglong(); mem = (C.c_ulonglong * 3)()
cost("utilization_rates", lambda: n.nvmlDeviceGetUtilizationRates(h, u), 500)
cost("power_usage", lambda: n.nvmlDeviceGetPowerUsage(h, C.byref(p)), 500)
cost("temperature", lambda: n.nvmlDeviceGetTemperature(h, 0, C.byref(p)), 500)
cost("clock_info(SM)", lambda: n.nvmlDeviceGetClockInfo(h, 1, C.byref(p)), 500)
cost("current_throttle_reasons", lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h, C.byref(e)), 500)
cost("performance_state", lambda: n.nvmlDeviceGetPerformanceState(h, C.byref(p)), 500)
cost("memory_info", lambda: n.nvmlDeviceGetMemoryInfo(h, mem), 200)
cost("current_pcie_link_width", lambda: n.nvmlDeviceGetCurrPcieLinkWidth(h, C.byref(p)), 200)
cost("current_pcie_link_gen", lambda: n.nvmlDeviceGetCurrPcieLinkGeneration(h, C.byref(p)), 200)
cost("enforced_power_limit", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h, C.byref(p)), 200)
cost("total_energy_consumption", lambda: n.nvmlDeviceGetTotalEnergyConsumption(h, C.byref(e)), 40)
buf = (C.c_ubyte * 8192)(); cnt = C.c_uint()
def procs():
    cnt.value = 64; return n.nvmlDeviceGetComputeRunningProcesses_v3(h, C.byref(cnt), buf)
cost("running_compute_processes", procs, 100)
def gprocs():
    cnt.value = 64; return n.nvmlDeviceGetGraphicsRunningProcesses_v3(h, C.byref(cnt), buf)
cost("running_graphics_processes", gprocs, 100)
def putil():
    cnt.value = 64; return n.nvmlDeviceGetProcessUtilization(h, buf, C.byref(cnt), C.c_ulonglong(0))
cost("process_utilization_stats", putil, 40)
s1 = C.c_void_p(); s2 = C.c_void_p(); n.nvmlGpmSampleAlloc(C.byref(s1)); n.nvmlGpmSampleAlloc(C.byref(s2))
cost("gpm_sample(get only)", lambda: n.nvmlGpmSampleGet(h, s1), 50)
time.sleep(0.2); n.nvmlGpmSampleGet(h, s2)
class Metric(C.Structure): _fields_ = [("id", C.c_uint), ("ret", C.c_int), ("value", C.c_double), ("s", C.c_char_p), ("l", C.c_char_p), ("u", C.c_char_p)]
class Get(C.Structure): _fields_ = [("version", C.c_uint), ("num", C.c_uint), ("s1", C.c_void_p), ("s2", C.c_void_p), ("m", Metric * 400)]
def metrics(ids):
    g = Get(); g.version = 1; g.num = len(ids); g.s1 = s1; g.s2 = s2
    for i, m in enumerate(ids): g.m[i].id = m
    def f():
        return n.nvmlGpmMetricsGet(C.byref(g))
    f(); print("values", [(g.m[i].id, g.m[i].ret, round(g.m[i].value, 2)) for i in range(len(ids))])
    return f
ALL10 = [2, 3, 5, 10, 1, 13, 12, 11, 20, 21]
for ids in (ALL10, [2, 5, 10, 20, 21], [2, 5, 10], [2], [1, 2, 3, 5, 10]):
    cost(f"gpm_metrics_get{ids}", metrics(ids), 50)
def putil_recent():
    cnt.value = 64; return n.nvmlDeviceGetProcessUtilization(h, buf, C.byref(cnt), C.c_ulonglong(int(time.time() * 1e6) - 2_000_000))
cost("process_utilization_stats(last 2 s)", putil_recent, 40)
