//! Power capped below TDP: a busy GPU held at an enforced limit under its default, by an
//! administrator or the datacenter's power policy, with clocks lowered to stay there.

use super::thresholds::{dur, Section};
use super::Metric;
use super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Facts, Level, BUSY, STOCK};
use crate::text::fixed;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a busy GPU's power cap must last to be named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PowercapThresholds {
    #[serde(rename = "powercap_window", with = "dur")]
    pub window: Duration,
}

impl Default for PowercapThresholds {
    fn default() -> Self {
        PowercapThresholds {
            window: Duration::from_secs(15),
        }
    }
}

impl Section for PowercapThresholds {}

pub const POWERCAP: Rule = Rule {
    id: RuleId::Powercap,
    glance: None,
    mig: OnMig::Parent,
    title: "Power capped below TDP",
    severity: Severity::Warning,
    window: |t| t.powercap.window,
    check: check_powercap,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    // An H200 training under a 450 W limit (its default is 700 W): power held at the limit,
    // clocks lowered to stay there.
    demo: Demo {
        name: "powercap",
        about: "busy under a 450 W power limit, below its 700 W default",
        level: |_, _| Level {
            power: 446.0,
            sm_clock: 1200.0,
            ..BUSY
        },
        facts: Facts {
            power_limit_w: Some(450.0),
            ..STOCK
        },
        workload: None,
        trouble: None,
    },
};

fn check_powercap(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let default = c.dev.info.default_limit_w()?;
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
    let capped = c.share(w, Metric::POWER_CAP).unwrap_or(0.0);
    if power.median < limit * 0.9 && capped < 0.5 {
        return None;
    }
    if !c.wording {
        return Some(Verdict::held(None));
    }
    let clock = c.stats(w, Metric::SmClock);
    let max_clock = c
        .dev
        .info
        .max_sm_clock_mhz
        .map_or(String::new(), |m| format!(" of max {m}"));
    Some(Verdict {
        evidence: vec![
            format!("enforced power limit {limit_0} W is below the default {default_0} W (TDP)", limit_0 = fixed(limit, 0), default_0 = fixed(default, 0)),
            format!("power {} W = {} % of the cap while util is {} %; SW power cap active in {} % of samples", fixed(power.median, 0), fixed(power.median / limit * 100.0, 0), fixed(util.median, 0), fixed(capped * 100.0, 0)),
            format!("SM clock {} MHz{max_clock}", fixed(clock.median, 0)),
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
