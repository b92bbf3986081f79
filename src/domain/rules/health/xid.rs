//! An Xid error the driver reported: named from NVIDIA's catalog, with what it needs (a reset,
//! an application restart, nothing) and the driver's own lines to read.

use super::super::{ms, Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use super::{pids, ERROR_AT_S};
use crate::history::EventCount;
use crate::model::demo::{troubled, Demo, Trouble, CLEAN};
use crate::model::{DeviceStatus, EventKind};
use crate::text::{clock, span_words};
use crate::xid::{self, Need};

pub const XID: Rule = Rule {
    id: RuleId::Xid,
    glance: None,
    mig: OnMig::Parent,
    title: "Xid error",
    severity: Severity::Warning,
    window: |_| std::time::Duration::ZERO,
    check: check_xid,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: SCENARIO,
};

/// An application's bad address: Xid 31 at 10 s. The GPU itself is fine.
const SCENARIO: Demo = troubled(
    "xid",
    "an application's GPU memory page fault at 10 s (Xid 31): restart it, the GPU is fine",
    Trouble {
        health: |_| CLEAN,
        events: &[(ERROR_AT_S, EventKind::Xid { code: Some(31) })],
        lost_at_s: None,
        first_gpu_only: false,
        shows_at_s: ERROR_AT_S,
    },
);

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

/// The code that matters most: the newest that needs a reset, else the newest the application
/// must act on, else the newest. One pass, nothing collected: an open Xid is judged every
/// evaluation and worded once a second (less often as it ages).
fn worst<'a>(events: impl Iterator<Item = &'a EventCount>) -> Option<u64> {
    let rank = |code| match xid::need(code) {
        Need::Reset => 2,
        Need::Other => 1,
        Need::Nothing => 0,
    };
    let mut best: Option<((u8, u64), u64)> = None;
    for e in events {
        let Some(code) = e.kind.xid() else { continue };
        let key = (rank(code), e.last_ms);
        // Strictly greater: of two equally new, the first listed, as a stable sort gave.
        if best.is_none_or(|(k, _)| key > k) {
            best = Some((key, code));
        }
    }
    best.map(|(_, code)| code)
}

fn check_xid(c: &Ctx) -> Option<Verdict> {
    let device = c.dev.info.index;
    let from = c.now_ms.saturating_sub(ms(c.thresholds.health.xid_window));
    let xids = || {
        c.all
            .events_since(device, from)
            .filter(|e| matches!(e.kind, EventKind::Xid { .. }))
    };
    xids().next()?;
    let code = worst(xids());
    let severity = match code.map(xid::need) {
        Some(Need::Reset) => Severity::Critical,
        Some(Need::Nothing) => Severity::Info,
        _ => Severity::Warning,
    };
    if !c.wording {
        return Some(Verdict::held(Some(severity)));
    }
    let events: Vec<&EventCount> = xids().collect();
    let actions = actions_for(c, code);
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

/// What to do: NVIDIA's action for `code`, then where the driver's own lines are. On a GPU
/// NVML lost, the LOST finding beside this one says what to do, from the same Xid: not twice.
fn actions_for(c: &Ctx, code: Option<u64>) -> Vec<String> {
    let device = c.dev.info.index;
    let mut actions = if matches!(c.dev.status, DeviceStatus::Lost { .. }) {
        vec![format!(
            "NVML lost GPU {device} after this Xid: what to do is under its LOST finding"
        )]
    } else {
        code.map_or_else(
            || vec!["Read the driver's line: `sudo dmesg | grep -i xid`".to_string()],
            |code| xid::actions(code, device),
        )
    };
    actions.push(format!(
        "The driver's own lines for this GPU: `sudo dmesg -T | grep -i 'xid.*{}'`",
        c.dev
            .info
            .pci_bus_id
            .to_lowercase()
            .trim_start_matches("0000")
    ));
    actions
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
