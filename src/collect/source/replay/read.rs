//! Reading a recording without trusting it: lines of bounded length, gzip with a bound on its
//! expansion, the header checked, the last tick found from the file's tail.

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::{ReplayError, MAX_DEVICES, MAX_EVENTS, MAX_GZIP_RATIO, MAX_LINE_BYTES};
use crate::format::record::{Header, FORMAT, VERSION};
use crate::model::{DeviceInfo, Tick};

/// serde's reason for a tick's line, its position said as a column: a tick is one line, so
/// serde's "line 1" is the file's line the error names already.
pub(super) fn one_line_reason(e: &serde_json::Error, line: &str) -> String {
    if let Some(why) = super::encoding::marked_line(line) {
        return why;
    }
    if let Some(column) = spliced_at(line) {
        return format!(
            "a tick cut short at column {column} runs into a whole one: a recorder stopped \
             mid-write and another appended to the file; deleting the line's first {column} \
             characters keeps the whole tick"
        );
    }
    // Past the line's own end (its newline read as part of a string, or the text run out): the
    // line was cut short, which serde words as "control character … at column 0" of a next
    // line, or "EOF while parsing".
    if e.is_eof() || e.line() > 1 {
        let len = line.trim_end_matches(['\n', '\r']).chars().count();
        return format!("it ends at column {len} before its tick does: the line was cut short");
    }
    crate::format::reason::serde_reason(e, line)
}

/// The first value of `t` no GPU or process can give, said with where it is.
pub(super) fn impossible_in(t: &Tick, devices: &[DeviceInfo]) -> Option<String> {
    let times = std::iter::once(t.t_ms)
        .chain(t.events.iter().map(|e| e.t_ms))
        .filter(|&ms| ms > crate::model::LATEST_PLAUSIBLE_MS)
        .map(|ms| format!("time {ms} ms is after the year 2100"));
    // Which GPU: its number in a recording of `-i 2,5` is not its place in the line.
    let readings = t.devices.iter().zip(devices).filter_map(|(d, info)| {
        let why = d.sample.impossible().or_else(|| {
            d.processes
                .iter()
                .find_map(crate::model::ProcessSample::impossible)
        })?;
        Some(format!(
            "GPU {}: {why}",
            crate::model::gpu_label(info.index)
        ))
    });
    let events = (t.events.len() > MAX_EVENTS).then(|| {
        format!(
            "{} driver events in one tick, more than the {MAX_EVENTS} gpuwatch reads",
            t.events.len()
        )
    });
    times.chain(readings).chain(events).next()
}

/// What `cut_short` says of a recording whose line `line` is its last and torn.
pub(super) fn torn(line: usize) -> String {
    format!("line {line} torn mid-write (a recorder stopped while writing, or a partial copy)")
}

/// Where a second tick begins inside a line (after `column` characters), a torn tick and a
/// whole one spliced (a recorder killed mid-write, another appending to the same file): a
/// tick opens with its time and then its devices, which its samples' `{"t_ms":` never do.
pub(super) fn spliced_at(line: &str) -> Option<usize> {
    const OPEN: &str = "{\"t_ms\":";
    line.match_indices(OPEN)
        .filter(|&(at, _)| at > 0)
        .find_map(|(at, _)| {
            let rest = line[at + OPEN.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
            rest.starts_with(",\"devices\":")
                .then(|| line[..at].chars().count())
        })
}

/// Reads one line of at most `MAX_LINE_BYTES` (a 1 GB line, or `/dev/zero`, is an error
/// naming the limit, not an allocation that takes the machine's memory). A line that is not
/// UTF-8 is an error naming it, except a last line cut inside a character (a copy cut short
/// there), which keeps its whole characters: what follows takes it as torn. `buf`'s
/// allocation is read into, so a line costs none.
pub(super) fn read_bounded_line(
    lines: &mut impl BufRead,
    buf: &mut String,
    path: &Path,
    line: usize,
) -> Result<usize, ReplayError> {
    let mut bytes = std::mem::take(buf).into_bytes();
    bytes.clear();
    let read = lines
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', &mut bytes);
    let n = match read {
        Ok(n) => n,
        Err(error) => {
            // What was read before the error stays, for the caller to tell a torn line.
            *buf = String::from_utf8_lossy(&bytes).into_owned();
            return Err(ReplayError::Read {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    if bytes.len() > MAX_LINE_BYTES {
        return Err(corrupt(
            path,
            line,
            format!(
                "the line is longer than {} MiB: not a gpuwatch recording",
                MAX_LINE_BYTES >> 20
            ),
        ));
    }
    match String::from_utf8(bytes) {
        Ok(text) => *buf = text,
        Err(e) => {
            let (valid, cut_in_char) = (e.utf8_error().valid_up_to(), e.utf8_error().error_len());
            let mut bytes = e.into_bytes();
            let at_end = !bytes.ends_with(b"\n") && cut_in_char.is_none();
            bytes.truncate(valid);
            let column = String::from_utf8_lossy(&bytes).chars().count() + 1;
            *buf = String::from_utf8(bytes).unwrap_or_default();
            if !at_end {
                return Err(corrupt(
                    path,
                    line,
                    format!("a byte at column {column} is not UTF-8 text"),
                ));
            }
        }
    }
    Ok(n)
}

/// Blank lines a reader passes over before a header (an editor, or `echo >> file`, can leave
/// some; a recorder writes none); past this many the input is not a recording.
const MAX_BLANK_LINES: usize = 1000;

/// The header's line into `first`, past any blank lines before it; how many it passed. An
/// input with nothing else is `Empty`, or `Blank` where it had blank lines.
pub(super) fn read_header_line(
    lines: &mut impl BufRead,
    first: &mut String,
    path: &Path,
    gzip: bool,
) -> Result<usize, ReplayError> {
    // UTF-16 read as UTF-8 is "not UTF-8 text" or "expected value": its name says what to do.
    // A read that fails here fails as the line's read would have, with nothing read.
    let head = match lines.fill_buf() {
        Ok(head) => head,
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => &[],
        Err(error) => {
            let path = path.to_path_buf();
            return Err(ReplayError::Read { path, error });
        }
    };
    if let Some(form) = super::encoding::utf16(head) {
        return Err(ReplayError::NotARecording {
            path: path.to_path_buf(),
            line: 1,
            reason: super::encoding::not_utf8(form, path, gzip),
        });
    }
    let mut blank = 0;
    loop {
        // Where a header should be, binary data or an endless line is no recording, not a
        // "corrupt tick" to delete (the advice was "delete line 1").
        read_bounded_line(lines, first, path, blank + 1).map_err(|e| match e {
            ReplayError::Corrupt { path, line, reason } => ReplayError::NotARecording {
                path,
                line,
                reason: format!(
                    "where its header should be, {}",
                    reason.trim_end_matches(": not a gpuwatch recording")
                ),
            },
            e => e,
        })?;
        // A UTF-8 byte-order mark (an editor on Windows saved it) begins the file, not the
        // JSON: taken off before the blank test, so that a mark alone on the first line is a
        // blank line, as it looks. One only: a second is named (`not_json`).
        if blank == 0 {
            if let Some(rest) = first.strip_prefix('\u{feff}') {
                *first = rest.to_string();
            }
        }
        if !first.trim().is_empty() {
            return Ok(blank);
        }
        if first.is_empty() || blank == MAX_BLANK_LINES {
            let path = path.to_path_buf();
            return Err(if blank == 0 && first.is_empty() {
                ReplayError::Empty { path }
            } else {
                ReplayError::Blank { path }
            });
        }
        blank += 1;
    }
}

fn corrupt(path: &Path, line: usize, reason: String) -> ReplayError {
    ReplayError::Corrupt {
        path: path.to_path_buf(),
        line,
        reason,
    }
}

/// A gzip stream that expands past what any recording does: hostile, not damaged.
#[derive(Debug)]
pub(super) struct Bomb(String);

impl std::fmt::Display for Bomb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Bomb {}

/// Decompresses a gzip stream, failing once it expands more than `MAX_GZIP_RATIO` times
/// (plus 64 MiB of slack for small files) what was read of it.
pub(super) fn bomb_guard(
    compressed: impl BufRead + Send + 'static,
    path: &Path,
) -> impl Read + Send {
    struct Counting<R> {
        inner: R,
        read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }
    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(n)
        }
    }
    impl<R: BufRead> BufRead for Counting<R> {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            self.inner.fill_buf()
        }
        fn consume(&mut self, n: usize) {
            self.read
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            self.inner.consume(n);
        }
    }
    struct Guard<R> {
        inner: R,
        compressed: std::sync::Arc<std::sync::atomic::AtomicU64>,
        out: u64,
        path: PathBuf,
    }
    impl<R: Read> Read for Guard<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.out += n as u64;
            let cin = self.compressed.load(std::sync::atomic::Ordering::Relaxed);
            if self.out > cin.saturating_mul(MAX_GZIP_RATIO) + (64 << 20) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    Bomb(format!(
                        "{} expands more than {MAX_GZIP_RATIO} times: not a gpuwatch recording (a decompression bomb?)",
                        self.path.display()
                    )),
                ));
            }
            Ok(n)
        }
    }
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Counting {
        inner: compressed,
        read: read.clone(),
    };
    Guard {
        inner: flate2::bufread::MultiGzDecoder::new(counted),
        compressed: read,
        out: 0,
        path: path.to_path_buf(),
    }
}

/// A first line that begins as a recording's header does (its format first) but does not parse:
/// torn mid-write, not a snapshot (whose first line is "{") nor something else.
fn is_torn_header(line: &str) -> bool {
    // Cut within its first bytes too ("{\"format\":\"gpuw", no line break): that read as a
    // snapshot cut short. A snapshot's first line is "{" and its line break.
    starts_header(line) || (!line.contains('\n') && header_start().starts_with(line))
}

/// Why a first line that is no JSON is not a recording: a Markdown snapshot is named as one
/// ("expected value at line 1 column 1" said nothing of what to open instead), and so are
/// byte-order marks beyond the one read past.
pub(super) fn not_json(first: &str, e: &serde_json::Error, path: &Path, gzip: bool) -> String {
    if first.starts_with("## gpuwatch snapshot") {
        return "a Markdown snapshot, a report to read that does not open again; open the JSON \
                snapshot written with it"
            .into();
    }
    super::encoding::extra_marks(first, path, gzip).unwrap_or_else(|| e.to_string())
}

/// Whether `line`, which did not parse as JSON for `e`, is a header torn mid-write. One nested
/// past serde's 128 levels is no header of ours, torn or whole (it was "cut short").
pub(super) fn torn_header(e: &serde_json::Error, line: &str) -> bool {
    is_torn_header(line) && !e.to_string().starts_with("recursion limit exceeded") && !runs_on(e)
}

/// Whether serde read a whole value and found more after it on the line: a header that is
/// whole and then runs on is damaged, not cut short (it was said "cut short").
fn runs_on(e: &serde_json::Error) -> bool {
    e.to_string().starts_with("trailing characters")
}

/// The column (in characters) where the first JSON value on `line` ends.
fn first_value_end(line: &str) -> usize {
    let mut values = serde_json::Deserializer::from_str(line).into_iter::<serde::de::IgnoredAny>();
    let _ = values.next();
    line.get(..values.byte_offset())
        .map_or(0, |whole| whole.chars().count())
}

/// Why a compressed header that ends at its line break does not read.
pub(super) fn not_a_whole_header() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the line is not a whole header",
    )
}

/// Whether `line` holds a whole recording's header, however it is spaced or ordered (as
/// `is_header` takes one), and then more: a damaged header, not something else.
pub(super) fn header_then_more(line: &str) -> bool {
    let mut values = serde_json::Deserializer::from_str(line).into_iter::<serde_json::Value>();
    let first = values.next().and_then(Result::ok);
    first.is_some_and(|v| v.get("format").and_then(|f| f.as_str()) == Some(FORMAT))
        && !line[values.byte_offset()..].trim().is_empty()
}

/// Whether `line` starts as a recording's header does (a second one inside a file).
pub(super) fn starts_header(line: &str) -> bool {
    line.starts_with(&header_start())
}

/// Whether `line` is a recording's header: as gpuwatch writes it, or written again by another
/// tool (`jq -c`, other spacing), whose "format" names it. Asked only of a line that is no tick.
pub(super) fn is_header(line: &str) -> bool {
    starts_header(line)
        || serde_json::from_str::<serde_json::Value>(line)
            .is_ok_and(|v| v.get("format").and_then(|f| f.as_str()) == Some(FORMAT))
}

fn header_start() -> String {
    format!("{{\"format\":\"{FORMAT}\"")
}

pub(super) fn parse_header(line: &str, path: &Path) -> Result<Header, ReplayError> {
    let not = |reason: String| ReplayError::NotARecording {
        path: path.to_path_buf(),
        line: 1,
        reason,
    };
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        if torn_header(&e, line) {
            ReplayError::TornHeader {
                path: path.to_path_buf(),
                line: 1,
            }
        } else if runs_on(&e) && header_then_more(line) {
            ReplayError::DamagedHeader {
                path: path.to_path_buf(),
                line: 1,
                reason: format!(
                    "whole up to column {}, where more follows on the same line",
                    first_value_end(line)
                ),
            }
        } else {
            not(e.to_string())
        }
    })?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(not(format!(
            "the first line has no \"format\": \"{FORMAT}\""
        )));
    }
    let version = value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0) as u32;
    if version > VERSION {
        return Err(ReplayError::TooNew {
            path: path.to_path_buf(),
            version,
        });
    }
    // Tagged as ours, so a value of the wrong type is a damaged header: parsed again from the
    // text (only on this path) so that serde says where, and the field is named.
    let header: Header = serde_json::from_value(value).map_err(|e| {
        let reason = match serde_json::from_str::<Header>(line) {
            Err(at) => crate::format::reason::serde_reason(&at, line),
            Ok(_) => crate::format::reason::plain_expected(&e.to_string()),
        };
        ReplayError::DamagedHeader {
            path: path.to_path_buf(),
            line: 1,
            reason,
        }
    })?;
    if header.devices.len() > MAX_DEVICES {
        return Err(not(format!(
            "{} GPUs, more than the {MAX_DEVICES} gpuwatch reads",
            header.devices.len()
        )));
    }
    if let Some(why) = crate::model::devices_inconsistent(&header.devices) {
        return Err(not(why));
    }
    Ok(header)
}

/// The sample time of the last complete tick of a plain (not compressed) recording file,
/// read from its tail: a replay can show its length before playing to it. `None` for a gzip
/// file or when the tail holds no complete tick.
pub(super) fn last_tick_ms(path: &Path) -> Option<u64> {
    use std::io::{Seek, SeekFrom};
    #[derive(serde::Deserialize)]
    struct TimeOnly {
        t_ms: u64,
    }
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut magic = [0u8; 2];
    if f.read_exact(&mut magic).is_err() || magic == [0x1f, 0x8b] {
        return None;
    }
    // Most ticks are a few KiB: look at a short tail first, then at one that must hold the
    // longest line a recording may have.
    for window in [1u64 << 16, MAX_LINE_BYTES as u64 + 1] {
        let from = len.saturating_sub(window);
        f.seek(SeekFrom::Start(from)).ok()?;
        let mut tail = Vec::new();
        (&mut f).take(window).read_to_end(&mut tail).ok()?;
        let found = tail
            .split(|b| *b == b'\n')
            .rev()
            .skip(1) // what follows the last newline: empty, or a torn line the replay skips too
            .take(2)
            .find_map(|line| serde_json::from_slice::<TimeOnly>(line).ok());
        if let Some(t) = found {
            return Some(t.t_ms);
        }
        if from == 0 {
            return None;
        }
    }
    None
}
