//! Small text helpers shared by the panes.

use crate::model::GIB;

pub use crate::text::clip;
use crate::text::padded;

/// `Gib` written onto `out` (the process table, without a string per cell).
pub fn write_gib(b: Option<u64>, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "{}", Gib(b));
}

/// Bytes as the screen gives them: "8.0G" from a GiB up, "512M" below, "–" unknown. Formats
/// without a `String` of its own.
#[derive(Debug, Clone, Copy)]
pub struct Gib(pub Option<u64>);

impl std::fmt::Display for Gib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.pad("–"),
            Some(b) if b >= GIB => padded(f, format_args!("{:.1}G", b as f64 / GIB as f64)),
            Some(b) => padded(f, format_args!("{}M", b / (1024 * 1024))),
        }
    }
}

/// A whole percentage ("97%"), or what stands for an unknown one.
#[derive(Debug, Clone, Copy)]
pub struct Pct(pub Option<f32>, pub &'static str);

impl std::fmt::Display for Pct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => padded(f, format_args!("{v:.0}%")),
            None => f.pad(self.1),
        }
    }
}

/// A value, or what stands for an unknown one.
#[derive(Debug, Clone, Copy)]
pub struct Or<T>(pub Option<T>, pub &'static str);

impl<T: std::fmt::Display> std::fmt::Display for Or<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.pad(self.1),
        }
    }
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

    /// The values pad as their text would: the children's `{:>5}` column lines up.
    #[test]
    fn values_pad_as_their_text_would() {
        for b in [
            None,
            Some(0),
            Some(512 * 1024 * 1024),
            Some(8 * GIB),
            Some(141 * GIB),
        ] {
            let text = Gib(b).to_string();
            assert_eq!(format!("{:>7}", Gib(b)), format!("{text:>7}"));
            assert_eq!(format!("{:<7}", Gib(b)), format!("{text:<7}"));
        }
        assert_eq!(Gib(Some(8 * GIB)).to_string(), "8.0G");
        assert_eq!(format!("{:>5}", Pct(Some(60.4), "–")), "  60%");
        assert_eq!(format!("{:>5}", Pct(None, "–")), "    –");
        assert_eq!(format!("{:>4}", Or(Some(28), "?")), "  28");
        assert_eq!(format!("{:>4}", Or(None::<u32>, "?")), "   ?");
        // The largest values a hostile recording can hold still pad whole.
        for v in [f32::MAX, -f32::MAX] {
            assert_eq!(format!("{:>5}", Pct(Some(v), "–")), format!("{v:>4.0}%"));
        }
        let most = Gib(Some(u64::MAX)).to_string();
        assert_eq!(
            format!("{:>30}", Gib(Some(u64::MAX))),
            format!("{most:>30}")
        );
    }

    #[test]
    fn clip_and_duration() {
        assert_eq!(clip("python3 train.py", 8), "python3…");
        assert_eq!(crate::text::span_compact(185_000), "3m05s");
    }
}
