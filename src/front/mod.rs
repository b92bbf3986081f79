//! What people and programs see: the command line, the terminal's state and panes and its event
//! loop, the headless commands, `query`, the Prometheus exporter, snapshots and reports.

pub mod app;
pub mod cli;
pub mod command;
pub mod fleet;
pub mod query;
pub mod serve;
pub mod snapshot;
pub mod tui;
pub mod ui;
