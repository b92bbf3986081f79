//! The GPU lost: NVML stopped answering for it (fallen off the bus, reset, or its driver state
//! broken). Named with the Xid the driver reported before, where there was one.

use super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{troubled, Demo, Trouble};
use crate::model::{DeviceStatus, EventKind, Health};
use crate::text::span_words;

pub const LOST: Rule = Rule {
    id: RuleId::Lost,
    glance: None,
    mig: OnMig::Parent,
    title: "GPU lost",
    severity: Severity::Critical,
    window: |_| std::time::Duration::ZERO,
    check: check_lost,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: SCENARIO,
};

/// When the scenario's GPU falls off the bus, and when its driver reports it (Xid 79) just
/// before: with ticks farther apart, in the tick that finds it gone.
const LOST_AT_S: f32 = 20.0;
const XID_AT_S: f32 = LOST_AT_S - 0.5;

/// GPU 0 trains at its power cap, its driver reports Xid 79 (fallen off the bus) and NVML stops
/// answering for it; any other GPU carries on. No health counters: the simulator's training
/// GPUs give none.
const SCENARIO: Demo = troubled(
    "lost",
    "GPU 0 falls off the bus at 20 s, after an Xid 79; any others carry on",
    Trouble {
        health: |_| Health::default(),
        events: &[(XID_AT_S, EventKind::Xid { code: Some(79) })],
        lost_at_s: Some(LOST_AT_S),
        first_gpu_only: true,
        shows_at_s: LOST_AT_S,
    },
);

fn check_lost(c: &Ctx) -> Option<Verdict> {
    let DeviceStatus::Lost { reason } = &c.dev.status else {
        return None;
    };
    if !c.wording {
        return Some(Verdict::held(None));
    }
    let since = c.dev.lost_since_ms.map_or(String::new(), |t| {
        match c.now_ms.saturating_sub(t) {
            // Not "for 0 s" in the tick that found it gone.
            gap if gap < 1000 => " for under a second".to_string(),
            gap => format!(" for {}", span_words(gap)),
        }
    });
    let mut evidence = vec![format!(
        "NVML stopped answering for this GPU{since}: {reason}"
    )];
    let xid = super::health::preceding_xid(
        c,
        c.dev.lost_since_ms.unwrap_or(c.now_ms),
        Some("NVML lost it"),
    );
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
    // With the Xid known, NVIDIA's catalog says what to do (and the XID finding beside this
    // one points here rather than saying it again); without one, where to look.
    let actions = code.map_or_else(
        || {
            vec![
                "Look for Xid errors: `sudo dmesg | grep -i xid`".into(),
                format!("`nvidia-smi -q -d PERFORMANCE,ECC` and, with the jobs stopped, `nvidia-smi -r -i {}` or a reboot", c.dev.info.index),
            ]
        },
        |code| crate::xid::actions(code, c.dev.info.index),
    );
    Some(Verdict {
        evidence,
        causes: vec![cause],
        actions,
        signals: "NVML errors".into(),
        ..Verdict::default()
    })
}
