"""Which NVML calls map NVML's and libcuda's pages (#28): gpuwatch holds about 1.4 MiB more of
libnvidia-ml and libcuda than a bare client that only reads utilization, power and processes
(run 76). A bare ctypes client makes each call gpuwatch makes, in the order its fast and slow
ticks do, and prints what each one added to the two libraries' resident pages (/proc/self/smaps)
and to the anonymous memory."""
import ctypes, os, time

def resident():
    out, cur = {"libcuda": 0, "nvidia-ml": 0}, None
    for l in open("/proc/self/smaps"):
        f = l.split()
        if len(f) >= 5 and "-" in f[0] and ":" in f[3]:
            cur = next((k for k in out if len(f) > 5 and k in f[5]), None)
        elif cur and f[0] == "Rss:":
            out[cur] += int(f[1])
    st = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("RssAnon")}
    out["anon"] = st["RssAnon"]
    return out

prev = resident()
def step(name, rc=None):
    global prev
    now = resident()
    d = {k: now[k] - prev[k] for k in now}
    print(f"{name:44s} rc {rc!s:4} libcuda {d['libcuda']:+6d} nvml {d['nvidia-ml']:+6d} anon {d['anon']:+6d} KiB"
          f"  (libcuda {now['libcuda']}, nvml {now['nvidia-ml']})", flush=True)
    prev = now

n = ctypes.CDLL("libnvidia-ml.so.1"); step("dlopen")
step("nvmlInit_v2", n.nvmlInit_v2())
U, ULL, B = ctypes.c_uint, ctypes.c_ulonglong, ctypes.create_string_buffer
def r(x): return ctypes.byref(x)
c = U(); step("DeviceGetCount_v2", n.nvmlDeviceGetCount_v2(r(c)))
h = ctypes.c_void_p(); step("DeviceGetHandleByIndex_v2", n.nvmlDeviceGetHandleByIndex_v2(0, r(h)))
b = B(256)
step("SystemGetDriverVersion", n.nvmlSystemGetDriverVersion(b, 80))
step("SystemGetNVMLVersion", n.nvmlSystemGetNVMLVersion(b, 80))
i = ctypes.c_int(); step("SystemGetCudaDriverVersion_v2", n.nvmlSystemGetCudaDriverVersion_v2(r(i)))
step("DeviceGetName", n.nvmlDeviceGetName(h, b, 96))
step("DeviceGetUUID", n.nvmlDeviceGetUUID(h, b, 96))
step("DeviceGetPciInfo_v3", n.nvmlDeviceGetPciInfo_v3(h, B(128)))
cur, pend = U(), U(); step("DeviceGetMigMode", n.nvmlDeviceGetMigMode(h, r(cur), r(pend)))
step("DeviceGetPersistenceMode", n.nvmlDeviceGetPersistenceMode(h, r(U())))
step("DeviceGetNumFans", n.nvmlDeviceGetNumFans(h, r(U())))
step("DeviceGetGpmSupport? (QueryDeviceSupport)", n.nvmlGpmQueryDeviceSupport(h, B(64)))
# fast tick
u = (U * 2)(); step("DeviceGetUtilizationRates", n.nvmlDeviceGetUtilizationRates(h, u))
step("DeviceGetPowerUsage", n.nvmlDeviceGetPowerUsage(h, r(U())))
step("DeviceGetTotalEnergyConsumption", n.nvmlDeviceGetTotalEnergyConsumption(h, r(ULL())))
step("DeviceGetMemoryInfo", n.nvmlDeviceGetMemoryInfo(h, B(64)))
step("DeviceGetTemperature", n.nvmlDeviceGetTemperature(h, 0, r(U())))
for k in range(4):
    n.nvmlDeviceGetClockInfo(h, k, r(U()))
step("DeviceGetClockInfo x4")
step("DeviceGetCurrentClocksThrottleReasons", n.nvmlDeviceGetCurrentClocksThrottleReasons(h, r(ULL())))
step("DeviceGetPerformanceState", n.nvmlDeviceGetPerformanceState(h, r(U())))
cnt = U(64); step("DeviceGetComputeRunningProcesses_v3", n.nvmlDeviceGetComputeRunningProcesses_v3(h, r(cnt), B(64 * 48)))
cnt = U(64); step("DeviceGetGraphicsRunningProcesses_v3", n.nvmlDeviceGetGraphicsRunningProcesses_v3(h, r(cnt), B(64 * 48)))
cnt = U(64); step("DeviceGetProcessUtilization", n.nvmlDeviceGetProcessUtilization(h, B(64 * 32), r(cnt), ULL(0)))
s1, s2 = ctypes.c_void_p(), ctypes.c_void_p(); n.nvmlGpmSampleAlloc(r(s1)); n.nvmlGpmSampleAlloc(r(s2)); step("GpmSampleAlloc x2")
step("GpmSampleGet", n.nvmlGpmSampleGet(h, s1)); time.sleep(0.1); n.nvmlGpmSampleGet(h, s2); step("GpmSampleGet 2")
# slow tick
for k in range(4):
    n.nvmlDeviceGetMaxClockInfo(h, k, r(U()))
step("DeviceGetMaxClockInfo x4")
step("DeviceGetEnforcedPowerLimit", n.nvmlDeviceGetEnforcedPowerLimit(h, r(U())))
step("DeviceGetPowerManagementDefaultLimit", n.nvmlDeviceGetPowerManagementDefaultLimit(h, r(U())))
step("DeviceGetPowerManagementLimitConstraints", n.nvmlDeviceGetPowerManagementLimitConstraints(h, r(U()), r(U())))
step("DeviceGetTemperatureThreshold", n.nvmlDeviceGetTemperatureThreshold(h, 0, r(U())))
step("DeviceGetFanSpeed", n.nvmlDeviceGetFanSpeed(h, r(U())))
step("DeviceGetPcieThroughput tx", n.nvmlDeviceGetPcieThroughput(h, 0, r(U())))
step("DeviceGetPcieThroughput rx", n.nvmlDeviceGetPcieThroughput(h, 1, r(U())))
step("DeviceGetPcieReplayCounter", n.nvmlDeviceGetPcieReplayCounter(h, r(U())))
step("DeviceGetCurrPcieLinkGeneration", n.nvmlDeviceGetCurrPcieLinkGeneration(h, r(U())))
step("DeviceGetCurrPcieLinkWidth", n.nvmlDeviceGetCurrPcieLinkWidth(h, r(U())))
step("DeviceGetMaxPcieLinkGeneration", n.nvmlDeviceGetMaxPcieLinkGeneration(h, r(U())))
step("DeviceGetMaxPcieLinkWidth", n.nvmlDeviceGetMaxPcieLinkWidth(h, r(U())))
step("DeviceGetTotalEccErrors", n.nvmlDeviceGetTotalEccErrors(h, 1, 1, r(ULL())))
fv = B(40 * 4)
for k, fid in enumerate((142, 143, 144, 145)):
    ctypes.memmove(ctypes.addressof(fv) + 40 * k, ctypes.byref(U(fid)), 4)
step("DeviceGetFieldValues (remap)", n.nvmlDeviceGetFieldValues(h, 4, fv))
for l in range(18):
    if n.nvmlDeviceGetNvLinkState(h, l, r(U())) != 0:
        break
step(f"DeviceGetNvLinkState x{l + 1}")
for l in range(18):
    n.nvmlDeviceGetNvLinkErrorCounter(h, l, 0, r(ULL()))
step("DeviceGetNvLinkErrorCounter x18")
es = ctypes.c_void_p(); step("EventSetCreate", n.nvmlEventSetCreate(r(es)))
ty = ULL(); step("DeviceGetSupportedEventTypes", n.nvmlDeviceGetSupportedEventTypes(h, r(ty)))
step("DeviceRegisterEvents", n.nvmlDeviceRegisterEvents(h, ty, es))
step("EventSetWait_v2 (100 ms)", n.nvmlEventSetWait_v2(es, B(64), 100))
t0 = time.time()
while time.time() - t0 < 5:
    n.nvmlDeviceGetUtilizationRates(h, u); n.nvmlGpmSampleGet(h, s1); n.nvmlEventSetWait_v2(es, B(64), 100)
step("5 s of fast ticks")
print("total", resident())
