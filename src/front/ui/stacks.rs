//! The process view's Python stacks: its newest burst, main thread first with its frames (the
//! program's own marked ▸), the other threads a line each, then the `DataLoader` workers.

use ratatui::text::{Line, Span};

use super::theme::Theme;
use crate::model::stack::{is_user_file, StackBurst, StackOutcome, ThreadStack};
use crate::text::{clip, span_compact};

/// Frames of the main thread shown.
const MAIN_FRAMES: usize = 6;

/// The lines of `burst` as read at `now_ms`; `live`: `p` can read the process now.
#[must_use]
pub fn lines(
    burst: Option<&StackBurst>,
    now_ms: u64,
    live: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let Some(b) = burst else {
        let why = if live {
            "not read yet: p reads them now (they are read by themselves while a hang, starved or sync finding is judged)"
        } else {
            "none were recorded for this process"
        };
        return vec![Line::styled(format!("Python stacks: {why}"), theme.dim())];
    };
    let age = span_compact(now_ms.saturating_sub(b.t_ms));
    if b.outcome != StackOutcome::Read {
        let msg = b.message.as_deref().unwrap_or("not read");
        return vec![Line::styled(
            format!("Python stacks ({age} ago): {msg}"),
            theme.dim(),
        )];
    }
    let again = if live { ", p again" } else { "" };
    let mut out = vec![Line::styled(
        format!("Python stacks · {age} ago · {} reads{again}", b.read),
        theme.label(),
    )];
    for t in &b.threads {
        out.push(thread_line(t, theme));
        if t.main {
            out.extend(main_frames(t));
        }
    }
    for c in &b.children {
        if let Some(t) = c.main_thread() {
            let at = t
                .user_frame()
                .map_or(String::new(), |f| format!("  {} {}", f.place(), f.function));
            out.push(Line::raw(format!(
                "worker {}: {} {}/{}{at}",
                c.pid,
                t.class.words(),
                t.class_samples,
                t.samples
            )));
        }
    }
    out
}

/// The main thread's frames to show: the program's own first, innermost first (marked ▸: where
/// the program is, which a short pane must not lose), then the innermost frame it waits or
/// works in, when that is a library's; at most `MAIN_FRAMES` lines.
fn main_frames(t: &ThreadStack) -> Vec<Line<'static>> {
    let line = |mark: &str, f: &crate::model::stack::StackFrame| {
        let short = f.file.rsplit('/').next().unwrap_or(&f.file);
        let code = f
            .code
            .as_deref()
            .map_or(String::new(), |c| format!("  {c}"));
        Line::raw(format!(
            "  {mark} {short}:{} {}{code}",
            f.line,
            clip(&f.function, 40)
        ))
    };
    let mut out: Vec<Line<'static>> = t
        .frames
        .iter()
        .filter(|f| is_user_file(&f.file))
        .take(MAIN_FRAMES - 1)
        .map(|f| line("▸", f))
        .collect();
    if let Some(top) = t.frames.first().filter(|f| !is_user_file(&f.file)) {
        out.push(line("in", top));
    }
    out
}

fn thread_line(t: &ThreadStack, theme: &Theme) -> Line<'static> {
    let name = if t.main {
        "main".to_string()
    } else {
        clip(t.name.as_deref().unwrap_or("thread"), 16)
    };
    let what = if t.frames.is_empty() {
        "no Python frames read".to_string()
    } else {
        format!("{} {}/{}", t.class.words(), t.class_samples, t.samples)
    };
    let top = if t.main {
        String::new()
    } else {
        t.top().map_or(String::new(), |f| {
            format!("  {} {}", f.place(), clip(&f.function, 30))
        })
    };
    Line::from(vec![
        Span::styled(
            format!("{name:<8}"),
            if t.main { theme.title() } else { theme.label() },
        ),
        Span::raw(format!(" {what}{top}")),
    ])
}
