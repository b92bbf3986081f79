//! gpuwatch: a terminal GPU monitor that tells busy GPUs from busy-looking idle ones.
//!
//! Data flows one way, and every import points down (`tests/architecture.rs`,
//! `docs/architecture.md`):
//!
//! ```text
//! source (NVML | simulated | replay) — source/: where ticks come from; NVML only in source/nvml.rs
//!   → sampler (one tick, self-timed)   — sampler.rs: reads the source, adds host.rs
//!   → driver (the one loop)            — driver.rs: paces any source, stops, feeds a sink
//!   → store (one writer)               — store.rs: history.rs ring buffers + the rules/ engine
//!   → store view (a reader's copy)     — copied under the lock, read without it
//!   → app state (update on actions)    — app/: the one place the screen's state changes
//!   → render (pure function of state)  — ui/: one pane per file
//! ```
//!
//! The on-disk formats (format/: recordings and snapshots) sit below the sources, so replay
//! reads both; snapshot/ builds snapshots from a view; report.rs and text.rs write for people.
//! command.rs runs the headless commands, tui.rs the terminal and its event loop.

pub mod app;
pub mod cli;
pub mod command;
pub mod config;
pub mod container;
pub mod driver;
pub mod format;
pub mod history;
pub mod host;
pub mod model;
pub mod monitor;
pub mod query;
pub mod redact;
pub mod report;
pub mod rules;
pub mod sampler;
pub mod serve;
pub mod snapshot;
pub mod software;
pub mod source;
pub mod stack;
pub mod store;
mod sys;
/// For the tests that bound what a hostile input can cost: a child's peak memory.
pub use sys::wait_peak_rss;
pub mod text;
pub mod tui;
pub mod ui;
