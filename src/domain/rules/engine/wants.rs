//! Which processes' Python stacks the rules want read, and how soon.

use super::Engine;
use crate::history::History;
use crate::rules::slots::under_used;
use crate::rules::RuleId;

impl Engine {
    /// The processes whose Python stacks the rules want, and how soon: as evidence (urgent)
    /// for those on GPUs where a cause is open or being timed and, for a hang, every rank of
    /// the same job wherever it runs (the culprit is on a GPU that looks idle); now and then
    /// (not urgent) for those on a GPU that draws less than half its TDP, where counters alone
    /// cannot tell a starved loop from one idle by demand. Written into `out`, sorted by pid,
    /// one entry a pid.
    pub fn stack_wants(&self, history: &History, out: &mut Vec<(u32, bool)>) {
        out.clear();
        let mut jobs: Vec<&str> = Vec::new();
        for (p, dev) in history.devices.iter().enumerate() {
            let Some(slots) = self.slots.get(p) else {
                continue;
            };
            let mut urgent = false;
            for (slot, rule) in slots.iter().zip(&self.rules) {
                let judged = slot.open.is_some() || slot.watch_since_ms.is_some();
                if !(rule.cause && judged) {
                    continue;
                }
                urgent = true;
                if rule.id == RuleId::Hang {
                    jobs.extend(
                        dev.processes
                            .iter()
                            .filter_map(|pr| pr.host.as_ref()?.job.as_ref())
                            .map(|j| j.key.as_str()),
                    );
                }
            }
            // Now and then: past their start-up only (what a process does while it imports and
            // loads says nothing of its steady state).
            let starting = self
                .out
                .judging
                .get(p)
                .map_or(&[][..], |j| &j.starting_pids[..]);
            if urgent {
                out.extend(dev.processes.iter().map(|pr| (pr.pid, true)));
            } else if under_used(dev) {
                out.extend(
                    dev.processes
                        .iter()
                        .filter(|pr| !starting.contains(&pr.pid))
                        .map(|pr| (pr.pid, false)),
                );
            }
        }
        if !jobs.is_empty() {
            for dev in &history.devices {
                out.extend(dev.processes.iter().filter_map(|pr| {
                    let key = pr.host.as_ref()?.job.as_ref()?.key.as_str();
                    jobs.contains(&key).then_some((pr.pid, true))
                }));
            }
        }
        // Urgent first within a pid, so that dedup keeps it.
        out.sort_unstable_by_key(|(pid, urgent)| (*pid, !*urgent));
        out.dedup_by_key(|(pid, _)| *pid);
    }
}
