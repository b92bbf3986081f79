//! ratatui's `Layout::areas`, remembered: the panes of a screen are split the same way frame
//! after frame. ratatui keeps a cache too, but looks it up with a copy of the layout (its
//! constraints' `Vec`) at every call, and each `Layout::vertical([…])` builds that `Vec`
//! first: two allocations a split, a fifth of what a frame allocated. Here a split already seen
//! is found by comparing its constraints in place, and costs none.

use std::cell::RefCell;

use ratatui::layout::{Constraint, Direction, Flex, Layout, Rect};

/// How many splits are remembered: a screen makes at most seven a frame.
const REMEMBERED: usize = 16;

struct Seen {
    direction: Direction,
    flex: Flex,
    spacing: u16,
    area: Rect,
    constraints: Vec<Constraint>,
    rects: Vec<Rect>,
}

thread_local! {
    static SEEN: RefCell<Vec<Seen>> = const { RefCell::new(Vec::new()) };
}

/// `area` split top to bottom by `constraints`, as `Layout::vertical(constraints).areas(area)`.
pub fn vertical<const N: usize>(constraints: [Constraint; N], area: Rect) -> [Rect; N] {
    let mut out = [Rect::ZERO; N];
    split(
        Direction::Vertical,
        (Flex::default(), 0),
        &constraints,
        area,
        &mut out,
    );
    out
}

/// `area` split left to right, as `Layout::horizontal(constraints).areas(area)`.
pub fn horizontal<const N: usize>(constraints: [Constraint; N], area: Rect) -> [Rect; N] {
    let mut out = [Rect::ZERO; N];
    split(
        Direction::Horizontal,
        (Flex::default(), 0),
        &constraints,
        area,
        &mut out,
    );
    out
}

/// `area` split left to right into columns `spacing` cells apart and packed from the left,
/// written into `out` (a rect per constraint): `Layout::horizontal(constraints)
/// .flex(Flex::Start).spacing(spacing).split(area)` for a number of columns known only when
/// drawing (the process table's).
pub fn columns(constraints: &[Constraint], spacing: u16, area: Rect, out: &mut [Rect]) {
    split(
        Direction::Horizontal,
        (Flex::Start, spacing),
        constraints,
        area,
        out,
    );
}

fn split(
    direction: Direction,
    (flex, spacing): (Flex, u16),
    constraints: &[Constraint],
    area: Rect,
    out: &mut [Rect],
) {
    let layout = || {
        Layout::new(direction, constraints.iter().copied())
            .flex(flex)
            .spacing(spacing)
            .split(area)
    };
    let copy = |out: &mut [Rect], rects: &[Rect]| {
        out.iter_mut().zip(rects).for_each(|(o, r)| *o = *r);
    };
    SEEN.with(|cell| {
        let Ok(mut seen) = cell.try_borrow_mut() else {
            return copy(out, &layout());
        };
        let hit = seen.iter().find(|s| {
            s.direction == direction
                && s.flex == flex
                && s.spacing == spacing
                && s.area == area
                && s.constraints[..] == constraints[..]
        });
        if let Some(s) = hit {
            return copy(out, &s.rects);
        }
        let rects = layout();
        copy(out, &rects);
        if seen.len() >= REMEMBERED {
            seen.remove(0);
        }
        seen.push(Seen {
            direction,
            flex,
            spacing,
            area,
            constraints: constraints.to_vec(),
            rects: rects.to_vec(),
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constraint(rnd: &mut impl FnMut(u32) -> u32) -> Constraint {
        match rnd(4) {
            0 => Constraint::Length(rnd(30) as u16),
            1 => Constraint::Min(rnd(10) as u16),
            2 => Constraint::Percentage(rnd(101) as u16),
            _ => Constraint::Max(rnd(20) as u16),
        }
    }

    /// Splits of random areas by random constraints (two, three, or up to 13 columns spaced
    /// apart), asked again and again in random order: always what ratatui's `Layout` gives.
    #[test]
    fn a_split_is_what_ratatuis_layout_gives_remembered_or_not() {
        let mut lcg = crate::testing::Lcg(99);
        let mut rnd = |m: u32| lcg.below(m);
        for _ in 0..4000 {
            let area = Rect::new(
                rnd(3) as u16,
                rnd(3) as u16,
                rnd(4) as u16 * 60,
                rnd(6) as u16 * 9,
            );
            let mut c = || constraint(&mut rnd);
            let three = [c(), c(), c()];
            assert_eq!(
                vertical(three, area),
                Layout::vertical(three).areas::<3>(area),
                "{three:?} {area:?}"
            );
            let two = [c(), c()];
            assert_eq!(
                horizontal(two, area),
                Layout::horizontal(two).areas::<2>(area),
                "{two:?} {area:?}"
            );
            // Wide splits cost ratatui's solver much more: one round in eight has one.
            if rnd(8) != 0 {
                continue;
            }
            let (n, spacing) = (rnd(14), rnd(3) as u16);
            let many: Vec<Constraint> = (0..n).map(|_| constraint(&mut rnd)).collect();
            let mut out = vec![Rect::ZERO; many.len()];
            columns(&many, spacing, area, &mut out);
            let theirs = Layout::horizontal(many.iter().copied())
                .flex(Flex::Start)
                .spacing(spacing)
                .split(area);
            assert_eq!(out[..], theirs[..], "{many:?} {spacing} {area:?}");
        }
    }
}
