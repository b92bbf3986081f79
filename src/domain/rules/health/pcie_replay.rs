//! `PCIe` replays rising: packets the link had to send again, a marginal slot, riser or cable.

use super::super::{ms, Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use super::{pids, rise};
use crate::model::demo::{troubled, Demo, Trouble, CLEAN};
use crate::model::Health;
use crate::text::span_words;

pub const PCIE_REPLAY: Rule = Rule {
    id: RuleId::PcieReplay,
    glance: None,
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
    demo: SCENARIO,
};

/// A marginal `PCIe` link replays a packet a second: 8 in the window by 8 s.
const SCENARIO: Demo = troubled(
    "pcie-replay",
    "a marginal PCIe link replaying a packet a second",
    Trouble {
        health: |t_s| Health {
            pcie_replays: Some(t_s as u32),
            ..CLEAN
        },
        events: &[],
        lost_at_s: None,
        first_gpu_only: false,
        shows_at_s: 8.0,
    },
);

fn check_pcie_replay(c: &Ctx) -> Option<Verdict> {
    let (rose, total) = rise(c, |h| h.pcie_replays)?;
    if (rose as f32) < c.thresholds.health.link_errors_min {
        return None;
    }
    if !c.wording {
        return Some(Verdict::held(None));
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
