//! The TUI's event loop on a `TestBackend`, in tokio's paused (virtual) time: redraws caused by
//! new data are capped at the frame rate while sampling goes faster; input redraws at once.

mod common;

use std::time::Duration;

use gpuwatch::app::AppState;
use gpuwatch::monitor::Monitor;
use gpuwatch::source::sim::Scenario;
use gpuwatch::tui::{event_loop, Msg, Screen, Session};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use tokio::sync::mpsc;

fn session(frame: Duration) -> Session {
    let store = common::store_with(Scenario::Healthy, 1, 30, |_| {});
    Session {
        monitor: Monitor::over(store),
        frame,
        export: Box::new(|_, _| Ok(String::new())),
        suspend: None,
    }
}

/// Runs the loop while `drive` sends ticks and input; returns the number of frames drawn.
async fn frames_drawn(
    frame: Duration,
    drive: impl AsyncFnOnce(&Monitor, mpsc::UnboundedSender<Msg>),
) -> usize {
    frames_drawn_zoomed(frame, AppState::new(false).zoom, drive).await
}

/// `frames_drawn` with the chart showing `ZOOMS_S[zoom]` (60 s unless said).
async fn frames_drawn_zoomed(
    frame: Duration,
    zoom: usize,
    drive: impl AsyncFnOnce(&Monitor, mpsc::UnboundedSender<Msg>),
) -> usize {
    let session = session(frame);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut terminal = Screen::new(Terminal::new(TestBackend::new(120, 40)).unwrap());
    let mut state = AppState::new(false);
    state.zoom = zoom;
    let (looped, ()) = tokio::join!(
        event_loop(&mut terminal, rx, &session, state),
        drive(&session.monitor, tx) // dropping the sender ends the loop
    );
    looped.unwrap();
    terminal.frames()
}

/// Ticks every 100 ms for 3 s, the chart zoomed to `ZOOMS_S[zoom]`: frames drawn.
async fn frames_of_10_hz_ticks(zoom: usize) -> usize {
    frames_drawn_zoomed(Duration::from_millis(200), zoom, async |data, _tx| {
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            data.notify();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    })
    .await
}

/// Data redraws as often as the chart moves by one of its points, never more than `--fps`
/// (5) times a second nor less than once a second: at 120 columns the chart shows 220 points.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn ticks_at_10_hz_redraw_as_often_as_the_chart_moves() {
    use gpuwatch::app::ZOOMS_S;
    let zoom = |s: u64| ZOOMS_S.iter().position(|z| *z == s).unwrap();
    // 30 s over 220 points: one every 136 ms, so the 5 a second cap holds: about 15, not 31.
    let frames = frames_of_10_hz_ticks(zoom(30)).await;
    assert!((14..=17).contains(&frames), "30 s window: {frames} frames");
    // 60 s: one point every 272 ms, about 11 frames in 3 s.
    let frames = frames_of_10_hz_ticks(zoom(60)).await;
    assert!((11..=13).contains(&frames), "60 s window: {frames} frames");
    // 10 min: a point every 2.7 s, but the numbers are drawn at least once a second.
    let frames = frames_of_10_hz_ticks(zoom(600)).await;
    assert!((3..=5).contains(&frames), "10 min window: {frames} frames");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn ticks_slower_than_the_frame_rate_each_redraw() {
    let frames = frames_drawn(Duration::from_millis(200), async |data, _tx| {
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            data.notify();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    })
    .await;
    assert_eq!(frames, 6, "the first frame and one per tick");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_key_redraws_at_once_even_right_after_a_frame() {
    let frames = frames_drawn(Duration::from_secs(10), async |_data, tx| {
        tokio::time::sleep(Duration::from_millis(10)).await;
        for _ in 0..3 {
            let key = KeyEvent::new(KeyCode::Down, KeyModifiers::NONE);
            tx.send(Msg::Input(Event::Key(key))).unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(
        frames, 4,
        "the first frame and one per key, frame cap or not"
    );
}

/// A replay of the healthy demo, `seconds` long, at its position.
fn replay_store(seconds: u64) -> gpuwatch::store::Store {
    let mut store = common::store_with(Scenario::Healthy, 1, seconds, |_| {});
    let first_ms = store.history().devices[0]
        .samples
        .iter()
        .next()
        .unwrap()
        .t_ms;
    store.set_position(gpuwatch::store::Position {
        first_ms,
        end_ms: None,
        can_rewind: true,
    });
    store
}

/// A seek's answer is drawn when the replay's data lands where it asked, not held back by the
/// frame cap (it waited up to half a second at `--fps 2`), and nothing before: the key's own
/// frame and a tick midway caught the seek passing (helper-37). Later data keeps the cap.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_data_a_seek_brings_is_drawn_at_once() {
    let session = Session {
        monitor: Monitor::over(replay_store(30)),
        frame: Duration::from_secs(10),
        export: Box::new(|_, _| Ok(String::new())),
        suspend: None,
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let mut terminal = Screen::new(Terminal::new(TestBackend::new(120, 40)).unwrap());
    let drive = async |data: &Monitor, tx: mpsc::UnboundedSender<Msg>| {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let key = KeyEvent::new(KeyCode::Char('['), KeyModifiers::NONE);
        tx.send(Msg::Input(Event::Key(key))).unwrap();
        // Midway: the replay has not moved yet.
        tokio::time::sleep(Duration::from_millis(60)).await;
        data.notify();
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_millis(60)).await;
            // 10 s back: the replay played again from its start to there.
            *data.lock().unwrap() = replay_store(20);
            data.notify();
        }
        // Long after the seek: held back by the 10 s cap, as any data is.
        tokio::time::sleep(Duration::from_secs(1)).await;
        data.notify();
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let (looped, ()) = tokio::join!(
        event_loop(&mut terminal, rx, &session, AppState::new(false)),
        drive(&session.monitor, tx)
    );
    looped.unwrap();
    assert_eq!(
        terminal.frames(),
        3,
        "the first frame and the two ticks the seek brought; neither the key's nor the tick \
         midway, which would show the seek before it landed"
    );
}
