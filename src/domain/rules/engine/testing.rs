//! What the store's tests ask of the engine beyond its readers' view: how it words.

use super::Engine;
use crate::rules::RuleId;

impl Engine {
    /// Words every verdict of an open finding, as before `REWORD_MS`: what the throttled
    /// wording is tested against.
    pub(crate) fn word_every_judging(&mut self) {
        self.reword_ms = 0;
    }

    /// When rule `id`'s finding on GPU `device` (history order) was last worded (sample time).
    pub(crate) fn worded_ms(&self, device: usize, id: RuleId) -> Option<u64> {
        let r = self.rules.iter().position(|rule| rule.id == id)?;
        self.slots.get(device)?.get(r)?.worded_ms
    }
}
