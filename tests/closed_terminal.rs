//! A terminal closed under the monitor (its window shut, an ssh connection dropped) ends it
//! with an error, not a panic: writing a failure to standard error, which was that terminal,
//! panicked twice over (ratatui's cursor restore and the error message), and the exit status
//! was 101.

use std::io::Read as _;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A pseudo-terminal of 100×30: (master, slave).
#[allow(unsafe_code)] // openpty is a C call: no safe wrapper among the dependencies
fn pty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: pointers to locals; openpty fills both descriptors.
    let rc = unsafe {
        libc::openpty(
            &raw mut master,
            &raw mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &raw const size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // The monitor must not inherit the master: it would hold its own terminal open.
    for fd in [master, slave] {
        // SAFETY: a descriptor opened above; FD_CLOEXEC changes only what exec keeps.
        assert_eq!(
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) },
            0
        );
    }
    // Read without blocking, so that a monitor that never draws fails the test, not hangs it.
    // SAFETY: as above; O_NONBLOCK changes only how reads of the master wait.
    assert_eq!(
        unsafe { libc::fcntl(master, libc::F_SETFL, libc::O_NONBLOCK) },
        0
    );
    // SAFETY: both were just opened and are owned here alone.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

#[test]
fn a_terminal_closed_under_the_monitor_ends_it_without_a_panic() {
    let (mut master, slave) = pty();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .arg("--demo")
        .env("TERM", "xterm-256color")
        .env_remove("GPUWATCH_CONFIG")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // Read the screen until it has drawn a frame (the table's header), then shut the terminal.
    let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen).contains("DIAGNOSIS") && Instant::now() < deadline {
        match master.read(&mut buf) {
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // EIO: the monitor ended and closed its side; what it wrote is said below.
            Err(_) => break,
        }
    }
    let screen = String::from_utf8_lossy(&seen);
    assert!(screen.contains("DIAGNOSIS"), "no frame drawn: {screen:?}");
    drop(master);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running 20 s after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_ne!(status.code(), Some(101), "a panic's exit status");
    assert!(status.code().is_some(), "ended by {status:?}");
}
