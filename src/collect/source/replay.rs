//! Recordings played back: at their recorded pace, faster, or as fast as possible.
//!
//! Unknown fields are ignored (newer writers may add some); a truncated last line, as a
//! recorder killed mid-write leaves, ends the replay, which then says where it was cut
//! (`Source::cut_short`); any other bad line is an error naming the file and the line number.

mod disk;
mod encoding;
mod error;
mod read;
mod snapshot;

pub use error::ReplayError;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::format::record::Header;
use crate::format::snapshot::Snapshot;
use crate::model::{DeviceInfo, SystemInfo, Tick};
use crate::source::{Pacing, Sampled, Source, SourceError};
use read::{
    bomb_guard, header_then_more, impossible_in, is_header, last_tick_ms, not_a_whole_header,
    not_json, one_line_reason, parse_header, read_bounded_line, read_header_line, spliced_at, torn,
    torn_header,
};
use snapshot::SnapshotPlay;

pub struct ReplaySource {
    header: Header,
    lines: Box<dyn BufRead + Send>,
    /// A snapshot's window, played a tick at a time (then `lines` is empty).
    play: Option<SnapshotPlay>,
    path: PathBuf,
    line_no: usize,
    buf: String,
    speed: f64,
    /// Sample time of the last tick, where known before playing to it.
    end_ms: Option<u64>,
    /// A regular file, which can be opened and played again.
    rewindable: bool,
    /// Read through gzip: line-editing advice goes through `zcat`.
    gzip: bool,
    /// The regular file opened, to tell when another has taken its place or it shrank.
    opened: Option<disk::Opened>,
    /// The recording ended cut off: what `cut_short` says.
    cut: Option<String>,
    /// The last tick's time, to find ticks that go back (recordings joined into one file).
    last_ms: Option<u64>,
    /// The first tick's time: with the last, how long the whole recording plays.
    first_ms: Option<u64>,
}

/// A recording that plays whole in less than this (ms of wall time) at its speed was asked to
/// play at once, as `--speed 0` does: a seek back plays it at the recorded pace.
const AT_ONCE_MS: f64 = 1000.0;

/// How far a tick may go back in time before the file is taken for recordings joined: a
/// clock set back by NTP moves by less.
const BACK_MS: u64 = 5_000;

/// The most GPUs a recording may list, and processes a GPU may have in one tick: far above
/// any real node, low enough that a hostile file cannot make every tick a huge allocation.
pub const MAX_DEVICES: usize = 1024;
pub const MAX_PROCESSES: usize = 4096;
/// Driver events in one tick or one snapshot: a GPU in an Xid storm sends a few a second.
pub const MAX_EVENTS: usize = 4096;

/// The longest line a recording may have: a tick of 64 GPUs with their processes is ~1 MiB.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// The most GPU readings (ticks × GPUs) a snapshot may hold: 15 minutes of 64 GPUs at 250 ms
/// is 230 400. GPUs sampled at times of their own would make every distinct time a tick of
/// every GPU; this bounds the work a hostile file can ask for.
pub const MAX_SNAPSHOT_READINGS: usize = 4 << 20;
pub use crate::format::snapshot::MAX_SNAPSHOT_BYTES;
/// A gzip stream may expand at most this many times (recordings compress 10-20×; a
/// decompression bomb, a thousand).
pub const MAX_GZIP_RATIO: u64 = 200;

impl ReplaySource {
    /// Opens a recording or a snapshot, plain or gzip-compressed, reading the input once, so
    /// that `-` (standard input), pipes and FIFOs work as well as files.
    pub fn open(path: &Path, speed: f64) -> Result<Self, ReplayError> {
        let open_err = |source| ReplayError::Open {
            path: path.to_path_buf(),
            error: source,
        };
        let (file, on_disk) = if path == Path::new("-") {
            let Some(found) = disk::stdin_file() else {
                disk::not_a_terminal(path, &std::io::stdin())?;
                return Self::from_input(Box::new(std::io::stdin()), path, speed);
            };
            found
        } else {
            (File::open(path).map_err(open_err)?, path.to_path_buf())
        };
        disk::not_a_terminal(path, &file)?;
        let meta = file.metadata().ok().filter(std::fs::Metadata::is_file);
        let regular = meta.is_some();
        let mut src = Self::from_input(Box::new(file), path, speed)?;
        (src.rewindable, src.opened) = (regular, meta.map(|m| disk::Opened::of(&m, &on_disk)));
        if regular && src.end_ms.is_none() {
            src.end_ms = last_tick_ms(&on_disk);
        }
        Ok(src)
    }

    /// Reads a recording or a snapshot, plain or gzip-compressed, from `raw`; `path` is only
    /// used in messages. The fuzz targets (tests/cargo-fuzz) enter here.
    pub fn from_input(
        raw: Box<dyn Read + Send>,
        path: &Path,
        speed: f64,
    ) -> Result<Self, ReplayError> {
        let mut raw = BufReader::new(raw);
        let magic = raw.fill_buf().map_err(|source| ReplayError::Read {
            path: path.to_path_buf(),
            error: source,
        })?;
        // A lone 0x1f is a gzip file cut after its first byte, not text.
        let gzip = magic.starts_with(&[0x1f, 0x8b]) || magic == [0x1f];
        let input: Box<dyn Read + Send> = if gzip {
            Box::new(bomb_guard(raw, path))
        } else {
            Box::new(raw)
        };
        let mut lines = BufReader::new(input);
        let mut first = String::new();
        let blank = match read_header_line(&mut lines, &mut first, path, gzip) {
            // A gzip stream that breaks before its first line is whole ("unexpected end of
            // file", "incomplete deflate stream" said nothing of what to do).
            Err(ReplayError::Read { error, .. }) if gzip => {
                return Err(ReplayError::gzip_head(path, error))
            }
            other => other?,
        };
        // A recording's first line is its header, one JSON object. A snapshot is one JSON
        // document (pretty-printed over many lines): its format field says so, not a guess.
        let opened = match serde_json::from_str::<serde_json::Value>(&first) {
            Ok(v)
                if v.get("format").and_then(|f| f.as_str())
                    == Some(crate::format::snapshot::FORMAT) =>
            {
                Self::snapshot_from(first, lines, path)
            }
            Ok(_) => Self::after_header(&first, Box::new(lines), path, speed).map(|mut src| {
                (src.gzip, src.line_no) = (gzip, src.line_no + blank);
                src
            }),
            // A recording's header names its format first: one that does not parse is torn,
            // not a snapshot (whose first line is "{").
            // Compressed, a header that stops at a line break was not cut but damaged: a
            // recorder flushes the whole line.
            Err(e) if gzip && torn_header(&e, &first) && first.ends_with('\n') => {
                Err(ReplayError::gzip_head(path, not_a_whole_header()))
            }
            Err(e) if torn_header(&e, &first) => Err(ReplayError::TornHeader {
                path: path.to_path_buf(),
                line: 1,
            }),
            // Whole and then more on its line: the header's own reader says so.
            Err(_) if header_then_more(&first) => {
                Self::after_header(&first, Box::new(lines), path, speed)
            }
            Err(_) if first.trim_start().starts_with('{') => {
                Self::snapshot_from(first, lines, path)
            }
            Err(e) => Err(ReplayError::NotARecording {
                path: path.to_path_buf(),
                line: 1,
                reason: not_json(&first, &e, path, gzip),
            }),
        };
        // Blank lines before the header move it down: its errors say where it is.
        opened.map_err(|e| e.on_header_line(blank + 1))
    }

    /// Reads the header from `reader`; `path` is only used in messages.
    pub fn from_reader(
        reader: impl Read + Send + 'static,
        path: &Path,
        speed: f64,
    ) -> Result<Self, ReplayError> {
        let mut lines: Box<dyn BufRead + Send> = Box::new(BufReader::new(reader));
        let mut first = String::new();
        let blank = read_header_line(&mut lines, &mut first, path, false)?;
        let mut src = Self::after_header(&first, lines, path, speed)
            .map_err(|e| e.on_header_line(blank + 1))?;
        src.line_no += blank;
        Ok(src)
    }

    fn after_header(
        first: &str,
        lines: Box<dyn BufRead + Send>,
        path: &Path,
        speed: f64,
    ) -> Result<Self, ReplayError> {
        let header = parse_header(first, path)?;
        Ok(ReplaySource {
            header,
            lines,
            play: None,
            path: path.to_path_buf(),
            line_no: 1,
            buf: String::new(),
            speed,
            end_ms: None,
            rewindable: false,
            gzip: false,
            opened: None,
            cut: None,
            last_ms: None,
            first_ms: None,
        })
    }

    /// Plays a bug-report snapshot's window. A snapshot is a moment, not a performance: it is
    /// played as fast as possible whatever `speed` says, so the screen opens as it was when the
    /// snapshot was taken.
    #[must_use]
    pub fn from_snapshot(s: &Snapshot, path: &Path) -> Self {
        Self::playing(SnapshotPlay::new(s.clone()), path)
    }

    fn playing(play: SnapshotPlay, path: &Path) -> Self {
        let speed = f64::INFINITY;
        let s = &play.snap;
        let infos: Vec<DeviceInfo> = s.devices.iter().map(|d| d.info.clone()).collect();
        let mut header = Header::new(&s.system, &infos, s.interval_ms);
        header.gpuwatch_version.clone_from(&s.gpuwatch_version);
        ReplaySource {
            header,
            lines: Box::new(std::io::empty()),
            end_ms: play.times.last().copied(),
            play: Some(play),
            path: path.to_path_buf(),
            line_no: 0,
            buf: String::new(),
            speed,
            rewindable: false,
            gzip: false,
            opened: None,
            cut: None,
            last_ms: None,
            first_ms: None,
        }
    }

    #[must_use]
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

    /// The next line into `buf`: its length (0 at the end), or `None` where a gzip stream
    /// ends short, which `cut` then says.
    fn read_line(&mut self) -> Result<Option<usize>, ReplayError> {
        self.buf.clear();
        match read_bounded_line(&mut self.lines, &mut self.buf, &self.path, self.line_no + 1) {
            Ok(n) => Ok(Some(n)),
            // A gzip stream cut short (a recorder killed while compressing, a partial
            // download): what came before it plays, only the torn tail is lost. Cut inside a
            // line, it is that line torn, said as a plain file's is. Cut between two ticks
            // (each ends in a sync flush, so a killed recorder leaves every tick whole and only
            // the trailer missing, and a copy cut anywhere in a flush's last bytes does too),
            // what is there was all read, but the stream is short.
            Err(ReplayError::Read { error, .. })
                if error.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                self.cut = Some(if self.buf.is_empty() {
                    format!(
                        "gzip stream ends after line {} without its trailer (a recorder stopped \
                         before closing it, or a partial copy); every tick in it was read",
                        self.line_no
                    )
                } else {
                    torn(self.line_no + 1)
                });
                Ok(None)
            }
            Err(ReplayError::Read { error, .. }) if self.gzip => Err(ReplayError::GzipBroken {
                path: self.path.clone(),
                after: self.line_no,
                error,
            }),
            Err(e) => Err(e),
        }
    }

    fn next_tick(&mut self, tick: &mut Tick) -> Result<bool, ReplayError> {
        let gzip = self.gzip;
        self.next_line_tick(tick)
            .map_err(|e| if gzip { e.in_gzip() } else { e })
    }

    fn next_line_tick(&mut self, tick: &mut Tick) -> Result<bool, ReplayError> {
        if let Some(play) = self.play.as_mut() {
            return Ok(play.next_tick(tick));
        }
        loop {
            let Some(n) = self.read_line()? else {
                return Ok(false);
            };
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            if self.buf.trim().is_empty() {
                continue;
            }
            let complete = self.buf.ends_with('\n');
            return match serde_json::from_str::<Tick>(&self.buf) {
                Ok(t) => {
                    self.in_order(&t)?;
                    self.accept(t, tick)?;
                    self.last_ms = Some(tick.t_ms);
                    self.first_ms.get_or_insert(tick.t_ms);
                    Ok(true)
                }
                // A header, however it was written again (a second recording appended).
                Err(_) if is_header(&self.buf) => Err(ReplayError::SecondRecording {
                    path: self.path.clone(),
                    line: self.line_no,
                    before: self.line_no - 1,
                }),
                // A last line without its newline is a recorder killed mid-write (unless a
                // whole tick was appended to its torn one: that is said, not dropped).
                Err(_) if !complete && spliced_at(&self.buf).is_none() => {
                    self.cut = Some(torn(self.line_no));
                    Ok(false)
                }
                Err(e) => Err(ReplayError::Corrupt {
                    path: self.path.clone(),
                    line: self.line_no,
                    reason: one_line_reason(&e, &self.buf),
                }),
            };
        }
    }

    /// A tick well before the one above it: recordings joined one after the other (their
    /// time runs back), whose history would sum as one (a GPU "using" 1.4 kW).
    fn in_order(&self, t: &Tick) -> Result<(), ReplayError> {
        match self.last_ms {
            Some(last) if t.t_ms.saturating_add(BACK_MS) < last => Err(ReplayError::TimeBack {
                path: self.path.clone(),
                line: self.line_no,
                before: self.line_no - 1,
                back_s: (last - t.t_ms).div_ceil(1000),
            }),
            _ => Ok(()),
        }
    }

    fn accept(&self, t: Tick, tick: &mut Tick) -> Result<(), ReplayError> {
        let impossible = impossible_in(&t, &self.header.devices);
        if let Some(reason) = impossible {
            return Err(ReplayError::Corrupt {
                path: self.path.clone(),
                line: self.line_no,
                reason,
            });
        }
        if let Some(d) = t.devices.iter().find(|d| d.processes.len() > MAX_PROCESSES) {
            return Err(ReplayError::Corrupt {
                path: self.path.clone(),
                line: self.line_no,
                reason: format!(
                    "{} processes on one GPU, more than the {MAX_PROCESSES} gpuwatch reads",
                    d.processes.len()
                ),
            });
        }
        let mut t = t;
        let checked = crate::model::stack::too_big(&t.stacks).map_or_else(
            || {
                let at = t.t_ms;
                t.stacks.iter_mut().try_for_each(|b| b.check_and_clean(at))
            },
            Err,
        );
        if let Err(why) = checked {
            return Err(ReplayError::Corrupt {
                path: self.path.clone(),
                line: self.line_no,
                reason: why,
            });
        }
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

impl Source for ReplaySource {
    fn system(&self) -> &SystemInfo {
        &self.header.system
    }
    /// The interval the recording was made at, within what `record` can write (a hostile
    /// header's 0 or 1 ms would size the history for millions of ticks).
    fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.header.interval_ms.clamp(50, 3_600_000))
    }
    fn devices(&self) -> &[DeviceInfo] {
        &self.header.devices
    }
    fn sample(&mut self, tick: &mut Tick) -> Result<Sampled, SourceError> {
        if self.next_tick(tick)? {
            return Ok(Sampled::Filled);
        }
        // A gzip file's length is known once read to its end: kept for the plays after a seek.
        if self.cut.is_none() {
            self.end_ms = self.end_ms.or(self.last_ms);
        }
        Ok(Sampled::End)
    }
    fn pacing(&self) -> Pacing {
        Pacing::Recorded { speed: self.speed }
    }
    fn can_rewind(&self) -> bool {
        self.rewindable
    }
    /// Opens the file again (`-` where standard input is a file). What played at once to its end (a snapshot, `--speed 0`, or a
    /// speed at which the whole recording plays within a second) plays at the recorded pace
    /// after a seek back: what led to that moment is watched, not run past again (at
    /// `--speed 1000` a seek back to a 7-minute recording's start played it to its end again in
    /// 0.4 s, and the screen never showed the moment sought).
    fn rewind(&mut self) -> Result<(), SourceError> {
        // Only a length known whole: a gzip file's is known once played to its end (before,
        // what had played so far made a seek back in its first second drop to 1x for good).
        let whole_ms = self
            .end_ms
            .map(|end| end.max(self.last_ms.unwrap_or(end)))
            .zip(self.first_ms)
            .map(|(end, first)| end.saturating_sub(first));
        let at_once = !self.speed.is_finite()
            || whole_ms.is_some_and(|ms| (ms as f64 / self.speed) < AT_ONCE_MS);
        let speed = if at_once { 1.0 } else { self.speed };
        if let Some(how) = self.opened.as_ref().and_then(disk::Opened::changed) {
            return Err(ReplayError::Changed {
                path: self.path.clone(),
                how,
            }
            .into());
        }
        let mut again = Self::open(&self.path, speed)?;
        if again.header.devices.len() != self.header.devices.len() {
            return Err(ReplayError::DeviceCount {
                path: self.path.clone(),
                line: 1,
                got: again.header.devices.len(),
                want: self.header.devices.len(),
            }
            .into());
        }
        again.speed = speed;
        again.end_ms = again.end_ms.or(self.end_ms);
        *self = again;
        Ok(())
    }
    fn end_ms(&self) -> Option<u64> {
        self.end_ms
    }
    /// Where it was cut; a file that changed on disk as it played says so, not "torn".
    fn cut_short(&self) -> Option<String> {
        let changed = self.opened.as_ref().and_then(disk::Opened::changed);
        match (&self.cut, changed) {
            (Some(_), Some(how)) => Some(format!(
                "the file changed on disk as it played ({how}): open it again"
            )),
            (cut, _) => cut.clone(),
        }
    }
    fn label(&self) -> String {
        format!("replay: {}", crate::text::path_shown(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_opens_at_its_last_moment_whatever_the_speed() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/h200-hang.json");
        let snap =
            crate::format::snapshot::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let src = ReplaySource::from_snapshot(&snap, &path);
        assert_eq!(
            src.pacing(),
            Pacing::Recorded {
                speed: f64::INFINITY
            }
        );
    }

    /// `--speed 0` ran to the end again after a seek back, so seek keys looked dead.
    #[test]
    fn what_played_at_once_plays_in_real_time_after_a_seek_back() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/h200-hang.json");
        let mut src = ReplaySource::open(&path, 4.0).unwrap();
        src.rewind().unwrap();
        assert_eq!(src.pacing(), Pacing::Recorded { speed: 1.0 });
        let rec = std::env::temp_dir().join(format!("gw-rewind-{}.jsonl", std::process::id()));
        let header = Header::new(&src.header.system, &src.header.devices, 250);
        std::fs::write(
            &rec,
            format!("{}\n", serde_json::to_string(&header).unwrap()),
        )
        .unwrap();
        for speed in [f64::INFINITY, 4.0] {
            let mut src = ReplaySource::open(&rec, speed).unwrap();
            src.rewind().unwrap();
            let want = if speed.is_finite() { speed } else { 1.0 };
            assert_eq!(src.pacing(), Pacing::Recorded { speed: want });
        }
        std::fs::remove_file(&rec).unwrap();
    }
}
