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

/// A recording's destination in a write error: "cannot write standard output", not "cannot
/// write -"; a file by `path_shown`.
fn written_to(path: &Path) -> String {
    if path == Path::new("-") {
        "standard output".to_string()
    } else {
        crate::text::path_shown(path)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{p} already exists; choose another name or pass --force to overwrite it", p = crate::text::path_shown(.path))]
    Exists { path: PathBuf },
    #[error("{p} is a folder; name a file in it with -o (e.g. -o {p}/run.jsonl)", p = crate::text::path_shown(.path))]
    Folder { path: PathBuf },
    #[error("cannot create {p}: {source}; choose a writable place with -o", p = crate::text::path_shown(.path))]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {p}: {source}", p = written_to(.path))]
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
    discards: bool,
    /// Bytes of lines written so far, before any compression.
    written: u64,
}

impl Recorder {
    /// Opens `path` and writes the header. `-` is standard output; a pipe, FIFO, terminal or
    /// other device (`/dev/stdout`) is written through as it is, `--force` or not; an existing
    /// file only with `overwrite`, through a link that names it (as the shell's `>` does: a
    /// `--force` that removed the link first deleted `/dev/stdout` for the whole machine).
    pub fn create(path: &Path, header: &Header, overwrite: bool) -> Result<Self, RecordError> {
        let (file, discards): (Box<dyn Write + Send>, bool) = if path == Path::new("-") {
            (Box::new(std::io::stdout()), stdout_discards())
        } else {
            let file = open_output(path, overwrite)?;
            let discards = is_dev_null(&file);
            (Box::new(file), discards)
        };
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
            discards,
            written: 0,
        };
        rec.write_line(header)?;
        Ok(rec)
    }

    /// Whether what is written is thrown away: the output is `/dev/null`, or standard output
    /// was closed (Rust's runtime opens `/dev/null` in its place, so every write "succeeds").
    #[must_use]
    pub fn discards(&self) -> bool {
        self.discards
    }

    pub fn write(&mut self, tick: &Tick) -> Result<(), RecordError> {
        self.write_line(tick)
    }

    /// Bytes of lines written so far (before any compression).
    #[must_use]
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Serialises into a reused buffer, then writes and flushes the whole line at once.
    fn write_line<T: Serialize>(&mut self, value: &T) -> Result<(), RecordError> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, value).map_err(|e| RecordError::Io {
            path: self.path.clone(),
            source: e.into(),
        })?;
        self.line.push(b'\n');
        self.written += self.line.len() as u64;
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

/// Opens a recording's file: a stream or a descriptor's name as it is, a file new, or an
/// existing one replaced with `overwrite`. Nothing is removed but a link the user named in
/// place of a file, and never one that names a descriptor (`/dev/stdout`: a `--force` that
/// removed that link deleted `/dev/stdout` for the whole machine).
fn open_output(path: &Path, overwrite: bool) -> Result<std::fs::File, RecordError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let err = |e: std::io::Error| {
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
    };
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match std::fs::metadata(path) {
        // A folder is named as one, with or without --force (opening it says "exists" or
        // "is a directory", neither of which says what to do).
        Ok(m) if m.is_dir() => {
            return Err(RecordError::Folder {
                path: path.to_path_buf(),
            })
        }
        // A pipe, FIFO, terminal or device, or what a shell redirected standard output to:
        // written into, nothing truncated or replaced.
        Ok(m) if !m.is_file() || names_a_descriptor(path) => {
            return OpenOptions::new().write(true).open(path).map_err(err);
        }
        _ => {}
    }
    let mut opts = OpenOptions::new();
    opts.write(true).custom_flags(libc::O_NOFOLLOW);
    if overwrite {
        // --force replaces the file named, never what a link there points to (a link to
        // someone's data would have been truncated): the link goes, a new file comes.
        if link {
            std::fs::remove_file(path).map_err(err)?;
        }
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    opts.open(path).map_err(err)
}

/// Whether standard output is the null device: sent there, or closed (Rust's runtime opens
/// `/dev/null` in place of a closed descriptor, so every write "succeeds").
#[must_use]
pub fn stdout_discards() -> bool {
    std::os::fd::AsFd::as_fd(&std::io::stdout())
        .try_clone_to_owned()
        .is_ok_and(|fd| is_dev_null(&std::fs::File::from(fd)))
}

/// Whether `file` is the null device, whatever name led to it.
fn is_dev_null(file: &std::fs::File) -> bool {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let (Ok(it), Ok(null)) = (file.metadata(), std::fs::metadata("/dev/null")) else {
        return false;
    };
    it.file_type().is_char_device() && it.rdev() == null.rdev()
}

/// `/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/1`: a name for a descriptor this process was
/// given, whatever it leads to.
fn names_a_descriptor(path: &Path) -> bool {
    let of_descriptors = |p: &Path| {
        ["/dev/fd", "/proc/self/fd", "/proc/thread-self/fd"]
            .iter()
            .any(|dir| p.starts_with(dir))
    };
    of_descriptors(path) || std::fs::read_link(path).is_ok_and(|to| of_descriptors(&to))
}
