//! The command denylist: an advisory tripwire, not a security boundary.
//!
//! Each `denylist_patterns` regex is matched against `argv.join(" ")`. Any
//! interpreter can build a denied token at run time, so this only catches
//! catastrophic mistakes typed literally; confinement is what sandbox
//! targets are for.
//!
//! Command-shaped patterns are anchored at argv[0] (`^(\S*/)?mkfs`). So that
//! a wrapper cannot walk around the anchor, every pattern is also matched
//! against the argv with its leading wrappers peeled off — `sudo`/`doas`
//! (with their options), `nohup`, `env` (options and `K=V` assignments),
//! `timeout` (options and the duration), each optionally path-qualified. The
//! shipped patterns carry the same tolerance in their own text; peeling
//! extends it to the operator's plain `^…` patterns too.
//!
//! A hit is refused with the plain message `command matches denylist:
//! <pattern>` under code S210 (the request is refused as given and retrying
//! it unchanged cannot succeed, which is what 210 means).

use crate::error::Failure;
use regex::Regex;

/// The refusal for `argv`, if a pattern matches.
pub fn check(patterns: &[Regex], argv: &[String]) -> Result<(), Failure> {
    if patterns.is_empty() {
        return Ok(());
    }
    let full = argv.join(" ");
    let inner = unwrap(argv);
    let peeled = (inner.len() != argv.len() && !inner.is_empty()).then(|| inner.join(" "));
    for re in patterns {
        if re.is_match(&full) || peeled.as_deref().is_some_and(|p| re.is_match(p)) {
            return Err(Failure::bad_input(format!(
                "command matches denylist: {}",
                re.as_str()
            )));
        }
    }
    Ok(())
}

/// The program name without its directory.
fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `argv` without its leading wrapper commands.
fn unwrap(argv: &[String]) -> &[String] {
    let mut rest = argv;
    loop {
        let Some(first) = rest.first() else {
            return rest;
        };
        let skip = match base(first) {
            "sudo" | "doas" => {
                1 + options(
                    &rest[1..],
                    &["-u", "-g", "-p", "-C", "-D", "-r", "-t", "-U", "-h"],
                )
            }
            "nohup" => 1,
            "env" => {
                let mut n = 1 + options(&rest[1..], &["-u", "-C", "-S"]);
                while rest.get(n).is_some_and(|w| is_assignment(w)) {
                    n += 1;
                }
                n
            }
            "timeout" => {
                let n = 1 + options(&rest[1..], &["-s", "-k"]);
                // the duration
                if rest.get(n).is_some() { n + 1 } else { n }
            }
            _ => return rest,
        };
        if skip >= rest.len() {
            return &rest[rest.len()..];
        }
        rest = &rest[skip..];
    }
}

/// How many leading words of `words` are options (with the values of the
/// ones listed in `with_value`), stopping after `--`.
fn options(words: &[String], with_value: &[&str]) -> usize {
    let mut n = 0;
    while let Some(w) = words.get(n) {
        if w == "--" {
            return n + 1;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        n += 1;
        if with_value.contains(&w.as_str()) {
            n += 1;
        }
    }
    n
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((k, _)) => !k.is_empty() && !k.contains('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::shipped_denylist_patterns;

    fn shipped() -> Vec<Regex> {
        shipped_denylist_patterns()
            .iter()
            .map(|p| Regex::new(p).unwrap())
            .collect()
    }

    fn argv(line: &str) -> Vec<String> {
        shell_words::split(line).unwrap()
    }

    fn refused(patterns: &[Regex], line: &str) -> bool {
        check(patterns, &argv(line)).is_err()
    }

    #[test]
    fn shipped_patterns_refuse_the_catastrophes_with_the_plain_message() {
        let p = shipped();
        let err = check(&p, &argv("sudo shutdown -h now")).unwrap_err();
        assert_eq!(err.class, crate::error::Class::BadInput);
        assert!(
            err.message.starts_with("command matches denylist: "),
            "{}",
            err.message
        );
        assert!(err.message.ends_with(r"shutdown\b"), "{}", err.message);
        for line in [
            "rm -rf /",
            "rm -rf /home",
            "shutdown -h now",
            "/sbin/shutdown now",
            "reboot",
            "mkfs.ext4 /dev/sda1",
            "dd if=/dev/zero of=/dev/sda",
            "cat /etc/shadow",
            ":(){ :|:& };:",
        ] {
            assert!(refused(&p, line), "{line} should be refused");
        }
    }

    #[test]
    fn wrappers_do_not_walk_around_the_anchor() {
        let p = shipped();
        for line in [
            "sudo shutdown -h now",
            "/usr/bin/sudo shutdown -h now",
            "doas reboot",
            "nohup reboot",
            "env A=1 shutdown",
            "/usr/bin/env A=1 B=2 shutdown -r now",
            "timeout 5 reboot",
            "timeout 5s /sbin/reboot",
            "sudo nohup env X=1 timeout 10 shutdown",
            "SUDO SHUTDOWN",
        ] {
            assert!(refused(&p, line), "{line} should be refused");
        }
    }

    #[test]
    fn peeling_covers_wrapper_options_the_shipped_text_does_not() {
        let p = shipped();
        for line in [
            "sudo -u root shutdown now",
            "sudo -n reboot",
            "env -i PATH=/bin shutdown",
            "timeout -s KILL 5 reboot",
            "sudo -- reboot",
        ] {
            assert!(refused(&p, line), "{line} should be refused");
        }
        // and operator patterns written without any wrapper tolerance
        let plain = vec![Regex::new(r"^(\S*/)?mkfs").unwrap()];
        assert!(refused(&plain, "sudo /sbin/mkfs.xfs /dev/sdb"));
        assert!(refused(&plain, "mkfs /dev/sdb"));
        assert!(!refused(&plain, "echo mkfs"));
    }

    #[test]
    fn the_words_as_arguments_are_not_refused() {
        let p = shipped();
        for line in [
            "grep -rn shutdown src/",
            "grep -rn reboot src/",
            "git log --grep=shutdown",
            "echo mkfs",
            "man dd",
            "sudo ls",
            "env A=1 printenv A",
            "timeout 5 sleep 1",
            "rm -rf ./build",
            "ls /",
        ] {
            assert!(!refused(&p, line), "{line} should run");
        }
    }

    #[test]
    fn an_empty_denylist_refuses_nothing() {
        assert!(check(&[], &argv("shutdown now")).is_ok());
    }

    #[test]
    fn wrappers_alone_are_peeled_to_nothing_without_panicking() {
        let p = shipped();
        for line in ["sudo", "env", "env A=1", "timeout", "timeout 5", "sudo -u"] {
            assert!(!refused(&p, line), "{line}");
        }
    }
}
