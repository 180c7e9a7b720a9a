use super::*;
use crate::config::Config;
use std::os::unix::fs::symlink;
use tempfile::TempDir;

struct Fixture {
    _dirs: Vec<TempDir>,
    root: PathBuf,
    second: PathBuf,
    outside: PathBuf,
}

/// Two jail roots and a directory outside both, canonicalized.
fn fixture() -> Fixture {
    let a = TempDir::new().unwrap();
    let b = TempDir::new().unwrap();
    let c = TempDir::new().unwrap();
    let root = a.path().canonicalize().unwrap();
    let second = b.path().canonicalize().unwrap();
    let outside = c.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "x").unwrap();
    Fixture {
        _dirs: vec![a, b, c],
        root,
        second,
        outside,
    }
}

fn jailed(f: &Fixture) -> Policy {
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![f.root.clone(), f.second.clone()];
    cfg.fs.denylist_paths = vec![f.root.join("blocked")];
    Policy::build(&cfg, &f.root).unwrap()
}

fn unjailed(f: &Fixture) -> Policy {
    let mut cfg = Config::zero_config();
    cfg.fs.denylist_paths = vec![f.outside.join("secret.txt")];
    Policy::build(&cfg, &f.root).unwrap()
}

fn code(r: Result<Resolved, Failure>) -> Option<u16> {
    r.err().and_then(|f| f.class.number())
}

fn follow(p: &Policy, raw: &str, s: Surface) -> Result<Resolved, Failure> {
    p.resolve(raw, s, Tail::Follow, None)
}

#[test]
fn jailed_relative_paths_resolve_against_the_primary_root() {
    let f = fixture();
    let p = jailed(&f);
    let r = follow(&p, "src/lib.rs", Surface::Shell).unwrap();
    assert_eq!(r.path, f.root.join("src/lib.rs"));
    assert!(r.exists);
    assert_eq!(r.root.as_deref(), Some(f.root.as_path()));
    let missing = follow(&p, "src/new.rs", Surface::Coder).unwrap();
    assert!(!missing.exists);
}

#[test]
fn jailed_absolute_paths_must_be_inside_some_root() {
    let f = fixture();
    let p = jailed(&f);
    let inside_second = f.second.join("x.txt");
    let r = follow(&p, inside_second.to_str().unwrap(), Surface::Shell).unwrap();
    assert_eq!(r.path, inside_second);
    assert_eq!(r.root.as_deref(), Some(f.second.as_path()));
    let out = f.outside.join("secret.txt");
    assert_eq!(
        code(follow(&p, out.to_str().unwrap(), Surface::Shell)),
        Some(215)
    );
    assert_eq!(code(follow(&p, "/etc/hostname", Surface::Coder)), Some(215));
}

#[test]
fn dot_dot_escapes_are_caught() {
    let f = fixture();
    let p = jailed(&f);
    assert_eq!(
        code(follow(&p, "../../../etc/hostname", Surface::Shell)),
        Some(215)
    );
    assert_eq!(code(follow(&p, "src/../../x", Surface::Coder)), Some(215));
    // `..` that stays inside is fine
    assert_eq!(
        follow(&p, "src/../src/lib.rs", Surface::Shell)
            .unwrap()
            .path,
        f.root.join("src/lib.rs")
    );
}

#[test]
fn symlink_escape_in_the_middle_of_a_path_is_caught() {
    let f = fixture();
    symlink(&f.outside, f.root.join("link")).unwrap();
    let p = jailed(&f);
    assert_eq!(
        code(follow(&p, "link/secret.txt", Surface::Shell)),
        Some(215)
    );
    assert_eq!(code(follow(&p, "link/new-file", Surface::Coder)), Some(215));
}

#[test]
fn symlink_escape_at_the_tail_is_caught() {
    let f = fixture();
    symlink(f.outside.join("secret.txt"), f.root.join("tail")).unwrap();
    let p = jailed(&f);
    assert_eq!(code(follow(&p, "tail", Surface::Shell)), Some(215));
    // Addressing the link itself (rm, stat) stays inside the jail.
    let entry = p
        .resolve("tail", Surface::Shell, Tail::Entry, None)
        .unwrap();
    assert_eq!(entry.path, f.root.join("tail"));
}

#[test]
fn dangling_symlink_at_the_tail_reads_like_a_missing_path() {
    let f = fixture();
    symlink(f.root.join("nowhere"), f.root.join("dangling")).unwrap();
    symlink(f.outside.join("nowhere"), f.root.join("dangling-out")).unwrap();
    let p = jailed(&f);
    assert_eq!(code(follow(&p, "dangling", Surface::Coder)), Some(211));
    assert_eq!(code(follow(&p, "dangling-out", Surface::Coder)), Some(215));
    assert!(
        p.resolve("dangling", Surface::Shell, Tail::Entry, None)
            .is_ok()
    );
}

/// A link to a denylisted target, a link to a missing one and a missing
/// path answer with the same code and the same words (modulo the path as
/// written), whether the denied target exists or not: nothing probes.
#[test]
fn links_to_denied_and_to_missing_targets_are_indistinguishable() {
    let f = fixture();
    let p = unjailed(&f);
    let dir = f.root.join("links");
    std::fs::create_dir(&dir).unwrap();
    // secret.txt is denylisted and exists; the denylisted gone.txt does not
    let mut cfg = Config::zero_config();
    cfg.fs.denylist_paths = vec![f.outside.join("secret.txt"), f.outside.join("gone.txt")];
    let p2 = Policy::build(&cfg, &f.root).unwrap();
    for (name, target) in [
        ("to-secret", f.outside.join("secret.txt")),
        ("to-gone-denied", f.outside.join("gone.txt")),
        ("to-missing", f.outside.join("nonexistent")),
    ] {
        symlink(&target, dir.join(name)).unwrap();
    }
    for policy in [&p, &p2] {
        for surface in [Surface::Shell, Surface::Coder] {
            let answers: Vec<(Option<u16>, String)> =
                ["to-secret", "to-gone-denied", "to-missing", "never-there"]
                    .iter()
                    .map(|n| {
                        let raw = dir.join(n).display().to_string();
                        let e = policy
                            .resolve_existing(&raw, surface, Tail::Follow, None)
                            .unwrap_err();
                        (e.class.number(), e.message.replace(&raw, "<path>"))
                    })
                    .collect();
            assert!(answers.iter().all(|a| a == &answers[3]), "{answers:#?}");
            assert_eq!(answers[3].0, Some(211));
        }
    }
}

#[test]
fn long_components_and_paths_are_bad_input_with_a_bounded_message() {
    let f = fixture();
    let p = jailed(&f);
    let long = "n".repeat(256);
    let e = follow(&p, &long, Surface::Shell).unwrap_err();
    assert_eq!(e.class.number(), Some(210));
    assert!(e.message.contains("256 bytes"), "{}", e.message);
    let huge = "a/".repeat(5_000_000);
    let e = follow(&p, &huge, Surface::Coder).unwrap_err();
    assert_eq!(e.class.number(), Some(210));
    assert!(e.message.len() < 1000, "{}", e.message.len());
}

#[test]
fn symlinks_inside_the_jail_resolve_to_their_target() {
    let f = fixture();
    symlink(f.root.join("src"), f.root.join("alias")).unwrap();
    let p = jailed(&f);
    assert_eq!(
        follow(&p, "alias/lib.rs", Surface::Shell).unwrap().path,
        f.root.join("src/lib.rs")
    );
    // `..` after a symlink pops the target, as the kernel does.
    symlink(f.outside.join("."), f.root.join("out")).unwrap();
    assert_eq!(code(follow(&p, "out/../x", Surface::Shell)), Some(215));
}

#[test]
fn unjailed_shell_surface_takes_absolute_paths_only() {
    let f = fixture();
    let p = unjailed(&f);
    assert_eq!(code(follow(&p, "src/lib.rs", Surface::Shell)), Some(210));
    assert_eq!(code(follow(&p, "~/x", Surface::Shell)), Some(210));
    let abs = f.outside.join("other.txt");
    assert_eq!(
        follow(&p, abs.to_str().unwrap(), Surface::Shell)
            .unwrap()
            .path,
        abs
    );
}

#[test]
fn unjailed_coder_anchors_relative_paths_at_its_fallback_roots() {
    let f = fixture();
    let p = unjailed(&f);
    assert_eq!(p.coder_roots()[0], f.root);
    assert!(
        p.coder_roots()
            .contains(&PathBuf::from("/tmp").canonicalize().unwrap())
    );
    let r = follow(&p, "src/lib.rs", Surface::Coder).unwrap();
    assert_eq!(r.path, f.root.join("src/lib.rs"));
    // absolute paths anywhere
    let anywhere = f.outside.join("other.txt");
    assert_eq!(
        follow(&p, anywhere.to_str().unwrap(), Surface::Coder)
            .unwrap()
            .path,
        anywhere
    );
    assert_eq!(
        follow(&p, "/", Surface::Coder).unwrap().path,
        Path::new("/")
    );
}

#[test]
fn tilde_is_never_expanded_when_jailed() {
    let f = fixture();
    let p = jailed(&f);
    let r = follow(&p, "~/foo", Surface::Shell).unwrap();
    assert_eq!(r.path, f.root.join("~/foo"));
}

#[test]
fn denied_path_reads_exactly_like_a_missing_one() {
    let f = fixture();
    let p = jailed(&f);
    std::fs::create_dir_all(f.root.join("blocked")).unwrap();
    std::fs::write(f.root.join("blocked/file"), "x").unwrap();
    for surface in [Surface::Coder, Surface::Shell] {
        for denied in ["blocked/file", ".env", "sub/.env.local", "secrets/k"] {
            // what it must read like: a missing path spelled the same way
            let twin = format!("nope/{denied}");
            let missing = p
                .resolve_existing(&twin, surface, Tail::Follow, None)
                .unwrap_err();
            if denied.starts_with("sub") || denied.starts_with("secrets") {
                let full = f.root.join(denied);
                std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                std::fs::write(&full, "x").unwrap();
            }
            let got = p
                .resolve_existing(denied, surface, Tail::Follow, None)
                .unwrap_err();
            assert_eq!(got.class, missing.class, "{denied}");
            assert_eq!(
                got.message.replace(&format!("{denied:?}"), "P"),
                missing.message.replace(&format!("{twin:?}"), "P"),
                "{denied}"
            );
        }
    }
}

#[test]
fn a_protected_path_names_its_glob_whether_it_exists_or_not() {
    let f = fixture();
    let p = jailed(&f);
    std::fs::write(f.root.join(".env"), "x").unwrap();
    for raw in [".env", "nope/.env"] {
        let e = p
            .resolve_existing(raw, Surface::Coder, Tail::Follow, None)
            .unwrap_err();
        assert!(
            e.message.contains("protected glob `**/.env`"),
            "{raw}: {e:?}"
        );
    }
    // a plain missing path names no glob
    let e = p
        .resolve_existing("nope/file", Surface::Coder, Tail::Follow, None)
        .unwrap_err();
    assert!(!e.message.contains("protected glob `"), "{e:?}");
}

#[test]
fn denylist_applies_in_unjailed_mode_on_both_surfaces() {
    let f = fixture();
    let p = unjailed(&f);
    let s = f.outside.join("secret.txt");
    for surface in [Surface::Coder, Surface::Shell] {
        assert_eq!(code(follow(&p, s.to_str().unwrap(), surface)), Some(211));
    }
    // reached through a symlink, too
    symlink(&s, f.outside.join("alias")).unwrap();
    let alias = f.outside.join("alias");
    assert_eq!(
        code(follow(&p, alias.to_str().unwrap(), Surface::Shell)),
        Some(211)
    );
}

#[test]
fn protected_globs_match_root_relative() {
    let f = fixture();
    let p = jailed(&f);
    assert!(p.is_protected(&f.root.join(".env")));
    assert!(p.is_protected(&f.root.join("a/b/server.pem")));
    assert!(p.is_protected(&f.root.join("secrets/x")));
    assert!(!p.is_protected(&f.root.join("src/lib.rs")));
    assert_eq!(
        code(follow(&p, "deep/.env.prod", Surface::Coder)),
        Some(211)
    );
}

#[test]
fn default_excludes_hide_but_do_not_protect() {
    let f = fixture();
    let p = jailed(&f);
    assert!(p.is_excluded(&f.root.join("node_modules")));
    assert!(p.is_excluded(&f.root.join("a/.git/config")));
    assert!(!p.is_excluded(&f.root.join("src")));
    assert_eq!(
        follow(&p, "node_modules/x.js", Surface::Coder)
            .unwrap()
            .path,
        f.root.join("node_modules/x.js")
    );
}

#[test]
fn a_file_glob_in_default_excludes_does_not_hide_directories() {
    let f = fixture();
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![f.root.clone()];
    cfg.code.default_exclude_globs = vec!["**/*.log".into(), "**/build/**".into()];
    let p = Policy::build(&cfg, &f.root).unwrap();
    assert!(p.is_excluded(&f.root.join("a/debug.log")));
    assert!(!p.is_excluded(&f.root.join("src")));
    assert!(p.is_excluded(&f.root.join("x/build")));
    assert!(p.is_excluded(&f.root.join("x/build/out.o")));
}

#[test]
fn special_mode_bits_need_the_opt_in() {
    let f = fixture();
    let p = jailed(&f);
    assert!(p.check_mode_bits(0o644).is_ok());
    assert_eq!(
        p.check_mode_bits(0o4755).unwrap_err().class,
        Class::BadInput
    );
    assert_eq!(
        p.check_mode_bits(0o1777).unwrap_err().class,
        Class::BadInput
    );
    let mut cfg = Config::zero_config();
    cfg.fs.allow_special_bits = true;
    let open = Policy::build(&cfg, &f.root).unwrap();
    assert!(open.check_mode_bits(0o4755).is_ok());
    assert_eq!(parse_octal_mode("0644").unwrap(), 0o644);
    assert_eq!(parse_octal_mode("755").unwrap(), 0o755);
    assert!(parse_octal_mode("9").is_err());
    assert!(parse_octal_mode("").is_err());
}

#[test]
fn empty_roots_without_opt_in_refuse_to_build() {
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    let err = Policy::build(&cfg, Path::new("/")).unwrap_err();
    assert!(err.contains("refusing to start unjailed"), "{err}");
    assert!(err.contains("fs.allow_unjailed: true"), "{err}");
}

#[test]
fn missing_or_relative_roots_refuse_to_build() {
    let mut cfg = Config::zero_config();
    cfg.fs.host_roots = vec!["relative/dir".into()];
    assert!(
        Policy::build(&cfg, Path::new("/"))
            .unwrap_err()
            .contains("not absolute")
    );
    cfg.fs.host_roots = vec!["/definitely/not/here".into()];
    assert!(Policy::build(&cfg, Path::new("/")).is_err());
}

#[test]
fn scope_confines_relative_and_absolute_paths() {
    let f = fixture();
    let p = jailed(&f);
    let scope = p.resolve_scope("src", Surface::Coder).unwrap();
    let r = p
        .resolve("lib.rs", Surface::Coder, Tail::Follow, Some(&scope))
        .unwrap();
    assert_eq!(r.path, f.root.join("src/lib.rs"));
    let outside_scope = f.root.join(".gitignore");
    let err = p
        .resolve(
            outside_scope.to_str().unwrap(),
            Surface::Coder,
            Tail::Follow,
            Some(&scope),
        )
        .unwrap_err();
    assert_eq!(err.class, Class::OutsideScope);
    assert_eq!(
        code(p.resolve("../../x", Surface::Coder, Tail::Follow, Some(&scope))),
        Some(215)
    );
}

#[test]
fn symlink_loops_are_reported() {
    let f = fixture();
    symlink(f.root.join("b"), f.root.join("a")).unwrap();
    symlink(f.root.join("a"), f.root.join("b")).unwrap();
    let p = jailed(&f);
    assert_eq!(code(follow(&p, "a/x", Surface::Shell)), Some(210));
}

#[test]
fn empty_and_nul_paths_are_bad_input() {
    let f = fixture();
    let p = jailed(&f);
    assert_eq!(code(follow(&p, "", Surface::Shell)), Some(210));
    assert_eq!(code(follow(&p, "a\0b", Surface::Shell)), Some(210));
}

#[test]
fn dot_dot_out_of_a_missing_directory_resolves_symlinks_again() {
    let f = fixture();
    symlink(&f.outside, f.root.join("link")).unwrap();
    let p = jailed(&f);
    // `nope` does not exist; `..` climbs back and `link` must be followed
    assert_eq!(
        code(follow(&p, "nope/../link/new-file", Surface::Coder)),
        Some(215)
    );
    assert_eq!(
        code(follow(&p, "nope/deeper/../../link/x", Surface::Shell)),
        Some(215)
    );
    let inside = follow(&p, "nope/../src/lib.rs", Surface::Shell).unwrap();
    assert_eq!(inside.path, f.root.join("src/lib.rs"));
    assert!(inside.exists);
}

#[test]
fn a_denylisted_symlink_pointing_out_reads_as_missing_not_as_an_escape() {
    let f = fixture();
    symlink(&f.outside, f.root.join("blocked")).unwrap();
    let p = jailed(&f);
    let denied = p
        .resolve_existing("blocked/secret.txt", Surface::Shell, Tail::Follow, None)
        .unwrap_err();
    let missing = p
        .resolve_existing("nope/secret.txt", Surface::Shell, Tail::Follow, None)
        .unwrap_err();
    assert_eq!(denied.class, missing.class);
    assert_eq!(
        denied.message.replace("blocked/secret.txt", "P"),
        missing.message.replace("nope/secret.txt", "P")
    );
}

#[test]
fn a_glob_protected_directory_protects_what_is_inside() {
    let f = fixture();
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![f.root.clone()];
    cfg.code.non_accessible_globs = vec!["**/private".into()];
    let p = Policy::build(&cfg, &f.root).unwrap();
    std::fs::create_dir_all(f.root.join("a/private")).unwrap();
    std::fs::write(f.root.join("a/private/key"), "k").unwrap();
    assert_eq!(code(follow(&p, "a/private/key", Surface::Coder)), Some(211));
    assert_eq!(code(follow(&p, "a/private", Surface::Coder)), Some(211));
}
