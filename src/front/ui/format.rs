//! Small text helpers shared by the panes.

use crate::model::GIB;

pub use crate::text::{clip, span_compact as duration};

pub fn opt_pct(v: Option<f32>) -> String {
    v.map_or("  –".into(), |v| format!("{v:3.0}"))
}

pub fn gib(b: Option<u64>) -> String {
    b.map_or("–".into(), |b| {
        if b >= GIB {
            format!("{:.1}G", b as f64 / GIB as f64)
        } else {
            format!("{}M", b / (1024 * 1024))
        }
    })
}

/// A horizontal bar of `width` cells for `pct` (0–100), with eighth-block precision.
pub fn bar(pct: Option<f32>, width: usize) -> String {
    let Some(p) = pct else {
        return "·".repeat(width);
    };
    let eighths = ((p.clamp(0.0, 100.0) / 100.0) * (width * 8) as f32).round() as usize;
    let full = eighths / 8;
    let part = [" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][eighths % 8];
    let mut s = "█".repeat(full.min(width));
    if full < width {
        s.push_str(part);
        s.push_str(&" ".repeat(width - full - 1));
    }
    s
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
        assert_eq!(duration(185_000), "3m05s");
    }
}
