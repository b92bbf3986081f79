//! Seeking in a replay: where a seek key goes (from the target of one still on its way, so
//! keys typed faster than the screen redraws add up), and whether it has reached the screen.

use super::{AppState, Effect};
use crate::store::Store;

/// Where a seek goes, and what the screen showed when it was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingSeek {
    pub from_ms: u64,
    pub target_ms: u64,
}

impl PendingSeek {
    /// On screen once the view has moved and reached the target (within a tick or two: the
    /// tick at or before it), or the replay ended short of it.
    fn shown(&self, now_ms: u64, tick_ms: u64, ended: bool) -> bool {
        now_ms != self.from_ms
            && (ended || now_ms.saturating_add(tick_ms.saturating_mul(2)) >= self.target_ms)
    }
}

impl AppState {
    /// A replay's seek by `delta_ms` of sample time from where it is (`i64::MIN`: to its start,
    /// `i64::MAX`: to its end). Refused, with why, on live GPUs and when going back in a stream.
    pub(super) fn seek_by(&mut self, delta_ms: i64, store: &Store) -> Effect {
        let (Some(pos), Some(now)) = (store.position(), store.history().latest_ms()) else {
            self.status = Some(if store.is_replay() {
                "nothing to seek: no tick of the recording has been read".into()
            } else {
                "seeking works in a replay (gpuwatch replay FILE)".into()
            });
            return Effect::None;
        };
        if delta_ms < 0 && !pos.can_rewind {
            self.status = Some(
                "cannot go back in a stream (a pipe or standard input): replay a file to seek"
                    .into(),
            );
            return Effect::None;
        }
        let tick_ms = u64::try_from(store.interval().as_millis()).unwrap_or(u64::MAX);
        let base = match self.pending_seek {
            Some(p)
                if p.target_ms != crate::pacer::TO_END && !p.shown(now, tick_ms, store.ended()) =>
            {
                p.target_ms
            }
            _ => now,
        };
        let target = match delta_ms {
            i64::MIN => pos.first_ms,
            i64::MAX => crate::pacer::TO_END,
            d => base.saturating_add_signed(d).max(pos.first_ms),
        };
        // A gzip file's end is known once it was read to it: `]` there went past it, 10 s a
        // press, and as many `[` came back before one moved.
        let end = pos.end_ms.or_else(|| store.ended().then_some(now));
        let target = match end {
            Some(end) if target != crate::pacer::TO_END && target >= end => crate::pacer::TO_END,
            _ => target,
        };
        // The end, where known, is where the next key counts from until the screen gets there
        // (`>` then `[` went back 10 s from where the screen still stood, not from the end).
        // An end not known yet (a gzip file not read to it) is a seek under way until the
        // replay ends; it stays `TO_END`, which the next key does not count from.
        let pending = if target == crate::pacer::TO_END {
            end.or(Some(crate::pacer::TO_END))
        } else {
            Some(target)
        };
        self.pending_seek = pending.map(|target_ms| PendingSeek {
            from_ms: now,
            target_ms,
        });
        if target == crate::pacer::TO_END && store.ended() {
            return Effect::None;
        }
        Effect::Seek(target)
    }

    /// Whether a seek asked for is still on its way: the store has not reached its target.
    /// The frames drawn meanwhile would show the times it passes through (a seek forward
    /// showed one for about 40 ms; helper-35).
    #[must_use]
    pub fn seek_under_way(&self, store: &Store) -> bool {
        let (Some(p), Some(now)) = (self.pending_seek, store.history().latest_ms()) else {
            return false;
        };
        let tick_ms = u64::try_from(store.interval().as_millis()).unwrap_or(u64::MAX);
        !p.shown(now, tick_ms, store.ended())
    }
}
