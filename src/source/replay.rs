//! Recordings played back: at their recorded pace, faster, or as fast as possible.
//!
//! Unknown fields are ignored (newer writers may add some); a truncated last line, as a
//! recorder killed mid-write leaves, ends the replay quietly; any other bad line is an error
//! naming the file and the line number.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::model::{DeviceInfo, SystemInfo, Tick};
use crate::record::{Header, FORMAT, VERSION};
use crate::source::{Pacing, Sampled, Source, SourceError};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot open recording {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is empty: it is not a gpuwatch recording")]
    Empty { path: PathBuf },
    #[error("{path}:{line}: not a gpuwatch recording ({reason})")]
    NotARecording {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{path} is format version {version}, newer than this gpuwatch reads ({VERSION}); update gpuwatch")]
    TooNew { path: PathBuf, version: u32 },
    #[error("{path}:{line}: corrupt tick ({reason})")]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{path}:{line}: tick has {got} devices, the header lists {want}")]
    DeviceCount {
        path: PathBuf,
        line: usize,
        got: usize,
        want: usize,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub struct ReplaySource {
    header: Header,
    lines: Box<dyn BufRead + Send>,
    /// Ticks of a snapshot, already in memory (then `lines` is empty).
    queued: std::collections::VecDeque<Tick>,
    path: PathBuf,
    line_no: usize,
    buf: String,
    speed: f64,
}

impl ReplaySource {
    /// Opens a recording or a snapshot; gzip-compressed files (`.jsonl.gz`) are read
    /// transparently.
    pub fn open(path: &Path, speed: f64) -> Result<Self, ReplayError> {
        File::open(path).map_err(|source| ReplayError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        match crate::snapshot::read(path) {
            Ok(Some(snap)) => return Ok(Self::from_snapshot(&snap, path, speed)),
            Ok(None) => {}
            Err(e) => {
                return Err(ReplayError::NotARecording {
                    path: path.to_path_buf(),
                    line: 1,
                    reason: e.to_string(),
                })
            }
        }
        let open = || {
            File::open(path).map_err(|source| ReplayError::Open {
                path: path.to_path_buf(),
                source,
            })
        };
        let mut magic = [0u8; 2];
        let gz = open()?.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
        if gz {
            Self::from_reader(flate2::read::GzDecoder::new(open()?), path, speed)
        } else {
            Self::from_reader(open()?, path, speed)
        }
    }

    /// Reads the header from `reader`; `path` is only used in messages.
    pub fn from_reader(
        reader: impl Read + Send + 'static,
        path: &Path,
        speed: f64,
    ) -> Result<Self, ReplayError> {
        let mut lines: Box<dyn BufRead + Send> = Box::new(BufReader::new(reader));
        let mut first = String::new();
        let path = path.to_path_buf();
        lines
            .read_line(&mut first)
            .map_err(|source| ReplayError::Read {
                path: path.clone(),
                source,
            })?;
        if first.trim().is_empty() {
            return Err(ReplayError::Empty { path });
        }
        let header = parse_header(&first, &path)?;
        Ok(ReplaySource {
            header,
            lines,
            queued: Default::default(),
            path,
            line_no: 1,
            buf: String::new(),
            speed,
        })
    }

    /// Plays a bug-report snapshot's window.
    pub fn from_snapshot(s: &crate::snapshot::Snapshot, path: &Path, speed: f64) -> Self {
        let infos: Vec<DeviceInfo> = s.devices.iter().map(|d| d.info.clone()).collect();
        let mut header = Header::new(&s.system, &infos, s.interval_ms);
        header.gpuwatch_version.clone_from(&s.gpuwatch_version);
        ReplaySource {
            header,
            lines: Box::new(std::io::empty()),
            queued: crate::snapshot::ticks(s).into(),
            path: path.to_path_buf(),
            line_no: 0,
            buf: String::new(),
            speed,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Reads every remaining tick (for headless commands and tests).
    pub fn read_all(&mut self) -> Result<Vec<Tick>, ReplayError> {
        let mut out = Vec::new();
        let mut tick = Tick::default();
        while self.next_tick(&mut tick)? {
            out.push(tick.clone());
        }
        Ok(out)
    }

    fn next_tick(&mut self, tick: &mut Tick) -> Result<bool, ReplayError> {
        if let Some(t) = self.queued.pop_front() {
            *tick = t;
            return Ok(true);
        }
        loop {
            self.buf.clear();
            let n = self
                .lines
                .read_line(&mut self.buf)
                .map_err(|source| ReplayError::Read {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            if self.buf.trim().is_empty() {
                continue;
            }
            let complete = self.buf.ends_with('\n');
            return match serde_json::from_str::<Tick>(&self.buf) {
                Ok(t) => self.accept(t, tick).map(|_| true),
                // A last line without its newline is a recorder killed mid-write.
                Err(_) if !complete => Ok(false),
                Err(e) => Err(ReplayError::Corrupt {
                    path: self.path.clone(),
                    line: self.line_no,
                    reason: e.to_string(),
                }),
            };
        }
    }

    fn accept(&self, t: Tick, tick: &mut Tick) -> Result<(), ReplayError> {
        let want = self.header.devices.len();
        if t.devices.len() != want {
            return Err(ReplayError::DeviceCount {
                path: self.path.clone(),
                line: self.line_no,
                got: t.devices.len(),
                want,
            });
        }
        *tick = t;
        Ok(())
    }
}

fn parse_header(line: &str, path: &Path) -> Result<Header, ReplayError> {
    let not = |reason: String| ReplayError::NotARecording {
        path: path.to_path_buf(),
        line: 1,
        reason,
    };
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| not(e.to_string()))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(not(format!(
            "the first line has no \"format\": \"{FORMAT}\""
        )));
    }
    let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
    if version > VERSION {
        return Err(ReplayError::TooNew {
            path: path.to_path_buf(),
            version,
        });
    }
    serde_json::from_value(value).map_err(|e| not(e.to_string()))
}

impl Source for ReplaySource {
    fn system(&self) -> &SystemInfo {
        &self.header.system
    }
    fn devices(&self) -> &[DeviceInfo] {
        &self.header.devices
    }
    fn sample(&mut self, tick: &mut Tick) -> Result<Sampled, SourceError> {
        Ok(if self.next_tick(tick)? {
            Sampled::Tick
        } else {
            Sampled::End
        })
    }
    fn pacing(&self) -> Pacing {
        Pacing::Recorded { speed: self.speed }
    }
    fn label(&self) -> String {
        format!("replay: {}", self.path.display())
    }
}
