//! What `/metrics` says, family by family, every GPU in order within each: the counters and
//! gauges NVML gives, the idle floor, every rule's finding on every GPU (0 or 1, so alerts need
//! no `absent()`), what watching costs; opt-in, the top processes of each GPU and the names the
//! standard DCGM dashboard reads.

mod dcgm;
mod health;
mod processes;

use anyhow::Result;

use super::exposition::{label, Exposition, Kind};
use crate::history::DeviceHistory;
use crate::model::{clock_event, DeviceInfo, DeviceSample, DeviceStatus};
use crate::monitor::Store;
use crate::rules::all_rules;
use dcgm::dcgm_families;
use health::health_families;
use processes::{job_families, process_families};

/// What `/metrics` adds to the gpuwatch metrics when asked (`serve --processes N`,
/// `--dcgm-compat`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    /// Per-process series for the N processes using the most memory on each GPU (0: none).
    pub processes: usize,
    /// The `DCGM_FI_*` names and units the standard DCGM dashboard reads.
    pub dcgm: bool,
}

/// The `/metrics` text: `OpenMetrics` when `openmetrics`, else the Prometheus text format.
pub fn metrics_text(store: &Store, host: &str, openmetrics: bool) -> Result<String> {
    metrics_text_with(store, host, openmetrics, Extras::default())
}

/// `metrics_text` with the opt-in series of `extras`.
pub fn metrics_text_with(
    store: &Store,
    host: &str,
    openmetrics: bool,
    extras: Extras,
) -> Result<String> {
    let devices = &store.history().devices;
    // Each GPU's label set, written once for all its series.
    let ids: Vec<String> = devices.iter().map(|d| gpu_labels(&d.info, host)).collect();
    let mut e = Exposition::new(openmetrics);
    gpu_families(&mut e, store, &ids);
    finding_families(&mut e, store, &ids);
    self_families(&mut e, store);
    if extras.processes > 0 {
        process_families(&mut e, devices, &ids, extras.processes);
    }
    if extras.dcgm {
        dcgm_families(&mut e, devices, &store.history().events, host);
    }
    Ok(e.finish())
}

/// The labels that identify a GPU, spelled as dcgm-exporter spells them so dashboards join.
/// A MIG instance, as dcgm-exporter labels it: `gpu` and `UUID` of its GPU, then
/// `GPU_I_PROFILE` and `GPU_I_ID` (a whole GPU has neither).
fn gpu_labels(info: &DeviceInfo, host: &str) -> String {
    let (gpu, uuid) = gpu_and_uuid(info);
    let mut labels = vec![
        label("gpu", &gpu.to_string()),
        label("UUID", uuid),
        label("pci_bus_id", &info.pci_bus_id),
        label("modelName", &info.name),
    ];
    labels.extend(mig_labels(info));
    labels.push(label("Hostname", host));
    labels.join(",")
}

/// The GPU a device is (or is part of) and that GPU's UUID.
fn gpu_and_uuid(info: &DeviceInfo) -> (u32, &str) {
    match &info.mig {
        Some(m) => (m.parent, m.parent_uuid.as_str()),
        None => (info.index, info.uuid.as_str()),
    }
}

/// `GPU_I_PROFILE` and `GPU_I_ID` of a MIG instance; nothing for a whole GPU.
fn mig_labels(info: &DeviceInfo) -> Vec<String> {
    info.mig.as_ref().map_or_else(Vec::new, |m| {
        vec![
            label("GPU_I_PROFILE", &m.profile),
            label("GPU_I_ID", &m.gpu_instance.to_string()),
        ]
    })
}

/// A value measured as an `f32` (and perhaps scaled), to the 7 significant digits an f32
/// holds: `f64::from(0.87_f32)` is 0.8700000047683716, noise a reader of /metrics took for a
/// measurement.
fn decimal(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let k = 10f64.powi(6 - x.abs().log10().floor() as i32);
    (x * k).round() / k
}

fn ratio(v: Option<f32>) -> Option<f64> {
    v.map(|p| decimal(f64::from(p) / 100.0))
}

fn watts(v: Option<f32>) -> Option<f64> {
    v.map(|w| decimal(f64::from(w)))
}

/// What a GPU gauge reads: its history, its latest sample (none once it is lost), the store.
type Read = fn(&DeviceHistory, Option<&DeviceSample>, &Store) -> Option<f64>;

/// The per-GPU gauges: name, help, unit, how each reads. Unsupported is absent, not 0.
const GPU_GAUGES: &[(&str, &str, Option<&str>, Read)] = &[
    (
        "gpuwatch_up",
        "1 while the GPU answers, 0 once it fell off the bus",
        None,
        |d, _, _| Some(if lost(d) { 0.0 } else { 1.0 }),
    ),
    (
        "gpuwatch_utilization",
        "GPU utilization (NVML): share of time a kernel ran",
        Some("ratio"),
        |_, s, _| ratio(s?.util_gpu_pct),
    ),
    (
        "gpuwatch_memory_used",
        "GPU memory in use",
        Some("bytes"),
        |_, s, _| s?.mem_used_bytes.map(|b| b as f64),
    ),
    (
        "gpuwatch_memory_total",
        "GPU memory in all",
        Some("bytes"),
        |d, _, _| d.info.memory_total_bytes.map(|b| b as f64),
    ),
    ("gpuwatch_power", "power draw", Some("watts"), |_, s, _| {
        watts(s?.power_w)
    }),
    (
        "gpuwatch_power_limit_enforced",
        "enforced power limit",
        Some("watts"),
        |d, s, _| watts(s?.power_limit_w.or(d.info.power_limit_enforced_w)),
    ),
    (
        "gpuwatch_power_limit_default",
        "default power limit (TDP)",
        Some("watts"),
        |d, _, _| watts(d.info.power_limit_default_w),
    ),
    (
        "gpuwatch_idle_floor",
        "the idle power the rules judge against",
        Some("watts"),
        |d, _, store| watts(store.findings().floor_w(d.info.index)),
    ),
    (
        "gpuwatch_temperature",
        "GPU temperature",
        Some("celsius"),
        |_, s, _| s?.temp_c.map(f64::from),
    ),
    ("gpuwatch_sm_clock", "SM clock", Some("hertz"), |_, s, _| {
        s?.sm_clock_mhz.map(|m| f64::from(m) * 1e6)
    }),
    (
        "gpuwatch_memory_clock",
        "memory clock",
        Some("hertz"),
        |_, s, _| s?.mem_clock_mhz.map(|m| f64::from(m) * 1e6),
    ),
];

/// The gauges after the clock events: the `PCIe` link and GPM activity.
const GPU_GAUGES_AFTER_EVENTS: &[(&str, &str, Option<&str>, Read)] = &[
    (
        "gpuwatch_pcie_link_generation",
        "current PCIe link generation",
        None,
        |_, s, _| s?.pcie_gen.map(f64::from),
    ),
    (
        "gpuwatch_pcie_link_width",
        "current PCIe link width (lanes)",
        None,
        |_, s, _| s?.pcie_width.map(f64::from),
    ),
    (
        "gpuwatch_pcie_link_generation_max",
        "maximum PCIe link generation",
        None,
        |d, _, _| d.info.pcie_max_gen.map(f64::from),
    ),
    (
        "gpuwatch_pcie_link_width_max",
        "maximum PCIe link width (lanes)",
        None,
        |d, _, _| d.info.pcie_max_width.map(f64::from),
    ),
    (
        "gpuwatch_gpm_sm_active",
        "SM activity (GPM, Hopper and newer)",
        Some("ratio"),
        |_, s, _| ratio(s?.gpm.sm_active_pct),
    ),
    (
        "gpuwatch_gpm_tensor_active",
        "tensor pipe activity (GPM)",
        Some("ratio"),
        |_, s, _| ratio(s?.gpm.tensor_active_pct),
    ),
    (
        "gpuwatch_gpm_dram_active",
        "DRAM bandwidth used (GPM)",
        Some("ratio"),
        |_, s, _| ratio(s?.gpm.dram_bw_pct),
    ),
];

fn lost(d: &DeviceHistory) -> bool {
    matches!(d.status, DeviceStatus::Lost { .. })
}

/// The latest sample of a GPU that still answers.
fn latest(d: &DeviceHistory) -> Option<&DeviceSample> {
    d.samples.latest().filter(|_| !lost(d))
}

fn gauge_table(
    e: &mut Exposition,
    store: &Store,
    ids: &[String],
    table: &[(&str, &str, Option<&str>, Read)],
) {
    for (name, help, unit, read) in table {
        e.family(name, help, Kind::Gauge, *unit);
        for (d, id) in store.history().devices.iter().zip(ids) {
            if let Some(v) = read(d, latest(d), store) {
                e.gauge(&[id], v);
            }
        }
    }
}

fn gpu_families(e: &mut Exposition, store: &Store, ids: &[String]) {
    gauge_table(e, store, ids, GPU_GAUGES);
    e.family(
        "gpuwatch_clock_event_active",
        "1 while NVML reports this clock-event reason",
        Kind::Gauge,
        None,
    );
    let reasons: Vec<String> = clock_event::ALL
        .iter()
        .map(|(_, name)| label("reason", name))
        .collect();
    for (d, id) in store.history().devices.iter().zip(ids) {
        let Some(bits) = latest(d).and_then(|s| s.clock_events) else {
            continue;
        };
        for ((bit, _), reason) in clock_event::ALL.iter().zip(&reasons) {
            e.gauge(&[id, reason], if bits & bit != 0 { 1.0 } else { 0.0 });
        }
    }
    gauge_table(e, store, ids, GPU_GAUGES_AFTER_EVENTS);
}

/// Every rule on every GPU: whether its finding is open (at the rule's severity when not, at
/// the finding's when it is), since when, the culprit GPU it names, and how many it opened.
fn finding_families(e: &mut Exposition, store: &Store, ids: &[String]) {
    let rules = all_rules();
    let devices = &store.history().devices;
    let findings: Vec<String> = rules
        .iter()
        .map(|r| label("finding", r.id.as_str()))
        .collect();
    let open = |d: &DeviceHistory, r: usize| {
        store
            .findings()
            .active_on(d.info.index)
            .find(|f| f.rule == rules[r].id)
    };
    e.family(
        "gpuwatch_finding_active",
        "1 while this finding is open on this GPU, else 0",
        Kind::Gauge,
        None,
    );
    for (d, id) in devices.iter().zip(ids) {
        for (r, rule) in rules.iter().enumerate() {
            let base = severity(rule.severity);
            let now = open(d, r).map(|f| severity(f.severity));
            // One series per label set: an open finding at its rule's own severity is that
            // series at 1 (writing it at 0 and again at 1 was a duplicate a scrape refuses).
            e.gauge(
                &[id, &findings[r], base],
                if now == Some(base) { 1.0 } else { 0.0 },
            );
            // A finding raised above its rule's severity (a confirmed hang) has both.
            if let Some(now) = now.filter(|n| *n != base) {
                e.gauge(&[id, &findings[r], now], 1.0);
            }
        }
    }
    e.family(
        "gpuwatch_finding_since",
        "when the open finding began (Unix time)",
        Kind::Gauge,
        Some("seconds"),
    );
    for (d, id) in devices.iter().zip(ids) {
        for (r, finding) in findings.iter().enumerate() {
            if let Some(f) = open(d, r) {
                e.gauge(&[id, finding], f.since_ms as f64 / 1000.0);
            }
        }
    }
    e.family(
        "gpuwatch_finding_culprit_gpu",
        "the GPU a finding names as its culprit (the straggler)",
        Kind::Gauge,
        None,
    );
    for (d, id) in devices.iter().zip(ids) {
        for (r, finding) in findings.iter().enumerate() {
            if let Some(c) = open(d, r).and_then(|f| f.culprit.as_ref()) {
                e.gauge(&[id, finding], f64::from(c.device));
            }
        }
    }
    opened_family(e, store, ids, &findings);
    health_families(e, store, ids, &findings);
    job_families(e, store, ids);
}

/// What a GPU is doing, for joining ranks across hosts: `spinning` while a hang finding is
/// open or its symptom is being timed, `lost` once it fell off the bus, else `busy` when its
/// utilization (a MIG instance's SM activity) over the last 5 s is at least the rules' busy
/// level, else `idle`.
#[must_use]
pub fn gpu_state(store: &Store, d: &DeviceHistory) -> &'static str {
    if lost(d) {
        return "lost";
    }
    let i = d.info.index;
    let f = store.findings();
    let hang = |rule: &str| *rule == crate::rules::RuleId::Hang;
    if f.active_on(i).any(|x| {
        hang(&x.rule)
            && f.ended_ago_ms(x, d.samples.latest().map_or(0, |s| s.t_ms))
                .is_none()
    }) || f.watching_on(i).is_some_and(|w| hang(&w.rule))
    {
        return "spinning";
    }
    // A MIG instance has no utilization: its SM activity says whether it works.
    let mig = d.info.mig.is_some();
    let mut util: Vec<f32> = d
        .samples
        .last(5_000)
        .filter_map(|s| {
            if mig {
                s.gpm.sm_active_pct
            } else {
                s.util_gpu_pct
            }
        })
        .collect();
    util.sort_by(f32::total_cmp);
    match util.get(util.len() / 2) {
        Some(u) if *u >= f.thresholds().engine.busy_util_min_pct => "busy",
        _ => "idle",
    }
}

/// The GPU states `gpu_state` says, in the order they are written.
pub const GPU_STATES: [&str; 4] = ["busy", "idle", "spinning", "lost"];

fn opened_family(e: &mut Exposition, store: &Store, ids: &[String], findings: &[String]) {
    e.family(
        "gpuwatch_findings_opened",
        "findings opened on this GPU since gpuwatch started",
        Kind::Counter,
        None,
    );
    for (d, id) in store.history().devices.iter().zip(ids) {
        for (r, finding) in findings.iter().enumerate() {
            e.counter(&[id, finding], store.findings().opened(d.info.index, r));
        }
    }
}

/// The `severity="…"` label of each severity, written once.
fn severity(s: crate::rules::Severity) -> &'static str {
    use crate::rules::Severity;
    match s {
        Severity::Info => "severity=\"info\"",
        Severity::Warning => "severity=\"warning\"",
        Severity::Critical => "severity=\"critical\"",
    }
}

/// What watching costs, and the version.
fn self_families(e: &mut Exposition, store: &Store) {
    let c = store.cost();
    let one = |e: &mut Exposition, name, help, unit, v: Option<f64>| {
        e.family(name, help, Kind::Gauge, unit);
        if let Some(v) = v {
            e.gauge(&[], v);
        }
    };
    one(
        e,
        "gpuwatch_self_cpu",
        "gpuwatch's own CPU use, share of one core",
        Some("ratio"),
        ratio(c.cpu_pct),
    );
    one(
        e,
        "gpuwatch_self_resident_memory",
        "gpuwatch's own resident memory",
        Some("bytes"),
        c.rss_bytes.map(|b| b as f64),
    );
    one(
        e,
        "gpuwatch_tick_duration",
        "median time the source took per tick (NVML time)",
        Some("seconds"),
        c.tick_ms_median.map(|v| decimal(f64::from(v) / 1000.0)),
    );
    one(
        e,
        "gpuwatch_last_sample_timestamp",
        "time of the newest sample (Unix time)",
        Some("seconds"),
        store.history().latest_ms().map(|t| t as f64 / 1000.0),
    );
    e.family(
        "gpuwatch_build_info",
        "gpuwatch's version",
        Kind::Gauge,
        None,
    );
    e.gauge(&[&label("version", env!("CARGO_PKG_VERSION"))], 1.0);
}
