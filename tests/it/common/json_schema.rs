//! A JSON Schema (draft 2020-12) validator for the subset of keywords the schemas in
//! `docs/schema/` use: `type`, `enum`, `const`, `properties`, `required`,
//! `additionalProperties`, `items`, `maxItems`, `minimum`, `pattern`, `oneOf` and local
//! `$ref`s (`#/$defs/NAME`). A keyword outside the subset fails the validation, so a
//! schema cannot say more than the tests check.

use serde_json::Value;

/// Annotations and identifiers: no effect on validity.
const IGNORED: [&str; 6] = [
    "$schema",
    "$id",
    "$defs",
    "title",
    "description",
    "$comment",
];

/// Every way `instance` breaks `schema`, as `PATH: what` (empty when it is valid).
pub fn errors(schema: &Value, instance: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, schema, instance, "$", &mut out);
    out
}

/// Panics naming every error (and `what`) unless `instance` is valid.
pub fn assert_valid(schema: &Value, instance: &Value, what: &str) {
    let e = errors(schema, instance);
    assert!(
        e.is_empty(),
        "{what}: output does not match the schema:\n{}\n{instance:#}",
        e.join("\n")
    );
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        other => panic!("schema: unknown type {other:?}"),
    }
}

fn resolve<'a>(root: &'a Value, reference: &str) -> &'a Value {
    let name = reference.strip_prefix("#/$defs/").unwrap_or_else(|| {
        panic!("schema: only #/$defs/NAME references are supported, not {reference:?}")
    });
    root["$defs"]
        .get(name)
        .unwrap_or_else(|| panic!("schema: {reference} is not defined"))
}

fn check(root: &Value, schema: &Value, v: &Value, path: &str, out: &mut Vec<String>) {
    let Some(keywords) = schema.as_object() else {
        match schema {
            Value::Bool(true) => {}
            Value::Bool(false) => out.push(format!("{path}: not allowed")),
            other => panic!("schema: not a schema: {other}"),
        }
        return;
    };
    for (keyword, arg) in keywords {
        match keyword.as_str() {
            k if IGNORED.contains(&k) => {}
            "$ref" => check(root, resolve(root, arg.as_str().unwrap()), v, path, out),
            "type" => {
                let names: Vec<&str> = match arg {
                    Value::String(s) => vec![s.as_str()],
                    Value::Array(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                    other => panic!("schema: bad type {other}"),
                };
                if !names.iter().any(|n| type_matches(n, v)) {
                    out.push(format!("{path}: {v} is not of type {names:?}"));
                }
            }
            "enum" => {
                if !arg.as_array().unwrap().contains(v) {
                    out.push(format!("{path}: {v} is not one of {arg}"));
                }
            }
            "const" => {
                if arg != v {
                    out.push(format!("{path}: {v} is not {arg}"));
                }
            }
            "required" => {
                if let Some(obj) = v.as_object() {
                    for name in arg.as_array().unwrap() {
                        let name = name.as_str().unwrap();
                        if !obj.contains_key(name) {
                            out.push(format!("{path}: `{name}` is missing"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(obj) = v.as_object() {
                    for (name, sub) in arg.as_object().unwrap() {
                        if let Some(field) = obj.get(name) {
                            check(root, sub, field, &format!("{path}.{name}"), out);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Some(obj) = v.as_object() {
                    let known = keywords.get("properties").and_then(Value::as_object);
                    for (name, field) in obj {
                        if known.is_some_and(|k| k.contains_key(name)) {
                            continue;
                        }
                        match arg {
                            Value::Bool(false) => {
                                out.push(format!("{path}: `{name}` is not in the schema"))
                            }
                            sub => check(root, sub, field, &format!("{path}.{name}"), out),
                        }
                    }
                }
            }
            "items" => {
                if let Some(items) = v.as_array() {
                    for (i, item) in items.iter().enumerate() {
                        check(root, arg, item, &format!("{path}[{i}]"), out);
                    }
                }
            }
            "maxItems" => {
                if let Some(items) = v.as_array()
                    && items.len() as u64 > arg.as_u64().unwrap()
                {
                    out.push(format!("{path}: more than {arg} items"));
                }
            }
            "minimum" => {
                if let Some(n) = v.as_f64()
                    && n < arg.as_f64().unwrap()
                {
                    out.push(format!("{path}: {v} is less than {arg}"));
                }
            }
            "pattern" => {
                if let Some(s) = v.as_str()
                    && !regex::Regex::new(arg.as_str().unwrap())
                        .unwrap()
                        .is_match(s)
                {
                    out.push(format!("{path}: {s:?} does not match {arg}"));
                }
            }
            "oneOf" => {
                let failures: Vec<Vec<String>> = arg
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|sub| {
                        let mut e = Vec::new();
                        check(root, sub, v, path, &mut e);
                        e
                    })
                    .collect();
                let passing = failures.iter().filter(|e| e.is_empty()).count();
                if passing != 1 {
                    out.push(format!(
                        "{path}: matches {passing} of the oneOf alternatives, not one: {}",
                        failures
                            .iter()
                            .map(|e| e.join("; "))
                            .collect::<Vec<_>>()
                            .join(" | ")
                    ));
                }
            }
            other => panic!("schema: keyword {other:?} is outside the validator's subset"),
        }
    }
}
