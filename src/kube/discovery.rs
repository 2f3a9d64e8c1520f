//! `KIND[/NAME]` as `kubectl get` reads it, resolved by API discovery (`/api`, `/apis`, each
//! group's preferred version's resource list), and the objects it names read through the
//! same [`KubeClient`] as every other read.
//!
//! A resource is matched by its plural, its singular, a short name or its kind,
//! case-insensitively, alone or qualified as `RESOURCE.GROUP` or `RESOURCE.VERSION.GROUP`
//! (kubectl tries those forms in the order version-group, group, plain; so does this). One
//! difference on purpose: when a plain name matches resources in several groups, kubectl
//! takes the first by discovery order; mansign takes the core group's when one is there
//! (as kubectl does for `events`) and otherwise refuses, naming the candidates, so which
//! objects are verified never depends on the order a server lists its groups in.
//!
//! A list's items come without `apiVersion` and `kind` (the API server writes them once, on
//! the list); they are filled in from the resource, as kubectl does before it prints them.

use super::client::segment;
use super::{KubeClient, KubeError};
use serde_json::Value;

/// A resource the API server serves, as discovery describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiResource {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    /// The resource's URL name (`configmaps`).
    pub plural: String,
    pub kind: String,
    pub namespaced: bool,
}

/// Which objects of a namespaced resource to read (cluster-scoped resources ignore it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    AllNamespaces,
}

impl ApiResource {
    /// `v1`, `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `configmaps`, `deployments.apps`.
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The URL path of the objects `scope` and `name` select.
    pub fn path(&self, scope: &Scope, name: Option<&str>) -> Result<String, KubeError> {
        let mut path = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        if self.namespaced {
            match scope {
                Scope::Namespace(ns) => {
                    segment("namespace", ns)?;
                    path.push_str(&format!("/namespaces/{ns}"));
                }
                Scope::AllNamespaces if name.is_some() => {
                    return Err(KubeError::Resource(
                        "a resource cannot be read by name across all namespaces".into(),
                    ));
                }
                Scope::AllNamespaces => {}
            }
        }
        path.push('/');
        path.push_str(&self.plural);
        if let Some(name) = name {
            object_name(name)?;
            path.push('/');
            path.push_str(name);
        }
        Ok(path)
    }

    /// Sets `apiVersion` and `kind` on an object that has none (a list's item).
    fn fill_type(&self, object: &mut Value) {
        if let Some(map) = object.as_object_mut() {
            map.entry("apiVersion")
                .or_insert_with(|| Value::String(self.api_version()));
            map.entry("kind")
                .or_insert_with(|| Value::String(self.kind.clone()));
        }
    }
}

/// An object name as a URL path segment: the characters Kubernetes names use (RBAC names
/// carry `:`), nothing that changes the path.
fn object_name(name: &str) -> Result<(), KubeError> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '@'));
    if ok {
        Ok(())
    } else {
        Err(KubeError::Resource(format!(
            "name {name:?} is not a Kubernetes object name"
        )))
    }
}

/// One way to read `KIND`: the resource and, when qualified, the group and version.
#[derive(Debug, PartialEq, Eq)]
struct Reading<'a> {
    resource: &'a str,
    group: Option<&'a str>,
    version: Option<&'a str>,
}

/// The readings of `text` (lowercase), in kubectl's order.
fn readings(text: &str) -> Vec<Reading<'_>> {
    let mut out = Vec::new();
    if let Some((resource, rest)) = text.split_once('.') {
        if let Some((version, group)) = rest.split_once('.') {
            out.push(Reading {
                resource,
                group: Some(group),
                version: Some(version),
            });
        }
        out.push(Reading {
            resource,
            group: Some(rest),
            version: None,
        });
    }
    out.push(Reading {
        resource: text,
        group: None,
        version: None,
    });
    out
}

/// One entry of a discovery resource list, and whether `name` names it.
fn names(entry: &Value, name: &str) -> bool {
    let text = |f: &str| entry.get(f).and_then(Value::as_str).unwrap_or_default();
    text("name") == name
        || text("singularName") == name
        || text("kind").eq_ignore_ascii_case(name)
        || entry
            .get("shortNames")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().any(|n| n.as_str() == Some(name)))
}

/// The resources of one group version's list (subresources such as `pods/log` left out).
fn resources(group: &str, version: &str, list: &Value) -> Vec<(ApiResource, Value)> {
    let Some(entries) = list.get("resources").and_then(Value::as_array) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let plural = e.get("name").and_then(Value::as_str)?;
            if plural.contains('/') {
                return None;
            }
            let verbs = e.get("verbs").and_then(Value::as_array);
            // Only what can be read (a resource without `get` or `list` is not an object
            // store, e.g. `tokenreviews`).
            if verbs.is_some_and(|v| !v.iter().any(|v| v == "get" || v == "list")) {
                return None;
            }
            Some((
                ApiResource {
                    group: group.to_string(),
                    version: version.to_string(),
                    plural: plural.to_string(),
                    kind: e.get("kind").and_then(Value::as_str)?.to_string(),
                    namespaced: e.get("namespaced").and_then(Value::as_bool)?,
                },
                e.clone(),
            ))
        })
        .collect()
}

/// Picks the resource `text` names among `served` (each with its discovery entry).
fn pick(text: &str, served: &[(ApiResource, Value)]) -> Result<ApiResource, KubeError> {
    let lower = text.to_ascii_lowercase();
    for reading in readings(&lower) {
        let mut found: Vec<&ApiResource> = served
            .iter()
            .filter(|(r, entry)| {
                names(entry, reading.resource)
                    && reading.group.is_none_or(|g| r.group == g)
                    && reading.version.is_none_or(|v| r.version == v)
            })
            .map(|(r, _)| r)
            .collect();
        found.dedup_by(|a, b| a.group == b.group && a.plural == b.plural);
        match found.as_slice() {
            [] => continue,
            [one] => return Ok((*one).clone()),
            several => {
                let core: Vec<&&ApiResource> =
                    several.iter().filter(|r| r.group.is_empty()).collect();
                if let [one] = core.as_slice() {
                    return Ok((**one).clone());
                }
                let mut names: Vec<String> = several.iter().map(|r| r.qualified_name()).collect();
                names.sort();
                names.dedup();
                return Err(KubeError::Resource(format!(
                    "{text:?} is ambiguous: the server has {}; name one with its group",
                    names.join(", ")
                )));
            }
        }
    }
    Err(KubeError::Resource(format!(
        "the server doesn't have a resource type {text:?}"
    )))
}

impl KubeClient {
    /// The resource `text` (`configmaps`, `deploy`, `Deployment`, `deployments.apps`,
    /// `policyexceptions.kyverno.io`) names, by API discovery; every discovery answer at
    /// most `limit` bytes.
    ///
    /// What `verify-resource` reads, from a Rust caller:
    ///
    /// ```no_run
    /// use mansign::kube::{ClusterAccess, KubeClient, Scope};
    /// # async fn read() -> Result<(), Box<dyn std::error::Error>> {
    /// let limits = mansign::Limits::default();
    /// // The current context of $KUBECONFIG (exec plugins, proxies and all).
    /// let config = ClusterAccess::default().config(&limits)?;
    /// let client = KubeClient::new(&config, &limits)?;
    /// let deployments = client.resolve("deploy", limits.max_document_bytes).await?;
    /// let scope = Scope::Namespace("prod".into());
    /// let (path, objects) = client
    ///     .read_objects(&deployments, &scope, None, limits.max_input_bytes)
    ///     .await?;
    /// println!("{path}: {} objects, each with apiVersion and kind", objects.len());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn resolve(&self, text: &str, limit: usize) -> Result<ApiResource, KubeError> {
        let lower = text.to_ascii_lowercase();
        let mut served = Vec::new();
        let (core, _) = self.get_json("/api", &[], limit).await?;
        for version in core
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let (list, _) = self
                .get_json(&format!("/api/{version}"), &[], limit)
                .await?;
            served.extend(resources("", version, &list));
        }
        let (groups, _) = self.get_json("/apis", &[], limit).await?;
        for group in groups
            .get("groups")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = group.get("name").and_then(Value::as_str) else {
                continue;
            };
            let versions: Vec<&str> = group
                .get("versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.get("version").and_then(Value::as_str))
                .collect();
            let preferred = group
                .get("preferredVersion")
                .and_then(|p| p.get("version"))
                .and_then(Value::as_str)
                .or(versions.first().copied());
            // The preferred version, and a version the text names explicitly.
            let mut wanted: Vec<&str> = preferred.into_iter().collect();
            for r in readings(&lower) {
                if let (Some(v), Some(g)) = (r.version, r.group)
                    && g == name
                    && versions.contains(&v)
                    && !wanted.contains(&v)
                {
                    wanted.push(v);
                }
            }
            for version in wanted {
                match self
                    .get_json(&format!("/apis/{name}/{version}"), &[], limit)
                    .await
                {
                    Ok((list, _)) => served.extend(resources(name, version, &list)),
                    // An aggregated API that is down (503) does not hide the others;
                    // kubectl warns and goes on too.
                    Err(KubeError::Status { code: 503, .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        pick(text, &served)
    }

    /// The objects of `resource` that `scope` and `name` select, each with its
    /// `apiVersion` and `kind`, and the URL path read; every answer together at most
    /// `limit` bytes. A named object that does not exist is an error naming it.
    pub async fn read_objects(
        &self,
        resource: &ApiResource,
        scope: &Scope,
        name: Option<&str>,
        limit: usize,
    ) -> Result<(String, Vec<Value>), KubeError> {
        let path = resource.path(scope, name)?;
        if let Some(name) = name {
            let mut object = match self.get_json(&path, &[], limit).await {
                Ok((o, _)) => o,
                Err(KubeError::Status { code: 404, .. }) => {
                    return Err(KubeError::Resource(format!(
                        "{} {name:?} not found",
                        resource.qualified_name()
                    )));
                }
                Err(e) => return Err(e),
            };
            resource.fill_type(&mut object);
            return Ok((path, vec![object]));
        }
        // Pages of 500, as kubectl asks for them; the limit counts every page.
        let mut items = Vec::new();
        let mut left = limit;
        let mut next: Option<String> = None;
        loop {
            let mut query = vec![("limit", "500")];
            if let Some(token) = next.as_deref() {
                query.push(("continue", token));
            }
            let (mut page, size) =
                self.get_json(&path, &query, left)
                    .await
                    .map_err(|e| match e {
                        KubeError::TooLarge { .. } => KubeError::TooLarge { limit },
                        e => e,
                    })?;
            left = left.saturating_sub(size);
            let Some(Value::Array(page_items)) = page.get_mut("items").map(Value::take) else {
                return Err(KubeError::Malformed(format!(
                    "{path}: a list without items"
                )));
            };
            for mut item in page_items {
                resource.fill_type(&mut item);
                items.push(item);
            }
            next = page
                .get("metadata")
                .and_then(|m| m.get("continue"))
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_string);
            if next.is_none() {
                return Ok((path, items));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn served() -> Vec<(ApiResource, Value)> {
        let core = json!({"resources": [
            {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
             "verbs": ["get", "list"], "shortNames": ["cm"]},
            {"name": "events", "singularName": "event", "namespaced": true, "kind": "Event",
             "verbs": ["get", "list"], "shortNames": ["ev"]},
            {"name": "namespaces", "singularName": "", "namespaced": false, "kind": "Namespace",
             "verbs": ["get", "list"], "shortNames": ["ns"]},
            {"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]}
        ]});
        let apps = json!({"resources": [
            {"name": "deployments", "singularName": "deployment", "namespaced": true,
             "kind": "Deployment", "verbs": ["get", "list"], "shortNames": ["deploy"]}
        ]});
        let events = json!({"resources": [
            {"name": "events", "singularName": "event", "namespaced": true, "kind": "Event",
             "verbs": ["get", "list"], "shortNames": ["ev"]}
        ]});
        let kyverno = |g: &str| {
            resources(
                g,
                "v2",
                &json!({"resources": [
                    {"name": "policyexceptions", "singularName": "policyexception", "namespaced": true,
                     "kind": "PolicyException", "verbs": ["get", "list"], "shortNames": ["polex"]}
                ]}),
            )
        };
        let mut all = resources("", "v1", &core);
        all.extend(resources("apps", "v1", &apps));
        all.extend(resources("events.k8s.io", "v1", &events));
        all.extend(kyverno("kyverno.io"));
        all.extend(kyverno("policies.kyverno.io"));
        all
    }

    #[test]
    fn kinds_are_matched_by_plural_singular_short_name_and_kind() {
        let s = served();
        for text in [
            "deployments",
            "deployment",
            "deploy",
            "Deployment",
            "DEPLOYMENTS",
            "deployments.apps",
            "deployment.v1.apps",
        ] {
            let r = pick(text, &s).unwrap();
            assert_eq!(
                (r.group.as_str(), r.plural.as_str()),
                ("apps", "deployments")
            );
        }
        let r = pick("ns", &s).unwrap();
        assert!(!r.namespaced);
        assert_eq!(r.api_version(), "v1");
        assert_eq!(
            r.path(&Scope::Namespace("x".into()), Some("team-a"))
                .unwrap(),
            "/api/v1/namespaces/team-a"
        );
        let r = pick("cm", &s).unwrap();
        assert_eq!(
            r.path(&Scope::Namespace("team-a".into()), None).unwrap(),
            "/api/v1/namespaces/team-a/configmaps"
        );
        assert_eq!(
            r.path(&Scope::AllNamespaces, None).unwrap(),
            "/api/v1/configmaps"
        );
        assert!(r.path(&Scope::AllNamespaces, Some("a")).is_err());
        assert!(r.path(&Scope::Namespace("a".into()), Some("../x")).is_err());
        assert!(pick("pods/log", &s).is_err());
    }

    #[test]
    fn the_core_group_wins_and_other_ties_are_ambiguous() {
        let s = served();
        assert_eq!(pick("events", &s).unwrap().group, "");
        assert_eq!(
            pick("events.events.k8s.io", &s).unwrap().group,
            "events.k8s.io"
        );
        let e = pick("polex", &s).unwrap_err().to_string();
        assert!(
            e.contains("ambiguous")
                && e.contains("policyexceptions.kyverno.io, policyexceptions.policies.kyverno.io"),
            "{e}"
        );
        assert_eq!(
            pick("policyexceptions.kyverno.io", &s).unwrap().group,
            "kyverno.io"
        );
        let e = pick("widgets", &s).unwrap_err().to_string();
        assert!(
            e.contains("doesn't have a resource type \"widgets\""),
            "{e}"
        );
    }

    #[test]
    fn list_items_get_their_type() {
        let r = pick("deploy", &served()).unwrap();
        let mut item = json!({"metadata": {"name": "web"}});
        r.fill_type(&mut item);
        assert_eq!(item["apiVersion"], "apps/v1");
        assert_eq!(item["kind"], "Deployment");
    }
}
