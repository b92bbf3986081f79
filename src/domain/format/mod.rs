//! The on-disk formats: recordings (JSON Lines, `record`) and bug-report snapshots (one JSON
//! document, `snapshot`), their data types and readers. They sit below the sources, so the
//! replay source reads both without knowing how they were taken.

pub mod reason;
pub mod record;
pub mod snapshot;
