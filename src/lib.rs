//! gpuwatch: a terminal GPU monitor that tells busy GPUs from busy-looking idle ones.
//!
//! Data flows one way, and every import points down (`tests/architecture.rs`,
//! `docs/architecture.md`):
//!
//! ```text
//! collect/source (NVML | simulated | replay) — NVML only in collect/source/nvml/
//!   → collect/sampler (one tick, self-timed) — reads the source, adds collect/host.rs
//!   → collect/pacer (the one loop)           — paces any source, stops, feeds a sink
//!   → domain/store (one writer)              — domain/history/ + the domain/rules/ engine
//!   → monitor.rs                             — starts all of the above, hands out the store
//!   → front/app (update on actions)          — the one place the screen's state changes
//!   → front/ui (pure function of state)      — one pane per file
//! ```
//!
//! The tree is grouped by stage: `domain/` (what is observed and judged, and its files),
//! `collect/` (where it comes from), `front/` (what people and programs see), and the monitor
//! that joins them. The on-disk formats (domain/format) sit below the sources, so replay reads
//! both; front/snapshot builds snapshots from the store; front/command runs the headless
//! commands, front/tui the terminal and its event loop.

pub mod collect;
pub mod domain;
pub mod front;
pub mod monitor;

// Every module by its own name as well (`crate::model`, `gpuwatch::rules`): the stage a module
// belongs to is where its file lives, not a word in every path.
pub use collect::{container, host, pacer, sampler, software, source, stack};
pub use domain::{config, energy, format, history, model, redact, report, rules, store, text, xid};
pub use front::{app, cli, command, fleet, query, serve, snapshot, tui, ui};

#[cfg(test)]
pub use domain::testing;

use collect::sys;
/// For the tests that bound what a hostile input can cost: a child's peak memory.
pub use sys::wait_peak_rss;
