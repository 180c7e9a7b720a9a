//! `TCP_NODELAY` and prompt ACKs on this worker's own connections to the
//! engine.
//!
//! The SDK (0.25) turns Nagle's algorithm off only when the engine
//! advertises `tcp-nodelay` in its upgrade response, and the 0.23 engine
//! never does. With Nagle on, a small frame that follows another one not yet
//! acknowledged waits for the peer's delayed ACK (~40 ms): a terminal's
//! keystroke echo sent right after the `write` call's answer stalls exactly
//! so. The SDK does not hand out its socket, so the worker finds it the
//! only way it can: among its own descriptors, the TCP sockets whose peer
//! is the engine's address, and sets the option on them (idempotent,
//! harmless to anything else on the socket). [`super::watch_reconnects`]
//! runs this after every (re)connect and now and then in between.
//!
//! The engine's own sockets keep Nagle on, so the same stall happens the
//! other way: the engine forwards the answer of our call (a terminal frame
//! the page took) and then, when the user types the next key, the
//! `shell::pty::write` call — which waits until our kernel acknowledges the
//! answer. Having nothing to send, our kernel delays that ACK by ~40 ms
//! (seen on the wire: the write forwarded 33 ms after the page sent it, the
//! instant our delayed ACK left). [`EngineSockets::quickack`] acknowledges at
//! once after each answer ([`super::SdkOutbound`] calls it), so the engine
//! is never left holding the next call.

use nix::sys::socket::{SockaddrStorage, getpeername, getsockopt, setsockopt, sockopt};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Mutex};

/// The descriptors of this process's sockets to the engine, as the last
/// [`EngineSockets::refresh`] found them.
#[derive(Clone, Default)]
pub struct EngineSockets(Arc<Mutex<Vec<RawFd>>>);

impl EngineSockets {
    /// Find the sockets connected to one of `peers`, keep them, and set
    /// `TCP_NODELAY` on each; returns how many did not have it yet.
    pub fn refresh(&self, peers: &[SocketAddr]) -> usize {
        let (fds, set) = scan(peers);
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = fds;
        set
    }

    /// Acknowledge what the engine sent now instead of after the kernel's
    /// delayed-ACK timer, and leave its delayed-ACK mode. One `setsockopt`
    /// per socket; does nothing before the first [`Self::refresh`].
    pub fn quickack(&self) {
        let fds = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for &fd in fds.iter() {
            let on: nix::libc::c_int = 1;
            // SAFETY: `on` outlives the call and its size is passed. Should
            // the descriptor have been closed (a reconnect) or reused, the
            // call fails (`ENOTSOCK`, `EBADF`) or sets an option that only
            // changes when a TCP socket sends its ACKs.
            unsafe {
                nix::libc::setsockopt(
                    fd,
                    nix::libc::IPPROTO_TCP,
                    nix::libc::TCP_QUICKACK,
                    (&on as *const nix::libc::c_int).cast(),
                    std::mem::size_of::<nix::libc::c_int>() as nix::libc::socklen_t,
                );
            }
        }
    }
}

/// The addresses a `host:port` names (resolved once; a name that does not
/// resolve gives none, and nothing is touched).
pub fn resolve(host: &str, port: u16) -> Vec<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default()
}

/// Set `TCP_NODELAY` on every TCP socket of this process connected to one
/// of `peers` (without keeping them, as a test client does); returns how
/// many did not have it yet.
pub fn apply(peers: &[SocketAddr]) -> usize {
    scan(peers).1
}

/// The TCP sockets of this process connected to one of `peers`, with
/// `TCP_NODELAY` set on each, and how many did not have it yet.
fn scan(peers: &[SocketAddr]) -> (Vec<RawFd>, usize) {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return (found, 0);
    };
    let mut set = 0;
    for entry in dir.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // Only sockets (the link reads `socket:[inode]`).
        let is_socket = std::fs::read_link(entry.path())
            .map(|t| t.as_os_str().as_encoded_bytes().starts_with(b"socket:"))
            .unwrap_or(false);
        if !is_socket {
            continue;
        }
        // SAFETY: the descriptor was open when listed. Should another thread
        // close it (or reuse the number) meanwhile, the calls below fail or
        // set an option that only affects a TCP socket's send timing.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        if getsockopt(&fd, sockopt::SockType) != Ok(nix::sys::socket::SockType::Stream) {
            continue;
        }
        let Some(peer) = getpeername::<SockaddrStorage>(fd.as_raw_fd())
            .ok()
            .and_then(|a| socket_addr(&a))
        else {
            continue;
        };
        if !peers.iter().any(|p| same_peer(p, &peer)) {
            continue;
        }
        found.push(fd.as_raw_fd());
        if getsockopt(&fd, sockopt::TcpNoDelay) == Ok(false)
            && setsockopt(&fd, sockopt::TcpNoDelay, &true).is_ok()
        {
            set += 1;
        }
    }
    (found, set)
}

fn socket_addr(a: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(SocketAddr::new(IpAddr::V4(v4.ip()), v4.port()));
    }
    if let Some(v6) = a.as_sockaddr_in6() {
        return Some(SocketAddr::new(IpAddr::V6(v6.ip()), v6.port()));
    }
    None
}

/// Same port and same address, an IPv4-mapped IPv6 peer matching its IPv4.
fn same_peer(want: &SocketAddr, got: &SocketAddr) -> bool {
    let canon = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    want.port() == got.port() && canon(want.ip()) == canon(got.ip())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn quickack_is_on(s: &TcpStream) -> bool {
        let mut v: nix::libc::c_int = -1;
        let mut len = std::mem::size_of::<nix::libc::c_int>() as nix::libc::socklen_t;
        // SAFETY: `v` and `len` outlive the call; `len` is `v`'s size.
        let rc = unsafe {
            nix::libc::getsockopt(
                s.as_raw_fd(),
                nix::libc::IPPROTO_TCP,
                nix::libc::TCP_QUICKACK,
                (&mut v as *mut nix::libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        v == 1
    }

    fn delayed_acks(s: &TcpStream) {
        let off: nix::libc::c_int = 0;
        // SAFETY: as above.
        let rc = unsafe {
            nix::libc::setsockopt(
                s.as_raw_fd(),
                nix::libc::IPPROTO_TCP,
                nix::libc::TCP_QUICKACK,
                (&off as *const nix::libc::c_int).cast(),
                std::mem::size_of::<nix::libc::c_int>() as nix::libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
    }

    #[test]
    fn only_sockets_to_the_engine_get_nodelay_and_quick_acks() {
        let engine = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let to_engine = TcpStream::connect(engine.local_addr().unwrap()).unwrap();
        let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!to_engine.nodelay().unwrap());
        let sockets = EngineSockets::default();
        // before any refresh there is nothing to acknowledge on
        delayed_acks(&to_engine);
        sockets.quickack();
        assert!(!quickack_is_on(&to_engine));

        let peers = resolve("127.0.0.1", engine.local_addr().unwrap().port());
        assert!(sockets.refresh(&peers) >= 1);
        assert!(to_engine.nodelay().unwrap());
        assert!(
            !to_other.nodelay().unwrap(),
            "a socket to another peer is left alone"
        );
        assert_eq!(sockets.refresh(&peers), 0, "already set: nothing to do");

        // in delayed-ACK mode, quickack leaves it (the kernel ACKs at once)
        delayed_acks(&to_engine);
        delayed_acks(&to_other);
        sockets.quickack();
        assert!(quickack_is_on(&to_engine));
        assert!(
            !quickack_is_on(&to_other),
            "another peer's socket is left alone"
        );
    }

    #[test]
    fn mapped_addresses_match_their_ipv4() {
        let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:80".parse().unwrap();
        assert!(same_peer(&v4, &mapped));
        assert!(!same_peer(&v4, &"127.0.0.1:81".parse().unwrap()));
        // an address literal needs no lookup
        assert_eq!(resolve("127.0.0.1", 80), vec![v4]);
    }
}
