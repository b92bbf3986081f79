//! The one key table: the `?` overlay, the footer hint and README's table (checked by a test)
//! all come from `KEYS`, next to the handler in `app::AppState::key`.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Clear;
use ratatui::Frame;

use super::theme::Theme;

/// One row of the key table.
pub struct KeyHelp {
    pub keys: &'static str,
    pub does: &'static str,
    /// What the footer calls it, for the keys the footer names.
    pub hint: Option<&'static str>,
}

const fn k(keys: &'static str, does: &'static str, hint: Option<&'static str>) -> KeyHelp {
    KeyHelp { keys, does, hint }
}

pub const KEYS: [KeyHelp; 18] = [
    k("?", "every key (↑ ↓ scroll this list)", Some("? keys")),
    k(
        "↑ ↓, j k",
        "move in the focused pane: GPUs, findings (by line), processes; in the process view, scroll its findings",
        None,
    ),
    k("PgUp PgDn Home End", "move faster", None),
    k("Tab, Shift-Tab", "next / previous pane", Some("Tab pane")),
    k(
        "0 – 9",
        "select GPU 0 to 9, as nvidia-smi numbers them; `1` `2` in a row: GPU 12",
        Some("0-9 GPU"),
    ),
    k(
        "Enter",
        "open a process: the selected GPU's (on the GPU table) or the selected one (on the process table)",
        Some("Enter process"),
    ),
    k("Esc", "back to the main screen; clears the filter", None),
    k("+ -", "zoom the chart in / out (30 s to the whole history)", Some("+/- zoom")),
    k("space", "pause the display; sampling continues (a replay stops playing)", Some("space pause")),
    k(
        "[ ] { } < >",
        "replay: back / forward 10 s, 1 min, to the start / the end (the bar at the bottom shows where)",
        None,
    ),
    k("s, S", "cycle the sort column / reverse it", None),
    k("/", "filter processes by pid, user or command", None),
    k(
        "e",
        "export a snapshot (JSON and Markdown, in `$GPUWATCH_SNAPSHOT_DIR` or the current directory; `GPUWATCH_SNAPSHOT_NO_HOST=1` leaves host name, user names and paths out)",
        Some("e export"),
    ),
    k(
        "p",
        "in the process view: read the process's Python stacks now (where its threads are; live GPUs, needs ptrace permission)",
        None,
    ),
    k(
        "K, F9",
        "send a signal (TERM, INT or KILL) to the selected process, after asking; says so when not permitted",
        None,
    ),
    k("mouse", "click a GPU or process row to select it; the wheel scrolls", None),
    k("q, Ctrl-C", "quit", Some("q quit")),
    k("Ctrl-Z", "suspend to the shell with the terminal restored (`fg` resumes and redraws)", None),
];

/// What the screen's symbols mean, under the keys in the overlay.
pub const LEGEND: [(&str, &str); 4] = [
    ("badges", "‼ critical  ! warning  i info  ◀ culprit  ○ ended  ? HANG?\u{a0}4/8s symptom being timed  … 6/10s judging  ✓ ok"),
    (
        "chart",
        "━ util ━ power %TDP ━ SM active ━ memory (NO_COLOR: ⠒ • ▄ █); ▀ under the axis: a busy-but-idle finding",
    ),
    (
        "KERN%",
        "share of the time one of the process's kernels ran (NVML): a spinning kernel reads 100; it is not SM activity",
    ),
    ("H200*", "a simulated GPU (--demo)"),
];

/// The footer hints a narrow terminal drops first, last to go first: "? keys" and "q quit" stay,
/// and "space pause" (what a replay needs most, beside its seek bar) goes last.
const DROPPED_FIRST: [&str; 9] = [
    "+/- zoom",
    "0-9 GPU",
    "K signal",
    "p stacks",
    "e export",
    "Enter process",
    "Esc back",
    "Tab pane",
    "space pause",
];

/// Where the footer is shown: it lists what works there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// In a process view: Esc goes back and p reads stacks; Tab and Enter do nothing there.
    pub process_view: bool,
    /// Paused: the status line already says "space resumes", so the hint is not repeated.
    pub paused: bool,
}

thread_local! {
    /// The last footer made, and for what: it changes only with the terminal's width and the
    /// view, and is asked for every frame.
    static LAST: std::cell::RefCell<Option<(usize, Context, String)>> = const { std::cell::RefCell::new(None) };
}

/// `footer(width, ctx)` onto `out`, made again only when `width` or `ctx` changed.
pub fn write_footer(out: &mut String, width: usize, ctx: Context) {
    LAST.with_borrow_mut(|last| match last {
        Some((w, c, text)) if *w == width && *c == ctx => out.push_str(text),
        _ => {
            let text = footer(width, ctx);
            out.push_str(&text);
            *last = Some((width, ctx, text));
        }
    });
}

/// The footer: the keys that work here, from the table, in at most `width` characters
/// (at 80 columns all of them ran past the edge and "q quit" was the one cut).
pub fn footer(width: usize, ctx: Context) -> String {
    let mut hints: Vec<&str> = KEYS.iter().filter_map(|k| k.hint).collect();
    if ctx.process_view {
        hints.retain(|h| !matches!(*h, "Tab pane" | "Enter process" | "0-9 GPU"));
        hints.insert(1, "Esc back");
        hints.insert(2, "p stacks");
        hints.insert(3, "K signal");
    }
    if ctx.paused {
        hints.retain(|h| *h != "space pause");
    }
    let len = |h: &[&str]| {
        h.iter()
            .map(|s| s.chars().count() + 3)
            .sum::<usize>()
            .saturating_sub(3)
    };
    let all = hints.clone();
    let mut dropped = Vec::new();
    for drop in DROPPED_FIRST {
        if len(&hints) <= width {
            break;
        }
        if hints.contains(&drop) {
            hints.retain(|h| *h != drop);
            dropped.push(drop);
        }
    }
    // A long hint dropped early can leave room for a short one dropped before it ("e export"
    // fits at 80 columns beside a replay's seek bar once "Enter process" is gone).
    for back in dropped.into_iter().rev() {
        let mut with: Vec<&str> = all
            .iter()
            .copied()
            .filter(|h| *h == back || hints.contains(h))
            .collect();
        if len(&with) <= width {
            std::mem::swap(&mut hints, &mut with);
        }
    }
    hints.join(" · ")
}

/// README's key table, as the table above writes it.
pub fn markdown_table() -> String {
    use std::fmt::Write as _;
    let mut out = String::from("| key | what it does |\n|---|---|\n");
    for k in &KEYS {
        let _ = writeln!(out, "| {} | {} |", k.keys, k.does);
    }
    out
}

/// Draws the overlay from line `offset`; returns how far it can scroll.
/// Where the overlay's second column starts, and its wrapped rows go on: " {keys:<20} ".
const KEY_COLUMN: u16 = 22;

pub fn render(frame: &mut Frame, area: Rect, offset: usize, theme: &Theme) -> usize {
    let w = 110.min(area.width);
    let h = area.height.saturating_sub(2).max(3).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let mut doc = DOC.take();
    doc.clear();
    for k in KEYS {
        doc.line(Style::default());
        doc.hang(KEY_COLUMN);
        doc.fmt(format_args!(" {:<20} ", k.keys), Style::default());
        for part in k.does.split('`') {
            doc.push(part, Style::default());
        }
    }
    doc.styled("", Style::default());
    for (k, what) in LEGEND {
        doc.styled_fmt(format_args!(" {k:<20} {what}"), theme.dim());
        doc.hang(KEY_COLUMN);
    }
    frame.render_widget(Clear, r);
    let pane = super::border::Border::new(" keys (Esc closes, ↑↓ scroll) ", theme.focus_border());
    let max = super::scroll::render(frame, r, pane, &mut doc, offset, theme);
    DOC.set(doc);
    max
}

thread_local! {
    /// The overlay's text, kept from frame to frame while it is open.
    static DOC: std::cell::RefCell<super::scroll::Doc> = std::cell::RefCell::default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footer_fits_its_width_and_keeps_help_and_quit() {
        let all: Vec<&str> = KEYS.iter().filter_map(|k| k.hint).collect();
        for drop in DROPPED_FIRST {
            let process_view_only = ["Esc back", "p stacks", "K signal"].contains(&drop);
            assert!(
                all.contains(&drop) || process_view_only,
                "{drop} is not a footer hint"
            );
        }
        let main = Context::default();
        assert_eq!(footer(200, main), all.join(" · "));
        for width in [80, 60, 40, 20] {
            let f = footer(width, main);
            assert!(
                f.starts_with("? keys") && f.ends_with("q quit"),
                "{width}: {f}"
            );
            assert!(f.chars().count() <= width.max(15), "{width}: {f}");
        }
        assert!(
            footer(80, main).contains("e export"),
            "{}",
            footer(80, main)
        );
    }

    /// Only keys that work where the footer is: no "Enter process" in a process view, no
    /// "space pause" while paused, and "Tab pane" kept at 80 columns when paused.
    #[test]
    fn the_footer_lists_what_works_here() {
        let process = footer(
            200,
            Context {
                process_view: true,
                paused: false,
            },
        );
        assert!(
            process.contains("Esc back") && process.contains("p stacks"),
            "{process}"
        );
        assert!(
            !process.contains("Enter process") && !process.contains("Tab pane"),
            "{process}"
        );
        let prefix = "PAUSED (space resumes) · ".chars().count();
        let paused = footer(
            80 - prefix,
            Context {
                process_view: false,
                paused: true,
            },
        );
        assert!(
            paused.contains("Tab pane") && !paused.contains("space pause"),
            "{paused}"
        );
        // Beside a replay's short seek bar at 80 columns (53 left), a hint dropped for a longer
        // one comes back when it fits: export was lost there once "Enter process" had to go.
        let beside_bar = footer(53, Context::default());
        assert!(
            beside_bar.contains("e export") && !beside_bar.contains("Enter process"),
            "{beside_bar}"
        );
        assert!(beside_bar.chars().count() <= 53, "{beside_bar}");
        // Beside a replay's seek bar (about 40 columns at 80), pause is kept.
        assert!(footer(37, Context::default()).contains("space pause"));
    }
}
