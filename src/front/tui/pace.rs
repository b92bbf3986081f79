//! When the monitor draws new data: at most `--fps` frames a second, no more often than the
//! chart moves by one of its points, and at once after a seek or a key.

use std::time::Duration;

use crate::app::AppState;

/// When new data is drawn. It redraws at most `pace` apart (sampling goes on at its own
/// rate); input redraws at once. `pending` is a data redraw held back until `next_frame`;
/// while one is pending the loop does not listen for more ticks (a tick that comes then
/// leaves a permit in the `Notify`, taken without sleeping once the frame has been drawn). At
/// 10 ticks a second and 5 frames that halved the loop's context switches (19 -> 10/s).
pub(super) struct Pacer {
    pace: Duration,
    last_draw: tokio::time::Instant,
    pub(super) pending: bool,
    pub(super) next_frame: tokio::time::Instant,
    /// After a seek the data that moved is the key's answer: it is drawn at the seek's pace,
    /// not held back by the frame cap (it was, up to half a second at `--fps 2`).
    pub(super) seeking_until: Option<tokio::time::Instant>,
}

impl Pacer {
    pub(super) fn new(frame: Duration) -> Self {
        let now = tokio::time::Instant::now();
        Pacer {
            pace: frame,
            last_draw: now,
            pending: false,
            next_frame: now,
            seeking_until: None,
        }
    }

    /// A frame was drawn: the next one for data waits a pace from now.
    pub(super) fn drawn(&mut self, frame: Duration, state: &AppState) {
        self.last_draw = tokio::time::Instant::now();
        self.pending = false;
        self.pace = data_pace(frame, state);
    }

    /// New data came: true to draw now; otherwise a frame is held back for `next_frame`
    /// (none while the screen is frozen).
    pub(super) fn data_came(&mut self, frozen: bool) -> bool {
        let now = tokio::time::Instant::now();
        let seeking = self.seeking_until.is_some_and(|until| now < until);
        self.next_frame = self.last_draw + if seeking { SEEK_FRAME } else { self.pace };
        let due = now >= self.next_frame;
        self.pending = !frozen && !due;
        !frozen && due
    }
}

/// For this long after a seek, the replay's data is drawn as it moves, at most every
/// `SEEK_FRAME`: a seek far into a recording plays its ticks through in a moment.
pub(super) const SEEK_FOLLOW: Duration = Duration::from_millis(500);
const SEEK_FRAME: Duration = Duration::from_millis(40);

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
