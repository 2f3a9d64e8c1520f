//! Kyverno `match` / `exclude` as `ManifestPolicy` selections (kinds, names, namespaces).

use super::conversion::refuse;
use crate::policy::Location;
use crate::policy::PolicyError;
use crate::policy::kyverno::Rule;
use crate::policy::selector::{MatchResources, ResourceDescription, ResourceFilter};
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

pub(super) fn no_user_conditions(
    subjects: bool,
    roles: bool,
    cluster_roles: bool,
    at: &Location,
) -> Result<(), PolicyError> {
    for (name, present) in [
        ("subjects", subjects),
        ("roles", roles),
        ("clusterRoles", cluster_roles),
    ] {
        if present {
            return Err(refuse(
                &at.at(name),
                "a ManifestPolicy has no conditions on the requesting user",
            ));
        }
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
    no_user_conditions(
        !m.subjects.is_empty(),
        !m.roles.is_empty(),
        !m.cluster_roles.is_empty(),
        &at,
    )?;
    if m.all.len() > 1 {
        return Err(refuse(
            &at.at("all"),
            "several `all` filters must all hold; a ManifestPolicy has one selection",
        ));
    }
    if !m.all.is_empty() && !m.any.is_empty() {
        return Err(refuse(&at, "both `any` and `all`"));
    }
    let mut items: Vec<(Location, Option<&ResourceDescription>)> = filters(m, &at)
        .into_iter()
        .map(|(l, f)| {
            no_user_conditions(
                !f.subjects.is_empty(),
                !f.roles.is_empty(),
                !f.cluster_roles.is_empty(),
                &l,
            )
            .map(|()| (l.at("resources"), f.resources.as_ref()))
        })
        .collect::<Result<_, _>>()?;
    if let Some(r) = &m.resources {
        items.push((at.at("resources"), Some(r)));
    }
    let mut out = Vec::new();
    for (l, r) in items {
        let mut sel = match r {
            Some(r) => selection(r, &l, true, notes)?,
            None => Map::new(),
        };
        if let Some(ns) = namespace {
            // A namespaced Policy: its objects are in its namespace.
            match sel.get("namespaces") {
                None => {
                    sel.insert("namespaces".into(), json!([ns]));
                }
                Some(list) if list == &json!([ns]) => {}
                Some(_) => {
                    return Err(refuse(
                        &l.at("namespaces"),
                        "namespaces in a namespaced Policy; list only the policy's namespace",
                    ));
                }
            }
        }
        out.push(Value::Object(sel));
    }
    Ok(out)
}

/// `exclude` as one selection (an exclusion with several alternatives cannot be said).
pub(super) fn exclude_selection(rule: &Rule, at: &Location) -> Result<Option<Value>, PolicyError> {
    let at = at.at("exclude");
    let Some(m) = &rule.exclude else {
        return Ok(None);
    };
    no_user_conditions(
        !m.subjects.is_empty(),
        !m.roles.is_empty(),
        !m.cluster_roles.is_empty(),
        &at,
    )?;
    let mut items: Vec<(Location, &ResourceDescription)> = Vec::new();
    for (l, f) in filters(m, &at) {
        no_user_conditions(
            !f.subjects.is_empty(),
            !f.roles.is_empty(),
            !f.cluster_roles.is_empty(),
            &l,
        )?;
        if let Some(r) = &f.resources {
            items.push((l.at("resources"), r));
        }
    }
    if let Some(r) = &m.resources {
        items.push((at.at("resources"), r));
    }
    match items.as_slice() {
        [] => Ok(None),
        [(l, r)] => Ok(Some(Value::Object(selection(
            r,
            l,
            false,
            &mut Vec::new(),
        )?))),
        _ => Err(refuse(
            &at,
            "several exclude filters; a ManifestPolicy has one exclude selection",
        )),
    }
}
