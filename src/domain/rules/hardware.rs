//! Rules about the GPU itself: lost from the bus, power capped below TDP, thermal or hardware
//! slowdown, a `PCIe` link below its maximum, persistence mode off.

use super::thresholds::{dur, Section};
use super::Metric;
use super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Level, BUSY};
use crate::model::{clock_event, DeviceStatus};
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a busy GPU's power cap, heat or slow link must last to be named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[allow(clippy::struct_field_names)] // each a rule's window, named as its key in the file
pub struct HardwareThresholds {
    #[serde(with = "dur")]
    pub powercap_window: Duration,
    #[serde(with = "dur")]
    pub thermal_window: Duration,
    #[serde(with = "dur")]
    pub pcie_window: Duration,
}

impl Default for HardwareThresholds {
    fn default() -> Self {
        HardwareThresholds {
            powercap_window: Duration::from_secs(15),
            thermal_window: Duration::from_secs(15),
            pcie_window: Duration::from_secs(15),
        }
    }
}

impl Section for HardwareThresholds {}

pub const LOST: Rule = Rule {
    id: RuleId::Lost,
    mig: OnMig::Parent,
    title: "GPU lost",
    severity: Severity::Critical,
    window: |_| std::time::Duration::ZERO,
    check: check_lost,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: None,
};
pub const POWERCAP: Rule = Rule {
    id: RuleId::Powercap,
    mig: OnMig::Parent,
    title: "Power capped below TDP",
    severity: Severity::Warning,
    window: |t| t.hardware.powercap_window,
    check: check_powercap,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    // An H200 training under a 450 W limit (its default is 700 W): power held at the limit,
    // clocks lowered to stay there.
    demo: Some(Demo {
        name: "powercap",
        about: "busy under a 450 W power limit, below its 700 W default",
        level: |_, _| Level {
            power: 446.0,
            sm_clock: 1200.0,
            ..BUSY
        },
        power_limit_w: Some(450.0),
        workload: None,
        trouble: None,
    }),
};
pub const THERMAL: Rule = Rule {
    id: RuleId::Thermal,
    mig: OnMig::Parent,
    title: "Clocks slowed: thermal or hardware slowdown",
    severity: Severity::Warning,
    window: |t| t.hardware.thermal_window,
    check: check_thermal,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(Demo {
        name: "thermal",
        about: "busy and hot: thermal slowdown, clocks lowered",
        level: |_, _| Level {
            power: 560.0,
            sm_clock: 1250.0,
            temp: 86.0,
            events: clock_event::SW_THERMAL | clock_event::HW_THERMAL,
            ..BUSY
        },
        power_limit_w: None,
        workload: None,
        trouble: None,
    }),
};
pub const PCIE: Rule = Rule {
    id: RuleId::Pcie,
    mig: OnMig::Parent,
    title: "PCIe link below its maximum",
    severity: Severity::Warning,
    window: |t| t.hardware.pcie_window,
    check: check_pcie,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(Demo {
        name: "pcie",
        about: "busy with the link at Gen 3 x8 instead of Gen 5 x16",
        level: |_, _| Level {
            util: 92.0,
            power: 610.0,
            pcie_gen: 3,
            pcie_width: 8,
            pcie_rx_kib: 7_500_000.0,
            ..BUSY
        },
        power_limit_w: None,
        workload: None,
        trouble: None,
    }),
};
pub const PERSISTENCE: Rule = Rule {
    id: RuleId::Persistence,
    mig: OnMig::Parent,
    title: "Persistence mode off",
    severity: Severity::Info,
    window: |_| std::time::Duration::ZERO,
    check: check_persistence,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: None,
};

fn check_lost(c: &Ctx) -> Option<Verdict> {
    let DeviceStatus::Lost { reason } = &c.dev.status else {
        return None;
    };
    let since = c.dev.lost_since_ms.map_or(String::new(), |t| {
        format!(" for {}", span_words(c.now_ms.saturating_sub(t)))
    });
    let mut evidence = vec![format!(
        "NVML stopped answering for this GPU{since}: {reason}"
    )];
    let xid = preceding_xid(c, c.dev.lost_since_ms.unwrap_or(c.now_ms));
    let code = xid.as_ref().and_then(|(code, _)| *code);
    evidence.extend(xid.map(|(_, line)| line));
    let cause = match code {
        Some(code) => format!(
            "{}, as the driver reported before NVML lost it",
            crate::xid::name(code)
        ),
        None => {
            "The GPU fell off the bus (Xid 79), was reset, or its driver state is broken".into()
        }
    };
    let mut actions: Vec<String> = code
        .map(|code| crate::xid::actions(code, c.dev.info.index))
        .unwrap_or_default();
    actions.extend([
        "Look for Xid errors: `sudo dmesg | grep -i xid`".into(),
        format!("`nvidia-smi -q -d PERFORMANCE,ECC` and, with the jobs stopped, `nvidia-smi -r -i {}` or a reboot", c.dev.info.index),
    ]);
    Some(Verdict {
        evidence,
        causes: vec![cause],
        actions,
        signals: "NVML errors".into(),
        ..Verdict::default()
    })
}

/// The newest Xid the driver reported for this GPU within `xid_window` before `at_ms` (when the
/// GPU was lost, or now), and the evidence line that names it: a GPU lost or hung after an Xid
/// is that Xid's problem.
pub(super) fn preceding_xid(c: &Ctx, at_ms: u64) -> Option<(Option<u64>, String)> {
    let from = at_ms.saturating_sub(super::ms(c.thresholds.health.xid_window));
    let e = c
        .all
        .events_since(c.dev.info.index, from)
        .filter(|e| matches!(e.kind, crate::model::EventKind::Xid { .. }) && e.first_ms <= at_ms)
        .max_by_key(|e| e.last_ms.min(at_ms))?;
    let code = e.kind.xid();
    let when = e.last_ms.min(at_ms);
    let what = code.map_or_else(|| e.kind.label(), crate::xid::name);
    Some((
        code,
        format!(
            "the driver reported {what} at {} UTC, {} before",
            crate::text::clock(when),
            span_words(at_ms.saturating_sub(when))
        ),
    ))
}

/// Share of samples in the window where `metric` (a clock event's) is 1.
fn share_with(c: &Ctx, w: u64, metric: Metric) -> Option<f32> {
    let s = c.stats(w, metric);
    (s.n > 0).then_some(s.mean)
}

fn check_powercap(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let default = c.dev.info.power_limit_default_w?;
    let limit = c
        .stats(w, Metric::PowerLimit)
        .median_or(c.dev.info.power_limit_enforced_w)?;
    // A limit at its default rules out nearly every GPU before util is asked.
    if limit >= default * 0.99 {
        return None;
    }
    let util = c.stats(w, Metric::Util);
    if util.median < c.thresholds.engine.busy_util_min_pct {
        return None;
    }
    let power = c.stats(w, Metric::Power);
    let capped = share_with(c, w, Metric::POWER_CAP).unwrap_or(0.0);
    if power.median < limit * 0.9 && capped < 0.5 {
        return None;
    }
    let clock = c.stats(w, Metric::SmClock);
    let max_clock = c
        .dev
        .info
        .max_sm_clock_mhz
        .map_or(String::new(), |m| format!(" of max {m}"));
    Some(Verdict {
        evidence: vec![
            format!("enforced power limit {limit:.0} W is below the default {default:.0} W (TDP)"),
            format!("power {:.0} W = {:.0} % of the cap while util is {:.0} %; SW power cap active in {:.0} % of samples", power.median, power.median / limit * 100.0, util.median, capped * 100.0),
            format!("SM clock {:.0} MHz{max_clock}", clock.median),
        ],
        causes: vec![
            "An administrator set a lower limit (`nvidia-smi -pl`)".into(),
            "An out-of-band cap from the BMC or the datacenter's power policy".into(),
        ],
        actions: vec![
            "See the limits: `nvidia-smi -q -d POWER`".into(),
            "If the cap is not deliberate, an admin restores it: `sudo nvidia-smi -pl DEFAULT_W -i INDEX`".into(),
        ],
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: "enforced vs default power limit, power draw, clock-event bits".into(),
        ..Verdict::default()
    })
}

fn check_thermal(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let thermal = share_with(c, w, Metric::THERMAL).unwrap_or(0.0);
    let brake = share_with(c, w, Metric::POWER_BRAKE).unwrap_or(0.0);
    let temp = c.stats(w, Metric::Temp);
    let hot = match (c.dev.info.temp_slowdown_c, temp.n) {
        (Some(limit), n) if n > 0 => temp.median >= limit as f32 - 2.0,
        _ => false,
    };
    if thermal < 0.5 && brake < 0.5 && !hot {
        return None;
    }
    let clock = c.stats(w, Metric::SmClock);
    let limit = c
        .dev
        .info
        .temp_slowdown_c
        .map_or(String::new(), |l| format!(" (slowdown at {l} °C)"));
    let mut evidence = vec![
        format!("temperature {:.0} °C{limit}", temp.median),
        format!(
            "thermal/hardware slowdown in {:.0} % of samples, power brake in {:.0} %",
            thermal * 100.0,
            brake * 100.0
        ),
    ];
    if clock.n > 0 {
        evidence.push(format!(
            "SM clock {:.0} MHz{}",
            clock.median,
            c.dev
                .info
                .max_sm_clock_mhz
                .map_or(String::new(), |m| format!(" of max {m}"))
        ));
    }
    let (causes, severity) = if brake >= 0.5 {
        (
            vec![
                "The external power brake is asserted: a facility, PSU or BMC power event"
                    .to_string(),
            ],
            Some(Severity::Critical),
        )
    } else {
        (vec!["Cooling cannot keep up: blocked airflow, failed fan, hot inlet air, or a neighbouring GPU's exhaust".to_string()], None)
    };
    Some(Verdict {
        evidence,
        causes,
        actions: vec![
            "`nvidia-smi -q -d TEMPERATURE,PERFORMANCE` to see the active reasons and thresholds"
                .into(),
            "Check airflow and fans; compare with the other GPUs in the chassis".into(),
        ],
        pids: Vec::new(),
        signals: "clock-event bits, temperature against the slowdown threshold".into(),
        severity,
        ..Verdict::default()
    })
}

fn check_pcie(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let (max_gen, max_width) = (c.dev.info.pcie_max_gen?, c.dev.info.pcie_max_width?);
    let util = c.stats(w, Metric::Util);
    if util.median < c.thresholds.engine.busy_util_min_pct {
        return None;
    }
    // Links drop their speed when there is no traffic: judge only under real load (a hung
    // GPU reads 100 % util but moves nothing, so util alone is not enough).
    let sm = c.stats(w, Metric::SmActive);
    let working = if sm.n > 0 {
        sm.median >= c.thresholds.engine.busy_util_min_pct
    } else {
        c.stats(w, Metric::Power).median > c.near_floor_w()
    };
    if !working {
        return None;
    }
    let below = c.stats_of(w, |s| {
        Some(if s.pcie_gen? < max_gen || s.pcie_width? < max_width {
            1.0
        } else {
            0.0
        })
    });
    if below.n == 0 || below.mean < 0.8 {
        return None;
    }
    let latest = c.dev.samples.latest()?;
    Some(Verdict {
        evidence: vec![
            format!("link at Gen{} x{} while util is {:.0} %; this GPU supports Gen{max_gen} x{max_width}", latest.pcie_gen?, latest.pcie_width?, util.median),
            format!("below its maximum in {:.0} % of samples over {}", below.mean * 100.0, span_words(w)),
        ],
        causes: vec![
            "The GPU sits in a slower or narrower slot, or behind a riser or switch that limits it".into(),
            "Link training fell back after signal problems (check the replay counter)".into(),
            "A BIOS setting forces a lower PCIe generation".into(),
        ],
        actions: vec![
            "`nvidia-smi -q -d PCIE` and `sudo lspci -vv -s BUS_ID | grep -E 'LnkCap|LnkSta'`".into(),
            "Reseat the card or move it to a full x16 slot of its generation; check BIOS PCIe settings".into(),
            "If the link drops only between bursts, it may be power saving (ASPM): `sudo lspci -vv -s BUS_ID | grep ASPM`; off in the BIOS or with the `pcie_aspm=off` kernel parameter".into(),
        ],
        pids: Vec::new(),
        signals: "current vs maximum PCIe generation and width under load".into(),
        ..Verdict::default()
    })
}

fn check_persistence(c: &Ctx) -> Option<Verdict> {
    (c.dev.info.persistence_mode == Some(false)).then(|| Verdict {
        evidence: vec!["persistence mode is off".into()],
        causes: vec!["Without it the driver tears the GPU state down whenever no client is attached, so each new process pays a slow initialisation".into()],
        actions: vec!["`sudo nvidia-smi -pm 1`, or better the `nvidia-persistenced` service".into()],
        signals: "persistence mode".into(),
        ..Verdict::default()
    })
}
