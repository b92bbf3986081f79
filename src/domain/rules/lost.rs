//! The GPU lost: NVML stopped answering for it (fallen off the bus, reset, or its driver state
//! broken). Named with the Xid the driver reported before, where there was one.

use super::{Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::DeviceStatus;
use crate::text::span_words;

pub const LOST: Rule = Rule {
    id: RuleId::Lost,
    mig: OnMig::Parent,
    title: "GPU lost",
    severity: Severity::Critical,
    window: |_| std::time::Duration::ZERO,
    check: check_lost,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: None,
};

fn check_lost(c: &Ctx) -> Option<Verdict> {
    let DeviceStatus::Lost { reason } = &c.dev.status else {
        return None;
    };
    if !c.wording {
        return Some(Verdict::held(None));
    }
    let since = c.dev.lost_since_ms.map_or(String::new(), |t| {
        format!(" for {}", span_words(c.now_ms.saturating_sub(t)))
    });
    let mut evidence = vec![format!(
        "NVML stopped answering for this GPU{since}: {reason}"
    )];
    let xid = super::health::preceding_xid(c, c.dev.lost_since_ms.unwrap_or(c.now_ms));
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
    let mut actions: Vec<String> = code
        .map(|code| crate::xid::actions(code, c.dev.info.index))
        .unwrap_or_default();
    actions.extend([
        "Look for Xid errors: `sudo dmesg | grep -i xid`".into(),
        format!("`nvidia-smi -q -d PERFORMANCE,ECC` and, with the jobs stopped, `nvidia-smi -r -i {}` or a reboot", c.dev.info.index),
    ]);
    Some(Verdict {
        evidence,
        causes: vec![cause],
        actions,
        signals: "NVML errors".into(),
        ..Verdict::default()
    })
}
