//! Where a line of a scrolled pane breaks into screen rows, and how its continuations hang.

use unicode_width::UnicodeWidthChar;

/// One screen row of a line: its part of the text (byte range within the line), the indent
/// it starts with (a continuation), and whether it is the whole line (which ratatui drew as
/// the `Line` itself, its style over the whole row).
pub(super) struct Row {
    pub text: std::ops::Range<usize>,
    pub indent: Option<usize>,
    pub whole: bool,
}

pub(super) fn cell_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// `line` wrapped to `width` cells at spaces, each continuation indented past the line's own
/// leading spaces and marker ("   → ", "  - "), so that a wrapped piece of evidence still reads
/// as part of the item above it, or past `hang` columns where that is set (not 0). A line that
/// fits is one row.
pub(super) fn rows(line: &str, width: usize, hang: usize) -> impl Iterator<Item = Row> + '_ {
    let fits = line.chars().map(cell_width).sum::<usize>() <= width;
    // Indent: the leading spaces, and a marker after them ("→", "-", "‼": one or two cells,
    // no letter or digit).
    let lead = line.chars().take_while(|c| *c == ' ').count();
    let after = line.trim_start_matches(' ');
    let marker = after
        .chars()
        .position(|c| c == ' ')
        .filter(|&m| m <= 2 && after.chars().take(m).all(|c| !c.is_alphanumeric()))
        .map_or(0, |m| m + 1);
    let indent = if hang > 0 {
        hang.min(width / 2)
    } else {
        (lead + marker + 2).min(width / 3)
    };
    let mut start = 0;
    let mut first = true;
    std::iter::from_fn(move || {
        if fits {
            let whole = first.then_some(Row {
                text: 0..line.len(),
                indent: None,
                whole: true,
            });
            first = false;
            return whole;
        }
        if start >= line.len() {
            return None;
        }
        let room = if first { width } else { width - indent };
        // The longest run that fits, cut after its last space (or mid-word if it has none).
        let (mut used, mut end) = (0, start);
        for (i, c) in line[start..].char_indices() {
            if used + cell_width(c) > room {
                break;
            }
            used += cell_width(c);
            end = start + i + c.len_utf8();
        }
        // Cut after the last space a line may break at, unless the run ends where a word does
        // (a space follows that is no number's before its unit). Spaces are asked from the
        // run's end back, so a row asks about one or two, not every space it holds.
        let word_ends = line[end..].starts_with(' ') && crate::text::breaks_at(line, end);
        if end < line.len() && !word_ends {
            let last_space = line[start..end]
                .rmatch_indices(' ')
                .map(|(i, _)| start + i)
                .find(|&sp| sp > start && crate::text::breaks_at(line, sp));
            if let Some(sp) = last_space {
                end = sp + 1;
            }
        }
        // A character wider than the whole room still moves on (never an endless loop).
        if end == start {
            end = start + line[start..].chars().next().map_or(1, char::len_utf8);
        }
        let row = Row {
            text: start..end,
            indent: (!first).then_some(indent),
            whole: false,
        };
        // The spaces a break fell on are not carried to the next row.
        start = end + line[end..].len() - line[end..].trim_start_matches(' ').len();
        first = false;
        Some(row)
    })
}
