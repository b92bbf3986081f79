//! The process view's Python stacks: its newest burst, main thread first with its frames (the
//! program's own marked ▸), the other threads a line each, then the `DataLoader` workers.
//! Written into the pane's kept `Doc`: a frame formats them without a `String` of their own.

use ratatui::style::Style;

use super::scroll::Doc;
use super::theme::Theme;
use crate::model::stack::{is_user_file, StackBurst, StackFrame, StackOutcome, ThreadStack};
use crate::text::{Clip, Compact};

/// Frames of the main thread shown.
const MAIN_FRAMES: usize = 6;

/// The lines of `burst` as read at `now_ms`, added to `doc`; `live`: `p` can read the process
/// now.
pub fn write(doc: &mut Doc, burst: Option<&StackBurst>, now_ms: u64, live: bool, theme: &Theme) {
    let Some(b) = burst else {
        let why = if live {
            "not read yet: p reads them now (they are read by themselves while a hang, starved or sync finding is judged)"
        } else {
            "none were recorded for this process"
        };
        doc.styled_fmt(format_args!("Python stacks: {why}"), theme.dim());
        return;
    };
    let age = Compact(now_ms.saturating_sub(b.t_ms));
    if b.outcome != StackOutcome::Read {
        let msg = b.message.as_deref().unwrap_or("not read");
        doc.styled_fmt(
            format_args!("Python stacks ({age} ago): {msg}"),
            theme.dim(),
        );
        return;
    }
    let again = if live { ", p again" } else { "" };
    doc.styled_fmt(
        format_args!("Python stacks · {age} ago · {} reads{again}", b.read),
        theme.label(),
    );
    for t in &b.threads {
        thread_line(doc, t, theme);
        if t.main {
            main_frames(doc, t);
        }
    }
    for c in &b.children {
        if let Some(t) = c.main_thread() {
            doc.line(Style::default());
            doc.fmt(
                format_args!(
                    "worker {}: {} {}/{}",
                    c.pid,
                    t.class.words(),
                    t.class_samples,
                    t.samples
                ),
                Style::default(),
            );
            if let Some(f) = t.user_frame() {
                doc.fmt(
                    format_args!("  {} {}", Place(f), f.function),
                    Style::default(),
                );
            }
        }
    }
}

/// `file.py:88`: a frame's file without its directories, and its line.
struct Place<'a>(&'a StackFrame);

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = &self.0.file;
        let short = file.rsplit('/').next().unwrap_or(file);
        write!(f, "{short}:{}", self.0.line)
    }
}

/// The main thread's frames to show: the program's own first, innermost first (marked ▸: where
/// the program is, which a short pane must not lose), then the innermost frame it waits or
/// works in, when that is a library's; at most `MAIN_FRAMES` lines.
fn main_frames(doc: &mut Doc, t: &ThreadStack) {
    let mut line = |mark: &str, f: &StackFrame| {
        doc.line(Style::default());
        doc.fmt(
            format_args!("  {mark} {} {}", Place(f), Clip(&f.function, 40)),
            Style::default(),
        );
        if let Some(code) = f.code.as_deref() {
            doc.fmt(format_args!("  {code}"), Style::default());
        }
    };
    for f in t
        .frames
        .iter()
        .filter(|f| is_user_file(&f.file))
        .take(MAIN_FRAMES - 1)
    {
        line("▸", f);
    }
    if let Some(top) = t.frames.first().filter(|f| !is_user_file(&f.file)) {
        line("in", top);
    }
}

fn thread_line(doc: &mut Doc, t: &ThreadStack, theme: &Theme) {
    doc.line(Style::default());
    let style = if t.main { theme.title() } else { theme.label() };
    if t.main {
        doc.push("main    ", style);
    } else {
        let name = Clip(t.name.as_deref().unwrap_or("thread"), 16);
        doc.fmt(format_args!("{name:<8}"), style);
    }
    if t.frames.is_empty() {
        doc.push(" no Python frames read", Style::default());
    } else {
        doc.fmt(
            format_args!(" {} {}/{}", t.class.words(), t.class_samples, t.samples),
            Style::default(),
        );
    }
    if !t.main {
        if let Some(f) = t.top() {
            doc.fmt(
                format_args!("  {} {}", Place(f), Clip(&f.function, 30)),
                Style::default(),
            );
        }
    }
}
