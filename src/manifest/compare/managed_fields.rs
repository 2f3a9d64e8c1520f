//! Who set a field: reading an object's `metadata.managedFields`.
//!
//! The API server's field manager records, per manager (and per subresource), the fields
//! the manager's requests set (`fieldsV1`, the structured-merge-diff field set: `f:<key>`
//! for a map key, `k:{...}` for a list item by its merge keys, `v:<json>` for a set item,
//! `i:<n>` for an item by position). It computes the entries from what each request sent,
//! before the registry allocates or keeps anything (k8s.io/apiserver v0.34.4
//! `pkg/endpoints/handlers/create.go`/`update.go`/`patch.go` run it before
//! `rest.Create`/`Update`), so a value the API server wrote itself is owned by no manager,
//! and a value a client sent is owned by that client's manager.
//!
//! The tolerances use this to tell an allocated Service address from a client's choice
//! (owned by no manager) and a replica count an autoscaler set through the `scale`
//! subresource from one a client wrote into the object (`tolerance.rs`).

use super::diff::Step;
use serde_json::Value;

/// The `managedFields` entries of `object` that own the field at `path` or anything below
/// it; `None` when the object has no entry with `fieldsV1` to tell (`kubectl get` strips
/// them, and a client can clear them).
pub(crate) fn owners<'v>(object: &'v Value, path: &[Step<'_>]) -> Option<Vec<&'v Value>> {
    let entries: Vec<&Value> = object
        .get("metadata")?
        .get("managedFields")?
        .as_array()?
        .iter()
        .filter(|e| e.get("fieldsV1").is_some_and(Value::is_object))
        .collect();
    if entries.is_empty() {
        return None;
    }
    Some(
        entries
            .into_iter()
            .filter(|e| e.get("fieldsV1").is_some_and(|f| owns(f, object, path)))
            .collect(),
    )
}

/// The subresource an entry's writes went through (`scale`, `status`), `""` for the main
/// resource.
pub(crate) fn subresource(entry: &Value) -> &str {
    entry
        .get("subresource")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// True if the field set `fields` holds `path` of `object` (a list item is found by its
/// merge keys, its value or its position, read from the item `object` holds there).
fn owns(fields: &Value, object: &Value, path: &[Step<'_>]) -> bool {
    let (mut set, mut value) = (fields, object);
    for step in path {
        let (next_set, next_value) = match step {
            Step::Key(k) => (set.get(format!("f:{k}")), value.get(*k)),
            Step::Index(i) => {
                let Some(item) = value.get(*i) else {
                    return false;
                };
                (item_set(set, item, *i), Some(item))
            }
        };
        match (next_set, next_value) {
            (Some(s), Some(v)) => (set, value) = (s, v),
            _ => return false,
        }
    }
    true
}

/// The field set of list item `item` (at position `index`) in the list's field set `set`.
fn item_set<'s>(set: &'s Value, item: &Value, index: usize) -> Option<&'s Value> {
    let map = set.as_object()?;
    map.iter().find_map(|(key, child)| {
        let found = if let Some(keys) = key.strip_prefix("k:") {
            // `k:{"port":80,"protocol":"TCP"}`: every merge key has the item's value.
            serde_json::from_str::<serde_json::Map<String, Value>>(keys)
                .ok()
                .is_some_and(|keys| {
                    !keys.is_empty() && keys.iter().all(|(k, v)| item.get(k) == Some(v))
                })
        } else if let Some(v) = key.strip_prefix("v:") {
            serde_json::from_str::<Value>(v).ok().as_ref() == Some(item)
        } else if let Some(i) = key.strip_prefix("i:") {
            i.parse::<usize>().ok() == Some(index)
        } else {
            false
        };
        found.then_some(child)
    })
}

/// The places of `object` that hold `value` at `path`, a list index read as "any item" (a
/// value the registry keeps across an update may sit at another position: node ports are
/// kept by port name, `pkg/registry/core/service/storage/storage.go` `patchAllocatedValues`).
pub(crate) fn places_holding<'p>(
    object: &Value,
    path: &[Step<'p>],
    value: &Value,
) -> Vec<Vec<Step<'p>>> {
    fn walk<'p>(
        at: &Value,
        rest: &[Step<'p>],
        prefix: &mut Vec<Step<'p>>,
        value: &Value,
        found: &mut Vec<Vec<Step<'p>>>,
    ) {
        let Some((step, rest)) = rest.split_first() else {
            if at == value {
                found.push(prefix.clone());
            }
            return;
        };
        match step {
            Step::Key(k) => {
                if let Some(next) = at.get(*k) {
                    prefix.push(*step);
                    walk(next, rest, prefix, value, found);
                    prefix.pop();
                }
            }
            Step::Index(_) => {
                for (i, next) in at.as_array().into_iter().flatten().enumerate() {
                    prefix.push(Step::Index(i));
                    walk(next, rest, prefix, value, found);
                    prefix.pop();
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(object, path, &mut Vec::new(), value, &mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(fields: Value) -> Value {
        json!({"metadata": {"managedFields": [
                {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": fields}]},
            "spec": {"clusterIP": "10.0.0.9", "ports": [
                {"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30080},
                {"name": "b", "port": 81, "protocol": "TCP", "nodePort": 30081}]}})
    }

    #[test]
    fn list_items_are_found_by_their_merge_keys() {
        let owned = service(json!({"f:spec": {"f:ports": {
            "k:{\"port\":81,\"protocol\":\"TCP\"}": {".": {}, "f:nodePort": {}}}}}));
        let path = |i| [Step::Key("spec"), Step::Key("ports"), Step::Index(i)];
        let node_port = |i| {
            let mut p = path(i).to_vec();
            p.push(Step::Key("nodePort"));
            p
        };
        assert_eq!(owners(&owned, &node_port(1)).unwrap().len(), 1);
        assert!(owners(&owned, &node_port(0)).unwrap().is_empty());
        assert!(
            owners(&owned, &[Step::Key("spec"), Step::Key("clusterIP")])
                .unwrap()
                .is_empty()
        );
        assert_eq!(owners(&owned, &[Step::Key("spec")]).unwrap().len(), 1);
    }

    #[test]
    fn an_object_without_field_sets_tells_nothing() {
        let mut object = service(json!({}));
        object["metadata"]["managedFields"] = json!([{"manager": "x"}]);
        assert!(owners(&object, &[Step::Key("spec")]).is_none());
        assert!(owners(&json!({"spec": {}}), &[Step::Key("spec")]).is_none());
    }

    #[test]
    fn places_holding_a_value_read_indexes_as_any_item() {
        let object = service(json!({}));
        let path = [
            Step::Key("spec"),
            Step::Key("ports"),
            Step::Index(0),
            Step::Key("nodePort"),
        ];
        let found = places_holding(&object, &path, &json!(30081));
        assert_eq!(
            found,
            [vec![
                Step::Key("spec"),
                Step::Key("ports"),
                Step::Index(1),
                Step::Key("nodePort")
            ]]
        );
        assert!(places_holding(&object, &path, &json!(1)).is_empty());
    }
}
