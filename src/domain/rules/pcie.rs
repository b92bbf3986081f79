//! A `PCIe` link below its maximum generation or width while the GPU works: a slower slot, a
//! riser, link training that fell back, or a BIOS setting.

use super::thresholds::{dur, Section};
use super::Metric;
use super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Level, BUSY, STOCK};
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a busy GPU's slow link must last to be named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PcieThresholds {
    #[serde(rename = "pcie_window", with = "dur")]
    pub window: Duration,
}

impl Default for PcieThresholds {
    fn default() -> Self {
        PcieThresholds {
            window: Duration::from_secs(15),
        }
    }
}

impl Section for PcieThresholds {}

pub const PCIE: Rule = Rule {
    id: RuleId::Pcie,
    glance: None,
    mig: OnMig::Parent,
    title: "PCIe link below its maximum",
    severity: Severity::Warning,
    window: |t| t.pcie.window,
    check: check_pcie,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Demo {
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
        facts: STOCK,
        workload: None,
        trouble: None,
    },
};

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
    // The share of the window's samples with the link below its maximum: a count. Selecting
    // the order statistics of these noughts and ones was a thirtieth of what judging the
    // 64-GPU demo cost.
    let (n, below) = c
        .dev
        .samples
        .last(w)
        .filter_map(|s| Some(s.pcie_gen? < max_gen || s.pcie_width? < max_width))
        .fold((0usize, 0usize), |(n, below), low| {
            (n + 1, below + usize::from(low))
        });
    let share = below as f32 / n as f32;
    if n == 0 || share < 0.8 {
        return None;
    }
    let latest = c.dev.samples.latest()?;
    let (gen, width) = (latest.pcie_gen?, latest.pcie_width?);
    if !c.wording {
        return Some(Verdict::held(None));
    }
    Some(Verdict {
        evidence: vec![
            format!("link at Gen{gen} x{width} while util is {} %; this GPU supports Gen{max_gen} x{max_width}", fixed(util.median, 0)),
            format!("below its maximum in {} % of samples over {}", fixed(share * 100.0, 0), span_words(w)),
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
