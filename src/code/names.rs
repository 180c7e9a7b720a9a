//! Name paths: `foo` (any symbol named foo), `Cls/foo` (a foo whose
//! parent is Cls), `/Cls/foo` (a top-level Cls's foo), `foo[1]` (the
//! second of foo's overloads: same name path, same file, document order).

/// A parsed name path pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub parts: Vec<String>,
    /// Anchored at the top level (`/Cls/foo`).
    pub absolute: bool,
    /// Which overload (`foo[1]`).
    pub overload: Option<usize>,
}

impl Pattern {
    /// Parse a name path; an error says what is wrong with it.
    pub fn parse(raw: &str) -> Result<Pattern, String> {
        let trimmed = raw.trim();
        let (absolute, rest) = match trimmed.strip_prefix('/') {
            Some(r) => (true, r),
            None => (false, trimmed),
        };
        let (rest, overload) = match rest.strip_suffix(']').and_then(|r| r.rsplit_once('[')) {
            Some((path, n)) => (
                path,
                Some(n.trim().parse::<usize>().map_err(|_| {
                    format!("name_path {raw:?}: the overload index in [..] must be a number, like foo[1]")
                })?),
            ),
            None => (rest, None),
        };
        let parts: Vec<String> = rest.split('/').map(|p| p.trim().to_string()).collect();
        if parts.iter().any(String::is_empty) {
            return Err(format!(
                "name_path {raw:?} has an empty part; write a name (foo), a parent and a name \
                 (Cls/foo) or a path from the top level (/Cls/foo)"
            ));
        }
        Ok(Pattern {
            parts,
            absolute,
            overload,
        })
    }

    /// The last part: the name a matching symbol has.
    pub fn name(&self) -> &str {
        self.parts.last().map_or("", String::as_str)
    }

    /// Whether a symbol whose name path is `path` (parts) matches; with
    /// `substring`, the last part only has to contain the pattern's
    /// (ignoring case).
    pub fn matches(&self, path: &[&str], substring: bool) -> bool {
        let k = self.parts.len();
        if path.len() < k || (self.absolute && path.len() != k) {
            return false;
        }
        let tail = &path[path.len() - k..];
        let (last, parents) = tail.split_last().expect("k >= 1");
        let name_ok = if substring {
            last.to_lowercase().contains(&self.name().to_lowercase())
        } else {
            *last == self.name()
        };
        name_ok
            && parents
                .iter()
                .zip(&self.parts[..k - 1])
                .all(|(a, b)| *a == b.as_str())
    }
}

/// How well a symbol matches, for ranking (lower is better): exact name
/// before a case-insensitive one before a substring, then a shorter path.
pub fn rank(pattern: &Pattern, path: &[&str]) -> (u8, usize) {
    (
        grade(pattern, path.last().copied().unwrap_or("")),
        path.len(),
    )
}

/// How well a name matches the pattern's last part (lower is better):
/// exact, then in another case, then a prefix, then a substring.
pub fn grade(pattern: &Pattern, name: &str) -> u8 {
    let q = pattern.name();
    if name == q {
        0
    } else if name.eq_ignore_ascii_case(q) {
        1
    } else if name.starts_with(q) {
        2
    } else {
        3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_paths_parse_and_match() {
        let p = Pattern::parse("Cls/foo").unwrap();
        assert!(p.matches(&["Cls", "foo"], false));
        assert!(p.matches(&["mod", "Cls", "foo"], false));
        assert!(!p.matches(&["Other", "foo"], false));
        assert!(!p.matches(&["foo"], false));
        let a = Pattern::parse("/Cls/foo").unwrap();
        assert!(a.absolute);
        assert!(a.matches(&["Cls", "foo"], false));
        assert!(!a.matches(&["mod", "Cls", "foo"], false));
        let o = Pattern::parse("foo[1]").unwrap();
        assert_eq!(o.overload, Some(1));
        assert_eq!(o.parts, vec!["foo"]);
        assert!(Pattern::parse("a//b").is_err());
        assert!(Pattern::parse("foo[x]").is_err());
        assert!(Pattern::parse("").is_err());
        let s = Pattern::parse("pars").unwrap();
        assert!(s.matches(&["Parser", "parse_expr"], true));
        assert!(!s.matches(&["Parser", "parse_expr"], false));
    }
}
