//! The JSON Schemas ide registers for its functions: JSON Schema 2020-12,
//! strict, and in the shape MCP clients and model APIs read.
//!
//! The types derive their schemas (schemars, draft-07 output); [`of`] turns
//! that into what is registered, one pass over the tree:
//!
//! - `$schema` is 2020-12, `definitions` become `$defs` and every `$ref`
//!   follows them;
//! - every object schema has `properties` (empty for an object without
//!   declared fields);
//! - a request's top level says `additionalProperties: false` (the function
//!   refuses undeclared fields, S210); nested objects say it where their
//!   type refuses unknown fields (`deny_unknown_fields`), as derived;
//! - an optional field (not `required`) is its plain type, not `[T, "null"]`
//!   or `anyOf [T, null]`: leaving it out is how a caller says "not given"
//!   — unless its description says what `null` means for it;
//! - integer formats that are not JSON Schema's (`uint64`, `int32`, …) and
//!   `double`/`float` are dropped; integers keep (or get) their `minimum`
//!   and, for the narrow ones, `maximum`.
//!
//! Wire shapes do not change: this describes what the functions already
//! accept and return. Keys beginning with `_` are annotations the engine
//! adds to a payload (`_caller_worker_id`); the functions drop them before
//! decoding and callers never send them, so the schemas do not list them.

use serde_json::{Map, Value, json};

/// The dialect every registered schema declares.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Which side of a call a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// What a caller sends; `strict`: the top level refuses undeclared
    /// fields. Optional fields lose their `null` alternative.
    Request { strict: bool },
    /// What comes back (and trigger events): a `null` an answer really
    /// carries stays in its schema.
    Response,
}

/// The registered schema of `T` for `side`.
pub fn of<T: schemars::JsonSchema>(side: Side) -> Value {
    let derived = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    to_2020_12(derived, side)
}

/// Turn a derived draft-07 schema into the registered 2020-12 one.
pub fn to_2020_12(schema: Value, side: Side) -> Value {
    let request = matches!(side, Side::Request { .. });
    let Value::Object(mut root) = schema else {
        return schema;
    };
    root.remove("$schema");
    let defs = root.remove("definitions");
    let mut out = Map::new();
    out.insert("$schema".into(), Value::String(DIALECT.into()));
    out.extend(root);
    let mut out = Value::Object(out);
    tidy(&mut out, request);
    if let Some(Value::Object(mut defs)) = defs {
        for def in defs.values_mut() {
            tidy(def, request);
        }
        out["$defs"] = Value::Object(defs);
    }
    if side == (Side::Request { strict: true }) && out.get("type") == Some(&json!("object")) {
        out["additionalProperties"] = Value::Bool(false);
    }
    out
}

/// Formats schemars gives numbers that JSON Schema does not define, with
/// the range each implies.
fn number_format(format: &str) -> Option<(Option<i64>, Option<u64>)> {
    Some(match format {
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint" | "uint64" | "uint128" | "usize" => (Some(0), None),
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX as u64)),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX as u64)),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX as u64)),
        "int" | "int64" | "int128" | "isize" | "double" | "float" => (None, None),
        _ => return None,
    })
}

/// One schema node and everything below it (`request`: optional fields
/// lose their `null`).
fn tidy(node: &mut Value, request: bool) {
    match node {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/definitions/")
            {
                *r = format!("#/$defs/{name}");
            }
            if let Some(Value::String(f)) = m.get("format")
                && let Some((min, max)) = number_format(f)
            {
                m.remove("format");
                let integer = m.get("type") == Some(&json!("integer"))
                    || m.get("type")
                        .and_then(Value::as_array)
                        .is_some_and(|t| t.contains(&json!("integer")));
                if integer {
                    if let Some(min) = min {
                        m.entry("minimum").or_insert(json!(min));
                    }
                    if let Some(max) = max {
                        m.entry("maximum").or_insert(json!(max));
                    }
                }
            }
            // schemars writes bounds as floats (`minimum: 0.0`)
            for bound in ["minimum", "maximum"] {
                if let Some(Value::Number(n)) = m.get(bound)
                    && let Some(f) = n.as_f64()
                    && !n.is_i64()
                    && !n.is_u64()
                    && f.fract() == 0.0
                    && f.abs() < 9.0e15
                {
                    m.insert(bound.into(), json!(f as i64));
                }
            }
            let is_object = m.get("type") == Some(&json!("object"));
            if is_object && !m.contains_key("properties") {
                m.insert("properties".into(), json!({}));
            }
            let required: Vec<String> = match m.get("required") {
                Some(Value::Array(r)) => r
                    .iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect(),
                _ => Vec::new(),
            };
            if request && let Some(Value::Object(props)) = m.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) && !states_null(prop) {
                        drop_null(prop);
                    }
                }
            }
            for (key, child) in m.iter_mut() {
                match key.as_str() {
                    // names and literal values, not schemas
                    "required" | "enum" | "const" | "default" | "examples" => {}
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        if let Value::Object(children) = child {
                            for c in children.values_mut() {
                                tidy(c, request);
                            }
                        }
                    }
                    _ => tidy(child, request),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                tidy(item, request);
            }
        }
        _ => {}
    }
}

/// Whether a field's description says what `null` means for it ("omit or
/// pass null to …"): then `null` is a value a caller may mean, and stays.
fn states_null(prop: &Value) -> bool {
    prop.get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| {
            d.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .any(|w| w == "null")
        })
}

/// An optional field's schema without its `null` alternative: `[T, "null"]`
/// becomes `T`, `anyOf [S, {type: null}]` becomes `S` (keeping the field's
/// own description and default beside it), a `null` default goes.
fn drop_null(prop: &mut Value) {
    let Value::Object(m) = prop else { return };
    if let Some(Value::Array(types)) = m.get("type") {
        let rest: Vec<Value> = types
            .iter()
            .filter(|t| *t != &json!("null"))
            .cloned()
            .collect();
        if rest.len() < types.len() {
            let t = if rest.len() == 1 {
                rest[0].clone()
            } else {
                Value::Array(rest)
            };
            m.insert("type".into(), t);
        }
    }
    if m.get("default") == Some(&Value::Null) {
        m.remove("default");
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alts)) = m.get(key) else {
            continue;
        };
        let rest: Vec<Value> = alts
            .iter()
            .filter(|a| a.get("type") != Some(&json!("null")))
            .cloned()
            .collect();
        if rest.len() == alts.len() {
            continue;
        }
        m.remove(key);
        if rest.len() == 1 {
            if let Value::Object(only) = &rest[0] {
                for (k, v) in only {
                    m.entry(k.clone()).or_insert(v.clone());
                }
            }
        } else {
            m.insert(key.into(), Value::Array(rest));
        }
    }
    if let Some(Value::Array(values)) = m.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        a: u32,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        b: String,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Req {
        /// The path.
        path: String,
        /// How many.
        count: Option<u64>,
        inner: Option<Inner>,
        strict: Strict,
        small: u8,
        signed: i32,
        map: std::collections::BTreeMap<String, String>,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    struct Empty {}

    #[test]
    fn a_request_becomes_strict_2020_12() {
        let s = of::<Req>(Side::Request { strict: true });
        assert_eq!(s["$schema"], DIALECT);
        assert!(s.get("definitions").is_none());
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(
            s["required"],
            json!(["map", "path", "signed", "small", "strict"])
        );
        let p = &s["properties"];
        assert_eq!(p["count"]["type"], "integer");
        assert_eq!(p["count"]["minimum"], 0);
        assert!(p["count"].get("format").is_none());
        assert_eq!(p["small"]["maximum"], 255);
        assert_eq!(p["signed"]["minimum"], i32::MIN);
        assert_eq!(p["inner"]["$ref"], "#/$defs/Inner");
        assert!(p["inner"].get("anyOf").is_none(), "{}", p["inner"]);
        assert_eq!(s["$defs"]["Strict"]["additionalProperties"], false);
        assert!(s["$defs"]["Inner"].get("additionalProperties").is_none());
        assert_eq!(s["$defs"]["Inner"]["properties"]["a"]["maximum"], u32::MAX);
        assert!(jsonschema::draft202012::meta::validate(&s).is_ok());
        let v = jsonschema::draft202012::new(&s).unwrap();
        let ok = json!({"path": "a", "count": 3, "inner": {"a": 1}, "strict": {"b": "x"},
                        "small": 9, "signed": -4, "map": {"k": "v"}});
        assert!(v.is_valid(&ok));
        let mut extra = ok.clone();
        extra["zz"] = json!(1);
        assert!(!v.is_valid(&extra), "an undeclared field is refused");
        let mut nested = ok.clone();
        nested["strict"]["zz"] = json!(1);
        assert!(
            !v.is_valid(&nested),
            "a deny_unknown_fields type refuses too"
        );
        let mut big = ok;
        big["small"] = json!(256);
        assert!(!v.is_valid(&big));
    }

    #[test]
    fn an_empty_object_lists_no_properties_and_takes_none() {
        let s = of::<Empty>(Side::Request { strict: true });
        assert_eq!(s["properties"], json!({}));
        assert_eq!(s["additionalProperties"], false);
        let r = of::<Empty>(Side::Request { strict: false });
        assert!(r.get("additionalProperties").is_none());
    }
}
