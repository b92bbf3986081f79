//! The process table: every GPU process with its GPU use and its host side.

use std::fmt::Write;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::format::write_gib;
use super::theme::Theme;
use crate::app::{process_rows_into, write_short_command, AppState, Pane, ProcessRow, SortKey};
use crate::store::Store;

/// Name, what it shows (by its sort key; `None`: the container, which sorts nothing), width
/// (0: the rest of the row, at least 10).
type Column = (&'static str, Option<SortKey>, u16);

const COLUMNS: [Column; 12] = [
    ("GPU", Some(SortKey::Gpu), 3),
    ("PID", Some(SortKey::Pid), 7),
    ("USER", Some(SortKey::User), 8),
    ("GPU MEM", Some(SortKey::GpuMem), 8),
    ("KERN%", Some(SortKey::Sm), 5),
    ("MEM%", Some(SortKey::MemPct), 4),
    ("CPU%", Some(SortKey::Cpu), 5),
    ("RSS", Some(SortKey::Rss), 6),
    ("THR", Some(SortKey::Threads), 4),
    ("WRK", Some(SortKey::Workers), 3),
    ("S", Some(SortKey::State), 2),
    ("COMMAND", Some(SortKey::Command), 0),
];

/// The GPUs NVML lost ("0" or "0, 3"), if any.
fn lost_gpus(store: &Store) -> Option<String> {
    let lost: Vec<String> = store
        .history()
        .devices
        .iter()
        .filter(|d| d.status != crate::model::DeviceStatus::Ok)
        .map(|d| crate::model::gpu_label(d.info.index).to_string())
        .collect();
    (!lost.is_empty()).then(|| lost.join(", "))
}

/// Why there is no table to draw: no process, none matching the filter, or none whose host
/// side could be read.
fn nothing_to_list(rows: &[ProcessRow], state: &AppState, store: &Store) -> Option<String> {
    if rows.is_empty() {
        return Some(if store.history().ticks() == 0 {
            // Nothing read is not "none there".
            "no reading yet: which processes hold the GPUs is not known".into()
        } else if !state.filter.is_empty() {
            "no process matches the filter (Esc clears it)".into()
        } else if let Some(lost) = lost_gpus(store) {
            // NVML no longer answers for a lost GPU: its processes are unknown, not none.
            format!("no process listed: NVML no longer lists GPU {lost}'s processes (lost)")
        } else {
            "no process holds a GPU context".into()
        });
    }
    if rows.iter().all(|r| r.host().is_none()) {
        // NVML reports host-namespace PIDs; inside a container they do not resolve. A recording
        // holds what its recorder could read: nothing here to resolve.
        return Some(if store.is_replay() {
            format!("{} GPU process(es), recorded without their host side (the recorder could not read them, or they were exiting): host columns unavailable", rows.len())
        } else {
            format!("{} GPU process(es), but their PIDs do not resolve on this machine (inside a container without --pid=host?): host columns unavailable", rows.len())
        });
    }
    None
}

/// Draws the table; returns how many process rows are visible, and the first one's position.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    theme: &Theme,
) -> (u16, usize) {
    KEPT_ROWS.with_borrow_mut(|kept| {
        // The rows' `Vec` is kept from frame to frame; it is empty between frames and holds
        // rows of this frame's store only while this frame draws.
        let mut rows = super::pen::recycled(std::mem::take(kept));
        process_rows_into(state, store, &mut rows);
        let shown = super::pen::with_strings(|[title, text, part]| {
            let arrow = if state.sort_descending { "▼" } else { "▲" };
            let _ = write!(
                title,
                " Processes ({}) sort {}{arrow}",
                rows.len(),
                state.sort.name()
            );
            if !state.filter.is_empty() {
                let _ = write!(title, " filter \"{}\"", state.filter);
            }
            title.push(' ');
            let scratch = (std::mem::take(text), std::mem::take(part));
            let (shown, scratch) = draw(frame, area, (state, store, theme), &rows, title, scratch);
            (*text, *part) = scratch;
            shown
        });
        *kept = super::pen::recycled(rows);
        shown
    })
}

thread_local! {
    static KEPT_ROWS: std::cell::RefCell<Vec<ProcessRow<'static>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The table of `rows` under `title`, or why there is none; returns how many rows are visible
/// and the position of the first, and the scratch strings back.
fn draw(
    frame: &mut Frame,
    area: Rect,
    (state, store, theme): (&AppState, &Store, &Theme),
    rows: &[ProcessRow],
    title: &str,
    scratch: (String, String),
) -> ((u16, usize), (String, String)) {
    let focused = state.focus == Pane::Processes;
    let inner = super::border::Border::inner(area);
    if let Some(msg) = nothing_to_list(rows, state, store) {
        frame.render_widget(
            Paragraph::new(Span::styled(msg, theme.dim()))
                .block(theme.block(title, focused))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return ((0, 0), scratch);
    }
    let visible = inner.height.saturating_sub(1) as usize;
    let selected = crate::app::process_cursor(state, store, rows);
    let first = super::overview::scroll_start(selected, visible, rows.len());
    let below = rows.len().saturating_sub(first + visible);
    super::pen::with_strings(|[mark]| {
        scroll_mark(theme.pane(title, focused), (first, below), theme, mark)
            .render(area, frame.buffer_mut());
    });
    // The container column appears when some process runs in one (docker ps's 12 digits).
    let containers = rows
        .iter()
        .any(|r| r.host().is_some_and(|h| h.container.is_some()));
    let mut columns = [("", None, 0); COLUMNS.len() + 1];
    columns[..COLUMNS.len()].copy_from_slice(&COLUMNS);
    let mut n = COLUMNS.len();
    // A MIG instance's label ("0:10") is wider than a GPU's number.
    let widest = rows
        .iter()
        .map(|r| crate::model::gpu_label(r.gpu).width())
        .max()
        .unwrap_or(0);
    columns[0].2 = columns[0].2.max(widest as u16);
    if containers && fits_container(&columns[..n], inner.width) {
        columns[n] = columns[n - 1];
        columns[n - 1] = ("CONTAINER", None, 12);
        n += 1;
    }
    let table = Table {
        area: inner,
        columns: &columns[..n],
        scratch,
    };
    let buf = frame.buffer_mut();
    let scratch = table.draw(buf, state, theme, |i| {
        let r = rows.get(first + i)?;
        let style = (first + i == selected && focused).then(|| theme.selected());
        Some((r, style))
    });
    ((visible.min(rows.len() - first) as u16, first), scratch)
}

/// Whether the CONTAINER column fits beside `columns` in `width` cells with the command's ten:
/// squeezed in, it had the layout cut the numbers ("429496" for PID 4294967 at 80 columns).
fn fits_container(columns: &[Column], width: u16) -> bool {
    let fixed: u16 = columns.iter().map(|c| c.2).sum();
    // Its 12 cells, one space before each column but the first, the command's 10.
    fixed + 12 + columns.len() as u16 + 10 <= width
}

/// The table drawn straight into the buffer, as ratatui's `Table` laid it out (the same
/// constraints, spacing and clipping): that widget took a `String`, a `Text` and a `Vec` of
/// spans for every cell of every frame, most of what a frame allocated with 8 GPUs.
struct Table<'c> {
    area: Rect,
    columns: &'c [Column],
    /// A cell's text, and a value before it is padded: kept for the whole table.
    scratch: (String, String),
}

impl Table<'_> {
    /// Header, then the rows `row(0)`, `row(1)`… while they fit and exist, each with its style.
    /// Returns the scratch strings, to be kept for the next frame.
    fn draw<'r>(
        mut self,
        buf: &mut Buffer,
        state: &AppState,
        theme: &Theme,
        row: impl Fn(usize) -> Option<(&'r ProcessRow<'r>, Option<Style>)>,
    ) -> (String, String) {
        let mut constraints = [Constraint::Min(0); COLUMNS.len() + 1];
        for (c, column) in constraints.iter_mut().zip(self.columns) {
            *c = match column.2 {
                0 => Constraint::Min(10),
                w => Constraint::Length(w),
            };
        }
        let mut rects = [Rect::ZERO; COLUMNS.len() + 1];
        let n = self.columns.len();
        let row_area = Rect::new(0, 0, self.area.width, 1);
        super::split::columns(&constraints[..n], 1, row_area, &mut rects[..n]);
        let line = |y: u16| Rect::new(self.area.x, y, self.area.width, 1);
        if self.area.height == 0 {
            return self.scratch;
        }
        let arrow = if state.sort_descending { "▼" } else { "▲" };
        buf.set_style(line(self.area.y), theme.label());
        for (c, rect) in self.columns.iter().zip(rects.iter()) {
            self.scratch.0.clear();
            self.scratch.0.push_str(c.0);
            if c.1 == Some(state.sort) {
                // A heading as wide as its column gives its last letters to the arrow
                // ("KERN▼", "WR▼"): appended, the arrow was cut off, and nothing said which
                // narrow column sorted. Headings are ASCII.
                let room = usize::from(rect.width).saturating_sub(1);
                self.scratch.0.truncate(room.min(c.0.len()));
                self.scratch.0.push_str(arrow);
            }
            self.put(buf, *rect, self.area.y);
        }
        for (i, y) in (self.area.y + 1..self.area.bottom()).enumerate() {
            let Some((r, style)) = row(i) else { break };
            if let Some(style) = style {
                buf.set_style(line(y), style);
            }
            for (c, rect) in self.columns.iter().zip(rects.iter()) {
                let _ = cell_text(r, c.1, &mut self.scratch);
                self.put(buf, *rect, y);
            }
        }
        self.scratch
    }

    /// The cell's text at column `rect` (x from the table's left) of row `y`, clipped to it.
    fn put(&self, buf: &mut Buffer, rect: Rect, y: u16) {
        let x = self.area.x + rect.x;
        let room = rect.width.min(self.area.right().saturating_sub(x));
        super::pen::set_str(buf, x, y, &self.scratch.0, room.into(), Style::default());
    }
}

/// What row `r` shows in column `col`, written into `scratch.0` (`scratch.1` holds a number
/// before it is right-aligned in its column, as the table always padded it). Writing to a
/// `String` cannot fail: the `Result` is only for `?`.
fn cell_text(
    r: &ProcessRow,
    col: Option<SortKey>,
    scratch: &mut (String, String),
) -> std::fmt::Result {
    let (text, part) = scratch;
    text.clear();
    part.clear();
    if let Some(pad) = number(r, col, part)? {
        return write!(text, "{part:>pad$}");
    }
    words(r, col, text);
    Ok(())
}

/// A numeric column's value onto `part` ("–" for a gap), and the width it is aligned to;
/// `None` for the columns of words.
fn number(
    r: &ProcessRow,
    col: Option<SortKey>,
    part: &mut String,
) -> Result<Option<usize>, std::fmt::Error> {
    let (p, h) = (r.process, r.host());
    let dash = |part: &mut String| part.push('–');
    let pad = match col {
        Some(SortKey::Gpu) => {
            write!(part, "{}", crate::model::gpu_label(r.gpu))?;
            3
        }
        Some(SortKey::Pid) => {
            write!(part, "{}", p.pid)?;
            7
        }
        Some(SortKey::GpuMem) => {
            write_gib(p.gpu_mem_bytes, part);
            7
        }
        Some(SortKey::Sm | SortKey::MemPct) => {
            match if col == Some(SortKey::Sm) {
                p.sm_pct
            } else {
                p.mem_pct
            } {
                Some(v) => write!(part, "{v:3.0}")?,
                None => part.push_str("  –"),
            }
            4
        }
        Some(SortKey::Cpu) => {
            match h.and_then(|h| h.cpu_pct) {
                Some(c) => write!(part, "{c:.0}")?,
                None => dash(part),
            }
            5
        }
        Some(SortKey::Rss) => {
            write_gib(h.and_then(|h| h.rss_bytes), part);
            6
        }
        Some(SortKey::Threads) => {
            match h.and_then(|h| h.threads) {
                Some(t) => write!(part, "{t}")?,
                None => dash(part),
            }
            4
        }
        Some(SortKey::Workers) => {
            match h {
                Some(h) => write!(part, "{}", h.children.len())?,
                None => dash(part),
            }
            3
        }
        Some(SortKey::User | SortKey::State | SortKey::Command) | None => return Ok(None),
    };
    Ok(Some(pad))
}

/// A column of words: the user, the state letter, the container, the command.
fn words(r: &ProcessRow, col: Option<SortKey>, text: &mut String) {
    let h = r.host();
    match col {
        Some(SortKey::User) => {
            super::pen::push_fit(text, h.and_then(|h| h.user.as_deref()).unwrap_or("?"), 8, 0);
        }
        Some(SortKey::State) => text.push(h.and_then(|h| h.state).unwrap_or('?')),
        None => match h.and_then(|h| h.container.as_deref()) {
            Some(c) => text.push_str(c.short_id()),
            None => text.push('–'),
        },
        _ => {
            match h {
                Some(h) => write_short_command(h, text),
                None => text.push_str("(pid not visible here)"),
            }
            // A `python -c` script's lines read as one line (the buffer would drop the
            // newlines and join "time" to "a=…"); a string only in that rare case.
            if text.contains(char::is_control) {
                *text = text.replace(char::is_control, " ");
            }
        }
    }
}

/// Rows out of sight said on the border, as the findings pane says its lines: at 80x24 the
/// table has room for one or two of eight processes.
fn scroll_mark<'a>(
    pane: super::border::Border<'a>,
    (above, below): (usize, usize),
    theme: &Theme,
    mark: &'a mut String,
) -> super::border::Border<'a> {
    let _ = match (above, below) {
        // A GPU selected below the top scrolls rows off both ends: say so for both.
        (1.., 1..) => write!(mark, " ▲ {above} above · ▼ {below} more (↑↓) "),
        (0, 1..) => write!(mark, " ▼ {below} more (↓) "),
        (1.., 0) => write!(mark, " ▲ {above} above (↑) "),
        _ => return pane,
    };
    pane.bottom(super::border::Title::Span(
        Span::styled(mark.as_str(), theme.title()),
        ratatui::layout::Alignment::Right,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HostProcess, ProcessSample};

    fn cells(p: &ProcessSample) -> Vec<String> {
        let r = ProcessRow { gpu: 3, process: p };
        let mut scratch = (String::new(), String::new());
        COLUMNS
            .iter()
            .map(|c| {
                let _ = cell_text(&r, c.1, &mut scratch);
                scratch.0.clone()
            })
            .collect()
    }

    #[test]
    fn the_container_column_comes_only_where_the_numbers_keep_their_width() {
        // 55 cells of fixed columns, 12 spaces, 12 for the container, 10 for the command.
        assert!(fits_container(&COLUMNS, 89));
        assert!(!fits_container(&COLUMNS, 88));
        // An 80-column terminal's table is 78 wide.
        assert!(!fits_container(&COLUMNS, 78));
    }

    #[test]
    fn cells_read_as_the_table_always_wrote_them() {
        let p = ProcessSample {
            pid: 4411,
            gpu_mem_bytes: Some(3 << 30),
            sm_pct: Some(87.4),
            mem_pct: None,
            host: Some(HostProcess {
                user: Some("someone-long".into()),
                cpu_pct: Some(101.6),
                rss_bytes: Some(900 << 20),
                threads: Some(12),
                state: Some('S'),
                cmdline: "/usr/bin/python3 -c import torch,time\na=torch.randn(8)".into(),
                ..HostProcess::default()
            }),
        };
        assert_eq!(
            cells(&p),
            [
                "  3",
                "   4411",
                "someone…",
                "   3.0G",
                "  87",
                "   –",
                "  102",
                "  900M",
                "  12",
                "  0",
                "S",
                // The script's second line is not glued to the first.
                "python3 -c import torch,time a=torch.randn(8)",
            ]
        );
        let unknown = ProcessSample {
            pid: 7,
            ..ProcessSample::default()
        };
        assert_eq!(
            cells(&unknown)[6..],
            [
                "    –",
                "     –",
                "   –",
                "  –",
                "?",
                "(pid not visible here)"
            ]
        );
    }
}
