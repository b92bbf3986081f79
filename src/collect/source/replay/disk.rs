//! Whether a recording's file is still the one that was opened: replaced or cut shorter on
//! disk while it plays (copied over, truncated), a seek back would quietly play another file,
//! and its end read as a recorder's torn line. And whether what was opened is a file at all.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Refuses a terminal opened as the recording (`/dev/stdin` with nothing piped, `-` at a
/// prompt): reading it waited in silence for lines typed, in every command that replays.
pub(super) fn not_a_terminal(
    path: &Path,
    input: &impl std::io::IsTerminal,
) -> Result<(), super::ReplayError> {
    if input.is_terminal() {
        return Err(super::ReplayError::Terminal {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

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
