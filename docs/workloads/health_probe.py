"""What an H200 in this VM says about its health, and what each call costs (issue 29): ECC
(mode, volatile/aggregate corrected/uncorrected), retired pages, remapped rows, the PCIe replay
counter, NVLink links (state, error counters), the event types the driver offers (and a short
wait on an event set for XIDs), the energy counter, and the same through field values.
Each call is made 50 times; its CPU cost per call (thread time) and its return code are
printed. Prints one JSON object. usage: python3 health_probe.py [GPU]
"""
import ctypes as C, json, sys, time

nv = C.CDLL("libnvidia-ml.so.1")
gpu = int(sys.argv[1]) if len(sys.argv) > 1 else 0
assert nv.nvmlInit_v2() == 0
h = C.c_void_p()
assert nv.nvmlDeviceGetHandleByIndex_v2(gpu, C.byref(h)) == 0
out = {"gpu": gpu}
nv.nvmlErrorString.restype = C.c_char_p
err = lambda rc: nv.nvmlErrorString(rc).decode() if rc else "ok"


def call(name, fn, *args, reps=50):
    t = time.thread_time_ns()
    for _ in range(reps):
        rc = fn(*args)
    cost = (time.thread_time_ns() - t) / reps / 1000
    return rc, round(cost, 2)


def rec(key, rc, cost, value):
    out[key] = {"rc": rc, "error": err(rc), "cpu_us": cost, "value": value if rc == 0 else None}


cur, pend = C.c_uint(), C.c_uint()
rc, c = call("ecc", nv.nvmlDeviceGetEccMode, h, C.byref(cur), C.byref(pend))
rec("ecc_mode", rc, c, [cur.value, pend.value])
for et, en in ((0, "corrected"), (1, "uncorrected")):
    for ct, cn in ((0, "volatile"), (1, "aggregate")):
        v = C.c_ulonglong()
        rc, c = call("", nv.nvmlDeviceGetTotalEccErrors, h, et, ct, C.byref(v))
        rec(f"ecc_{en}_{cn}", rc, c, v.value)
for cause, n in ((0, "sbe"), (1, "dbe")):
    cnt = C.c_uint(0)
    rc, c = call("", nv.nvmlDeviceGetRetiredPages, h, cause, C.byref(cnt), None)
    rec(f"retired_pages_{n}", rc, c, cnt.value)
p = C.c_uint()
rc, c = call("", nv.nvmlDeviceGetRetiredPagesPendingStatus, h, C.byref(p))
rec("retired_pending", rc, c, p.value)
a, b, pe, f = C.c_uint(), C.c_uint(), C.c_uint(), C.c_uint()
rc, c = call("", nv.nvmlDeviceGetRemappedRows, h, C.byref(a), C.byref(b), C.byref(pe), C.byref(f))
rec("remapped_rows", rc, c, {"corr": a.value, "unc": b.value, "pending": pe.value, "failure": f.value})
r = C.c_uint()
rc, c = call("", nv.nvmlDeviceGetPcieReplayCounter, h, C.byref(r))
rec("pcie_replay", rc, c, r.value)
e = C.c_ulonglong()
rc, c = call("", nv.nvmlDeviceGetTotalEnergyConsumption, h, C.byref(e), reps=5)
rec("energy_mj", rc, c, e.value)
links = {}
for link in range(18):
    s = C.c_uint()
    rc, c = call("", nv.nvmlDeviceGetNvLinkState, h, link, C.byref(s), reps=5)
    entry = {"rc": rc, "error": err(rc), "cpu_us": c, "active": s.value if rc == 0 else None}
    if rc == 0:
        errs = {}
        for k in range(4):  # DL replay, recovery, CRC flit, CRC data
            v = C.c_ulonglong()
            rc2, c2 = call("", nv.nvmlDeviceGetNvLinkErrorCounter, h, link, k, C.byref(v), reps=5)
            errs[k] = [rc2, v.value if rc2 == 0 else None, c2]
        entry["errors"] = errs
    links[link] = entry
out["nvlink"] = links
sup = C.c_ulonglong()
rc, c = call("", nv.nvmlDeviceGetSupportedEventTypes, h, C.byref(sup), reps=5)
rec("supported_event_types", rc, c, hex(sup.value))


class FV(C.Structure):
    _fields_ = [("fieldId", C.c_uint), ("scopeId", C.c_uint), ("timestamp", C.c_longlong),
                ("latencyUsec", C.c_longlong), ("valueType", C.c_int), ("nvmlReturn", C.c_int),
                ("value", C.c_ulonglong)]


ids = [1, 2, 3, 4, 5, 6, 29, 30, 31, 91, 94, 95, 138, 139, 142, 143, 144, 145, 160, 161, 162,
       163, 165, 169, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 191, 213, 214, 215,
       226, 227, 230]
arr = (FV * len(ids))()
for i, fid in enumerate(ids):
    arr[i].fieldId = fid
    arr[i].scopeId = 0xFFFFFFFF if fid in (138, 139) else 0
rc, c = call("", nv.nvmlDeviceGetFieldValues, h, len(ids), arr, reps=5)
out["field_values"] = {"rc": rc, "cpu_us_all": c,
                       "values": {arr[i].fieldId: [arr[i].nvmlReturn, arr[i].valueType,
                                                   arr[i].value if arr[i].nvmlReturn == 0 else None]
                                  for i in range(len(ids))}}


class ED(C.Structure):
    _fields_ = [("device", C.c_void_p), ("eventType", C.c_ulonglong), ("eventData", C.c_ulonglong),
                ("gpuInstanceId", C.c_uint), ("computeInstanceId", C.c_uint)]


es = C.c_void_p()
rc = nv.nvmlEventSetCreate(C.byref(es))
out["event_set_create"] = err(rc)
if rc == 0:
    types = sup.value or 0x8
    rc = nv.nvmlDeviceRegisterEvents(h, C.c_ulonglong(types), es)
    out["register_events"] = [hex(types), err(rc)]
    if rc != 0:  # some types may need privileges: try XID alone
        rc = nv.nvmlDeviceRegisterEvents(h, C.c_ulonglong(0x8), es)
        out["register_xid_only"] = err(rc)
    d = ED()
    t = time.time(); tt = time.thread_time_ns()
    rc = nv.nvmlEventSetWait_v2(es, C.byref(d), 500)
    out["event_wait_500ms"] = {"rc": err(rc), "wall_s": round(time.time() - t, 3),
                               "cpu_us": (time.thread_time_ns() - tt) / 1000,
                               "event": [hex(d.eventType), d.eventData] if rc == 0 else None}
    nv.nvmlEventSetFree(es)
print(json.dumps(out))
