//! The few calls into the C library, each wrapped in a safe function. The only module allowed
//! `unsafe` (`[lints]` in Cargo.toml denies it everywhere else).
#![allow(unsafe_code)]

/// User + system CPU time of this whole process, in seconds.
pub fn process_cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage writes into the struct we pass and has no other effect.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut ru) };
    (rc == 0).then(|| {
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    })
}

/// The memory page size in bytes (4096 when the system does not say).
pub fn page_size() -> u64 {
    // SAFETY: sysconf only reads a configuration value and has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page).ok().filter(|p| *p > 0).unwrap_or(4096)
}

/// Clock ticks per second, the unit of /proc/PID/stat's times (100 when the system does not say).
pub fn clock_ticks_per_second() -> f32 {
    // SAFETY: sysconf only reads a configuration value and has no preconditions.
    let tps = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if tps > 0 {
        tps as f32
    } else {
        100.0
    }
}

/// The name of user `uid` through the C library's name service (`/etc/passwd`, and LDAP or
/// SSSD where nsswitch.conf says so); `None` when it has none. May block on a directory
/// server: call it once per user, from a thread that may wait.
pub fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: `pwd` and `buf` outlive the call, which writes only into them (buf.len()
        // bytes at most); `found` is set to null or to `&pwd`.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &raw mut pwd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &raw mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name points to a NUL-terminated string inside `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        return Some(name.to_string_lossy().into_owned());
    }
}

/// Lets SIGPIPE end the process, as it does other command-line tools: `gpuwatch query | head`
/// then stops quietly when `head` has enough, instead of failing on a broken pipe. Not for a
/// server, which must outlive a client that hangs up.
pub fn die_on_broken_pipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler; no memory is involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The set holding SIGTSTP alone.
fn stop_set() -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset only write into the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGTSTP);
        set
    }
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
    let set = stop_set();
    // SAFETY: pthread_sigmask reads the set we own and changes only this thread's mask.
    let rc =
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

/// Watches for a pending SIGTSTP on the current tokio runtime: readable when one is pending.
/// The descriptor (a signalfd) is never read: reading would take the signal away from the
/// kernel, which must carry it out.
pub fn stop_signal_watch() -> std::io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    let set = stop_set();
    // SAFETY: signalfd reads the set we own; on success the new descriptor is ours alone.
    let fd = unsafe { libc::signalfd(-1, &raw const set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: the OwnedFd keeps the descriptor open, and always the same one, for as long as
    // the AsyncFd that owns it lives.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            .map_err(|e| e.into_parts().1)
    }
}

/// True while a SIGTSTP is held pending: asked for, and not taken back by a SIGCONT since.
pub fn stop_is_pending() -> bool {
    // SAFETY: sigpending and sigismember only write into and read the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&raw mut set) == 0 && libc::sigismember(&raw const set, libc::SIGTSTP) == 1
    }
}

/// Asks for a stop of this whole process (Ctrl-Z typed while the terminal is raw): a SIGTSTP
/// sent to ourselves, held pending like one from outside.
pub fn request_stop() {
    // SAFETY: kill(2) to our own process id has no memory-safety preconditions.
    unsafe { libc::kill(libc::getpid(), libc::SIGTSTP) };
}

/// Lets a pending SIGTSTP through: the kernel stops the process here, as the signal's default
/// action, and this returns once it is continued (the shell's `fg`). Returns at once when no
/// stop is pending (a SIGCONT took it back) or when the kernel discards it, as it does in a
/// process group with no shell to continue it (`tmux new gpuwatch`). SIGTSTP is held again
/// before returning.
pub fn let_pending_stop_happen() {
    let set = stop_set();
    // SAFETY: pthread_sigmask reads the set we own and changes only this thread's mask; every
    // other thread keeps SIGTSTP blocked, so the pending signal is taken by this one.
    unsafe {
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
    }
}

/// Sends `signal` to the single process `pid` (never a group: `pid` must be above 1).
pub fn kill(pid: libc::pid_t, signal: i32) -> std::io::Result<()> {
    if pid <= 1 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{pid} is not a single process"),
        ));
    }
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` is a single positive PID.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Raises this process's soft limit on open files to its hard limit (a systemd service starts
/// at 1024) and returns the soft limit now in force: the exporter sizes its connection cap by
/// it.
pub fn raise_nofile_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for getrlimit to fill and setrlimit to read.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut lim) } != 0 {
        return 1024;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    lim.rlim_cur
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
}
