//! Copying findings into the conclusions without allocating. The engine copies every open
//! finding into what readers read at each judging (five times a second while something is
//! being timed), and most of them are the same findings as the judging before, with the same
//! words. A derived `Clone` copies field by field into new buffers; these `clone_from`s write
//! into the buffers of the finding already there. Each destructures its source completely,
//! so a field added to `Finding` or `Culprit` does not compile until it is copied here.

use super::{Culprit, Finding};

impl Clone for Finding {
    fn clone(&self) -> Self {
        let Finding {
            rule,
            title,
            severity,
            device,
            since_ms,
            last_ms,
            opened_ms,
            cleared_ms,
            symptom_ended,
            evidence,
            causes,
            actions,
            pids,
            signals,
            culprit,
            alternative,
            measures,
            energy_j,
        } = self;
        Finding {
            rule: rule.clone(),
            title: title.clone(),
            severity: *severity,
            device: *device,
            since_ms: *since_ms,
            last_ms: *last_ms,
            opened_ms: *opened_ms,
            cleared_ms: *cleared_ms,
            symptom_ended: *symptom_ended,
            evidence: evidence.clone(),
            causes: causes.clone(),
            actions: actions.clone(),
            pids: pids.clone(),
            signals: signals.clone(),
            culprit: culprit.clone(),
            alternative: alternative.clone(),
            measures: measures.clone(),
            energy_j: *energy_j,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let Finding {
            rule,
            title,
            severity,
            device,
            since_ms,
            last_ms,
            opened_ms,
            cleared_ms,
            symptom_ended,
            evidence,
            causes,
            actions,
            pids,
            signals,
            culprit,
            alternative,
            measures,
            energy_j,
        } = source;
        self.rule.clone_from(rule);
        self.title.clone_from(title);
        self.severity = *severity;
        self.device = *device;
        self.since_ms = *since_ms;
        self.last_ms = *last_ms;
        self.opened_ms = *opened_ms;
        self.cleared_ms = *cleared_ms;
        self.symptom_ended = *symptom_ended;
        // `Vec::clone_from` copies element by element with `String::clone_from`: the
        // strings' buffers are kept where they are long enough.
        self.evidence.clone_from(evidence);
        self.causes.clone_from(causes);
        self.actions.clone_from(actions);
        self.pids.clone_from(pids);
        self.signals.clone_from(signals);
        self.culprit.clone_from(culprit);
        self.alternative.clone_from(alternative);
        self.measures.clone_from(measures);
        self.energy_j = *energy_j;
    }
}

impl Clone for Culprit {
    fn clone(&self) -> Self {
        let Culprit {
            device,
            pid,
            rank,
            reason,
            at_ms,
            text,
        } = self;
        Culprit {
            device: *device,
            pid: *pid,
            rank: *rank,
            reason: reason.clone(),
            at_ms: *at_ms,
            text: text.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let Culprit {
            device,
            pid,
            rank,
            reason,
            at_ms,
            text,
        } = source;
        self.device = *device;
        self.pid = *pid;
        self.rank = *rank;
        self.reason.clone_from(reason);
        self.at_ms = *at_ms;
        self.text.clone_from(text);
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::super::{Measure, Severity};
    use super::*;

    fn finding(words: &str, culprit: bool) -> Finding {
        Finding {
            rule: format!("rule {words}"),
            title: format!("title {words}"),
            severity: Severity::Warning,
            device: words.len() as u32,
            since_ms: 1,
            last_ms: 2,
            opened_ms: 3,
            cleared_ms: culprit.then_some(4),
            symptom_ended: culprit,
            evidence: words.split(' ').map(String::from).collect(),
            causes: vec![words.to_uppercase()],
            actions: vec![],
            pids: vec![words.len() as u32; 3],
            signals: words.into(),
            culprit: culprit.then(|| Culprit {
                device: 5,
                pid: 6,
                rank: Some(7),
                reason: "exited".into(),
                at_ms: 8,
                text: format!("rank of {words}"),
            }),
            alternative: culprit.then(|| "sync".into()),
            measures: vec![Measure {
                name: Cow::Owned(words.into()),
                value: 1.5,
                unit: Cow::Borrowed("%"),
            }],
            energy_j: culprit.then_some(9.0),
        }
    }

    /// Copied over a finding of other words and lengths, with and without the optional
    /// parts, either way: what is there after is the source, every field.
    #[test]
    fn clone_from_leaves_a_copy_of_the_source_whatever_was_there() {
        let long = finding("a hang with a long list of evidence words", true);
        let short = finding("sync", false);
        for (from, over) in [(&long, &short), (&short, &long), (&long, &long)] {
            let mut kept = over.clone();
            kept.clone_from(from);
            assert_eq!(&kept, from);
            assert_eq!(&from.clone(), from);
        }
        let mut culprit = long.culprit.clone().unwrap();
        culprit.clone_from(short.culprit.as_ref().unwrap_or(&Culprit {
            device: 0,
            pid: 1,
            rank: None,
            reason: String::new(),
            at_ms: 0,
            text: "x".into(),
        }));
        assert_eq!(culprit.rank, None);
        assert_eq!(culprit.text, "x");
    }
}
