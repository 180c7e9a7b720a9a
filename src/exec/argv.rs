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
    fn empty_or_unsplittable_commands_are_bad_input() {
        for bad in ["", "   ", "''", "\"unterminated"] {
            let err = build(bad, None).unwrap_err();
            assert_eq!(err.class, crate::error::Class::BadInput, "{bad:?}");
        }
        assert!(build("", Some(&s(&["x"]))).is_err());
        assert!(build("echo", Some(&s(&["a\0b"]))).is_err());
    }
}
