//! Line plots and their axes written straight into the frame's buffer, dot for dot and cell
//! for cell what ratatui's `Chart` draws. `Chart` paints each dataset on a canvas layer of its
//! own: a grid allocated for the whole plot, saved as a second copy of every cell, then merged
//! into the buffer cell by cell, per dataset and per frame. With four series that was a quarter
//! of the monitor's CPU at `--interval 100ms` (perf, docs/performance.md). Even with no series
//! it paints an empty canvas and styles every cell of its area. This draws the axes and their
//! labels where `Chart` puts them, and the series touching only the cells a line crosses: the
//! same mapping of values to dots, the same clipping (the same `line-clipping` crate), the same
//! line algorithm, and the same overlay (a later series owns a cell it crosses).

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::braille::BRAILLE;
use ratatui::symbols::line::{BOTTOM_LEFT, HORIZONTAL, VERTICAL};
use ratatui::symbols::Marker;

/// How a series is marked: braille dots (2×4 a cell) or one symbol per cell.
#[derive(Clone, Copy)]
enum Grid {
    Braille,
    /// The symbol, and whether the colour fills the cell's background too (a block).
    Symbol(char, bool),
}

impl Grid {
    fn of(marker: Marker) -> Self {
        match marker {
            Marker::Braille => Grid::Braille,
            Marker::Block => Grid::Symbol('█', true),
            Marker::Bar => Grid::Symbol('▄', false),
            _ => Grid::Symbol('•', false),
        }
    }
}

/// Where `Chart` puts its plot and axes inside `inner` (its block's inner area) when both
/// axes have three labels aligned as ours are: left of the y axis the widest y label or the
/// first x label less one column (at most a third of the width), then the axis line; the x
/// axis line and its labels take the two bottom rows. `ratatui_widgets::chart::Chart::layout`,
/// restated because it is private; `draws_what_ratatuis_chart_draws_dot_for_dot` holds the two
/// together.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    inner: Rect,
    /// Where the series are plotted.
    pub plot: Rect,
    label_row: Option<u16>,
    axis_row: Option<u16>,
    axis_column: Option<u16>,
}

impl Layout {
    #[must_use]
    pub fn of(inner: Rect, y_label_width: u16, first_x_label_width: u16) -> Option<Layout> {
        if inner.is_empty() {
            return None;
        }
        let left = y_label_width
            .max(first_x_label_width.saturating_sub(1))
            .min(inner.width / 3);
        let mut x = inner.left() + left;
        let mut y = inner.bottom() - 1;
        // The x labels' row, then the x axis's.
        let mut row = || {
            (y > inner.top()).then(|| {
                y -= 1;
                y + 1
            })
        };
        let (label_row, axis_row) = (row(), row());
        let axis_column = (x + 1 < inner.right()).then(|| {
            x += 1;
            x - 1
        });
        let width = inner.right().saturating_sub(x);
        let height = y.saturating_sub(inner.top()) + 1;
        (width > 0).then(|| Layout {
            inner,
            plot: Rect::new(x, inner.top(), width, height),
            label_row,
            axis_row,
            axis_column,
        })
    }

    /// Draws the axes and their labels as `Chart` does (axis lines in `style`, labels
    /// unstyled), without its canvas: `Chart` paints a canvas over the whole plot even with no
    /// series, and styles every cell of its area, a third of a frame's instructions together.
    pub fn draw_axes(
        &self,
        buf: &mut Buffer,
        x_labels: [&str; 3],
        y_labels: [&str; 3],
        style: Style,
    ) {
        let plot = self.plot;
        if let Some(y) = self.label_row {
            let between = plot.width / 3;
            let first = Rect::new(self.inner.left(), y, plot.left() - self.inner.left(), 1);
            label(buf, x_labels[0], first, Alignment::Right);
            let middle = Rect::new(plot.left() + between + 1, y, between.saturating_sub(1), 1);
            label(buf, x_labels[1], middle, Alignment::Center);
            let last = Rect::new(plot.right() - between, y, between, 1);
            label(buf, x_labels[2], last, Alignment::Right);
        }
        let width = (plot.left() - self.inner.left()).saturating_sub(1);
        for (i, text) in (0u16..).zip(y_labels) {
            let dy = i * (plot.height - 1) / 2;
            if dy < plot.bottom() {
                let at = Rect::new(self.inner.left(), plot.bottom() - 1 - dy, width, 1);
                label(buf, text, at, Alignment::Left);
            }
        }
        let mut line = |x: u16, y: u16, symbol: &str| {
            if let Some(cell) = buf.cell_mut((x, y)) {
                cell.set_symbol(symbol).set_style(style);
            }
        };
        if let Some(y) = self.axis_row {
            (plot.left()..plot.right()).for_each(|x| line(x, y, HORIZONTAL));
        }
        if let Some(x) = self.axis_column {
            (plot.top()..plot.bottom()).for_each(|y| line(x, y, VERTICAL));
        }
        if let (Some(y), Some(x)) = (self.axis_row, self.axis_column) {
            line(x, y, BOTTOM_LEFT);
        }
    }
}

/// One axis label, as `Chart` renders it: a raw line aligned in its area.
fn label(buf: &mut Buffer, text: &str, area: Rect, alignment: Alignment) {
    super::pen::put_aligned(buf, area, text, alignment, Style::default());
}

thread_local! {
    /// The last plot's buffers, for the next one: a chart is drawn every frame at one size.
    static SPARE: std::cell::Cell<(Vec<u8>, Vec<u32>)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

impl Drop for Plot {
    fn drop(&mut self) {
        let kept = (
            std::mem::take(&mut self.dots),
            std::mem::take(&mut self.touched),
        );
        // A thread being torn down has no spare to keep: the buffers are simply freed.
        let _ = SPARE.try_with(|spare| spare.set(kept));
    }
}

/// One plot: its cells, its bounds, and the dots of the series being drawn.
pub struct Plot {
    area: Rect,
    x_bounds: [f64; 2],
    y_bounds: [f64; 2],
    /// The dots set in each cell by the series being drawn (a bit per dot).
    dots: Vec<u8>,
    /// The cells that series touched, to write and clear without a pass over every cell.
    touched: Vec<u32>,
}

impl Plot {
    #[must_use]
    pub fn new(area: Rect, x_bounds: [f64; 2], y_bounds: [f64; 2]) -> Self {
        let (mut dots, mut touched) = SPARE.take();
        dots.clear();
        dots.resize(usize::from(area.width) * usize::from(area.height), 0);
        touched.clear();
        touched.reserve(usize::from(area.width) * 2);
        Plot {
            area,
            x_bounds,
            y_bounds,
            dots,
            touched,
        }
    }

    /// Draws `points` joined by lines in `color`, over whatever an earlier series drew in the
    /// cells it crosses.
    pub fn series(&mut self, buf: &mut Buffer, points: &[(f64, f64)], color: Color, mark: Marker) {
        let grid = Grid::of(mark);
        // The grid's shape as constants: a dot's cell and bit are then shifts and masks, not
        // the divisions they were (a third of the chart's instructions, callgrind).
        match grid {
            Grid::Braille => self.dots_of::<2, 4>(points),
            Grid::Symbol(..) => self.dots_of::<1, 1>(points),
        }
        self.write(buf, grid, color);
    }

    /// Sets the dots of `points` and of the lines between them, on a grid of `PX`×`PY` dots a
    /// cell.
    fn dots_of<const PX: usize, const PY: usize>(&mut self, points: &[(f64, f64)]) {
        let Some(scale) = Scale::of(self, PX, PY) else {
            return; // bounds of no width or height: no value lands on a dot
        };
        for &(x, y) in points {
            if let Some((dx, dy)) = scale.dot(x, y) {
                self.paint::<PX, PY>(dx, dy);
            }
        }
        for pair in points.windows(2) {
            self.line::<PX, PY>(&scale, pair[0], pair[1]);
        }
    }

    fn paint<const PX: usize, const PY: usize>(&mut self, x: usize, y: usize) {
        let cell = (y / PY) * usize::from(self.area.width) + x / PX;
        let Some(dots) = self.dots.get_mut(cell) else {
            return;
        };
        if *dots == 0 {
            self.touched.push(cell as u32);
        }
        *dots |= 1u8 << ((x % PX) + PX * (y % PY));
    }

    /// The segment clipped to the bounds, then its dots (as canvas's `Line`).
    fn line<const PX: usize, const PY: usize>(
        &mut self,
        scale: &Scale,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
    ) {
        use line_clipping::{cohen_sutherland, LineSegment, Point, Window};
        let ends = if scale.inside(x1, y1) && scale.inside(x2, y2) {
            // What clipping returns for a segment inside the bounds: the segment itself.
            ((x1, y1), (x2, y2))
        } else {
            let ([xmin, xmax], [ymin, ymax]) = (self.x_bounds, self.y_bounds);
            let Some(seg) = cohen_sutherland::clip_line(
                LineSegment::new(Point::new(x1, y1), Point::new(x2, y2)),
                Window::new(xmin, xmax, ymin, ymax),
            ) else {
                return;
            };
            ((seg.p1.x, seg.p1.y), (seg.p2.x, seg.p2.y))
        };
        let (Some(a), Some(b)) = (
            scale.dot(ends.0 .0, ends.0 .1),
            scale.dot(ends.1 .0, ends.1 .1),
        ) else {
            return;
        };
        line_dots(a, b, |x, y| self.paint::<PX, PY>(x, y));
    }

    /// Writes the touched cells into the buffer and clears them for the next series.
    fn write(&mut self, buf: &mut Buffer, grid: Grid, color: Color) {
        let width = usize::from(self.area.width);
        for &cell in &self.touched {
            let i = cell as usize;
            let pattern = std::mem::take(&mut self.dots[i]);
            let x = self.area.x + (i % width) as u16;
            let y = self.area.y + (i / width) as u16;
            let Some(c) = buf.cell_mut((x, y)) else {
                continue;
            };
            match grid {
                Grid::Braille => {
                    c.set_char(BRAILLE[usize::from(pattern)]);
                }
                Grid::Symbol(symbol, on_bg) => {
                    c.set_char(symbol);
                    if on_bg {
                        c.set_bg(color);
                    }
                }
            }
            c.set_fg(color);
        }
        self.touched.clear();
    }
}

/// `v.round() as usize` for the non-negative values a dot's position is (NaN gives 0, as
/// that cast does), without the call into libm that `round` is on x86-64's baseline (no
/// SSE4.1): 2.4 % of the drawing thread on the H200 (perf, run 42). Exact: the fraction
/// `v - trunc(v)` of a float is itself a float, so comparing it with one half rounds halves
/// away from zero as `round` does.
#[inline]
fn round_up_half(v: f64) -> usize {
    let whole = v as usize;
    whole.saturating_add(usize::from(v - whole as f64 >= 0.5))
}

/// How values map to dots: `Painter::get_point`'s arithmetic, its terms computed once a
/// series rather than once a dot (the same operations in the same order: the same dots).
struct Scale {
    left: f64,
    right: f64,
    bottom: f64,
    top: f64,
    width: f64,
    height: f64,
    /// The last dot across and down: the resolution less one.
    last_x: f64,
    last_y: f64,
}

impl Scale {
    /// `None` when the bounds have no width or height (no value lands on a dot).
    fn of(plot: &Plot, per_x: usize, per_y: usize) -> Option<Scale> {
        let ([left, right], [bottom, top]) = (plot.x_bounds, plot.y_bounds);
        let (width, height) = (right - left, top - bottom);
        if width <= 0.0 || height <= 0.0 {
            return None;
        }
        Some(Scale {
            left,
            right,
            bottom,
            top,
            width,
            height,
            last_x: f64::from(plot.area.width) * per_x as f64 - 1.0,
            last_y: f64::from(plot.area.height) * per_y as f64 - 1.0,
        })
    }

    /// Not outside the bounds (a NaN is not outside, as clipping and `get_point` see it).
    fn inside(&self, x: f64, y: f64) -> bool {
        !(x < self.left || x > self.right || y < self.bottom || y > self.top)
    }

    /// The dot a value lands on, `None` outside the bounds (as `Painter::get_point`).
    fn dot(&self, x: f64, y: f64) -> Option<(usize, usize)> {
        if !self.inside(x, y) {
            return None;
        }
        let dx = round_up_half((x - self.left) * self.last_x / self.width);
        let dy = round_up_half((self.top - y) * self.last_y / self.height);
        Some((dx, dy))
    }
}

/// The dots of a line between two dots: Bresenham's, as ratatui's canvas walks it (from the
/// lower x, or the lower y when steep), so the same dots are set.
fn line_dots(
    (x1, y1): (usize, usize),
    (x2, y2): (usize, usize),
    mut paint: impl FnMut(usize, usize),
) {
    let (dx, dy) = (x2.abs_diff(x1), y2.abs_diff(y1));
    if dx == 0 {
        (y1.min(y2)..=y1.max(y2)).for_each(|y| paint(x1, y));
    } else if dy == 0 {
        (x1.min(x2)..=x1.max(x2)).for_each(|x| paint(x, y1));
    } else if dy < dx {
        let ((xa, ya), (xb, yb)) = if x1 > x2 {
            ((x2, y2), (x1, y1))
        } else {
            ((x1, y1), (x2, y2))
        };
        walk(xa, xb, ya, yb, &mut paint);
    } else {
        let ((xa, ya), (xb, yb)) = if y1 > y2 {
            ((x2, y2), (x1, y1))
        } else {
            ((x1, y1), (x2, y2))
        };
        walk(ya, yb, xa, xb, |major, minor| paint(minor, major));
    }
}

/// Steps along the major axis from `a0` to `a1`, moving the minor one from `b0` towards `b1`.
fn walk(a0: usize, a1: usize, b0: usize, b1: usize, mut f: impl FnMut(usize, usize)) {
    let da = (a1 - a0) as isize;
    let db = b1.abs_diff(b0) as isize;
    let mut d = 2 * db - da;
    let mut b = b0;
    for a in a0..=a1 {
        f(a, b);
        if d > 0 {
            b = if b0 > b1 {
                b.saturating_sub(1)
            } else {
                b.saturating_add(1)
            };
            d -= 2 * da;
        }
        d += 2 * db;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Style;
    use ratatui::text::Span;
    use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Widget};

    /// The same as `round` on halves, just under and over them, whole numbers, the largest
    /// value below one half, negatives and NaN, and a spread of values a plot meets.
    #[test]
    fn round_up_half_is_what_round_gives() {
        let mut values = vec![
            0.0,
            0.5,
            1.5,
            2.5,
            0.499_999_999_999_999_94,
            -0.3,
            -0.7,
            f64::NAN,
        ];
        values.extend((0..20_000).map(|i| f64::from(i) * 0.013_7));
        values.extend((0..400).flat_map(|i| {
            let half = f64::from(i) + 0.5;
            [half, half.next_down(), half.next_up()]
        }));
        for v in values {
            assert_eq!(round_up_half(v), v.round() as usize, "{v:e}");
        }
    }

    /// Series that cross each other, leave the bounds (power over TDP, a negative value),
    /// jump, and sit on the edges.
    fn series(seed: u64, n: usize) -> Vec<(f64, f64)> {
        let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (0..n)
            .map(|i| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let v = (x >> 33) as f64 / f64::from(1u32 << 31) * 130.0 - 10.0;
                (-60.0 + 60.0 * i as f64 / (n - 1) as f64, v)
            })
            .collect()
    }

    /// The axes' lines are styled, their labels not (as the screens' charts).
    fn axes<'a>(chart: Chart<'a>, first_x: &'static str, style: Style) -> Chart<'a> {
        chart
            .block(Block::default().borders(Borders::ALL))
            .legend_position(None)
            .x_axis(
                Axis::default()
                    .bounds([-60.0, 0.0])
                    .labels(vec![
                        Span::raw(first_x),
                        Span::raw("-30s"),
                        Span::raw("now"),
                    ])
                    .style(style),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, 100.0])
                    .labels(vec![Span::raw("0%"), Span::raw("50%"), Span::raw("100%")])
                    .style(style),
            )
    }

    #[test]
    fn draws_what_ratatuis_chart_draws_dot_for_dot() {
        let colors = [Color::Blue, Color::Magenta, Color::Green, Color::Yellow];
        let markers = [
            [Marker::Braille; 4],
            [Marker::Braille, Marker::Dot, Marker::Bar, Marker::Block],
        ];
        let axis_style = Style::new().fg(Color::DarkGray);
        for (w, h) in [
            (200, 30),
            (80, 12),
            (23, 9),
            (7, 8),
            (4, 5),
            (3, 3),
            (12, 4),
        ] {
            for first_x in ["-1m", "-10m", "-1h30m"] {
                for (m, marks) in markers.iter().enumerate() {
                    let data: Vec<Vec<(f64, f64)>> = (0..4)
                        .map(|i| series(u64::from(w * 31 + h) + i + m as u64, 3 + usize::from(w)))
                        .collect();
                    let area = Rect::new(2, 1, w, h);
                    let mut theirs = Buffer::empty(Rect::new(0, 0, w + 4, h + 2));
                    let datasets: Vec<Dataset> = data
                        .iter()
                        .zip(colors)
                        .zip(marks)
                        .map(|((d, c), mk)| {
                            Dataset::default()
                                .marker(*mk)
                                .graph_type(GraphType::Line)
                                .style(Style::new().fg(c))
                                .data(d)
                        })
                        .collect();
                    axes(Chart::new(datasets), first_x, axis_style).render(area, &mut theirs);

                    let mut ours = Buffer::empty(theirs.area);
                    Block::default()
                        .borders(Borders::ALL)
                        .render(area, &mut ours);
                    let inner = Block::default().borders(Borders::ALL).inner(area);
                    let Some(layout) = Layout::of(inner, 4, first_x.len() as u16) else {
                        assert_eq!(ours, theirs, "{w}x{h}: nothing plotted");
                        continue;
                    };
                    let labels = [first_x, "-30s", "now"];
                    layout.draw_axes(&mut ours, labels, ["0%", "50%", "100%"], axis_style);
                    let mut plot = Plot::new(layout.plot, [-60.0, 0.0], [0.0, 100.0]);
                    for ((d, c), mk) in data.iter().zip(colors).zip(marks) {
                        plot.series(&mut ours, d, c, *mk);
                    }
                    assert_eq!(ours, theirs, "{w}x{h}, first label {first_x}, marks {m}");
                }
            }
        }
    }
}
