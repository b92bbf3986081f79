//! GPU memory that needs a reset: a row remap pending until the next reset, or a remap that
//! failed because no spare rows are left.

use super::super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use super::{latest_health, pids};
use crate::model::demo::{troubled, Demo, Trouble, CLEAN};
use crate::model::Health;

pub const REMAP: Rule = Rule {
    id: RuleId::RowRemap,
    glance: None,
    mig: OnMig::Parent,
    title: "GPU memory needs a reset",
    severity: Severity::Critical,
    window: |_| std::time::Duration::ZERO,
    check: check_remap,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: SCENARIO,
};

/// A row marked for remapping by repeated corrected errors before gpuwatch started: no
/// uncorrected error, but the GPU needs a reset before its next job.
const SCENARIO: Demo = troubled(
    "row-remap",
    "a memory row remap pending from repeated corrected errors: reset before the next job",
    Trouble {
        health: |_| Health {
            ecc_corrected_volatile: Some(27),
            ecc_corrected_aggregate: Some(27),
            remap_pending: Some(true),
            ..CLEAN
        },
        events: &[],
        lost_at_s: None,
        first_gpu_only: false,
        shows_at_s: 0.0,
    },
);

fn check_remap(c: &Ctx) -> Option<Verdict> {
    let h = latest_health(c)?;
    if h.remap_failure != Some(true) && h.remap_pending != Some(true) {
        return None;
    }
    if !c.wording {
        return Some(Verdict::held(None));
    }
    let device = c.dev.info.index;
    let rows = format!(
        "rows remapped so far: {} for uncorrected errors, {} for corrected",
        h.remapped_rows_uncorrected
            .map_or("?".into(), |n| n.to_string()),
        h.remapped_rows_corrected
            .map_or("?".into(), |n| n.to_string())
    );
    if h.remap_failure == Some(true) {
        return Some(Verdict {
            evidence: vec!["a memory row remap failed: the GPU has no spare rows left for a bad row".into(), rows],
            causes: vec!["Worn or faulty GPU memory".into()],
            actions: vec![
                format!("Take GPU {device} out of service and contact your hardware vendor (`sudo nvidia-bug-report.sh`)"),
            ],
            pids: pids(c),
            signals: "row remapper (failure flag)".into(),
            title: Some("GPU memory out of spare rows".into()),
            ..Verdict::default()
        });
    }
    (h.remap_pending == Some(true)).then(|| Verdict {
        evidence: vec![
            "a memory row remap is pending: it takes effect only at the next GPU reset".into(),
            rows,
        ],
        causes: vec!["An uncorrected (or repeated corrected) memory error marked a bad row".into()],
        actions: vec![
            format!("Let the current job finish or checkpoint, then reset GPU {device}: `sudo nvidia-smi -r -i {device}` (or reboot); until then new jobs may meet the bad row"),
            format!("Check after the reset: `nvidia-smi -q -d ROW_REMAPPER -i {device}` shows Pending: No"),
        ],
        pids: pids(c),
        signals: "row remapper (pending flag)".into(),
        ..Verdict::default()
    })
}
