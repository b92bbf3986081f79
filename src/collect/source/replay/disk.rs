//! Whether a recording's file is still the one that was opened: replaced or cut shorter on
//! disk while it plays (copied over, truncated), a seek back would quietly play another file,
//! and its end read as a recorder's torn line. And whether what was opened is a file at all.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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

/// Standard input where it is a regular file read from its start (`replay - < rec.jsonl`),
/// opened again by its name in /proc with that name: played as the same file named on the
/// command line is, its length shown and seeks back allowed. It was read as a stream, with no
/// way back (helper-35). A pipe, or a file a shell has read part of first
/// (`{ read h; gpuwatch replay -; } < rec.jsonl`), stays a stream.
pub(super) fn stdin_file() -> Option<(File, PathBuf)> {
    use std::io::Seek;
    use std::os::fd::AsFd;
    let mut shared = File::from(std::io::stdin().as_fd().try_clone_to_owned().ok()?);
    if !shared.metadata().ok()?.is_file() || shared.stream_position().ok()? != 0 {
        return None;
    }
    let again = PathBuf::from("/proc/self/fd/0");
    Some((File::open(&again).ok()?, again))
}

/// What identifies an opened file: its device and inode, and its length then; and where it is
/// on disk (for `-`, standard input's name in /proc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opened {
    dev: u64,
    ino: u64,
    len: u64,
    at: PathBuf,
}

impl Opened {
    pub(super) fn of(m: &std::fs::Metadata, at: &Path) -> Self {
        Opened {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            at: at.to_path_buf(),
        }
    }

    /// How the file differs now, where it matters: another file in its place, or this one
    /// shorter. One that grew (a recording still being written) is the same file.
    pub(super) fn changed(&self) -> Option<String> {
        match std::fs::metadata(&self.at) {
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
