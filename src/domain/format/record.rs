//! Recordings: JSON Lines, a header then one line per tick (`docs/recording-format.md`).
//! Each tick is flushed as it is written, so a recorder killed mid-run loses at most one line.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{DeviceInfo, SystemInfo, Tick};

pub const FORMAT: &str = "gpuwatch-recording";
pub const VERSION: u32 = 1;

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub gpuwatch_version: String,
    pub interval_ms: u64,
    pub system: SystemInfo,
    pub devices: Vec<DeviceInfo>,
}

impl Header {
    #[must_use]
    pub fn new(system: &SystemInfo, devices: &[DeviceInfo], interval_ms: u64) -> Self {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            gpuwatch_version: env!("CARGO_PKG_VERSION").into(),
            interval_ms,
            system: system.clone(),
            devices: devices.to_vec(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path} already exists; choose another name or pass --force to overwrite it")]
    Exists { path: PathBuf },
    #[error("{path} is a folder; name a file in it with -o (e.g. -o {path}/run.jsonl)")]
    Folder { path: PathBuf },
    #[error("cannot create {path}: {source}; choose a writable place with -o")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes ticks to a recording file, one flushed line each; gzip-compressed for a `.gz` name,
/// each line then ending in a sync flush, so that a recorder killed mid-way leaves a stream
/// readable up to its last whole tick.
pub struct Recorder {
    out: Box<dyn Write + Send>,
    path: PathBuf,
    line: Vec<u8>,
}

impl Recorder {
    pub fn create(path: &Path, header: &Header, overwrite: bool) -> Result<Self, RecordError> {
        let io = |source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut opts = OpenOptions::new();
        opts.write(true);
        if overwrite {
            // --force replaces the file named, never what a link there points to (a link to
            // someone's data would have been truncated): the link goes, a new file comes.
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                std::fs::remove_file(path).map_err(io)?;
            }
            opts.create(true).truncate(true);
        } else {
            opts.create_new(true);
        }
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            opts.custom_flags(libc::O_NOFOLLOW);
        }
        // A folder is named as one, with or without --force (opening it says "exists" or
        // "is a directory", neither of which says what to do).
        if path.is_dir() {
            return Err(RecordError::Folder {
                path: path.to_path_buf(),
            });
        }
        let file = opts.open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                RecordError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                RecordError::Create {
                    path: path.to_path_buf(),
                    source: e,
                }
            }
        })?;
        let file = BufWriter::new(file);
        let gzip = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let out: Box<dyn Write + Send> = if gzip {
            Box::new(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            ))
        } else {
            Box::new(file)
        };
        let mut rec = Recorder {
            out,
            path: path.to_path_buf(),
            line: Vec::with_capacity(4096),
        };
        rec.write_line(header)?;
        Ok(rec)
    }

    pub fn write(&mut self, tick: &Tick) -> Result<(), RecordError> {
        self.write_line(tick)
    }

    /// Serialises into a reused buffer, then writes and flushes the whole line at once.
    fn write_line<T: Serialize>(&mut self, value: &T) -> Result<(), RecordError> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, value).map_err(|e| RecordError::Io {
            path: self.path.clone(),
            source: e.into(),
        })?;
        self.line.push(b'\n');
        let path = &self.path;
        self.out
            .write_all(&self.line)
            .and_then(|()| self.out.flush())
            .map_err(|source| RecordError::Io {
                path: path.clone(),
                source,
            })
    }
}
