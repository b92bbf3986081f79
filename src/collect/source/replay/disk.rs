//! Whether a recording's file is still the one that was opened: replaced or cut shorter on
//! disk while it plays (copied over, truncated), a seek back would quietly play another file,
//! and its end read as a recorder's torn line.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What identifies an opened file: its device and inode, and its length then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Opened {
    dev: u64,
    ino: u64,
    len: u64,
}

impl Opened {
    pub(super) fn of(m: &std::fs::Metadata) -> Self {
        Opened {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
        }
    }

    /// How the file at `path` differs now, where it matters: another file there, or this one
    /// shorter. One that grew (a recording still being written) is the same file.
    pub(super) fn changed(&self, path: &Path) -> Option<String> {
        match std::fs::metadata(path) {
            Err(e) => Some(format!("it can no longer be read: {e}")),
            Ok(m) if (m.dev(), m.ino()) != (self.dev, self.ino) => {
                Some("another file has taken its place".into())
            }
            Ok(m) if m.len() < self.len => {
                Some(format!("it shrank from {} to {} bytes", self.len, m.len()))
            }
            Ok(_) => None,
        }
    }
}
