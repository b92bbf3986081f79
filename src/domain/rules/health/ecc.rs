//! Uncorrected ECC errors: GPU memory returned data it could not correct, by its counters or
//! the driver's events. What ran since is suspect until the GPU is reset.

use super::super::{ms, Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use super::{latest_health, pids, ERROR_AT_S};
use crate::model::demo::{troubled, Demo, Trouble, CLEAN};
use crate::model::{EventKind, Health};
use crate::text::span_words;

pub const ECC: Rule = Rule {
    id: RuleId::Ecc,
    glance: None,
    mig: OnMig::Parent,
    title: "Uncorrected ECC errors",
    severity: Severity::Critical,
    window: |_| std::time::Duration::ZERO,
    check: check_ecc,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: SCENARIO,
};

/// An uncorrectable memory error at 10 s, as a Hopper GPU reports one: the ECC event, Xid 94
/// (contained) and a row remap pending until a reset. It raises the Xid and row-remap
/// findings beside its own.
const SCENARIO: Demo = troubled(
    "ecc",
    "an uncorrectable memory error at 10 s: ECC event, Xid 94, a row remap pending until a reset",
    Trouble {
        health: ecc,
        events: &[
            (ERROR_AT_S, EventKind::EccUncorrected),
            (ERROR_AT_S, EventKind::Xid { code: Some(94) }),
        ],
        lost_at_s: None,
        first_gpu_only: false,
        shows_at_s: ERROR_AT_S,
    },
);

fn ecc(t_s: f32) -> Health {
    if t_s < ERROR_AT_S {
        return CLEAN;
    }
    Health {
        ecc_uncorrected_volatile: Some(1),
        ecc_uncorrected_aggregate: Some(1),
        remap_pending: Some(true),
        ..CLEAN
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
    if !c.wording {
        return Some(Verdict::held(None));
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
