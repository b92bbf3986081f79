//! Clocks slowed by heat or the hardware: thermal slowdown, the external power brake, or a
//! temperature at the GPU's slowdown threshold.

use super::thresholds::{dur, Section};
use super::Metric;
use super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::clock_event;
use crate::model::demo::{Demo, Level, BUSY, STOCK};
use crate::text::fixed;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a GPU's thermal or hardware slowdown must last to be named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThermalThresholds {
    #[serde(rename = "thermal_window", with = "dur")]
    pub window: Duration,
}

impl Default for ThermalThresholds {
    fn default() -> Self {
        ThermalThresholds {
            window: Duration::from_secs(15),
        }
    }
}

impl Section for ThermalThresholds {}

pub const THERMAL: Rule = Rule {
    id: RuleId::Thermal,
    glance: None,
    mig: OnMig::Parent,
    title: "Clocks slowed: thermal or hardware slowdown",
    severity: Severity::Warning,
    window: |t| t.thermal.window,
    check: check_thermal,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Demo {
        name: "thermal",
        about: "busy and hot: thermal slowdown, clocks lowered",
        level: |_, _| Level {
            power: 560.0,
            sm_clock: 1250.0,
            temp: 86.0,
            events: clock_event::SW_THERMAL | clock_event::HW_THERMAL,
            ..BUSY
        },
        facts: STOCK,
        workload: None,
        trouble: None,
    },
};

fn check_thermal(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let thermal = c.share(w, Metric::THERMAL).unwrap_or(0.0);
    let brake = c.share(w, Metric::POWER_BRAKE).unwrap_or(0.0);
    let temp = c.stats(w, Metric::Temp);
    let hot = match (c.dev.info.temp_slowdown_c, temp.n) {
        (Some(limit), n) if n > 0 => temp.median >= limit as f32 - 2.0,
        _ => false,
    };
    if thermal < 0.5 && brake < 0.5 && !hot {
        return None;
    }
    // The external power brake is a facility's event, critical; heat is the rule's warning.
    let severity = (brake >= 0.5).then_some(Severity::Critical);
    if !c.wording {
        return Some(Verdict::held(severity));
    }
    let clock = c.stats(w, Metric::SmClock);
    let limit = c
        .dev
        .info
        .temp_slowdown_c
        .map_or(String::new(), |l| format!(" (slowdown at {l} °C)"));
    let mut evidence = vec![
        format!("temperature {} °C{limit}", fixed(temp.median, 0)),
        format!(
            "thermal/hardware slowdown in {} % of samples, power brake in {} %",
            fixed(thermal * 100.0, 0),
            fixed(brake * 100.0, 0)
        ),
    ];
    if clock.n > 0 {
        evidence.push(format!(
            "SM clock {} MHz{}",
            fixed(clock.median, 0),
            c.dev
                .info
                .max_sm_clock_mhz
                .map_or(String::new(), |m| format!(" of max {m}"))
        ));
    }
    let causes = if severity.is_some() {
        vec!["The external power brake is asserted: a facility, PSU or BMC power event".to_string()]
    } else {
        vec!["Cooling cannot keep up: blocked airflow, failed fan, hot inlet air, or a neighbouring GPU's exhaust".to_string()]
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
