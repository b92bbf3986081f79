//! The TUI's event loop on a `TestBackend`, in tokio's paused (virtual) time: redraws caused by
//! new data are capped at the frame rate while sampling goes faster; input redraws at once.

mod common;

use std::time::Duration;

use gpuwatch::app::AppState;
use gpuwatch::monitor::Monitor;
use gpuwatch::source::sim::Scenario;
use gpuwatch::tui::{event_loop, Msg, Session};
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
    let session = session(frame);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let (looped, ()) = tokio::join!(
        event_loop(&mut terminal, rx, &session, AppState::new(false)),
        drive(&session.monitor, tx) // dropping the sender ends the loop
    );
    looped.unwrap();
    terminal.get_frame().count()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn ticks_at_10_hz_redraw_at_most_5_times_a_second() {
    let frames = frames_drawn(Duration::from_millis(200), async |data, _tx| {
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            data.notify();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    })
    .await;
    // 3 s of ticks: one frame at start and about one per 200 ms, not one per tick (31).
    assert!((14..=17).contains(&frames), "{frames} frames");
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
