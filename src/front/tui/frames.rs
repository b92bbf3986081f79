//! When the monitor draws new data: at most `--fps` frames a second, no more often than the
//! chart moves by one of its points, and at once after a seek or a key.

use std::time::Duration;

use crate::app::{AppState, Effect};

/// When new data is drawn. It redraws at most `pace` apart (sampling goes on at its own
/// rate); input redraws at once. `pending` is a data redraw held back until `next_frame`;
/// while one is pending a live screen's loop does not listen for more ticks (a replay's does,
/// for its clock: `listening`; on live GPUs a tick that comes then
/// leaves a permit in the `Notify`, taken without sleeping once the frame has been drawn). At
/// 10 ticks a second and 5 frames that halved the loop's context switches (19 -> 10/s).
pub(super) struct Frames {
    pace: Duration,
    /// The most frames a second for new data (`--fps`).
    frame: Duration,
    /// The replay's clock as last drawn (`ui::clock_shown`).
    clock_drawn: Option<u64>,
    /// The clock as last seen, when it last moved, and the wall time of its last step of one
    /// (a seek's jump is no step): a clock that steps faster than frames may come (a tenths
    /// clock, a fast `--speed`) is not kept to its steps, and the cap holds.
    clock_seen: Option<u64>,
    clock_moved_at: tokio::time::Instant,
    clock_step: Duration,
    last_draw: tokio::time::Instant,
    pub(super) pending: bool,
    pub(super) next_frame: tokio::time::Instant,
    /// After a seek the data that moved is the key's answer: it is drawn at the seek's pace,
    /// not held back by the frame cap (it was, up to half a second at `--fps 2`).
    seeking_until: Option<tokio::time::Instant>,
}

impl Frames {
    pub(super) fn new(frame: Duration) -> Self {
        let now = tokio::time::Instant::now();
        Frames {
            pace: frame,
            frame,
            clock_drawn: None,
            clock_seen: None,
            clock_moved_at: now,
            clock_step: Duration::MAX,
            last_draw: now,
            pending: false,
            next_frame: now,
            seeking_until: None,
        }
    }

    /// A frame was drawn: the next one for data waits a pace from now.
    pub(super) fn drawn(&mut self, state: &AppState, clock: Option<u64>) {
        self.last_draw = tokio::time::Instant::now();
        self.pending = false;
        self.pace = data_pace(self.frame, state);
        self.clock_drawn = clock;
    }

    /// A key's effect; true for a seek, which is drawn where it lands (`data_came`) rather
    /// than at once: the sampling thread acts on a seek at once, and a frame for the key
    /// caught it midway (helper-37). Any other key is drawn at once.
    pub(super) fn seek_asked(&mut self, effect: &Effect) -> bool {
        let seek = matches!(effect, Effect::Seek(_));
        if seek {
            self.seeking_until = Some(tokio::time::Instant::now() + SEEK_FOLLOW);
        }
        seek
    }

    /// Whether new data is waited for: not while a frame is held back (live, a tick then
    /// changes nothing the held frame will not draw), but in a replay, whose clock may move
    /// before the held frame is due.
    pub(super) fn listening(&self) -> bool {
        !self.pending || self.clock_drawn.is_some()
    }

    /// New data came: true to draw now; otherwise a frame is held back for `next_frame`
    /// (none while the screen is frozen). A replay's clock that moved is drawn at once
    /// (`CLOCK_FRAME`), and the frames that follow keep its phase. A seek's first
    /// `SEEK_FOLLOW` draws nothing until it lands (`under_way`): not the times it passes.
    pub(super) fn data_came(
        &mut self,
        frozen: bool,
        (clock, under_way): (Option<u64>, bool),
    ) -> bool {
        let now = tokio::time::Instant::now();
        let seeking = self.seeking_until.is_some_and(|until| now < until);
        if seeking && under_way {
            self.pending = false;
            return false;
        }
        self.clock_saw(clock, now);
        let ticked = clock.is_some() && clock != self.clock_drawn && self.clock_step >= self.frame;
        let pace = match (seeking, ticked) {
            (true, _) => SEEK_FRAME,
            (false, true) => CLOCK_FRAME.min(self.pace),
            (false, false) => self.pace,
        };
        self.next_frame = self.last_draw + pace;
        let due = now >= self.next_frame;
        self.pending = !frozen && !due;
        !frozen && due
    }

    fn clock_saw(&mut self, clock: Option<u64>, now: tokio::time::Instant) {
        if clock == self.clock_seen {
            return;
        }
        if let (Some(c), Some(seen)) = (clock, self.clock_seen) {
            if c == seen + 1 {
                self.clock_step = now - self.clock_moved_at;
            }
        }
        (self.clock_seen, self.clock_moved_at) = (clock, now);
    }
}

/// For this long after a seek, the replay's data is drawn as it moves, at most every
/// `SEEK_FRAME`: a seek far into a recording plays its ticks through in a moment.
const SEEK_FOLLOW: Duration = Duration::from_millis(500);
const SEEK_FRAME: Duration = Duration::from_millis(40);

/// The soonest after the last frame that a replay's moving clock is drawn. Data frames come a
/// pace apart from the last frame, so a frame drawn as the clock moves sets their phase: at
/// `--fps 2`, on the second and the half second. Only a key or a seek shifts that phase, and
/// then one frame more than the cap puts it back. Held to the cap, a key pressed at 3.25 s left
/// the clock a quarter of a second late for the rest of the replay (helper-35); held 200 ms
/// from a key, a key just before the second left that second up to 200 ms late (helper-37).
const CLOCK_FRAME: Duration = SEEK_FRAME;

/// How often new data is worth a frame: at most `--fps` a second, and no more often than the
/// chart moves by one of its points (a minute across 188 braille dots: one every 0.32 s; the
/// numbers in the table are drawn with it), but at least once a second.
fn data_pace(frame: Duration, state: &AppState) -> Duration {
    let points = u64::from(state.hits.chart_points);
    if points == 0 {
        return frame;
    }
    let step = Duration::from_millis(state.window_ms() / points);
    frame.max(step.min(Duration::from_secs(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::advance;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// A replay at --fps 2 whose chart moves every 0.43 s: data every 100 ms, the clock in
    /// seconds (`clock_moves`) or still. Returns when frames were drawn (ms from the start).
    async fn frames(key_at: Option<u64>, clock_moves: bool) -> Vec<u64> {
        frames_of(key_at, |t| if clock_moves { t / 1000 } else { 0 }).await
    }

    async fn frames_of(key_at: Option<u64>, clock_at: impl Fn(u64) -> u64) -> Vec<u64> {
        let mut state = AppState::new(false);
        state.hits.chart_points = u16::try_from(state.window_ms() / 430).unwrap();
        let mut frames = Frames::new(MS(500));
        frames.drawn(&state, Some(0));
        let mut drawn = vec![];
        for t in (100..=4000).step_by(100) {
            advance(MS(100)).await;
            let clock = clock_at(t);
            let key = key_at == Some(t);
            if key || frames.data_came(false, (Some(clock), false)) {
                frames.drawn(&state, Some(clock));
                drawn.push(t);
            }
        }
        drawn
    }

    #[tokio::test(start_paused = true)]
    async fn a_replays_clock_is_drawn_as_it_moves_after_a_key_shifted_the_frames() {
        let drawn = frames(Some(1300), true).await;
        for second in [2000, 3000, 4000] {
            assert!(drawn.contains(&second), "{second} ms not drawn: {drawn:?}");
        }
        // Once back in phase, no more frames than the cap: two a second.
        let last_second = drawn.iter().filter(|t| **t > 3000).count();
        assert_eq!(last_second, 2, "{drawn:?}");
    }

    /// The ticks a seek passes through are not drawn (a seek forward showed one for 40 ms,
    /// a seek back the recording's start), the tick it lands on is, at once.
    #[tokio::test(start_paused = true)]
    async fn a_seek_is_drawn_where_it_lands_not_where_it_passes() {
        let state = AppState::new(false);
        let mut frames = Frames::new(MS(500));
        frames.drawn(&state, Some(3));
        frames.seeking_until = Some(tokio::time::Instant::now() + SEEK_FOLLOW);
        for passed in [4, 9, 20] {
            advance(MS(50)).await;
            assert!(
                !frames.data_came(false, (Some(passed), true)),
                "{passed} s drawn"
            );
            assert!(!frames.pending, "a frame held back for {passed} s");
        }
        advance(MS(10)).await;
        assert!(
            frames.data_came(false, (Some(33), false)),
            "the landing not drawn"
        );
    }

    /// A key just before the second: the second is drawn on time all the same (held 200 ms
    /// from the key's frame, it came up to 200 ms late; helper-37).
    #[tokio::test(start_paused = true)]
    async fn a_key_just_before_the_second_does_not_hold_it_back() {
        let drawn = frames(Some(2900), true).await;
        assert!(drawn.contains(&3000), "{drawn:?}");
    }

    /// A clock that steps faster than frames may come (tenths at --fps 2) is not kept to its
    /// steps: the cap holds.
    #[tokio::test(start_paused = true)]
    async fn a_clock_faster_than_the_cap_leaves_the_cap_alone() {
        let drawn = frames_of(None, |t| t / 100).await;
        let last_second = drawn.iter().filter(|t| **t > 3000).count();
        assert!(last_second <= 2, "{drawn:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_clock_that_moves_a_key_shifts_the_frames_and_the_cap_holds() {
        let drawn = frames(Some(1300), false).await;
        assert!(!drawn.contains(&2000), "{drawn:?}");
        assert!(drawn
            .windows(2)
            .all(|w| w[1] - w[0] >= 500 || w[1] == 1300 || w[0] == 1300));
    }
}
