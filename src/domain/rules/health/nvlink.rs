//! `NVLink` down or erroring: fewer links up than this GPU had, or its CRC, replay and recovery
//! counters rising.

use super::super::{ms, Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use super::{latest_health, pids, rise};
use crate::model::demo::{troubled, Demo, Trouble, CLEAN};
use crate::model::Health;
use crate::text::{clock, span_words};

pub const NVLINK: Rule = Rule {
    id: RuleId::Nvlink,
    glance: None,
    mig: OnMig::Parent,
    title: "NVLink down or erroring",
    severity: Severity::Warning,
    window: |_| std::time::Duration::ZERO,
    check: check_nvlink,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: SCENARIO,
};

/// When the `NVLink` scenario's link goes down.
const LINK_DOWN_AT_S: f32 = 20.0;

/// One of 18 `NVLink` links goes down at 20 s, after 3 errors.
const SCENARIO: Demo = troubled(
    "nvlink",
    "one of 18 NVLink links going down at 20 s",
    Trouble {
        health: nvlink,
        events: &[],
        lost_at_s: None,
        first_gpu_only: false,
        shows_at_s: LINK_DOWN_AT_S,
    },
);

fn nvlink(t_s: f32) -> Health {
    let down = t_s >= LINK_DOWN_AT_S;
    Health {
        nvlink_links: Some(18),
        nvlink_active: Some(if down { 17 } else { 18 }),
        nvlink_errors: Some(if down { 3 } else { 0 }),
        ..CLEAN
    }
}

fn check_nvlink(c: &Ctx) -> Option<Verdict> {
    let device = c.dev.info.index;
    let h = latest_health(c)?;
    // A GPU has no more links up than it has links: a count above it is not believed.
    let links = h.nvlink_links;
    let cap = |n: u8| links.map_or(n, |l| n.min(l));
    let most = c.dev.nvlink_most_active?;
    let up = h.nvlink_active.map(cap).filter(|n| *n < most);
    let errors = rise(c, |h| h.nvlink_errors)
        .filter(|(rose, _)| *rose as f32 >= c.thresholds.health.link_errors_min);
    if up.is_none() && errors.is_none() {
        return None;
    }
    // A link down is critical; errors alone are the rule's warning.
    let severity = up.map(|_| Severity::Critical);
    if !c.wording {
        return Some(Verdict::held(severity));
    }
    let mut evidence = Vec::new();
    if let Some(now) = up {
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
    }
    if let Some((rose, total)) = errors {
        evidence.push(format!(
            "{rose} NVLink CRC, replay or recovery errors in the last {} ({total} since the driver loaded)",
            span_words(ms(c.thresholds.health.link_errors_window))
        ));
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
