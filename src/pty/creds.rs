//! Session credentials: 128-bit random tokens, compared in constant time.
//! They are never logged and never listed.

use crate::error::Failure;
use std::io::Read;

/// A fresh 128-bit token, as 32 hex digits.
pub fn fresh() -> Result<String, Failure> {
    let mut buf = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| Failure::io(format!("cannot draw session credentials: {e}")))?;
    Ok(crate::jail::atomic::hex(&buf))
}

/// `given == want`, in time that depends only on `want`'s length.
pub fn same(given: &str, want: &str) -> bool {
    let (a, b) = (given.as_bytes(), want.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for (i, &w) in b.iter().enumerate() {
        diff |= a.get(i).copied().unwrap_or(0) ^ w;
    }
    std::hint::black_box(diff) == 0
}

/// The pair a session hands out; both rotate together.
#[derive(Clone)]
pub struct Credentials {
    pub access_key: String,
    pub reconnect_token: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

impl Credentials {
    pub fn fresh() -> Result<Credentials, Failure> {
        Ok(Credentials {
            access_key: fresh()?,
            reconnect_token: fresh()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_128_bit_hex_and_distinct() {
        let a = fresh().unwrap();
        let b = fresh().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn comparison_is_exact() {
        let k = fresh().unwrap();
        assert!(same(&k, &k.clone()));
        assert!(!same("", &k));
        assert!(!same(&k[..31], &k));
        assert!(!same(&format!("{k}0"), &k));
        let mut other = k.clone().into_bytes();
        other[31] = if other[31] == b'0' { b'1' } else { b'0' };
        assert!(!same(std::str::from_utf8(&other).unwrap(), &k));
    }

    #[test]
    fn debug_never_shows_them() {
        let c = Credentials::fresh().unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains(&c.access_key) && !shown.contains(&c.reconnect_token));
    }
}
