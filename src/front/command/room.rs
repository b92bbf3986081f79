//! A recording stops before it fills its disk. `record --fast` wrote 4.7 GB in 15 s (helper-39),
//! and a live recording left for days grows as surely: a full disk fails whatever else writes
//! there, a training job's checkpoints among them. Every 16 MiB written, the free space of the
//! file system holding a recording's file is read; under 1 GiB (a twentieth of a smaller file
//! system), the recording stops with every tick written so far whole.

use std::fs::File;
use std::path::Path;

use anyhow::{bail, Result};

/// What a recording leaves free for everything else, at most: a twentieth of a file system
/// smaller than 20 GiB (a 64 MiB `/dev/shm` would refuse every recording past 16 MiB).
const RESERVE: u64 = 1 << 30;
/// The share of a small file system kept free: a twentieth.
const SHARE: u64 = 20;
/// Bytes written between two looks at the free space (a look costs one `fstatvfs`).
const EVERY: u64 = 16 << 20;

pub(super) struct Room {
    /// The recording's file, where it is one (a pipe or a terminal fills no disk).
    file: Option<File>,
    reserve: u64,
    share: u64,
    every: u64,
    looked_at: u64,
}

impl Room {
    /// The room left where `out` (`-`: standard output) is written.
    pub(super) fn of(out: &Path) -> Room {
        Room::with(out, (RESERVE, SHARE), EVERY)
    }

    /// Keeping `reserve` free, or `1/share` of a smaller file system, looking every `every`.
    fn with(out: &Path, (reserve, share): (u64, u64), every: u64) -> Room {
        // Opened only once known to be a file: a FIFO's open would wait for its other end.
        let file = if out == Path::new("-") {
            std::os::fd::AsFd::as_fd(&std::io::stdout())
                .try_clone_to_owned()
                .ok()
                .map(File::from)
        } else if std::fs::metadata(out).is_ok_and(|m| m.is_file()) {
            // For appending, as the recorder may and reading may not: nothing is written.
            std::fs::OpenOptions::new().append(true).open(out).ok()
        } else {
            None
        };
        Room {
            file: file.filter(|f| f.metadata().is_ok_and(|m| m.is_file())),
            reserve,
            share,
            every,
            looked_at: 0,
        }
    }

    /// An error, to stop the recording, once fewer than `RESERVE` bytes are left on the disk
    /// after `written` bytes and `ticks` ticks to `to`.
    pub(super) fn check(&mut self, written: u64, ticks: u64, to: &str) -> Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        if written < self.looked_at + self.every {
            return Ok(());
        }
        self.looked_at = written;
        // A size of 0 is a file system that does not say (FUSE without statfs), not a full one.
        let Ok((left, size)) = crate::sys::disk_space(file) else {
            return Ok(());
        };
        let reserve = self.reserve.min(size / self.share.max(1));
        if size == 0 || left >= reserve {
            return Ok(());
        }
        bail!(
            "stopped recording: the disk holding {to} has {} MiB left, under the {} MiB a \
             recording leaves for everything else (a job's checkpoints among them). The {ticks} \
             tick{} written are kept, each whole: free some space, or record to another disk \
             with -o",
            left >> 20,
            reserve >> 20,
            if ticks == 1 { "" } else { "s" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_with_less_than_the_reserve_stops_the_recording_at_a_look() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        // No disk has all of itself left: each look finds too little.
        let mut room = Room::with(&path, (u64::MAX, 1), 100);
        assert!(
            room.check(99, 1, "r.jsonl").is_ok(),
            "no look before 100 bytes"
        );
        let e = room.check(100, 7, "r.jsonl").unwrap_err().to_string();
        assert!(
            e.starts_with("stopped recording: the disk holding r.jsonl has "),
            "{e}"
        );
        assert!(e.contains("The 7 ticks written are kept"), "{e}");
        // Any disk has this much: recording goes on.
        let mut room = Room::with(&path, (0, SHARE), 100);
        assert!(room.check(1 << 40, 7, "r.jsonl").is_ok());
        // A pipe or a FIFO fills no disk, and is not opened.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let mut room = Room::with(&fifo, (u64::MAX, 1), 1);
        assert!(room.check(1 << 40, 7, "fifo").is_ok());
    }
}
