//! The process table: every GPU process with its GPU use and its host side.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::format::{clip, gib, opt_pct};
use super::theme::Theme;
use crate::app::{process_rows, short_command, AppState, Pane, ProcessRow, SortKey};
use crate::store::Store;

const COLUMNS: [(&str, Option<SortKey>, u16); 12] = [
    ("GPU", Some(SortKey::Gpu), 3),
    ("PID", Some(SortKey::Pid), 7),
    ("USER", Some(SortKey::User), 8),
    ("GPU MEM", Some(SortKey::GpuMem), 7),
    ("KERN%", Some(SortKey::Sm), 5),
    ("MEM%", Some(SortKey::MemPct), 4),
    ("CPU%", Some(SortKey::Cpu), 5),
    ("RSS", Some(SortKey::Rss), 6),
    ("THR", Some(SortKey::Threads), 4),
    ("WRK", Some(SortKey::Workers), 3),
    ("S", Some(SortKey::State), 1),
    ("COMMAND", Some(SortKey::Command), 0),
];

/// Why there is no table to draw: no process, none matching the filter, or none whose host
/// side could be read.
fn nothing_to_list(rows: &[ProcessRow], state: &AppState, store: &Store) -> Option<String> {
    if rows.is_empty() {
        return Some(if state.filter.is_empty() {
            "no process holds a GPU context".into()
        } else {
            "no process matches the filter (Esc clears it)".into()
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

/// The column names, the sorted one marked with its direction.
fn header_row(
    columns: &[(&'static str, Option<SortKey>, u16)],
    state: &AppState,
    arrow: &str,
) -> Row<'static> {
    Row::new(columns.iter().map(|(name, key, _)| {
        let marked = if *key == Some(state.sort) {
            format!("{name}{arrow}")
        } else {
            (*name).to_string()
        };
        Cell::from(marked)
    }))
}

/// Draws the table; returns how many process rows are visible.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    theme: &Theme,
) -> u16 {
    let rows = process_rows(state, store);
    let focused = state.focus == Pane::Processes;
    let filter = if state.filter.is_empty() {
        String::new()
    } else {
        format!(" filter \"{}\"", state.filter)
    };
    let arrow = if state.sort_descending { "▼" } else { "▲" };
    let title = format!(
        " Processes ({}) sort {}{arrow}{filter} ",
        rows.len(),
        state.sort.name()
    );
    let block = theme.pane(title, focused);
    let inner = block.inner(area);
    if let Some(msg) = nothing_to_list(&rows, state, store) {
        frame.render_widget(
            Paragraph::new(Span::styled(msg, theme.dim()))
                .block(block)
                .wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return 0;
    }
    let visible = inner.height.saturating_sub(1) as usize;
    let selected = state.selected_process.min(rows.len() - 1);
    let first = super::overview::scroll_start(selected, visible, rows.len());
    let block = scroll_mark(
        block,
        first,
        rows.len().saturating_sub(first + visible),
        theme,
    );
    // The container column appears when some process runs in one (docker ps's 12 digits).
    let containers = rows
        .iter()
        .any(|r| r.host().is_some_and(|h| h.container.is_some()));
    let mut columns = COLUMNS.to_vec();
    // A MIG instance's label ("0:10") is wider than a GPU's number.
    let widest = rows
        .iter()
        .map(|r| crate::model::gpu_label(r.gpu).width())
        .max()
        .unwrap_or(0);
    columns[0].2 = columns[0].2.max(widest as u16);
    if containers {
        columns.insert(columns.len() - 1, ("CONTAINER", None, 12));
    }
    let header = header_row(&columns, state, arrow).style(theme.label());
    let body: Vec<Row> = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, r)| {
            let row = table_row(r, containers);
            if i == selected && focused {
                row.style(theme.selected())
            } else {
                row
            }
        })
        .collect();
    let widths: Vec<Constraint> = columns
        .iter()
        .map(|(_, _, w)| {
            if *w == 0 {
                Constraint::Min(10)
            } else {
                Constraint::Length(*w)
            }
        })
        .collect();
    frame.render_widget(
        Table::new(body, widths)
            .header(header)
            .block(block)
            .column_spacing(1),
        area,
    );
    visible.min(rows.len() - first) as u16
}

/// Rows out of sight said on the border, as the findings pane says its lines: at 80x24 the
/// table has room for one or two of eight processes.
fn scroll_mark(
    block: ratatui::widgets::Block<'static>,
    above: usize,
    below: usize,
    theme: &Theme,
) -> ratatui::widgets::Block<'static> {
    let mark = match (above, below) {
        (_, 1..) => format!(" ▼ {below} more (↓) "),
        (1.., 0) => format!(" ▲ {above} above (↑) "),
        _ => return block,
    };
    block.title_bottom(ratatui::text::Line::styled(mark, theme.title()).right_aligned())
}

fn table_row(r: &ProcessRow, containers: bool) -> Row<'static> {
    let p = r.process;
    let h = r.host();
    let mut cells = vec![
        format!("{:>3}", crate::model::gpu_label(r.gpu)),
        format!("{:>7}", p.pid),
        clip(h.and_then(|h| h.user.as_deref()).unwrap_or("?"), 8),
        format!("{:>7}", gib(p.gpu_mem_bytes)),
        format!("{:>4}", opt_pct(p.sm_pct)),
        format!("{:>4}", opt_pct(p.mem_pct)),
        format!(
            "{:>5}",
            h.and_then(|h| h.cpu_pct)
                .map_or("–".into(), |c| format!("{c:.0}"))
        ),
        format!("{:>6}", gib(h.and_then(|h| h.rss_bytes))),
        format!(
            "{:>4}",
            h.and_then(|h| h.threads)
                .map_or("–".into(), |t| t.to_string())
        ),
        format!(
            "{:>3}",
            h.map_or("–".into(), |h| h.children.len().to_string())
        ),
        h.and_then(|h| h.state)
            .map_or("?".into(), |c| c.to_string()),
        h.map_or("(pid not visible here)".into(), short_command),
    ];
    if containers {
        let id = h
            .and_then(|h| h.container.as_deref())
            .map_or("–".into(), |c| c.short_id().to_string());
        cells.insert(cells.len() - 1, id);
    }
    Row::new(cells)
}
