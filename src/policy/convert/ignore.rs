//! Upstream ignore-field bindings (Kyverno, kubectl-sigstore) as `ManifestPolicy` ones.

use crate::policy::kyverno::IgnoreFieldsSpec;
use crate::policy::selector::ObjectReference;
use crate::policy::{Location, PolicyError, translate_upstream_field};
use serde_json::{Map, Value, json};

pub(super) fn object_reference(o: &ObjectReference) -> Value {
    let mut m = Map::new();
    for (key, value) in [
        ("group", &o.group),
        ("version", &o.version),
        ("kind", &o.kind),
        ("name", &o.name),
        ("namespace", &o.namespace),
    ] {
        if !value.is_empty() {
            m.insert(key.into(), json!(value));
        }
    }
    Value::Object(m)
}

/// Upstream ignore-field bindings as mansign's (anchored patterns, objects as they are).
pub(super) fn ignore_fields(
    bindings: &[IgnoreFieldsSpec],
    at: &Location,
) -> Result<Value, PolicyError> {
    let name = at.field.rsplit('.').next().unwrap_or_default().to_string();
    let parent = Location {
        field: at
            .field
            .strip_suffix(&name)
            .map(|p| p.trim_end_matches('.').to_string())
            .unwrap_or_default(),
        ..at.clone()
    };
    let mut ignore = Vec::new();
    for (i, binding) in bindings.iter().enumerate() {
        let mut fields = Vec::new();
        for (j, field) in binding.fields.iter().enumerate() {
            let field_at = parent.at(format!("{name}[{i}].fields[{j}]"));
            let patterns = translate_upstream_field(field).map_err(|e| PolicyError::Invalid {
                at: field_at,
                reason: e.to_string(),
            })?;
            fields.extend(patterns.iter().map(|p| json!(p.to_string())));
        }
        let mut b = Map::new();
        if !binding.objects.is_empty() {
            b.insert(
                "objects".into(),
                Value::Array(binding.objects.iter().map(object_reference).collect()),
            );
        }
        b.insert("fields".into(), Value::Array(fields));
        ignore.push(Value::Object(b));
    }
    Ok(Value::Array(ignore))
}
