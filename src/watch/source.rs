//! Where raw events come from: per-directory, non-recursive inotify watches.
//!
//! [`Source`] is the seam: the feed adds a watch for a directory *handle*
//! (opened through the jail layer) and waits for raw events. The real
//! source is [`Inotify`]; [`Injecting`] wraps it so a test can push events
//! the kernel cannot be made to produce on demand (a queue overflow).
//!
//! inotify takes a path, not a handle. The watch is added on
//! `/proc/self/fd/N` of the handle: the kernel resolves that magic link to
//! the very inode the handle holds, so a directory swapped for a symlink
//! between the walk and the watch is never watched (the handle was opened
//! with `O_NOFOLLOW` beneath the root; the swapped-in link is not it).

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
pub use nix::sys::inotify::WatchDescriptor as Wd;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify as Ino};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One raw event.
#[derive(Debug, Clone)]
pub struct Raw {
    /// `None` for events on no watch (a queue overflow).
    pub wd: Option<Wd>,
    pub mask: AddWatchFlags,
    pub cookie: u32,
    pub name: Option<OsString>,
}

impl Raw {
    /// The kernel dropped events.
    pub fn overflow() -> Raw {
        Raw {
            wd: None,
            mask: AddWatchFlags::IN_Q_OVERFLOW,
            cookie: 0,
            name: None,
        }
    }
}

/// What a watch reports: entries created, deleted, moved in or out,
/// written, re-moded, and the watched directory itself going away.
pub fn watch_mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        // IN_EXCL_UNLINK: no events for names already unlinked
        | AddWatchFlags::from_bits_retain(nix::libc::IN_EXCL_UNLINK)
}

/// A source of raw events for one watcher.
pub trait Source: Send {
    /// Watch the directory open as `dir` (non-recursively).
    fn add_dir(&mut self, dir: BorrowedFd<'_>) -> std::io::Result<Wd>;
    /// Stop watching (errors ignored: the directory may be gone already).
    fn remove(&mut self, wd: Wd);
    /// Block until events arrive, the [`Waker`] is woken, or `timeout`
    /// passes; append what was read to `out`.
    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<Raw>) -> std::io::Result<()>;
    /// Wakes [`Source::wait`] from another thread.
    fn waker(&self) -> Waker;
}

/// Wakes a waiting source (teardown, injected events).
#[derive(Clone)]
pub struct Waker(Arc<UnixStream>);

impl Waker {
    pub fn wake(&self) {
        let _ = (&*self.0).write(&[1]);
    }
}

/// The kernel's inotify, one instance (one fd) per watcher: closing it
/// drops every watch it holds.
pub struct Inotify {
    ino: Ino,
    wake_rx: UnixStream,
    wake_tx: Arc<UnixStream>,
}

impl Inotify {
    pub fn new() -> std::io::Result<Inotify> {
        let ino = Ino::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        let (rx, tx) = UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        Ok(Inotify {
            ino,
            wake_rx: rx,
            wake_tx: Arc::new(tx),
        })
    }
}

impl Source for Inotify {
    fn add_dir(&mut self, dir: BorrowedFd<'_>) -> std::io::Result<Wd> {
        let magic = format!("/proc/self/fd/{}", dir.as_raw_fd());
        Ok(self.ino.add_watch(magic.as_str(), watch_mask())?)
    }

    fn remove(&mut self, wd: Wd) {
        let _ = self.ino.rm_watch(wd);
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<Raw>) -> std::io::Result<()> {
        let timeout = match timeout {
            None => PollTimeout::NONE,
            Some(d) => {
                PollTimeout::try_from(d.as_millis().min(60_000) as i32).unwrap_or(PollTimeout::MAX)
            }
        };
        let mut fds = [
            PollFd::new(self.ino.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.wake_rx.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        let mut sink = [0u8; 64];
        while matches!((&self.wake_rx).read(&mut sink), Ok(n) if n > 0) {}
        loop {
            match self.ino.read_events() {
                Ok(events) if events.is_empty() => break,
                Ok(events) => out.extend(events.into_iter().map(|e| Raw {
                    wd: (!e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW)).then_some(e.wd),
                    mask: e.mask,
                    cookie: e.cookie,
                    name: e.name,
                })),
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn waker(&self) -> Waker {
        Waker(self.wake_tx.clone())
    }
}

/// A real source plus events pushed by hand (tests: a forced overflow).
pub struct Injecting {
    inner: Inotify,
    queue: Arc<Mutex<Vec<Raw>>>,
}

/// The hand that pushes events into an [`Injecting`] source.
#[derive(Clone)]
pub struct Injector {
    queue: Arc<Mutex<Vec<Raw>>>,
    waker: Waker,
}

impl Injector {
    pub fn push(&self, raw: Raw) {
        self.queue.lock().expect("injector lock").push(raw);
        self.waker.wake();
    }
}

impl Injecting {
    pub fn new() -> std::io::Result<(Injecting, Injector)> {
        let inner = Inotify::new()?;
        let queue = Arc::new(Mutex::new(Vec::new()));
        let injector = Injector {
            queue: queue.clone(),
            waker: inner.waker(),
        };
        Ok((Injecting { inner, queue }, injector))
    }
}

impl Source for Injecting {
    fn add_dir(&mut self, dir: BorrowedFd<'_>) -> std::io::Result<Wd> {
        self.inner.add_dir(dir)
    }

    fn remove(&mut self, wd: Wd) {
        self.inner.remove(wd)
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<Raw>) -> std::io::Result<()> {
        let queued = std::mem::take(&mut *self.queue.lock().expect("injector lock"));
        if !queued.is_empty() {
            out.extend(queued);
            return self.inner.wait(Some(Duration::ZERO), out);
        }
        self.inner.wait(timeout, out)?;
        out.extend(std::mem::take(
            &mut *self.queue.lock().expect("injector lock"),
        ));
        Ok(())
    }

    fn waker(&self) -> Waker {
        self.inner.waker()
    }
}
