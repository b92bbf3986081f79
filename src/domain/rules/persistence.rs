//! Persistence mode off: the driver tears the GPU's state down whenever no client is attached,
//! so each new process pays a slow initialisation.

use super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Facts, BUSY, STOCK};

pub const PERSISTENCE: Rule = Rule {
    id: RuleId::Persistence,
    glance: None,
    mig: OnMig::Parent,
    title: "Persistence mode off",
    severity: Severity::Info,
    window: |_| std::time::Duration::ZERO,
    check: check_persistence,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    // Training as usual on GPUs whose persistence mode is off: nothing on the screen suffers
    // while it runs; the next process to start pays the driver's start-up.
    demo: Demo {
        name: "persistence",
        about: "busy training with persistence mode off: each new process waits for the driver",
        level: |_, _| BUSY,
        facts: Facts {
            persistence_mode: false,
            ..STOCK
        },
        workload: None,
        trouble: None,
    },
};

fn check_persistence(c: &Ctx) -> Option<Verdict> {
    if c.dev.info.persistence_mode != Some(false) {
        return None;
    }
    if !c.wording {
        return Some(Verdict::held(None));
    }
    Some(Verdict {
        evidence: vec!["persistence mode is off".into()],
        causes: vec!["Without it the driver tears the GPU state down whenever no client is attached, so each new process pays a slow initialisation".into()],
        actions: vec!["`sudo nvidia-smi -pm 1`, or better the `nvidia-persistenced` service".into()],
        signals: "persistence mode".into(),
        ..Verdict::default()
    })
}
