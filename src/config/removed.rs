//! Keys removed in earlier releases, rejected with the migration hint.
//!
//! serde would otherwise report them as plain unknown fields (or, without
//! `deny_unknown_fields`, silently drop them and boot a wider policy). Each
//! hint says what to write instead.

use serde_json::Value;

/// Hints for every removed key present in `value` (empty when none).
pub fn removed_keys(value: &Value) -> Vec<String> {
    let mut hints = Vec::new();
    let Some(top) = value.as_object() else {
        return hints;
    };
    let env = top.get("env").and_then(Value::as_object);
    let fs = top.get("fs").and_then(Value::as_object);
    let code = top.get("code").and_then(Value::as_object);

    let mut env_keys = Vec::new();
    for key in ["inherit_env", "allowed_env"] {
        if top.contains_key(key) {
            env_keys.push(key.to_string());
        }
        if env.is_some_and(|e| e.contains_key(key)) {
            env_keys.push(format!("env.{key}"));
        }
    }
    if !env_keys.is_empty() {
        hints.push(format!(
            "config keys removed in 0.7.0: {} -> nest them under env: as env.inherit (was \
             inherit_env) and env.allow (was allowed_env)",
            env_keys.join(", ")
        ));
    }
    if fs.is_some_and(|f| f.contains_key("host_root")) {
        hints.push(
            "config key removed in 0.7.0: fs.host_root -> fs.host_roots (one-entry list, e.g. \
             host_roots: [/srv/app])"
                .to_string(),
        );
    }
    if top.contains_key("allowlist") {
        hints.push(
            "`allowlist` (removed in 0.8.0, no replacement): command policy is deny-only; delete \
             the key (even an empty allowlist: [] is refused) and rewrite the stored value with \
             configuration::set id=ide"
                .to_string(),
        );
    }
    let code_keys: Vec<&str> = ["base_path", "base_paths"]
        .into_iter()
        .filter(|k| code.is_some_and(|c| c.contains_key(*k)))
        .collect();
    if !code_keys.is_empty() {
        hints.push(format!(
            "config keys removed in 0.7.0: code.base_path / code.base_paths (found: {}) -> set the \
             roots once via fs.host_roots",
            code_keys
                .iter()
                .map(|k| format!("code.{k}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if top.contains_key("migrated_from_coder") {
        hints.push(
            "config key removed in 0.7.0: migrated_from_coder (the one-shot coder migration \
             marker) -> delete it from the stored value"
                .to_string(),
        );
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use serde_json::json;

    fn rejected(v: Value, needle: &str) {
        let err = Config::from_value(&v).unwrap_err();
        assert!(err.contains(needle), "expected {needle:?} in {err:?}");
    }

    #[test]
    fn legacy_env_keys_are_rejected_with_the_hint() {
        rejected(json!({"inherit_env": true}), "inherit_env -> ");
        rejected(json!({"allowed_env": ["PATH"]}), "env.allow");
        rejected(json!({"inherit_env": true}), "removed in 0.7.0");
    }

    #[test]
    fn half_migrated_env_block_is_rejected() {
        rejected(json!({"env": {"inherit_env": true}}), "env.inherit_env");
        rejected(json!({"env": {"allowed_env": []}}), "env.allowed_env");
    }

    #[test]
    fn single_root_alias_is_rejected() {
        rejected(
            json!({"fs": {"host_root": "/srv"}}),
            "fs.host_root -> fs.host_roots",
        );
    }

    #[test]
    fn allowlist_is_rejected_even_empty() {
        rejected(json!({"allowlist": []}), "removed in 0.8.0");
    }

    #[test]
    fn coder_roots_and_marker_are_rejected() {
        rejected(json!({"code": {"base_path": "/x"}}), "code.base_path");
        rejected(json!({"code": {"base_paths": ["/x"]}}), "code.base_paths");
        rejected(json!({"migrated_from_coder": true}), "migrated_from_coder");
    }

    #[test]
    fn seed_file_with_removed_keys_fails_to_parse() {
        let err =
            Config::from_yaml("inherit_env: true\nfs:\n  allow_unjailed: true\n").unwrap_err();
        assert!(err.contains("config keys removed in 0.7.0"), "{err}");
    }
}
