//! Small text helpers shared by the panes.

use crate::model::GIB;

pub use crate::text::clip;

pub fn gib(b: Option<u64>) -> String {
    let mut out = String::new();
    write_gib(b, &mut out);
    out
}

/// `gib` written onto `out` (the process table, without a string per cell).
pub fn write_gib(b: Option<u64>, out: &mut String) {
    use std::fmt::Write;
    let _ = match b {
        None => write!(out, "–"),
        Some(b) if b >= GIB => write!(out, "{:.1}G", b as f64 / GIB as f64),
        Some(b) => write!(out, "{}M", b / (1024 * 1024)),
    };
}

/// A horizontal bar of `width` cells for `pct` (0–100), with eighth-block precision.
#[cfg(test)]
fn bar(pct: Option<f32>, width: usize) -> String {
    let mut s = String::new();
    write_bar(&mut s, pct, width);
    s
}

/// `bar` written onto `out` (a GPU row, without a string per bar).
pub fn write_bar(out: &mut String, pct: Option<f32>, width: usize) {
    let Some(p) = pct else {
        out.extend(std::iter::repeat_n('·', width));
        return;
    };
    let eighths = ((p.clamp(0.0, 100.0) / 100.0) * (width * 8) as f32).round() as usize;
    let full = eighths / 8;
    let part = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'][eighths % 8];
    out.extend(std::iter::repeat_n('█', full.min(width)));
    if full < width {
        out.push(part);
        out.extend(std::iter::repeat_n(' ', width - full - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_by_eighths_and_show_gaps_as_dots() {
        assert_eq!(bar(Some(50.0), 4), "██  ");
        assert_eq!(bar(Some(100.0), 4), "████");
        assert_eq!(bar(Some(0.0), 3), "   ");
        assert_eq!(bar(Some(56.25), 2), "█▏");
        assert_eq!(bar(None, 3), "···");
    }

    #[test]
    fn clip_and_duration() {
        assert_eq!(clip("python3 train.py", 8), "python3…");
        assert_eq!(crate::text::span_compact(185_000), "3m05s");
    }
}
