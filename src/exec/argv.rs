//! From `command` + `args` to the argv that is spawned.
//!
//! `args` present (even empty) is used verbatim after `command`; `args`
//! omitted or null means `command` is a command line split shell-words style
//! (quotes and backslashes, no expansion, no operators). Nothing here ever
//! runs a shell.

use crate::error::Failure;

/// The argv for `command` and `args`.
pub fn build(command: &str, args: Option<&[String]>) -> Result<Vec<String>, Failure> {
    if command.trim().is_empty() {
        return Err(Failure::bad_input(
            "empty command: `command` is empty; put the program in `command` (e.g. \"ls\") and its arguments in \
             `args` (e.g. [\"-la\"])",
        ));
    }
    let argv = match args {
        Some(args) => {
            let mut argv = Vec::with_capacity(args.len() + 1);
            argv.push(command.to_string());
            argv.extend(args.iter().cloned());
            argv
        }
        None => shell_words::split(command).map_err(|e| {
            Failure::bad_input(format!(
                "cannot parse command {command:?} into words ({e}); close the quote, or pass \
                 the program in `command` and every argument as its own `args` entry"
            ))
        })?,
    };
    match argv.first() {
        None => Err(Failure::bad_input(format!(
            "empty command: {command:?} holds no words; put the program in `command`"
        ))),
        Some(program) if program.is_empty() => Err(Failure::bad_input(
            "empty command: the program name is empty; put the program in `command`",
        )),
        Some(_) => {
            if let Some(bad) = argv.iter().find(|a| a.contains('\0')) {
                return Err(Failure::bad_input(format!(
                    "argument {bad:?} contains a NUL byte, which no program can receive"
                )));
            }
            Ok(argv)
        }
    }
}

/// Words a shell would read as an operator; here they are plain arguments.
pub const SHELL_OPERATORS: [&str; 7] = ["|", "||", "&&", ";", ">", ">>", "<"];

/// The `note` of an answer whose argv holds a bare shell operator: the
/// command ran as given, and how to ask for a shell.
pub fn shell_operator_note(argv: &[String]) -> Option<String> {
    let found: Vec<&str> = argv
        .iter()
        .skip(1)
        .filter_map(|a| {
            SHELL_OPERATORS
                .iter()
                .find(|op| **op == a.as_str())
                .copied()
        })
        .collect();
    if found.is_empty() {
        return None;
    }
    let mut ops: Vec<&str> = Vec::new();
    for op in found {
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    let quoted: Vec<String> = ops.iter().map(|o| format!("{o:?}")).collect();
    Some(format!(
        "no shell interprets the command: {} reached {:?} as plain argument(s), not as shell \
         operators, and the command ran exactly as given. For a pipeline, list or redirect run \
         a shell explicitly: command: \"sh\", args: [\"-c\", {:?}]",
        quoted.join(", "),
        argv[0],
        argv.iter()
            .map(|a| if SHELL_OPERATORS.contains(&a.as_str()) {
                std::borrow::Cow::Borrowed(a.as_str())
            } else {
                shell_words::quote(a)
            })
            .collect::<Vec<_>>()
            .join(" "),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn omitted_args_split_the_command_shell_words_style() {
        assert_eq!(
            build("ls -la /tmp", None).unwrap(),
            s(&["ls", "-la", "/tmp"])
        );
        assert_eq!(
            build(r#"grep -rn "two words" 'it''s' a\ b"#, None).unwrap(),
            s(&["grep", "-rn", "two words", "its", "a b"])
        );
        // no expansion, no operators: they are plain words
        assert_eq!(
            build("echo $HOME && pwd", None).unwrap(),
            s(&["echo", "$HOME", "&&", "pwd"])
        );
    }

    #[test]
    fn given_args_are_used_verbatim_even_when_empty() {
        assert_eq!(build("ls", Some(&[])).unwrap(), s(&["ls"]));
        assert_eq!(
            build("echo", Some(&s(&["a b", "'c'", "$X"]))).unwrap(),
            s(&["echo", "a b", "'c'", "$X"])
        );
        // command is not split when args are given
        assert_eq!(
            build("my prog", Some(&s(&["x"]))).unwrap(),
            s(&["my prog", "x"])
        );
    }

    #[test]
    fn bare_shell_operators_are_noted_and_quoted_ones_are_not() {
        let argv = build("git diff --stat | tail -1", None).unwrap();
        assert_eq!(argv, s(&["git", "diff", "--stat", "|", "tail", "-1"]));
        let note = shell_operator_note(&argv).unwrap();
        assert!(note.contains("\"|\" reached \"git\""), "{note}");
        assert!(
            note.contains(r#"command: "sh", args: ["-c", "git diff --stat | tail -1"]"#),
            "{note}"
        );
        for op in SHELL_OPERATORS {
            let argv = s(&["echo", "a", op, "b"]);
            assert!(shell_operator_note(&argv).is_some(), "{op}");
        }
        // an operator inside a word, or as the program, is not bare
        assert!(shell_operator_note(&s(&["echo", "a|b", "x>y"])).is_none());
        assert!(shell_operator_note(&s(&["sh", "-c", "a | b"])).is_none());
        // repeated operators are named once
        let note = shell_operator_note(&s(&["a", "|", "b", "|", "c", "&&", "d"])).unwrap();
        assert!(
            note.starts_with(r#"no shell interprets the command: "|", "&&" reached"#),
            "{note}"
        );
    }

    #[test]
    fn empty_or_unsplittable_commands_are_bad_input() {
        for bad in ["", "   ", "''", "\"unterminated"] {
            let err = build(bad, None).unwrap_err();
            assert_eq!(err.class, crate::error::Class::BadInput, "{bad:?}");
        }
        assert!(build("", Some(&s(&["x"]))).is_err());
        assert!(build("echo", Some(&s(&["a\0b"]))).is_err());
    }
}
