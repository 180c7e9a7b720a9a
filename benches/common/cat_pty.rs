//! `cat` of a file on a new pseudo-terminal, for the benches that read a
//! PTY master themselves.

use std::path::Path;

/// `cat file` on a new PTY in `dir`, its master switched to blocking or
/// non-blocking reads.
pub fn spawn_cat(file: &Path, dir: &Path, blocking: bool) -> ide::pty::spawn::Spawned {
    let spec = ide::pty::spawn::Spec {
        program: "/bin/cat".into(),
        arg0: "cat".into(),
        args: vec![file.display().to_string()],
        dir: dir.to_path_buf(),
        env: Default::default(),
        cols: 120,
        rows: 40,
    };
    let sp = ide::pty::spawn::spawn(&spec).expect("spawn cat");
    let fl = nix::fcntl::fcntl(&sp.master, nix::fcntl::FcntlArg::F_GETFL).unwrap();
    let mut fl = nix::fcntl::OFlag::from_bits_truncate(fl);
    fl.set(nix::fcntl::OFlag::O_NONBLOCK, !blocking);
    nix::fcntl::fcntl(&sp.master, nix::fcntl::FcntlArg::F_SETFL(fl)).unwrap();
    sp
}
