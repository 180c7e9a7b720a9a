//! `shell::workspace::*`: the console's workspace picker and its chunked
//! byte reads, through the one policy (the original accepted any host
//! directory, even outside the jail; this one refuses what the policy
//! refuses, with the same redaction). One file a function: [`roots`],
//! [`validate`], [`list`], [`read_bytes`].

pub mod list;
pub mod read_bytes;
pub mod roots;
pub mod validate;

use crate::error::{Class, Failure, Surface, quote};
use crate::function::Ctx;
use crate::policy::{Resolved, Tail};

/// Largest chunk of `read-bytes` (raw bytes).
pub const READ_BYTES_MAX_CHUNK: u64 = 4 << 20;

/// An existing directory the policy allows (211 redacted, 212 not a dir).
pub fn directory(ctx: &Ctx, raw: &str) -> Result<Resolved, Failure> {
    let r = ctx
        .runtime
        .policy
        .resolve_existing(raw, Surface::Shell, Tail::Follow, None)?;
    let st = r.loc().lstat().map_err(|e| Failure::from_io(raw, &e))?;
    if !crate::jail::is_dir_mode(st.st_mode) {
        return Err(Failure::new(
            Class::WrongType,
            format!(
                "{} is not a directory; pick a directory (shell::workspace::list shows them)",
                quote(raw)
            ),
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests;
