//! The child environment: what is forwarded and what a call may set.
//!
//! Forwarding is the operator's choice (`env.inherit`, `env.allow`). A
//! per-call `env` is deny-only: any key may be set except the ones that let
//! an innocent-looking argv run something else — lookup paths (PATH, the
//! loader's `LD_*`/`DYLD_*` families, GCONV_PATH, …), shell and interpreter
//! start-up hooks (BASH_ENV, ENV, PYTHONSTARTUP, NODE_OPTIONS, …) and HOME
//! (where every dotfile is read from). `env.allow` has no say in that gate.
//! A refused key fails the whole call; nothing is ever silently dropped.

use crate::config::EnvConfig;
use crate::error::Failure;
use std::collections::BTreeMap;

/// Keys no call may set, matched exactly (case-sensitive, as the loader and
/// the interpreters read them).
const DANGEROUS_KEYS: &[&str] = &[
    // program and library lookup
    "PATH",
    "IFS",
    "HOME",
    "CDPATH",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "RESOLV_HOST_CONF",
    // shell start-up and tracing hooks
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "ZDOTDIR",
    // interpreter start-up files, options and module paths
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
];

/// Key families refused by prefix: every dynamic-loader variable, including
/// ones no list names yet.
const DANGEROUS_PREFIXES: &[&str] = &["LD_", "DYLD_"];

/// Why `key` may not be set per call, if it may not.
pub fn refusal(key: &str) -> Option<Failure> {
    if !valid_key(key) {
        return Some(Failure::bad_input(format!(
            "env key {key:?} is not a valid variable name (letters, digits and `_`, not starting \
             with a digit); rename it or drop it from `env`"
        )));
    }
    let family = DANGEROUS_PREFIXES.iter().find(|p| key.starts_with(*p));
    if DANGEROUS_KEYS.contains(&key) || family.is_some() {
        let why = match family {
            Some(p) => format!("every {p}* variable is"),
            None => "it is".to_string(),
        };
        return Some(Failure::bad_input(format!(
            "env key {key:?} cannot be set per call: {why} an exec-hijacking key (lookup paths, \
             loader and interpreter start-up hooks are refused); drop {key} from `env`, or pass \
             what you need as arguments (e.g. an absolute program path instead of PATH)"
        )));
    }
    None
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
fn valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Check a per-call `env`: the first refused key (in key order) fails the call.
pub fn check(env: &BTreeMap<String, String>) -> Result<(), Failure> {
    for (key, value) in env {
        if let Some(f) = refusal(key) {
            return Err(f);
        }
        if value.contains('\0') {
            return Err(Failure::bad_input(format!(
                "env value of {key:?} contains a NUL byte, which no program can receive"
            )));
        }
    }
    Ok(())
}

/// The environment a child starts with, as a change to the worker's own:
/// either the worker's environment plus the per-call values (`inherit`), or
/// only the allowed part of it plus the per-call values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChildEnv {
    /// Start from an empty environment instead of the worker's.
    pub clear: bool,
    /// Set on top (per-call values win).
    pub vars: BTreeMap<String, String>,
}

impl ChildEnv {
    /// What the child sees, given the worker's environment.
    pub fn effective(
        &self,
        worker_env: impl IntoIterator<Item = (String, String)>,
    ) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = if self.clear {
            BTreeMap::new()
        } else {
            worker_env.into_iter().collect()
        };
        env.extend(self.vars.clone());
        env
    }
}

/// The child environment for `config` and a checked per-call `env`.
/// Inheriting needs no copy of the worker's environment: the child simply
/// keeps it, which is also the cheapest spawn.
pub fn child_env(
    config: &EnvConfig,
    worker_env: impl IntoIterator<Item = (String, String)>,
    per_call: Option<&BTreeMap<String, String>>,
) -> ChildEnv {
    let mut vars = BTreeMap::new();
    if !config.inherit {
        vars.extend(
            worker_env
                .into_iter()
                .filter(|(k, _)| config.allow.iter().any(|a| a == k)),
        );
    }
    if let Some(per_call) = per_call {
        vars.extend(per_call.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    ChildEnv {
        clear: !config.inherit,
        vars,
    }
}

#[cfg(test)]
thread_local! {
    /// A unit test's stand-in for the worker's environment on its own
    /// thread (the process environment is shared by every test running).
    pub static TEST_WORKER_ENV: std::cell::RefCell<Option<Vec<(String, String)>>> =
        const { std::cell::RefCell::new(None) };
}

/// The worker's own environment, skipping entries that are not UTF-8.
pub fn worker_env() -> Vec<(String, String)> {
    #[cfg(test)]
    if let Some(env) = TEST_WORKER_ENV.with(|e| e.borrow().clone()) {
        return env;
    }
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn ordinary_keys_may_be_set() {
        check(&env(&[
            ("NODE_ENV", "test"),
            ("_X1", ""),
            ("RUST_LOG", "debug"),
        ]))
        .unwrap();
    }

    #[test]
    fn exec_hijacking_keys_are_refused_and_named() {
        for key in [
            "PATH",
            "IFS",
            "HOME",
            "GCONV_PATH",
            "BASH_ENV",
            "ENV",
            "PYTHONSTARTUP",
            "PERL5OPT",
            "RUBYOPT",
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "LD_ANYTHING_NEW",
            "DYLD_INSERT_LIBRARIES",
            "DYLD_FUTURE",
        ] {
            let err = check(&env(&[("OK", "1"), (key, "x")])).unwrap_err();
            assert_eq!(err.class, crate::error::Class::BadInput, "{key}");
            assert!(err.message.contains(key), "{key}: {}", err.message);
        }
    }

    #[test]
    fn prefix_match_is_on_the_family_not_the_substring() {
        // `LD_` must be the prefix; these are ordinary names
        check(&env(&[
            ("OLD_PATH", "x"),
            ("BUILD_DIR", "y"),
            ("LDFLAGS", "-s"),
        ]))
        .unwrap();
        // case matters, as it does to the loader
        check(&env(&[("ld_preload", "x"), ("Path", "y")])).unwrap();
    }

    #[test]
    fn malformed_keys_are_refused() {
        for key in ["", "1ABC", "A-B", "A B", "A=B", "É", "A\0"] {
            let err = check(&env(&[(key, "x")])).unwrap_err();
            assert!(err.message.contains("not a valid variable name"), "{key:?}");
        }
        assert!(check(&env(&[("A", "x\0y")])).is_err());
    }

    #[test]
    fn forwarding_follows_inherit_and_allow_and_calls_override() {
        let worker = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("SECRET".to_string(), "s".to_string()),
            ("LANG".to_string(), "C".to_string()),
        ];
        let all = EnvConfig {
            inherit: true,
            allow: vec![],
        };
        let plan = child_env(&all, worker.clone(), Some(&env(&[("LANG", "fr")])));
        assert!(!plan.clear);
        let e = plan.effective(worker.clone());
        assert_eq!(e.get("SECRET").map(String::as_str), Some("s"));
        assert_eq!(e.get("LANG").map(String::as_str), Some("fr"));
        let some = EnvConfig {
            inherit: false,
            allow: vec!["PATH".into(), "HOME".into()],
        };
        let plan = child_env(&some, worker.clone(), Some(&env(&[("NODE_ENV", "test")])));
        assert!(plan.clear);
        assert_eq!(
            plan.effective(worker),
            env(&[("NODE_ENV", "test"), ("PATH", "/bin")])
        );
    }
}
