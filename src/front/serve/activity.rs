//! What a connection of the exporter is doing, for the cap to choose whom to close: when it
//! last moved a byte, since when it has waited on its client, whether it has been heard from.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// When a connection last moved a byte, and since when it has been waiting on its client
/// (µs since the server started; `NOT_WAITING` while it has work of its own).
pub(super) struct Activity {
    pub(super) last_us: AtomicU64,
    pub(super) waiting_since_us: AtomicU64,
    /// When it was accepted, and whether its client has sent a byte since.
    pub(super) accepted_us: u64,
    pub(super) heard: AtomicBool,
    pub(super) epoch: Instant,
}

const NOT_WAITING: u64 = u64::MAX;

/// How long a new connection may wait for its client's first byte before it is closed ahead of
/// connections that sent part of a request and stalled: a scrape's request follows its connect
/// at once, unless its process is not scheduled (a loaded machine: one such scrape was closed
/// under a flood of stalled requests while the whole test suite ran on two cores).
pub(super) const FIRST_BYTE_GRACE: Duration = Duration::from_millis(50);

impl Activity {
    pub(super) fn new(epoch: Instant) -> Activity {
        let accepted_us = u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX - 1);
        let a = Activity {
            last_us: AtomicU64::new(0),
            waiting_since_us: AtomicU64::new(NOT_WAITING),
            accepted_us,
            heard: AtomicBool::new(false),
            epoch,
        };
        a.touch();
        a
    }
    /// Microseconds, not milliseconds: a flood accepts tens of connections a millisecond,
    /// and at a coarser clock a just-accepted scrape tied with the flood's sockets for "waited
    /// longest" and could be the one closed.
    pub(super) fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX - 1)
    }
    /// Still within its grace for a first byte: closed only after those that had theirs.
    pub(super) fn new_and_unheard(&self) -> bool {
        !self.heard.load(Ordering::Relaxed)
            && self.now_us().saturating_sub(self.accepted_us)
                < u64::try_from(FIRST_BYTE_GRACE.as_micros()).unwrap_or(u64::MAX)
    }
    /// A byte moved: not waiting.
    pub(super) fn touch(&self) {
        self.last_us.store(self.now_us(), Ordering::Relaxed);
        self.waiting_since_us.store(NOT_WAITING, Ordering::Relaxed);
    }
    /// The socket had nothing to read or no room to write: waiting on the client, from now
    /// unless it already was.
    pub(super) fn wait(&self) {
        let now = self.now_us();
        let _ = self.waiting_since_us.compare_exchange(
            NOT_WAITING,
            now,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
    pub(super) fn idle(&self) -> Duration {
        Duration::from_micros(
            self.now_us()
                .saturating_sub(self.last_us.load(Ordering::Relaxed)),
        )
    }
    /// How long it has waited on its client; zero while it has work (a request not yet read
    /// by its task is work: the server, not the client, is behind).
    pub(super) fn waiting(&self) -> Duration {
        match self.waiting_since_us.load(Ordering::Relaxed) {
            NOT_WAITING => Duration::ZERO,
            since => Duration::from_micros(self.now_us().saturating_sub(since)),
        }
    }
}

/// A socket that records when it last moved a byte.
pub(super) struct Tracked {
    pub(super) inner: TcpStream,
    pub(super) activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        match r {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                self.activity.heard.store(true, Ordering::Relaxed);
                self.activity.touch();
            }
            Poll::Pending => self.activity.wait(),
            Poll::Ready(_) => {}
        }
        r
    }
}

impl Tracked {
    /// Records what a write did: a byte moved, or the client not taking any.
    fn wrote(&self, r: &Poll<io::Result<usize>>) {
        match r {
            Poll::Ready(Ok(n)) if *n > 0 => self.activity.touch(),
            Poll::Pending => self.activity.wait(),
            Poll::Ready(_) => {}
        }
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(&r);
        r
    }
    /// Vectored, as the socket is: hyper then queues a body's shared bytes behind its head and
    /// writes both from where they are. Without it hyper copies each body whole into the
    /// connection's own buffer: a client that stops reading held a private copy of /metrics,
    /// 0.9 MB at 64 GPUs, and 300 of them took the server from 11 to 278 MB (helper-39).
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(&r);
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
