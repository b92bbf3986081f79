//! What is observed and judged, and the forms it takes on disk: the data types, the history's
//! ring buffers, the rule engine, the store that holds both, thresholds, recordings and
//! snapshots as files, reports of findings for people, and what never leaves the machine. Nothing here reads a GPU, /proc or
//! the terminal.

pub mod config;
pub mod energy;
pub mod format;
pub mod history;
pub mod model;
pub mod redact;
pub mod report;
pub mod rules;
pub mod store;
#[cfg(test)]
pub mod testing;
pub mod text;
pub mod xid;
