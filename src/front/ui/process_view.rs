//! One process: its own curves (kernel time %, GPU memory, host CPU %), its Python threads
//! (where they are, from its newest stack burst), its children (`DataLoader` workers) with their
//! CPU, its command line, and the findings that involve it. Its text is written into `Doc`s
//! kept from frame to frame: a frame of it allocates nothing once they have grown.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::Frame;

use super::format::{Gib, Or, Pct};
use super::scroll::Doc;
use super::theme::Theme;
use crate::app::{find_process, AppState};
use crate::model::{gpu_label, DeviceStatus, HostProcess, ProcessSample};
use crate::store::Store;
use crate::text::{Clip, EnergyWords};

/// The panes' text, kept from frame to frame.
#[derive(Default)]
struct Docs {
    head: Doc,
    threads: Doc,
    findings: Doc,
}

/// What the process runs with, from /proc (read once): its framework and CUDA libraries, the
/// allow-listed settings, its container.
fn runs_with(doc: &mut Doc, h: &HostProcess, theme: &Theme) {
    let label = |doc: &mut Doc, l: &str| {
        doc.line(Style::default());
        doc.fmt(format_args!("{l:<10}"), theme.label());
    };
    if let Some(sw) = h.software.as_deref() {
        // The settings first: they are what explains a slow job (CUDA_LAUNCH_BLOCKING=1).
        label(doc, "settings");
        match &sw.unreadable {
            Some(why) => doc.push(why, Style::default()),
            None if sw.settings.is_empty() => doc.push(
                "none of the settings gpuwatch reads (docs/diagnoses.md, Hints)",
                Style::default(),
            ),
            None => doc.fmt(
                format_args!("{}", crate::software::Settings(sw, " · ")),
                Style::default(),
            ),
        }
        if sw.has_summary() {
            label(doc, "runs");
            doc.fmt(
                format_args!("{}", crate::software::Summary(sw)),
                Style::default(),
            );
        }
    }
    if let Some(c) = h.container.as_deref() {
        label(doc, "container");
        doc.fmt(format_args!("{c}"), Style::default());
    }
}

/// What this process and its job used: "energy 12.3 kJ since seen (all of GPU 0's) · job
/// torchelastic:run-7: 48.1 kJ, 4 ranks". A GPU shared with others is split by kernel time.
fn energy_line(
    doc: &mut Doc,
    store: &Store,
    (device, pid): (u32, u32),
    h: Option<&HostProcess>,
    theme: &Theme,
) {
    let history = store.history();
    let Some(trail) = history.trail(device, pid).filter(|t| t.energy_j > 0.0) else {
        return;
    };
    let label = gpu_label(device);
    // Dim text, not a dim line: the row past the text keeps the terminal's own style.
    let dim = theme.dim();
    doc.line(Style::default());
    doc.fmt(
        format_args!("energy {} since seen (", EnergyWords(trail.energy_j)),
        dim,
    );
    if trail.energy_shared {
        doc.fmt(
            format_args!("its share of GPU {label}'s by kernel time)"),
            dim,
        );
    } else {
        doc.fmt(format_args!("all of GPU {label}'s)"), dim);
    }
    let Some(job) = h.and_then(|h| h.job.as_ref()) else {
        return;
    };
    let (sum, ranks) = history
        .devices
        .iter()
        .flat_map(|d| d.processes.iter().map(move |p| (d.info.index, p)))
        .filter(|(_, p)| {
            p.host
                .as_ref()
                .and_then(|h| h.job.as_ref())
                .is_some_and(|j| j.key == job.key)
        })
        .filter_map(|(d, p)| history.trail(d, p.pid).map(|t| t.energy_j))
        .fold((0.0, 0), |(sum, n), j| (sum + j, n + 1));
    if ranks > 1 {
        doc.fmt(
            format_args!(
                " · job {}: {}, {ranks} ranks",
                crate::text::printable(&job.key),
                EnergyWords(sum)
            ),
            dim,
        );
    }
}

/// The header: who the process is and what it uses, its command line, energy and software.
fn write_head(doc: &mut Doc, store: &Store, (device, p): (u32, &ProcessSample), theme: &Theme) {
    let h = p.host.as_ref();
    let plain = Style::default();
    doc.clear();
    doc.line(plain);
    doc.fmt(format_args!("pid {}", p.pid), theme.title());
    doc.fmt(
        format_args!(
            " on GPU {} · user {} · state {} · {} threads · RSS {} · CPU {} · GPU mem {} · kernel time {} (NVML, per process)",
            gpu_label(device),
            h.and_then(|h| h.user.as_deref()).unwrap_or("?"),
            h.and_then(|h| h.state).unwrap_or('?'),
            Or(h.and_then(|h| h.threads), "?"),
            Gib(h.and_then(|h| h.rss_bytes)),
            Pct(h.and_then(|h| h.cpu_pct), "?"),
            Gib(p.gpu_mem_bytes),
            Pct(p.sm_pct, "–"),
        ),
        plain,
    );
    match h {
        Some(h) => doc.styled_fmt(format_args!("$ {}", h.cmdline), plain),
        None => doc.styled(
            "its PID does not resolve on this machine, so its host side is unknown",
            plain,
        ),
    }
    energy_line(doc, store, (device, p.pid), h, theme);
    if let Some(h) = h {
        runs_with(doc, h, theme);
    }
}

/// The threads (from the newest stack burst) and the children with their CPU, in `rows`
/// rows. The children keep at least one row (the stacks' innermost lines give way to it), and
/// those that do not fit are counted on the last row rather than cut off unseen.
fn write_threads(doc: &mut Doc, store: &Store, p: &ProcessSample, theme: &Theme, rows: usize) {
    const HEADER: &str = "    PID NAME                      CPU% S";
    doc.clear();
    let now = store.history().latest_ms().unwrap_or(0);
    let burst = store.history().stacks_of(p.pid);
    super::stacks::write(doc, burst, now, store.pids_are_local(), theme);
    if doc.len() >= rows {
        doc.truncate(rows.saturating_sub(1));
    }
    let room = rows.saturating_sub(doc.len());
    let Some(h) = p.host.as_ref() else {
        if room >= 2 {
            doc.styled(HEADER, theme.label());
        }
        doc.styled("unknown", theme.dim());
        return;
    };
    if h.children.is_empty() {
        if room >= 2 {
            doc.styled(HEADER, theme.label());
        }
        doc.styled(
            "no child processes (a DataLoader with num_workers=0 has none)",
            theme.dim(),
        );
        return;
    }
    // All of them under the header, or as many as fit and a count of the rest.
    let shown = if h.children.len() < room {
        h.children.len()
    } else {
        room.saturating_sub(2)
    };
    if shown > 0 {
        doc.styled(HEADER, theme.label());
        children_rows(doc, &h.children[..shown]);
    }
    if shown < h.children.len() {
        doc.styled_fmt(
            format_args!(
                "… {} {}children (a taller terminal shows them)",
                h.children.len() - shown,
                if shown > 0 { "more " } else { "" }
            ),
            theme.dim(),
        );
    }
}

/// One row a child: its pid, name, CPU and state.
fn children_rows(doc: &mut Doc, children: &[crate::model::ChildProcess]) {
    for c in children {
        doc.styled_fmt(
            format_args!(
                "{:>7} {:<24} {:>5} {}",
                c.pid,
                Clip(&c.name, 24),
                Pct(c.cpu_pct, "–"),
                c.state.unwrap_or('?')
            ),
            Style::default(),
        );
    }
}

/// The open findings that name this process.
fn write_findings(doc: &mut Doc, store: &Store, pid: u32, theme: &Theme) {
    let plain = Style::default();
    doc.clear();
    for f in store
        .findings()
        .active()
        .iter()
        .filter(|f| f.pids.contains(&pid))
    {
        // The GPU the finding is on: a straggler's own GPU may be fine while it is named the
        // culprit of another's hang.
        doc.styled_fmt(
            format_args!(
                "{} GPU {} {} · {}",
                f.severity.marker(),
                gpu_label(f.device),
                crate::text::Upper(&f.rule),
                f.title
            ),
            theme.severity(f.severity),
        );
        for e in &f.evidence {
            doc.styled_fmt(format_args!("  {e}"), plain);
        }
        // What the symptom cost, as the main screen's findings say it.
        if let Some(energy) = crate::report::finding_energy(f) {
            doc.styled_fmt(format_args!("  energy: {energy}"), theme.dim());
        }
        for a in f.actions.iter().take(2) {
            doc.styled_fmt(format_args!("  → {a}"), plain);
        }
    }
    if doc.is_empty() {
        doc.styled("no open finding involves this process", theme.dim());
    }
}

/// Draws the process view; returns how far its findings can scroll.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    device: u32,
    pid: u32,
    theme: &Theme,
) -> usize {
    let mut docs = DOCS.take();
    let max = if let Some(p) = find_process(store, device, pid) {
        draw(frame, area, (state, store, theme), (device, p), &mut docs)
    } else {
        docs.head.clear();
        let gpu = gpu_label(device);
        // Kept within 78 columns: the pane cuts its lines at an 80-column screen.
        if device_lost(store, device) {
            docs.head.styled_fmt(
                format_args!(
                    "GPU {gpu} is lost: NVML no longer lists its processes. Esc goes back."
                ),
                Style::default(),
            );
        } else {
            docs.head.styled_fmt(
                format_args!(
                    "pid {pid} left GPU {gpu} (it exited or released its context). Esc goes back."
                ),
                Style::default(),
            );
        }
        super::scroll::render_cut(
            frame,
            area,
            super::border::Border::new(Span::raw(" process "), Style::default()),
            &docs.head,
        );
        0
    };
    DOCS.set(docs);
    max
}

/// NVML stopped answering for `device`: its processes are unknown, not gone.
fn device_lost(store: &Store, device: u32) -> bool {
    store
        .history()
        .devices
        .iter()
        .any(|d| d.info.index == device && d.status != DeviceStatus::Ok)
}

/// How many rows the threads (stacks, children) and the findings take below the curves: side
/// by side on a wide terminal, one over the other on a narrow one, where each gets the whole
/// width. Stacks take a few more rows than the children alone. Writes the findings.
fn lower_rows(
    area: Rect,
    side_by_side: bool,
    docs: &mut Docs,
    store: &Store,
    (p, theme): (&ProcessSample, &Theme),
) -> u16 {
    let tall = area.height >= 30;
    let rows = match (side_by_side, tall) {
        (true, true) => 14,
        (true, false) => 10,
        (false, true) => 18,
        (false, false) => 12,
    };
    write_findings(&mut docs.findings, store, p.pid, theme);
    if !tall {
        return rows;
    }
    // A tall screen gives them the rows their lines need, up to half of it, before the chart
    // grows.
    let finds_width = if side_by_side {
        area.width / 2
    } else {
        area.width
    };
    let found =
        super::scroll::wrapped_rows(&docs.findings, usize::from(finds_width.saturating_sub(2)));
    write_threads(&mut docs.threads, store, p, theme, usize::MAX);
    let threads = docs.threads.len();
    let need = if side_by_side {
        threads.max(found) + 2
    } else {
        threads + found + 4
    };
    rows.max((need as u16).min(area.height / 2))
}

fn draw(
    frame: &mut Frame,
    area: Rect,
    (state, store, theme): (&AppState, &Store, &Theme),
    (device, p): (u32, &ProcessSample),
    docs: &mut Docs,
) -> usize {
    write_head(&mut docs.head, store, (device, p), theme);
    // As many rows as the lines take once wrapped, up to half the screen; the curves keep 4.
    let wrapped =
        super::scroll::wrapped_rows(&docs.head, usize::from(area.width.saturating_sub(2)));
    let side_by_side = area.width >= 120;
    let info_rows = (wrapped as u16 + 2).min(area.height / 2);
    // Who the process is comes whole first (at 80×24 the energy line was cut for the lower
    // panes' twelfth row); the lower panes take what is left once the curves have their 4.
    let lower_rows = lower_rows(area, side_by_side, docs, store, (p, theme))
        .min(area.height.saturating_sub(info_rows + 4));
    let [info, curves, lower] = super::split::vertical(
        [
            Constraint::Length(info_rows),
            Constraint::Min(4),
            Constraint::Length(lower_rows),
        ],
        area,
    );
    super::scroll::render_fixed(
        frame,
        info,
        theme.pane(" process (Esc back, K signal) ", true),
        &docs.head,
    );
    super::process_curves::curves_chart(frame, curves, state, store, device, p.pid, theme);
    let [kids, finds] = if side_by_side {
        super::split::horizontal(
            [Constraint::Percentage(50), Constraint::Percentage(50)],
            lower,
        )
    } else {
        // One over the other: the findings take the rows their lines need (at least one,
        // at most 45 %), the threads and children the rest.
        let found =
            super::scroll::wrapped_rows(&docs.findings, usize::from(area.width.saturating_sub(2)));
        let finds_rows = (found as u16 + 2).clamp(3, lower_rows * 45 / 100);
        super::split::vertical([Constraint::Min(0), Constraint::Length(finds_rows)], lower)
    };
    let rows = usize::from(kids.height.saturating_sub(2));
    write_threads(&mut docs.threads, store, p, theme, rows);
    super::scroll::render_cut(
        frame,
        kids,
        theme.pane(" threads · children (p: stacks) ", false),
        &docs.threads,
    );
    super::scroll::render(
        frame,
        finds,
        theme.pane(" findings (↑↓ scroll) ", false),
        &mut docs.findings,
        state.process_scroll,
        theme,
    )
}

thread_local! {
    /// The panes' text, kept from frame to frame.
    static DOCS: std::cell::RefCell<Docs> = std::cell::RefCell::default();
}
