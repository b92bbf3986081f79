//! The exporter's HTTP/1.1 server: hyper on one tokio thread, with the limits an exporter that
//! runs as root on every node needs. One hostile client cannot take it over:
//!
//! - **connections** are capped (`--max-connections`); at the cap the connection that has
//!   waited on its client longest is closed to make room, so idle sockets cannot lock
//!   scrapers out, and the descriptors they hold stay well under the limit (raised to the hard
//!   limit at start); when none waits, new connections wait in the kernel's backlog;
//! - **headers** are limited in size (`MAX_HEADER_BYTES`) and count, and must arrive within
//!   `HEADER_TIMEOUT` (slowloris);
//! - a connection that moves no byte in either direction for `STALL_TIMEOUT` is closed (a
//!   client that pipelines and never reads);
//! - every response is written by its own connection's task: a client that does not read
//!   blocks only itself, and bodies are shared (`Bytes`), not copied per client: the socket
//!   writes vectored, so hyper sends a body from the shared bytes (`Tracked`);
//! - accepting never stops: errors such as `EMFILE` are said once a minute and retried.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

use super::activity::{Activity, Tracked};
use tokio::sync::{Notify, Semaphore};

use super::webconfig;

/// Request line and headers, in all: far above what Prometheus sends (about 300 bytes).
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Headers per request.
pub const MAX_HEADERS: usize = 64;
/// The whole request head must arrive within this.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// No byte read or written for this long closes the connection (also an idle keep-alive:
/// Prometheus opens a new one at its next scrape).
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Open connections at most by default (`--max-connections`; fewer when the open-file limit
/// is lower). An idle connection costs about 10 KiB.
pub const MAX_CONNECTIONS: usize = 4096;

/// What the server answers: status, content type and a body shared between clients, which
/// is gzip-compressed when `gzipped`.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Bytes,
    pub gzipped: bool,
}

/// What a request asks: its method, path, whether it accepts `OpenMetrics`, and gzip.
pub struct Asked<'a> {
    pub method: &'a hyper::Method,
    pub path: &'a str,
    pub openmetrics: bool,
    pub gzip: bool,
}

/// Whether an `Accept-Encoding` value takes gzip (Prometheus sends `gzip`; `gzip;q=0`
/// refuses it).
fn accepts_gzip(value: &str) -> bool {
    value.split(',').any(|coding| {
        let mut parts = coding.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        name.eq_ignore_ascii_case("gzip") && !refused
    })
}

/// TLS and users from `--web.config.file`, with what checking passwords needs.
pub struct Web {
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    pub users: Arc<std::collections::BTreeMap<String, String>>,
    /// bcrypt takes ~50 ms a check on purpose: two at a time, off the server's thread.
    checks: Semaphore,
    /// `Authorization` headers already found good (at most `GOOD_KEPT`), so a scraper is
    /// checked once, not at every scrape.
    good: Mutex<std::collections::HashSet<String>>,
}

const GOOD_KEPT: usize = 64;

impl Web {
    #[must_use]
    pub fn new(config: Option<webconfig::WebConfig>) -> Web {
        let (tls, users) = config.map_or((None, std::collections::BTreeMap::default()), |c| {
            (c.tls, c.users)
        });
        Web {
            tls: tls.map(tokio_rustls::TlsAcceptor::from),
            users: Arc::new(users),
            checks: Semaphore::new(2),
            good: Mutex::new(std::collections::HashSet::new()),
        }
    }

    fn good(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.good
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// True when no users are configured, or the header names one with their password.
    async fn allows(&self, header: Option<String>) -> bool {
        if self.users.is_empty() {
            return true;
        }
        let Some(header) = header else { return false };
        if self.good().contains(&header) {
            return true;
        }
        let Ok(_permit) = self.checks.acquire().await else {
            return false;
        };
        let users = self.users.clone();
        let h = header.clone();
        let ok = tokio::task::spawn_blocking(move || webconfig::authorized(&users, Some(&h)))
            .await
            .unwrap_or(false);
        if ok {
            let mut kept = self.good();
            if kept.len() >= GOOD_KEPT {
                kept.clear();
            }
            kept.insert(header);
        }
        ok
    }
}

/// Answers requests; called on the server's thread, so it must be quick (the exporter caches
/// its encoded bodies per tick).
pub trait Handler: Send + Sync + 'static {
    fn answer(&self, asked: &Asked) -> Reply;
}

/// The open connections, for the cap: when each last moved a byte, and how to close it.
#[derive(Default)]
struct Open {
    next_id: u64,
    conns: HashMap<u64, (Arc<Activity>, Arc<Notify>)>,
}

/// The connection cap for this process: `wanted`, or fewer when the descriptor limit (after
/// raising the soft limit to the hard one) leaves less room.
#[must_use]
pub fn connection_cap(wanted: usize) -> usize {
    let nofile = crate::sys::raise_nofile_limit();
    wanted.min(
        usize::try_from(nofile.saturating_sub(64))
            .unwrap_or(usize::MAX)
            .max(8),
    )
}

/// Serves until `stop` is set. Returns an error only when the listener itself fails for
/// good: the caller exits non-zero then, so systemd or Kubernetes restarts the exporter.
pub async fn run(
    listener: TcpListener,
    handler: Arc<dyn Handler>,
    web: Arc<Web>,
    cap: usize,
    stop: Arc<AtomicBool>,
) -> io::Result<()> {
    let open = Arc::new(Mutex::new(Open::default()));
    let epoch = Instant::now();
    let mut last_complaint: Option<Instant> = None;
    // How often a quiet listener looks at `stop` (set by a signal): within a second is soon
    // enough for a service manager, and an idle exporter wakes once a second, not five times.
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        if !make_room(&open, cap) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            continue;
        }
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = ticker.tick() => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                continue;
            }
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if transient(&e) => {
                // Out of descriptors or a client that gave up: say so (once a minute), let the
                // stall timeouts free some, and accept again.
                if last_complaint.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    eprintln!("gpuwatch serve: cannot accept a connection ({e}); retrying");
                    last_complaint = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new(epoch));
        let close = Arc::new(Notify::new());
        let id = admit(&open, &activity, &close);
        let conn = Connection {
            open: open.clone(),
            id,
            activity,
            close,
        };
        tokio::spawn(conn.serve(stream, handler.clone(), web.clone()));
    }
}

/// Accept errors that pass: descriptors or memory short for a moment, a connection reset
/// before it was accepted.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    ) || matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Below the cap, or made so by closing the connection that has waited on its client longest
/// (for a request, or for room to write its answer; one accepted under `FIRST_BYTE_GRACE` ago
/// that has sent nothing yet goes after all others): true when one more may be accepted.
/// When none waits on its client, every open one has work of its own: new connections wait in
/// the kernel's backlog, so a crowd of real scrapes is served, not closed.
fn make_room(open: &Mutex<Open>, cap: usize) -> bool {
    let mut o = open
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if o.conns.len() < cap {
        return true;
    }
    let victim = o
        .conns
        .iter()
        // A new connection still in its grace for a first byte goes last; of equal waits, the
        // older connection goes.
        .map(|(id, (a, _))| (!a.new_and_unheard(), a.waiting(), std::cmp::Reverse(*id)))
        .max()
        .filter(|(_, waited, _)| *waited > Duration::ZERO);
    match victim.and_then(|(_, _, std::cmp::Reverse(id))| o.conns.remove(&id)) {
        Some((_, close)) => {
            close.notify_one();
            true
        }
        None => false,
    }
}

/// Registers an accepted connection.
fn admit(open: &Mutex<Open>, activity: &Arc<Activity>, close: &Arc<Notify>) -> u64 {
    let mut o = open
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    o.next_id += 1;
    let id = o.next_id;
    o.conns.insert(id, (activity.clone(), close.clone()));
    id
}

/// One accepted connection, removed from the table when its task ends.
struct Connection {
    open: Arc<Mutex<Open>>,
    id: u64,
    activity: Arc<Activity>,
    close: Arc<Notify>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        let mut o = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        o.conns.remove(&self.id);
    }
}

impl Connection {
    async fn serve(self, stream: TcpStream, handler: Arc<dyn Handler>, web: Arc<Web>) {
        let tracked = Tracked {
            inner: stream,
            activity: self.activity.clone(),
        };
        match web.tls.clone() {
            None => self.serve_http(tracked, handler, web).await,
            Some(acceptor) => {
                // The handshake is bounded like a request head.
                let accepted = tokio::select! {
                    r = tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(tracked)) => r,
                    () = self.close.notified() => return,
                };
                if let Ok(Ok(tls)) = accepted {
                    self.serve_http(tls, handler, web).await;
                }
            }
        }
    }

    async fn serve_http<T>(&self, io: T, handler: Arc<dyn Handler>, web: Arc<Web>)
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let (handler, web) = (handler.clone(), web.clone());
            async move {
                let reply =
                    if req.uri().path() != "/livez" && !web.allows(authorization(&req)).await {
                        unauthorized()
                    } else {
                        answer(&*handler, &req)
                    };
                Ok::<_, std::convert::Infallible>(reply)
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .max_buf_size(MAX_HEADER_BYTES.max(8192))
            .max_headers(MAX_HEADERS)
            .keep_alive(true);
        let conn = builder.serve_connection(TokioIo::new(io), service);
        let stalled = stall_watch(self.activity.clone());
        // Whichever comes first: the client is done, it stalled, or the cap needs its slot.
        tokio::select! {
            _ = conn => {}
            () = stalled => {}
            () = self.close.notified() => {}
        }
    }
}

fn authorization(req: &Request<Incoming>) -> Option<String> {
    req.headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn unauthorized() -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(b"Unauthorized\n")));
    *r.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Basic realm=\"gpuwatch\""),
    );
    r
}

/// Resolves once the connection has moved no byte for `STALL_TIMEOUT`.
async fn stall_watch(activity: Arc<Activity>) {
    loop {
        let idle = activity.idle();
        if idle >= STALL_TIMEOUT {
            return;
        }
        tokio::time::sleep(STALL_TIMEOUT.saturating_sub(idle)).await;
    }
}

fn answer(handler: &dyn Handler, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let openmetrics = req
        .headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let gzip = req
        .headers()
        .get_all(hyper::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(accepts_gzip);
    let reply = handler.answer(&Asked {
        method: req.method(),
        path: req.uri().path(),
        openmetrics,
        gzip,
    });
    let mut response = Response::new(Full::new(reply.body));
    *response.status_mut() = hyper::StatusCode::from_u16(reply.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(reply.content_type),
    );
    if reply.gzipped {
        response.headers_mut().insert(
            hyper::header::CONTENT_ENCODING,
            hyper::header::HeaderValue::from_static("gzip"),
        );
    }
    // Either form of /metrics says that it depends on the request's encoding (and a cache
    // keeps the two apart).
    if reply.gzipped || req.uri().path() == "/metrics" {
        response.headers_mut().insert(
            hyper::header::VARY,
            hyper::header::HeaderValue::from_static("Accept-Encoding"),
        );
    }
    // RFC 9110: a 405 says which methods are allowed.
    if reply.status == 405 {
        response.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static("GET, HEAD"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::super::activity::FIRST_BYTE_GRACE;
    use super::*;

    #[test]
    fn gzip_is_taken_when_accepted_and_not_refused() {
        for yes in ["gzip", "deflate, gzip", "GZIP;q=0.5", "br, gzip ; q=1"] {
            assert!(accepts_gzip(yes), "{yes}");
        }
        for no in [
            "",
            "identity",
            "gzip;q=0",
            "deflate, gzip; q=0.0",
            "x-gzip2",
        ] {
            assert!(!accepts_gzip(no), "{no}");
        }
    }

    fn admitted(open: &Mutex<Open>, epoch: Instant) -> (u64, Arc<Activity>) {
        let a = Arc::new(Activity::new(epoch));
        (admit(open, &a, &Arc::new(Notify::new())), a)
    }

    fn is_open(open: &Mutex<Open>, id: u64) -> bool {
        open.lock().unwrap().conns.contains_key(&id)
    }

    /// At the cap, a stalled request is closed before a scrape that was accepted a moment ago
    /// and has not been heard from yet, even when that one has waited longer; past its grace,
    /// the longest wait goes first again.
    #[test]
    fn a_new_connection_keeps_its_grace_for_a_first_byte() {
        let (open, epoch) = (Mutex::new(Open::default()), Instant::now());
        let (stalled, s) = admitted(&open, epoch);
        s.heard.store(true, Ordering::Relaxed);
        let (fresh, f) = admitted(&open, epoch);
        f.wait(); // its task found nothing to read yet
        std::thread::sleep(Duration::from_millis(2));
        s.wait();
        std::thread::sleep(Duration::from_millis(2));
        assert!(f.waiting() > s.waiting());
        assert!(make_room(&open, 2));
        assert!(!is_open(&open, stalled) && is_open(&open, fresh));

        let (later, l) = admitted(&open, epoch);
        l.heard.store(true, Ordering::Relaxed);
        std::thread::sleep(FIRST_BYTE_GRACE);
        l.wait();
        assert!(make_room(&open, 2));
        assert!(
            !is_open(&open, fresh) && is_open(&open, later),
            "longest wait, grace over"
        );
    }
}
