//! The few calls into the C library, each wrapped in a safe function: through `nix` where it
//! has them (already in the tree for py-spy), by hand where it does not (`sigpending`,
//! `signal`, `wait4` with its resource usage, and registering a descriptor with tokio). The
//! only module allowed `unsafe` (`[lints]` in Cargo.toml denies it everywhere else, but for
//! NVML's instance ids in `nvml/mig.rs`).
#![allow(unsafe_code)]

use nix::sys::signal::{SigSet, SigmaskHow, Signal};

/// User + system CPU time of this whole process, in seconds.
pub fn process_cpu_seconds() -> Option<f64> {
    use nix::sys::resource::{getrusage, UsageWho};
    use nix::sys::time::TimeValLike as _;
    let ru = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    Some((ru.user_time().num_microseconds() + ru.system_time().num_microseconds()) as f64 / 1e6)
}

/// Drops what was typed at the controlling terminal and not yet read: the keys typed while a
/// replay waited for a pipe's first line, which the screen would take as its own the moment it
/// opened (a `q` typed then quit it at once, however much later the line came). Nothing when
/// there is no terminal.
pub fn discard_typed_ahead() {
    use std::os::fd::AsRawFd as _;
    if let Ok(tty) = std::fs::File::open("/dev/tty") {
        // SAFETY: `tcflush` on a descriptor this function holds open; it reads no memory of
        // ours. Called here rather than through `nix`'s `term` feature: a feature changes the
        // hash of every symbol built on `nix`, and with them `src/link-order.txt`'s names.
        unsafe { libc::tcflush(tty.as_raw_fd(), libc::TCIFLUSH) };
    }
}

/// The memory page size in bytes (4096 when the system does not say).
pub fn page_size() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    sysconf(SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|p| u64::try_from(p).ok())
        .filter(|p| *p > 0)
        .unwrap_or(4096)
}

/// Clock ticks per second, the unit of /proc/PID/stat's times (100 when the system does not say).
pub fn clock_ticks_per_second() -> f32 {
    use nix::unistd::{sysconf, SysconfVar};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(tps)) if tps > 0 => tps as f32,
        _ => 100.0,
    }
}

/// The name of user `uid` through the C library's name service (`/etc/passwd`, and LDAP or
/// SSSD where nsswitch.conf says so); `None` when it has none. May block on a directory
/// server: call it once per user, from a thread that may wait.
pub fn user_name(uid: u32) -> Option<String> {
    // getpwuid_r, its buffer grown as it asks.
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// Lets SIGPIPE end the process, as it does other command-line tools: `gpuwatch query | head`
/// then stops quietly when `head` has enough, instead of failing on a broken pipe. Not for a
/// server, which must outlive a client that hangs up.
pub fn die_on_broken_pipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler; no memory is involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The set holding SIGTSTP alone.
fn stop_set() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGTSTP);
    set
}

/// Blocks SIGTSTP in the calling thread and in every thread started after it, so that a stop
/// asked for (Ctrl-Z, `kill -TSTP`) waits, pending, until the terminal has been given back.
/// Call it first thing in `main`, before any thread exists.
///
/// The kernel then keeps the order of stops and continues for us: a SIGCONT discards a pending
/// SIGTSTP, so whatever is pending when the monitor lets it through is a stop nobody took back.
/// (Catching SIGTSTP and raising SIGSTOP by hand lost a CONT that came between the last check
/// and the raise: 1 trial in 5 of a TSTP/CONT storm on a loaded machine ended stopped.)
pub fn hold_stop_signal() -> std::io::Result<()> {
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&stop_set()), None)
        .map_err(std::io::Error::from)
}

/// Watches for a pending SIGTSTP on the current tokio runtime: readable when one is pending.
/// The descriptor (a signalfd) is never read: reading would take the signal away from the
/// kernel, which must carry it out.
pub fn stop_signal_watch() -> std::io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    let flags = SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC;
    let fd: std::os::fd::OwnedFd = SignalFd::with_flags(&stop_set(), flags)?.into();
    // SAFETY: the OwnedFd keeps the descriptor open, and always the same one, for as long as
    // the AsyncFd that owns it lives.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            .map_err(|e| e.into_parts().1)
    }
}

/// True while a SIGTSTP is held pending: asked for, and not taken back by a SIGCONT since.
pub fn stop_is_pending() -> bool {
    // nix has no sigpending.
    // SAFETY: sigpending and sigismember only write into and read the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&raw mut set) == 0 && libc::sigismember(&raw const set, libc::SIGTSTP) == 1
    }
}

/// Asks for a stop of this whole process (Ctrl-Z typed while the terminal is raw): a SIGTSTP
/// sent to ourselves, held pending like one from outside.
pub fn request_stop() {
    // To the process, not the thread (raise(3)), so that any thread may take it.
    let _ = nix::sys::signal::kill(nix::unistd::getpid(), Signal::SIGTSTP);
}

/// Lets a pending SIGTSTP through: the kernel stops the process here, as the signal's default
/// action, and this returns once it is continued (the shell's `fg`). Returns at once when no
/// stop is pending (a SIGCONT took it back) or when the kernel discards it, as it does in a
/// process group with no shell to continue it (`tmux new gpuwatch`). SIGTSTP is held again
/// before returning.
pub fn let_pending_stop_happen() {
    use nix::sys::signal::pthread_sigmask;
    // Every other thread keeps SIGTSTP blocked, so the pending signal is taken by this one.
    let set = stop_set();
    let _ = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
    let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None);
}

/// The file system holding `file`: the bytes an unprivileged writer can still put there
/// (free blocks not reserved for root) and its size, from `fstatvfs`.
pub fn disk_space(file: &std::fs::File) -> std::io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd as _;
    // nix's statvfs needs a feature of its own for this one call.
    // SAFETY: a zeroed statvfs is a valid value for fstatvfs to fill; `file` is open.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &raw mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let block = st.f_frsize;
    Ok((
        st.f_bavail.saturating_mul(block),
        st.f_blocks.saturating_mul(block),
    ))
}

/// Sends `signal` to the single process `pid` (never a group: `pid` must be above 1).
pub fn kill(pid: libc::pid_t, signal: i32) -> std::io::Result<()> {
    if pid <= 1 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{pid} is not a single process"),
        ));
    }
    let signal = Signal::try_from(signal).map_err(std::io::Error::from)?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).map_err(std::io::Error::from)
}

/// Raises this process's soft limit on open files to its hard limit (a systemd service starts
/// at 1024) and returns the soft limit now in force: the exporter sizes its connection cap by
/// it.
pub fn raise_nofile_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 1024;
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

/// Waits for `child` and returns how it exited with its peak resident memory in bytes
/// (`wait4`'s `ru_maxrss`), which no `/proc` read can give once the process has ended. The
/// child is reaped here: `Child::wait` must not be called after.
pub fn wait_peak_rss(
    child: &std::process::Child,
) -> std::io::Result<(std::process::ExitStatus, u64)> {
    use std::os::unix::process::ExitStatusExt as _;
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    let mut status = 0;
    // nix's waitpid does not give the resource usage.
    // SAFETY: zeroed rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pointers to locals that live across the call.
        let rc = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut ru) };
        if rc == pid {
            let kib = u64::try_from(ru.ru_maxrss).unwrap_or(0);
            return Ok((std::process::ExitStatus::from_raw(status), kib * 1024));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Gives back the pages of code and constants that only start-up needed, the program's own
/// and its libraries': the kernel drops every page of them from the resident set, and faults
/// back in (from the page cache, 64 KiB around each page touched) only what runs from then on.
/// Start-up runs code that never runs again: clap, the config file's parser, NVML's symbol
/// table and the first look at a process in the binary; `nvmlInit` in libnvidia-ml and
/// libcuda; the loader's and the C library's set-up. With the link order that lays what runs
/// after it first, the demo's text resident falls from 2.2-2.5 MiB to 0.9-1.0 MiB, and the
/// libraries' from 1.9 to 0.7 MiB (docs/performance.md, "Start-up's code given back").
/// Returns the bytes that were resident in what was given back; an error only when nothing
/// could be.
///
/// Only pages as they are in their file are dropped: the segments of the loaded objects (the
/// binary and its libraries) that are not writable, where smaps shows a private, read-only
/// mapping of a regular file with no page anonymous or swapped (`unwritten_mappings`). The
/// loader's relocated tables lie in writable segments and are never touched, even when their
/// copies are swapped out and smaps shows none of their pages anonymous (the first version
/// lost libm's GOT that way, and the next `log(0.0)` wrote errno over the thread pointer:
/// helper-41). The work is done inside `dl_iterate_phdr`, which holds the loader's lock on its
/// list of objects: an object listed there is fully mapped and cannot be unmapped until the
/// call ends, so a `dlopen` or `dlclose` on another thread cannot turn a range into someone's
/// memory between the read of smaps and the `madvise`.
///
/// The kernel records the peak resident size (`VmHWM`) as it drops the pages, but from its
/// per-CPU counters, which lag: after a release `VmHWM` can read up to a few hundred KiB under
/// the true peak (0-236 KiB a release, helper-38, on 2 cores). Peaks are measured by sampling
/// `VmRSS` as well (`rss_timeline.py`).
///
/// Never inlined: `docs/workloads/link_order.sh` profiles what runs after start-up by zeroing
/// callgrind's counts where this function begins.
#[inline(never)]
pub fn release_start_up_pages() -> std::io::Result<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&p| p > 0)
        .unwrap_or(4096);
    let mut release = Release {
        candidates: unwritten_mappings(&smaps),
        page,
        released: 0,
        refused: None,
    };
    // SAFETY: `release_object` only reads the program headers the loader hands it and the
    // `Release` behind `data`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(release_object), (&raw mut release).cast()) };
    match release.refused {
        Some(e) if release.released == 0 => Err(e),
        _ => Ok(release.released),
    }
}

/// What `release_start_up_pages` gives back, and what it gave.
struct Release {
    candidates: Vec<Unwritten>,
    page: usize,
    released: u64,
    refused: Option<std::io::Error>,
}

/// `dl_iterate_phdr`'s callback: gives back the unwritten pages of one loaded object's
/// segments that are not writable. Never unwinds (nothing in it panics).
unsafe extern "C" fn release_object(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid `info` for the length of the call; `data` is the
    // `Release` that `release_start_up_pages` lends.
    let (info, release) = unsafe { (&*info, &mut *data.cast::<Release>()) };
    if info.dlpi_phdr.is_null() {
        return 0;
    }
    // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers, as the loader keeps them.
    let headers =
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    for h in headers {
        if h.p_type != libc::PT_LOAD || h.p_flags & libc::PF_W != 0 {
            continue;
        }
        let start = info.dlpi_addr.wrapping_add(h.p_vaddr);
        let Some(segment) = segment_pages(start, start.wrapping_add(h.p_memsz), release.page)
        else {
            continue;
        };
        for (from, len, resident) in overlaps(&release.candidates, segment) {
            // SAFETY: `from..from + len` is whole pages of a segment of an object the loader
            // lists (mapped, and kept mapped while it is listed), not writable, where smaps
            // showed a private read-only file mapping with no page anonymous or swapped: every
            // page is the file's own content, which MADV_DONTNEED puts back when next touched.
            let rc = unsafe { libc::madvise(from as *mut libc::c_void, len, libc::MADV_DONTNEED) };
            if rc == 0 {
                release.released += resident;
            } else {
                release.refused = Some(std::io::Error::last_os_error());
            }
        }
    }
    0
}

/// The pages a segment at `start..end` (addresses) is mapped in: the loader maps each segment
/// from the page its start is in to the page its end is in, and no two segments of different
/// permissions share a page.
fn segment_pages(start: u64, end: u64, page: usize) -> Option<(usize, usize)> {
    let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
    let first = start - start % page;
    let last = end.checked_next_multiple_of(page)?;
    (first < last).then_some((first, last))
}

/// The parts of `candidates` within `segment` (both whole pages): start, length and the bytes
/// resident there, counted in proportion to the part of the mapping.
fn overlaps(candidates: &[Unwritten], (start, end): (usize, usize)) -> Vec<(usize, usize, u64)> {
    candidates
        .iter()
        .filter_map(|m| {
            let from = m.start.max(start);
            let to = (m.start + m.len).min(end);
            // In u128: this runs inside the loader's callback, where an overflow's panic (in a
            // debug build) would abort.
            let share = |b: u64| {
                let part = u128::from(b) * (to - from) as u128 / m.len.max(1) as u128;
                u64::try_from(part).unwrap_or(u64::MAX)
            };
            (from < to).then(|| (from, to - from, share(m.resident)))
        })
        .collect()
}

/// A mapping that holds only pages as they are in its file.
#[derive(Debug, PartialEq)]
struct Unwritten {
    start: usize,
    len: usize,
    resident: u64,
}

/// The mappings in `smaps` (the text of /proc/self/smaps) of regular files, private and not
/// writable, that hold no anonymous page and are plain memory (not a device's, locked or huge).
fn unwritten_mappings(smaps: &str) -> Vec<Unwritten> {
    let mut found = Vec::new();
    let mut current: Option<Unwritten> = None;
    let (mut resident, mut clean) = (0, 0);
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        match first {
            "Rss:" => {
                resident = fields
                    .next()
                    .and_then(|k| k.parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024;
            }
            // Any page written (a relocation, a debugger's breakpoint) rules the mapping out,
            // resident or swapped out; a kernel that says neither rules it out too.
            "Anonymous:" | "Swap:" if fields.next() == Some("0") => clean += 1,
            "Anonymous:" | "Swap:" => current = None,
            "VmFlags:" => {
                // Device memory (io, pf), locked pages (lo), huge pages (ht) and mappings that
                // a userfaultfd serves (um, uw) are not page-cache pages to put back.
                let plain = fields.all(|f| !matches!(f, "io" | "pf" | "lo" | "ht" | "um" | "uw"));
                if let Some(mut m) = current.take().filter(|_| plain && clean == 2) {
                    m.resident = resident;
                    found.push(m);
                }
            }
            _ => {
                if let Some(m) = mapping_header(first, fields) {
                    (current, clean) = (Some(m), 0);
                } else if first.contains('-') && !first.ends_with(':') {
                    current = None;
                }
            }
        }
    }
    found
}

/// A mapping's first line (`start-end perms offset dev inode path`), when it maps a regular
/// file, private and read-only. A deleted file and anything under /dev are passed over.
fn mapping_header<'a>(range: &str, mut fields: impl Iterator<Item = &'a str>) -> Option<Unwritten> {
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?;
    let (_offset, _dev) = (fields.next()?, fields.next()?);
    let inode: u64 = fields.next()?.parse().ok()?;
    let path = fields.next()?;
    let last = fields.last().unwrap_or(path);
    let file = path.starts_with('/') && !path.starts_with("/dev/") && last != "(deleted)";
    let private_read_only = perms.len() == 4 && !perms.contains('w') && perms.ends_with('p');
    (inode != 0 && file && private_read_only && end > start).then_some(Unwritten {
        start,
        len: end - start,
        resident: 0,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn user_names_come_from_the_name_service() {
        assert_eq!(super::user_name(0).as_deref(), Some("root"));
        let me = std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap();
        let uid = std::process::Command::new("id").arg("-u").output().unwrap();
        let uid: u32 = String::from_utf8_lossy(&uid.stdout).trim().parse().unwrap();
        assert_eq!(
            super::user_name(uid).as_deref(),
            Some(String::from_utf8_lossy(&me.stdout).trim())
        );
        assert_eq!(super::user_name(3_999_999_999), None, "a uid no one has");
    }

    /// /proc/self/smaps of a binary with its read-only headers and constants, its code, the
    /// relocated tables (read-only, but written by the loader) and its data; a library's code;
    /// NVML's anonymous buffer; a device's mapping, a deleted file's and a locked one; a
    /// library's relocated table swapped out (helper-41), and a mapping whose kernel does not
    /// say what of it is swapped.
    const SMAPS: &str = "\
55d0a0000000-55d0a01e7000 r--p 00000000 fd:01 42                         /usr/bin/gpuwatch
Size:               1948 kB
Rss:                 620 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd mr mw me dw sd
55d0a01e7000-55d0a093d000 r-xp 001e6000 fd:01 42                         /usr/bin/gpuwatch
Size:               7512 kB
Rss:                2584 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me dw sd
55d0a093d000-55d0a098c000 r--p 0093b000 fd:01 42                         /usr/bin/gpuwatch
Size:                316 kB
Rss:                 316 kB
Anonymous:           316 kB
Swap:                  0 kB
VmFlags: rd mr mw me dw ac sd
55d0a098c000-55d0a098d000 rw-p 0098a000 fd:01 42                         /usr/bin/gpuwatch
Size:                  4 kB
Rss:                   4 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd wr mr mw me dw ac sd
7f35c0000000-7f35c0100000 r-xp 00028000 fd:01 77                         /usr/lib/libc.so.6
Size:               1024 kB
Rss:                1024 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me sd
7f35c4a45000-7f35c59ce000 rw-p 00000000 00:00 0
Size:              15908 kB
Rss:               15148 kB
Anonymous:         15148 kB
Swap:                  0 kB
VmFlags: rd wr mr mw me ac sd
7f35c6000000-7f35c6001000 r--p 00000000 00:05 501                        /dev/nvidiactl
Size:                  4 kB
Rss:                   4 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd mr me io pf dd sd
7f35c7000000-7f35c7010000 r-xp 00000000 fd:01 78                         /tmp/old copy (deleted)
Size:                 64 kB
Rss:                  64 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me sd
7f35c8000000-7f35c8010000 r-xp 00000000 fd:01 79                         /opt/locked lib.so
Size:                 64 kB
Rss:                  64 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me lo sd
7f35c9000000-7f35c9010000 r--p 00000000 fd:01 80                         /opt/with space.so
Size:                 64 kB
Rss:                  12 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd mr mw me sd
7f35ca000000-7f35ca001000 r--p 00020000 fd:01 81                         /usr/lib/libm.so.6
Size:                  4 kB
Rss:                   0 kB
Anonymous:             0 kB
Swap:                  4 kB
VmFlags: rd mr mw me ac sd
7f35cb000000-7f35cb010000 r-xp 00000000 fd:01 82                         /opt/old kernel.so
Size:                 64 kB
Rss:                  64 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
";

    #[test]
    fn only_unwritten_read_only_mappings_of_files_are_given_back() {
        let found = super::unwritten_mappings(SMAPS);
        let expect = |start: usize, end: usize, kib: u64| super::Unwritten {
            start,
            len: end - start,
            resident: kib * 1024,
        };
        assert_eq!(
            found,
            [
                expect(0x55d0_a000_0000, 0x55d0_a01e_7000, 620),
                expect(0x55d0_a01e_7000, 0x55d0_a093_d000, 2584),
                expect(0x7f35_c000_0000, 0x7f35_c010_0000, 1024),
                expect(0x7f35_c900_0000, 0x7f35_c901_0000, 12),
            ],
            "the relocated tables, resident or swapped, the data, the anonymous buffer, the \
             device's mapping, the deleted file's, the locked one and the unknown one stay"
        );
        assert!(super::unwritten_mappings("").is_empty());
    }

    #[test]
    fn a_segments_pages_within_a_mapping_are_given_back() {
        let page = 0x1000;
        assert_eq!(
            super::segment_pages(0x1800, 0x4800, page),
            Some((0x1000, 0x5000))
        );
        assert_eq!(
            super::segment_pages(0x1800, 0x1fff, page),
            Some((0x1000, 0x2000))
        );
        assert_eq!(
            super::segment_pages(0x2000, 0x3000, page),
            Some((0x2000, 0x3000))
        );
        assert_eq!(
            super::segment_pages(0x2000, 0x2000, page),
            None,
            "an empty segment"
        );
        let m = |start: usize, len: usize| super::Unwritten {
            start,
            len,
            resident: len as u64,
        };
        let found = super::overlaps(&[m(0x1000, 0x2000), m(0x5000, 0x1000)], (0x2000, 0x6000));
        assert_eq!(found, [(0x2000, 0x1000, 0x1000), (0x5000, 0x1000, 0x1000)]);
        assert!(super::overlaps(&[m(0x1000, 0x1000)], (0x2000, 0x3000)).is_empty());
    }

    /// KiB of the mapping that starts at `at` in this process's resident set (smaps' `Rss:`;
    /// `mincore` would say whether the page cache holds them, not whether the process does).
    fn resident_kib(at: *mut libc::c_void) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{:x}-", at as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        let rss = lines
            .find(|l| l.starts_with("Rss:"))
            .expect("the mapping in smaps");
        rss.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// A file the program maps read-only itself is data, not a loaded object's code: the
    /// release leaves it resident (it gave back every regular file's unwritten mapping before,
    /// the loader's tables among them once swapped out: helper-41).
    #[test]
    fn a_file_the_program_maps_itself_stays_resident() {
        use std::os::fd::AsRawFd as _;
        let file = std::fs::File::open("/proc/self/exe").unwrap();
        let len = 16 * 4096;
        // SAFETY: a fresh private read-only mapping of an open file, unmapped below.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED);
        assert_eq!(resident_kib(at), 64);
        super::release_start_up_pages().expect("madvise on our own text");
        assert_eq!(
            resident_kib(at),
            64,
            "the program's own mapping of a file stays"
        );
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(at, len) };
    }

    /// Resident bytes of this test binary's unwritten mappings and its libraries', as smaps
    /// says now.
    fn own_unwritten_resident() -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        super::unwritten_mappings(&smaps)
            .iter()
            .map(|m| m.resident)
            .sum()
    }

    /// Set in the process of its own that the test below runs itself in (not `GPUWATCH_`:
    /// a test's own switch, not one for users to find in `--help`).
    const ALONE: &str = "SYS_TEST_RELEASE_ALONE";

    /// Runs in a process of its own, where no other test can fault in code of its own between
    /// the two readings: in the shared test process the other tests' first runs of their code
    /// made "after" exceed "before" (CI of stop 73: 7,856,128 bytes after, 7,446,528 before).
    #[test]
    fn start_up_pages_given_back_leave_the_program_running() {
        if std::env::var_os(ALONE).is_some() {
            return given_back_and_still_running();
        }
        let name = "collect::sys::tests::start_up_pages_given_back_leave_the_program_running";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads=1", "--nocapture"])
            .env(ALONE, "1")
            .output()
            .expect("the test binary runs again");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains("1 passed"),
            "alone, the test said:\n{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn given_back_and_still_running() {
        let before = own_unwritten_resident();
        let released = super::release_start_up_pages().expect("madvise on our own text");
        assert!(released > 0, "this test binary's code was resident");
        // The code that runs from here on (this test, the harness) comes back from the page
        // cache; far less than all of it.
        let words: Vec<String> = (0..1000).map(|i| format!("{i:x}")).collect();
        assert_eq!(words.concat().len(), 2728);
        let after = own_unwritten_resident();
        assert!(
            after < before,
            "resident code and constants {after} bytes after, {before} before"
        );
        println!("resident code and constants {after} bytes after, {before} before");
    }
}
