//! ratatui's `Layout::areas`, remembered: the panes of a screen are split the same way frame
//! after frame. ratatui keeps a cache too, but looks it up with a copy of the layout (its
//! constraints' `Vec`) at every call, and each `Layout::vertical([…])` builds that `Vec`
//! first: two allocations a split, a fifth of what a frame allocated. Here a split already seen
//! is found by comparing its constraints in place, and costs none.

use std::cell::RefCell;

use ratatui::layout::{Constraint, Direction, Layout, Rect};

/// How many splits are remembered: a screen makes at most six a frame.
const REMEMBERED: usize = 16;

struct Seen {
    direction: Direction,
    area: Rect,
    constraints: Vec<Constraint>,
    rects: Vec<Rect>,
}

thread_local! {
    static SEEN: RefCell<Vec<Seen>> = const { RefCell::new(Vec::new()) };
}

/// `area` split top to bottom by `constraints`, as `Layout::vertical(constraints).areas(area)`.
pub fn vertical<const N: usize>(constraints: [Constraint; N], area: Rect) -> [Rect; N] {
    split(Direction::Vertical, constraints, area)
}

/// `area` split left to right, as `Layout::horizontal(constraints).areas(area)`.
pub fn horizontal<const N: usize>(constraints: [Constraint; N], area: Rect) -> [Rect; N] {
    split(Direction::Horizontal, constraints, area)
}

fn split<const N: usize>(
    direction: Direction,
    constraints: [Constraint; N],
    area: Rect,
) -> [Rect; N] {
    SEEN.with(|cell| {
        let Ok(mut seen) = cell.try_borrow_mut() else {
            return Layout::new(direction, constraints).areas(area);
        };
        let hit = seen.iter().find(|s| {
            s.direction == direction && s.area == area && s.constraints[..] == constraints[..]
        });
        if let Some(s) = hit {
            return std::array::from_fn(|i| s.rects[i]);
        }
        let rects: [Rect; N] = Layout::new(direction, constraints).areas(area);
        if seen.len() >= REMEMBERED {
            seen.remove(0);
        }
        seen.push(Seen {
            direction,
            area,
            constraints: constraints.to_vec(),
            rects: rects.to_vec(),
        });
        rects
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits of random areas by random constraints, asked again and again in random order:
    /// always what ratatui's `Layout::areas` gives.
    #[test]
    fn a_split_is_what_ratatuis_layout_gives_remembered_or_not() {
        let mut x = 99u32;
        let mut rnd = |m: u32| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 8) % m
        };
        for _ in 0..4000 {
            let area = Rect::new(
                rnd(3) as u16,
                rnd(3) as u16,
                rnd(4) as u16 * 60,
                rnd(6) as u16 * 9,
            );
            let mut c = || match rnd(4) {
                0 => Constraint::Length(rnd(30) as u16),
                1 => Constraint::Min(rnd(10) as u16),
                2 => Constraint::Percentage(rnd(101) as u16),
                _ => Constraint::Max(rnd(20) as u16),
            };
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
        }
    }
}
