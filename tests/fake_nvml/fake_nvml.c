/* A stand-in for libnvidia-ml.so.1 on machines without a GPU (tests/nvml_calls.rs builds it
 * with `cc -shared` and passes it to gpuwatch with --nvml-lib). It answers the calls of
 * gpuwatch's fast tick and its device facts with fixed H200-like readings, answers every other
 * function of the API with NVML_ERROR_NOT_SUPPORTED (as a GPU lacking that feature does), and
 * counts every call: at exit it writes "name count" lines to $FAKE_NVML_COUNTS.
 *
 * $FAKE_NVML_GPUS: how many GPUs (1 to 8, default 1).
 * $FAKE_NVML_LOST_AFTER: after this many utilization reads, every device call answers
 * NVML_ERROR_GPU_IS_LOST (the GPU fell off the bus).
 * $FAKE_NVML_UTIL_UNKNOWN_AFTER: after this many utilization reads, that read alone answers
 * NVML_ERROR_UNKNOWN.
 * $FAKE_NVML_PIDS: PIDs (comma-separated, at most 16) of the compute processes on GPU 0, each
 * holding 8 GiB.
 *
 * Not NVML's semantics beyond that: no graphics processes, no GPM, no events, no MIG. */

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST 15

#define IMPLEMENTED(X) X(nvmlInit_v2) X(nvmlInit) X(nvmlInitWithFlags) X(nvmlShutdown) \
    X(nvmlErrorString) X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetHandleByIndex_v2)           \
    X(nvmlDeviceGetIndex) X(nvmlDeviceGetName) X(nvmlDeviceGetUUID)                          \
    X(nvmlDeviceGetUtilizationRates) X(nvmlDeviceGetPowerUsage) X(nvmlDeviceGetTemperature)  \
    X(nvmlDeviceGetClockInfo) X(nvmlDeviceGetPerformanceState)                               \
    X(nvmlDeviceGetCurrentClocksThrottleReasons) X(nvmlDeviceGetMemoryInfo_v2)               \
    X(nvmlDeviceGetEnforcedPowerLimit) X(nvmlSystemGetDriverVersion)                         \
    X(nvmlSystemGetNVMLVersion) X(nvmlSystemGetCudaDriverVersion_v2)                         \
    X(nvmlDeviceGetComputeRunningProcesses_v3)

enum call {
#define AS_ENUM(name) C_##name,
    IMPLEMENTED(AS_ENUM)
#define STUB(name) C_##name,
#include "stubs.h"
#undef STUB
    C_COUNT
};

static const char *const NAMES[C_COUNT] = {
#define AS_NAME(name) #name,
    IMPLEMENTED(AS_NAME)
#define STUB(name) #name,
#include "stubs.h"
#undef STUB
};

static unsigned long counts[C_COUNT];
#define COUNT(name) __atomic_fetch_add(&counts[C_##name], 1, __ATOMIC_RELAXED)

/* The rest of the API. Each takes its arguments in registers or on the caller's stack, which
 * the caller cleans up (x86-64 System V), so one body that reads none serves every signature. */
#define STUB(name)                                                                           \
    nvmlReturn_t name(void) {                                                                \
        COUNT(name);                                                                         \
        return NVML_ERROR_NOT_SUPPORTED;                                                     \
    }
#include "stubs.h"
#undef STUB

struct gpu {
    unsigned index;
};
static struct gpu GPUS[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
typedef struct gpu *nvmlDevice_t;

static unsigned gpus(void) {
    const char *n = getenv("FAKE_NVML_GPUS");
    unsigned v = n ? (unsigned)atoi(n) : 1;
    return v < 1 ? 1 : v > 8 ? 8 : v;
}

/* Whether a handle is one of ours: compared as integers, since C defines `<` only between
 * pointers into one object and a bad handle points anywhere. */
static int is_gpu(const struct gpu *d) {
    uintptr_t p = (uintptr_t)d, first = (uintptr_t)GPUS;
    return p >= first && p < first + gpus() * sizeof *GPUS && (p - first) % sizeof *GPUS == 0;
}

static unsigned long util_reads;

/* Whether the GPUs have fallen off the bus: after $FAKE_NVML_LOST_AFTER utilization reads,
 * and until $FAKE_NVML_LOST_UNTIL reads if that is set (then they answer again). */
static int lost(void) {
    const char *after = getenv("FAKE_NVML_LOST_AFTER"), *until = getenv("FAKE_NVML_LOST_UNTIL");
    unsigned long reads = __atomic_load_n(&util_reads, __ATOMIC_RELAXED);
    return after && reads > strtoul(after, NULL, 10) &&
           (until == NULL || reads <= strtoul(until, NULL, 10));
}

#define DEVICE_CALL(name, device)                                                            \
    COUNT(name);                                                                             \
    if (!is_gpu(device))                                                                     \
        return NVML_ERROR_INVALID_ARGUMENT;                                                  \
    if (lost())                                                                              \
        return NVML_ERROR_GPU_IS_LOST;

nvmlReturn_t nvmlInit_v2(void) { COUNT(nvmlInit_v2); return NVML_SUCCESS; }
nvmlReturn_t nvmlInit(void) { COUNT(nvmlInit); return NVML_SUCCESS; }
nvmlReturn_t nvmlInitWithFlags(unsigned flags) { (void)flags; COUNT(nvmlInitWithFlags); return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { COUNT(nvmlShutdown); return NVML_SUCCESS; }

const char *nvmlErrorString(nvmlReturn_t r) {
    (void)r;
    COUNT(nvmlErrorString);
    return "fake NVML error";
}

static nvmlReturn_t text(char *out, unsigned len, const char *s) {
    if (out == NULL || len <= strlen(s))
        return NVML_ERROR_INVALID_ARGUMENT;
    strcpy(out, s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len) {
    COUNT(nvmlSystemGetDriverVersion);
    return text(v, len, "580.00-fake");
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len) {
    COUNT(nvmlSystemGetNVMLVersion);
    return text(v, len, "13.580.00-fake");
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
    COUNT(nvmlSystemGetCudaDriverVersion_v2);
    *v = 13000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) {
    COUNT(nvmlDeviceGetCount_v2);
    *n = gpus();
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d) {
    COUNT(nvmlDeviceGetHandleByIndex_v2);
    if (i >= gpus())
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &GPUS[i];
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *i) {
    DEVICE_CALL(nvmlDeviceGetIndex, d);
    *i = d->index;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len) {
    DEVICE_CALL(nvmlDeviceGetName, d);
    return text(name, len, "NVIDIA H200 (fake NVML)");
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len) {
    DEVICE_CALL(nvmlDeviceGetUUID, d);
    char s[64];
    snprintf(s, sizeof s, "GPU-fa4e0000-0000-0000-0000-00000000000%u", d->index);
    return text(uuid, len, s);
}

typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    __atomic_fetch_add(&util_reads, 1, __ATOMIC_RELAXED);
    DEVICE_CALL(nvmlDeviceGetUtilizationRates, d);
    const char *unknown = getenv("FAKE_NVML_UTIL_UNKNOWN_AFTER");
    if (unknown && __atomic_load_n(&util_reads, __ATOMIC_RELAXED) > strtoul(unknown, NULL, 10))
        return 999; /* NVML_ERROR_UNKNOWN */
    u->gpu = 97;
    u->memory = 30;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw) {
    DEVICE_CALL(nvmlDeviceGetPowerUsage, d);
    *mw = 250000 + 1000 * d->index;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *mw) {
    DEVICE_CALL(nvmlDeviceGetEnforcedPowerLimit, d);
    *mw = 700000;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c) {
    DEVICE_CALL(nvmlDeviceGetTemperature, d);
    if (sensor != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *c = 55;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int clock, unsigned *mhz) {
    DEVICE_CALL(nvmlDeviceGetClockInfo, d);
    /* NVML_CLOCK_GRAPHICS 0, SM 1, MEM 2, VIDEO 3 */
    static const unsigned MHZ[4] = {1980, 1980, 3201, 1665};
    if (clock < 0 || clock > 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mhz = MHZ[clock];
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *p) {
    DEVICE_CALL(nvmlDeviceGetPerformanceState, d);
    *p = 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) {
    DEVICE_CALL(nvmlDeviceGetCurrentClocksThrottleReasons, d);
    *r = 0;
    return NVML_SUCCESS;
}

typedef struct {
    unsigned version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
    DEVICE_CALL(nvmlDeviceGetMemoryInfo_v2, d);
    if ((m->version >> 24) != 2 || (m->version & 0xffffff) != sizeof *m)
        return NVML_ERROR_INVALID_ARGUMENT; /* NVML checks the struct's version too */
    m->total = 150754820096ULL;
    m->reserved = 0;
    m->used = 70ULL << 30;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

/* As NVML: asked with too small a buffer (nvml-wrapper first asks with none), it says how
 * many there are. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count,
                                                     nvmlProcessInfo_t *infos) {
    DEVICE_CALL(nvmlDeviceGetComputeRunningProcesses_v3, d);
    unsigned pids[16], n = 0;
    const char *list = d->index == 0 ? getenv("FAKE_NVML_PIDS") : NULL;
    for (const char *p = list; p && *p && n < 16;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p)
            break;
        pids[n++] = (unsigned)v;
        p = *end == ',' ? end + 1 : end;
    }
    if (n > 0 && (infos == NULL || *count < n)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; i++) {
        infos[i].pid = pids[i];
        infos[i].usedGpuMemory = 8ULL << 30;
        infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFFu;
    }
    *count = n;
    return NVML_SUCCESS;
}

/* What was called, written once gpuwatch exits. */
__attribute__((destructor)) static void write_counts(void) {
    const char *path = getenv("FAKE_NVML_COUNTS");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f == NULL)
        return;
    for (int i = 0; i < C_COUNT; i++)
        if (counts[i])
            fprintf(f, "%s %lu\n", NAMES[i], counts[i]);
    fclose(f);
}
