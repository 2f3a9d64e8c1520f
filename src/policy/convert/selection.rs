//! Kyverno `match` / `exclude` as `ManifestPolicy` selections (kinds, names, namespaces).

use super::conversion::refuse;
use crate::policy::Location;
use crate::policy::PolicyError;
use crate::policy::kyverno::Rule;
use crate::policy::selector::{MatchResources, ResourceDescription, ResourceFilter, Subject};
use serde_json::{Map, Value, json};

/// The resource filters of a match/exclude block, each with its field path.
pub(super) fn filters<'m>(
    m: &'m MatchResources,
    at: &Location,
) -> Vec<(Location, &'m ResourceFilter)> {
    let mut out: Vec<(Location, &ResourceFilter)> = Vec::new();
    for (i, f) in m.any.iter().enumerate() {
        out.push((at.at(format!("any[{i}]")), f));
    }
    for (i, f) in m.all.iter().enumerate() {
        out.push((at.at(format!("all[{i}]")), f));
    }
    out
}

/// The selection of each filter of a block, as `each` makes it (`None`: left out): the
/// `any`/`all` items, then the inline (legacy) filter when it has resources or, with
/// `legacy_users`, conditions on the requesting user.
fn each_selection(
    m: &MatchResources,
    at: &Location,
    legacy_users: bool,
    in_match: bool,
    notes: &mut Vec<String>,
    mut each: impl FnMut(&Location, Map<String, Value>) -> Result<Option<Value>, PolicyError>,
) -> Result<Vec<Value>, PolicyError> {
    let legacy = m.legacy();
    let mut items: Vec<(Location, &ResourceFilter)> = filters(m, at);
    if m.resources.is_some() || legacy_users {
        items.push((at.clone(), &legacy));
    }
    let mut out = Vec::new();
    for (l, f) in items {
        let mut sel = match &f.resources {
            Some(r) => selection(r, &l.at("resources"), in_match, notes)?,
            None => Map::new(),
        };
        user_conditions(
            &mut sel,
            &f.subjects,
            &f.roles,
            &f.cluster_roles,
            &l,
            in_match,
            notes,
        )?;
        out.extend(each(&l, sel)?);
    }
    Ok(out)
}

/// A resource description as a `ManifestPolicy` selection; `drop_operations` says whether
/// `operations` may be left out (in `match` it only makes the rule apply more often).
pub(super) fn selection(
    r: &ResourceDescription,
    at: &Location,
    drop_operations: bool,
    notes: &mut Vec<String>,
) -> Result<Map<String, Value>, PolicyError> {
    if r.annotations.is_some() {
        return Err(refuse(
            &at.at("annotations"),
            "a ManifestPolicy selects by kinds, names and namespaces only",
        ));
    }
    if !r.operations.is_empty() {
        if !drop_operations {
            return Err(refuse(
                &at.at("operations"),
                "a ManifestPolicy cannot exclude by operation (dropping it would exclude more \
                 objects)",
            ));
        }
        notes.push(format!(
            "{}: dropped: the converted rule applies to every operation (it checks more, \
             never less)",
            at.at("operations")
        ));
    }
    let mut names = r.names.clone();
    names.extend(r.name.iter().cloned());
    let mut m = Map::new();
    for (key, list) in [
        ("kinds", &r.kinds),
        ("names", &names),
        ("namespaces", &r.namespaces),
    ] {
        if !list.is_empty() {
            m.insert(key.into(), json!(list));
        }
    }
    Ok(m)
}

/// The conditions of a filter on the requesting user, added to its selection: `subjects`
/// carried; `roles`/`clusterRoles` have no `ManifestPolicy` form (mansign does not resolve
/// roles). In `match` they are dropped with a note: the loader treats them as met when the
/// roles are unknown, which they always are, so the converted rule applies as the original
/// does. In `exclude` they are refused: dropping them would exclude more objects.
pub(super) fn user_conditions(
    selection: &mut Map<String, Value>,
    subjects: &[Subject],
    roles: &[String],
    cluster_roles: &[String],
    at: &Location,
    in_match: bool,
    notes: &mut Vec<String>,
) -> Result<(), PolicyError> {
    for (name, list) in [("roles", roles), ("clusterRoles", cluster_roles)] {
        if list.is_empty() {
            continue;
        }
        if !in_match {
            return Err(refuse(
                &at.at(name),
                "a ManifestPolicy cannot exclude by role (mansign does not resolve roles; \
                 dropping the condition would exclude more objects): name the users, groups \
                 or service accounts in subjects",
            ));
        }
        notes.push(format!(
            "{}: dropped: mansign does not resolve roles and the loader treats a condition on \
             them as met, so the converted rule applies as the original does",
            at.at(name)
        ));
    }
    if !subjects.is_empty() {
        let list: Vec<Value> = subjects
            .iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("kind".into(), json!(s.kind));
                m.insert("name".into(), json!(s.name));
                if let Some(ns) = &s.namespace {
                    m.insert("namespace".into(), json!(ns));
                }
                if let Some(group) = &s.api_group {
                    m.insert("apiGroup".into(), json!(group));
                }
                Value::Object(m)
            })
            .collect();
        selection.insert("subjects".into(), Value::Array(list));
    }
    Ok(())
}

/// `match` as one selection per alternative (`any` items are alternatives: each becomes
/// its own document with the same requirement, so an object any of them selects is checked).
pub(super) fn match_selections(
    rule: &Rule,
    at: &Location,
    namespace: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Vec<Value>, PolicyError> {
    let at = at.at("match");
    let Some(m) = &rule.match_resources else {
        return Err(refuse(&at, "a rule needs match"));
    };
    if m.all.len() > 1 {
        return Err(refuse(
            &at.at("all"),
            "several `all` filters must all hold; a ManifestPolicy has one selection",
        ));
    }
    if !m.all.is_empty() && !m.any.is_empty() {
        return Err(refuse(&at, "both `any` and `all`"));
    }
    let legacy_users = !m.subjects.is_empty() || !m.roles.is_empty() || !m.cluster_roles.is_empty();
    if legacy_users && (!m.any.is_empty() || !m.all.is_empty()) {
        return Err(refuse(
            &at,
            "conditions on the requesting user next to `any`/`all` must hold for every \
             alternative; write them in each filter",
        ));
    }
    each_selection(m, &at, legacy_users, true, notes, |l, mut sel| {
        if let Some(ns) = namespace {
            // A namespaced Policy: its objects are in its namespace.
            match sel.get("namespaces") {
                None => {
                    sel.insert("namespaces".into(), json!([ns]));
                }
                Some(list) if list == &json!([ns]) => {}
                Some(_) => {
                    return Err(refuse(
                        &l.at("resources.namespaces"),
                        "namespaces in a namespaced Policy; list only the policy's namespace",
                    ));
                }
            }
        }
        Ok(Some(Value::Object(sel)))
    })
}

/// `exclude` as a `ManifestPolicy` exclude: one selection, or a list of alternatives (any
/// one excludes, as Kyverno's `any`). Several `all` filters (every one must hold) have no
/// such form.
pub(super) fn exclude_selection(
    rule: &Rule,
    at: &Location,
    notes: &mut Vec<String>,
) -> Result<Option<Value>, PolicyError> {
    let at = at.at("exclude");
    let Some(m) = &rule.exclude else {
        return Ok(None);
    };
    if m.all.len() > 1 {
        return Err(refuse(
            &at.at("all"),
            "several `all` filters exclude only together; a ManifestPolicy's exclude \
             alternatives each exclude on their own",
        ));
    }
    let legacy_users = !m.subjects.is_empty() || !m.roles.is_empty() || !m.cluster_roles.is_empty();
    if (legacy_users || m.resources.is_some()) && (!m.any.is_empty() || !m.all.is_empty()) {
        return Err(refuse(
            &at,
            "an inline exclude next to `any`/`all` excludes only with them; write it as one \
             of the filters",
        ));
    }
    if !m.any.is_empty() && !m.all.is_empty() {
        return Err(refuse(&at, "both `any` and `all`"));
    }
    let mut out = each_selection(m, &at, legacy_users, false, notes, |_, sel| {
        // An empty filter excludes nothing in Kyverno (matchesResourceDescriptionExcludeHelper
        // skips it); an empty selection would exclude everything.
        Ok((!sel.is_empty()).then_some(Value::Object(sel)))
    })?;
    Ok(match out.len() {
        0 => None,
        1 => out.pop(),
        _ => Some(Value::Array(out)),
    })
}
