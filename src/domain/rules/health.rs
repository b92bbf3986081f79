//! Rules about the GPU's health: Xid errors the driver reported, uncorrected ECC errors,
//! memory rows waiting for a reset or out of spares, `PCIe` replays and `NVLink` errors.
//! These name a broken GPU or link, which a hang or a crash may follow: a different remedy
//! (reset, drain, cables) from a stuck collective's.

mod demo;

use super::thresholds::{dur, Section};
use super::{ms, Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::history::EventCount;
use crate::model::{EventKind, Health};
use crate::text::{clock, span_words};
use crate::xid::{self, Need};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a health event keeps its finding, and how many link errors make one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HealthThresholds {
    /// An Xid (or an uncorrected ECC event) keeps its finding open this long after it came:
    /// what it broke does not mend by itself.
    #[serde(with = "dur")]
    pub xid_window: Duration,
    /// `PCIe` replays and `NVLink` errors are counted over this window…
    #[serde(with = "dur")]
    pub link_errors_window: Duration,
    /// …and this many of them within it make a link in trouble.
    pub link_errors_min: f32,
}

impl Default for HealthThresholds {
    fn default() -> Self {
        HealthThresholds {
            xid_window: Duration::from_secs(600),
            link_errors_window: Duration::from_secs(60),
            link_errors_min: 8.0,
        }
    }
}

impl Section for HealthThresholds {}

pub const XID: Rule = Rule {
    id: RuleId::Xid,
    mig: OnMig::Parent,
    title: "Xid error",
    severity: Severity::Warning,
    window: |_| std::time::Duration::ZERO,
    check: check_xid,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(demo::XID),
};
pub const ECC: Rule = Rule {
    id: RuleId::Ecc,
    mig: OnMig::Parent,
    title: "Uncorrected ECC errors",
    severity: Severity::Critical,
    window: |_| std::time::Duration::ZERO,
    check: check_ecc,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(demo::ECC),
};
pub const REMAP: Rule = Rule {
    id: RuleId::RowRemap,
    mig: OnMig::Parent,
    title: "GPU memory needs a reset",
    severity: Severity::Critical,
    window: |_| std::time::Duration::ZERO,
    check: check_remap,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(demo::REMAP),
};
pub const PCIE_REPLAY: Rule = Rule {
    id: RuleId::PcieReplay,
    mig: OnMig::Parent,
    title: "PCIe replays rising",
    severity: Severity::Warning,
    // Judged from the first samples: replays need no onset window, only a count within one.
    window: |_| std::time::Duration::ZERO,
    check: check_pcie_replay,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(demo::PCIE_REPLAY),
};
pub const NVLINK: Rule = Rule {
    id: RuleId::Nvlink,
    mig: OnMig::Parent,
    title: "NVLink down or erroring",
    severity: Severity::Warning,
    window: |_| std::time::Duration::ZERO,
    check: check_nvlink,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(demo::NVLINK),
};

fn latest_health(c: &Ctx) -> Option<Health> {
    c.dev.samples.latest().map(|s| s.health)
}

fn pids(c: &Ctx) -> Vec<u32> {
    c.dev.processes.iter().map(|p| p.pid).collect()
}

/// "Xid 79 (GPU has fallen off the bus) at 12:03:11 UTC, 2 min ago", with how often it came
/// since gpuwatch started when more than once — newest first.
fn xid_lines(events: &[&EventCount], now_ms: u64) -> Vec<String> {
    let mut newest: Vec<&&EventCount> = events.iter().collect();
    newest.sort_by_key(|e| std::cmp::Reverse(e.last_ms));
    newest
        .iter()
        .map(|e| {
            let what = e.kind.xid().map_or_else(|| e.kind.label(), xid::name);
            let times = if e.count > 1 {
                format!(" ×{} since {} UTC, last", e.count, clock(e.first_ms))
            } else {
                String::new()
            };
            format!(
                "{what}{times} at {} UTC, {} ago",
                clock(e.last_ms),
                span_words(now_ms.saturating_sub(e.last_ms))
            )
        })
        .collect()
}

/// The code that matters most: one that needs a reset, else the newest.
fn worst(events: &[&EventCount]) -> Option<u64> {
    let mut newest: Vec<&&EventCount> = events.iter().collect();
    newest.sort_by_key(|e| std::cmp::Reverse(e.last_ms));
    let codes = || newest.iter().filter_map(|e| e.kind.xid());
    codes()
        .find(|c| xid::need(*c) == Need::Reset)
        .or_else(|| codes().find(|c| xid::need(*c) == Need::Other))
        .or_else(|| codes().next())
}

fn check_xid(c: &Ctx) -> Option<Verdict> {
    let device = c.dev.info.index;
    let from = c.now_ms.saturating_sub(ms(c.thresholds.health.xid_window));
    let events: Vec<&EventCount> = c
        .all
        .events_since(device, from)
        .filter(|e| matches!(e.kind, EventKind::Xid { .. }))
        .collect();
    if events.is_empty() {
        return None;
    }
    let code = worst(&events);
    let severity = match code.map(xid::need) {
        Some(Need::Reset) => Severity::Critical,
        Some(Need::Nothing) => Severity::Info,
        _ => Severity::Warning,
    };
    let mut actions = code.map_or_else(
        || vec!["Read the driver's line: `sudo dmesg | grep -i xid`".to_string()],
        |code| xid::actions(code, device),
    );
    actions.push(format!(
        "The driver's own lines for this GPU: `sudo dmesg -T | grep -i 'xid.*{}'`",
        c.dev
            .info
            .pci_bus_id
            .to_lowercase()
            .trim_start_matches("0000")
    ));
    let causes = code
        .and_then(xid::lookup)
        .map(|x| {
            vec![format!(
                "{} ({}): {}",
                x.description,
                x.mnemonic,
                advice_of(x)
            )]
        })
        .unwrap_or_default();
    Some(Verdict {
        evidence: xid_lines(&events, c.now_ms),
        causes,
        actions,
        pids: pids(c),
        signals: "NVML events (critical Xid)".into(),
        severity: Some(severity),
        title: code.map(|x| {
            format!(
                "Xid {x}: {}",
                xid::lookup(x).map_or("see NVIDIA's Xid catalog", |x| x.description)
            )
        }),
        ..Verdict::default()
    })
}

/// What NVIDIA's immediate action means for the user, in a few words.
fn advice_of(x: &xid::Xid) -> &'static str {
    match xid::need(x.code) {
        Need::Reset => "the GPU needs a reset or a reboot before its next job",
        Need::Nothing => "NVIDIA says no action is needed",
        Need::Other if x.immediate == "RESTART_APP" => {
            "the application must restart; the GPU is fine"
        }
        Need::Other => "see NVIDIA's guidance",
    }
}

fn check_ecc(c: &Ctx) -> Option<Verdict> {
    let h = latest_health(c)?;
    let device = c.dev.info.index;
    let from = c.now_ms.saturating_sub(ms(c.thresholds.health.xid_window));
    let events = c
        .all
        .events_since(device, from)
        .filter(|e| e.kind == EventKind::EccUncorrected)
        .map(|e| e.count)
        .sum::<u64>();
    let volatile = h.ecc_uncorrected_volatile.unwrap_or(0);
    if volatile == 0 && events == 0 {
        return None;
    }
    let mut evidence = Vec::new();
    if volatile > 0 {
        evidence.push(format!(
            "{volatile} uncorrected ECC error{} since the driver loaded",
            if volatile == 1 { "" } else { "s" }
        ));
    }
    if events > 0 {
        evidence.push(format!(
            "the driver reported {events} uncorrected ECC error event{} since gpuwatch started, the last within {}",
            if events == 1 { "" } else { "s" },
            span_words(ms(c.thresholds.health.xid_window))
        ));
    }
    if let (Some(corr), Some(unc)) = (h.ecc_corrected_aggregate, h.ecc_uncorrected_aggregate) {
        evidence.push(format!(
            "over the GPU's life: {corr} corrected, {unc} uncorrected"
        ));
    }
    Some(Verdict {
        evidence,
        causes: vec![
            "GPU memory returned data it could not correct: what ran here since may have read bad values or crashed".into(),
        ],
        actions: vec![
            format!("Stop the jobs on GPU {device} and reset it: `sudo nvidia-smi -r -i {device}`; results computed since the error are suspect"),
            format!("See the counts and remapped rows: `nvidia-smi -q -d ECC,ROW_REMAPPER -i {device}`; if errors return after the reset, the GPU needs service"),
        ],
        pids: pids(c),
        signals: "ECC error counters, ECC events".into(),
        ..Verdict::default()
    })
}

fn check_remap(c: &Ctx) -> Option<Verdict> {
    let h = latest_health(c)?;
    if h.remap_failure != Some(true) && h.remap_pending != Some(true) {
        return None;
    }
    let device = c.dev.info.index;
    let rows = format!(
        "rows remapped so far: {} for uncorrected errors, {} for corrected",
        h.remapped_rows_uncorrected
            .map_or("?".into(), |n| n.to_string()),
        h.remapped_rows_corrected
            .map_or("?".into(), |n| n.to_string())
    );
    if h.remap_failure == Some(true) {
        return Some(Verdict {
            evidence: vec!["a memory row remap failed: the GPU has no spare rows left for a bad row".into(), rows],
            causes: vec!["Worn or faulty GPU memory".into()],
            actions: vec![
                format!("Take GPU {device} out of service and contact your hardware vendor (`sudo nvidia-bug-report.sh`)"),
            ],
            pids: pids(c),
            signals: "row remapper (failure flag)".into(),
            title: Some("GPU memory out of spare rows".into()),
            ..Verdict::default()
        });
    }
    (h.remap_pending == Some(true)).then(|| Verdict {
        evidence: vec![
            "a memory row remap is pending: it takes effect only at the next GPU reset".into(),
            rows,
        ],
        causes: vec!["An uncorrected (or repeated corrected) memory error marked a bad row".into()],
        actions: vec![
            format!("Let the current job finish or checkpoint, then reset GPU {device}: `sudo nvidia-smi -r -i {device}` (or reboot); until then new jobs may meet the bad row"),
            format!("Check after the reset: `nvidia-smi -q -d ROW_REMAPPER -i {device}` shows Pending: No"),
        ],
        pids: pids(c),
        signals: "row remapper (pending flag)".into(),
        ..Verdict::default()
    })
}

/// How much `counter` rose over the last `link_errors_window` (or what the history has of it):
/// its last value less its first, where both exist; and its last.
fn rise(c: &Ctx, counter: fn(&Health) -> Option<u32>) -> Option<(u32, u32)> {
    if !c.dev.link_counters_seen {
        return None;
    }
    let window = ms(c.thresholds.health.link_errors_window);
    let mut values = c
        .dev
        .samples
        .last(window)
        .filter_map(|s| counter(&s.health));
    let first = values.next()?;
    let last = values.next_back().unwrap_or(first);
    Some((last.saturating_sub(first), last))
}

fn check_pcie_replay(c: &Ctx) -> Option<Verdict> {
    let (rose, total) = rise(c, |h| h.pcie_replays)?;
    if (rose as f32) < c.thresholds.health.link_errors_min {
        return None;
    }
    let window = ms(c.thresholds.health.link_errors_window);
    let traffic = c.stats(window, Metric::PcieTrafficMib);
    let moving = match traffic.median {
        _ if traffic.n == 0 => String::new(),
        mib if mib >= 1024.0 => format!(" while moving {:.1} GiB/s", mib / 1024.0),
        mib => format!(" while moving {mib:.0} MiB/s"),
    };
    let device = c.dev.info.index;
    Some(Verdict {
        evidence: vec![format!(
            "{rose} PCIe replays in the last {}{moving} ({total} since the driver loaded): packets the link had to send again",
            span_words(window)
        )],
        causes: vec![
            "A marginal PCIe link: the riser, the slot or its seating, a cable in a PCIe switch path".into(),
            "Signal integrity at a higher PCIe generation than the path holds".into(),
        ],
        actions: vec![
            format!("See the link: `nvidia-smi -q -d PCIE -i {device}` (generation, width, replays)"),
            "If it keeps rising, have the GPU's seating, riser and cables checked (NVIDIA: CHECK_MECHANICALS); copies to and from this GPU are slower meanwhile".into(),
        ],
        pids: pids(c),
        signals: "PCIe replay counter".into(),
        ..Verdict::default()
    })
}

fn check_nvlink(c: &Ctx) -> Option<Verdict> {
    let device = c.dev.info.index;
    let h = latest_health(c)?;
    // A GPU has no more links up than it has links: a count above it is not believed.
    let links = h.nvlink_links;
    let cap = |n: u8| links.map_or(n, |l| n.min(l));
    let most = c.dev.nvlink_most_active?;
    let mut evidence = Vec::new();
    let mut severity = None;
    if let Some(now) = h.nvlink_active.map(cap).filter(|n| *n < most) {
        let down = most - now;
        let since = c
            .dev
            .samples
            .iter()
            .rev()
            .find(|s| s.health.nvlink_active == Some(most))
            .map_or(String::new(), |s| {
                format!(" (all {most} were up at {} UTC)", clock(s.t_ms))
            });
        evidence.push(format!(
            "{down} NVLink link{} down: {now} of {} up{since}",
            if down == 1 { "" } else { "s" },
            links.unwrap_or(most).max(most)
        ));
        severity = Some(Severity::Critical);
    }
    if let Some((rose, total)) = rise(c, |h| h.nvlink_errors) {
        if rose as f32 >= c.thresholds.health.link_errors_min {
            evidence.push(format!(
                "{rose} NVLink CRC, replay or recovery errors in the last {} ({total} since the driver loaded)",
                span_words(ms(c.thresholds.health.link_errors_window))
            ));
        }
    }
    if evidence.is_empty() {
        return None;
    }
    Some(Verdict {
        evidence,
        causes: vec![
            "A failing NVLink: the link, the far GPU or NVSwitch, or (multi-node NVLink) its cable and transceiver".into(),
        ],
        actions: vec![
            format!("See each link: `nvidia-smi nvlink -s -i {device}` (state) and `nvidia-smi nvlink -e -i {device}` (errors)"),
            "A link down needs a GPU reset or a reboot (NVIDIA: WORKFLOW_NVLINK_ERR); collectives over it fall back or hang meanwhile".into(),
        ],
        pids: pids(c),
        signals: "NVLink link state and error counters".into(),
        severity,
        ..Verdict::default()
    })
}
