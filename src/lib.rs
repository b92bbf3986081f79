//! gpuwatch: a terminal GPU monitor that tells busy GPUs from busy-looking idle ones.
//!
//! Data flows one way:
//!
//! ```text
//! source (NVML | simulated | replay)   — source/: where ticks come from; NVML only in source/nvml.rs
//!   → sampler (own thread, self-timed) — sampler.rs: reads a tick every interval, adds host.rs
//!   → history (ring buffers)           — history.rs: fixed capacity, window queries by time
//!   → rules (engine with hysteresis)   — rules/: findings with evidence, causes and actions
//!   → app state (update on actions)    — app.rs: the one place the screen's state changes
//!   → render (pure function of state)  — ui/: one pane per file
//! ```
//!
//! Recordings (record.rs), reports (report.rs) and bug-report snapshots (snapshot/) go out;
//! replay (source/replay.rs) brings recordings and snapshots back in. command.rs runs the
//! headless commands, tui.rs the terminal and its event loop.

pub mod app;
pub mod cli;
pub mod command;
pub mod config;
pub mod driver;
pub mod format;
pub mod history;
pub mod host;
pub mod model;
pub mod redact;
pub mod report;
pub mod rules;
pub mod sampler;
pub mod snapshot;
pub mod source;
pub mod store;
pub mod text;
pub mod tui;
pub mod ui;
