//! Which objects a rule applies to: Kyverno's `match`/`exclude` and the objects of
//! `ignoreFields` bindings.
//!
//! Offline (the CLI) there is no admission request: the operation and the requesting user
//! are unknown. A condition on them (`operations`, `subjects`, `roles`, `clusterRoles`)
//! then counts as **met in `match`** and **not met in `exclude`**, so a rule applies
//! whenever it could apply in the cluster: unknowns add checks, they never remove one
//! (a rule that is skipped offline could otherwise let an object pass that the cluster
//! would deny). The webhook passes the real request in a [`RequestContext`].

use crate::manifest::ObjectIdentity;
use serde::Deserialize;
use serde_json::Value;

/// What the admission request says about the object, beyond the object itself. The
/// default (offline) knows neither.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestContext {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`, when known.
    pub operation: Option<String>,
    /// The requesting user, when known.
    pub user: Option<UserInfo>,
    /// The namespace is the API server's (an admission request): an object without one is
    /// cluster-scoped, so a condition on namespaces is not met, rather than unknown as it
    /// is for a file that `kubectl apply -n` may put anywhere.
    pub namespace_known: bool,
    /// A kind pinned to a version (`kyverno.io/v2/PolicyException`) matches its group and
    /// kind in every version. The API server sends an object in the version the request
    /// used whenever the webhook is registered for it, so in admission a pinned version
    /// must not let the same object through in another version (the verification then
    /// compares `apiVersion` with the signed document).
    pub any_version: bool,
}

/// The requesting user (from `AdmissionRequest.userInfo`, roles as Kyverno resolves them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
    /// `namespace:name` of the Roles bound to the user; `None` when not resolved (an
    /// `AdmissionRequest` carries no roles, and mansign does not read RBAC): a condition on
    /// roles is then unknown, like any other unknown request fact.
    pub roles: Option<Vec<String>>,
    /// The ClusterRoles bound to the user; `None` when not resolved.
    pub cluster_roles: Option<Vec<String>>,
}

/// Wildcard match: `*` any run of characters, `?` one character (Kyverno's
/// `wildcard.Match`).
pub fn glob_match(pattern: &str, value: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let v: Vec<char> = value.chars().collect();
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    let (mut pi, mut vi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while vi < v.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == v[vi]) {
            pi += 1;
            vi += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, vi));
            pi += 1;
        } else if let Some((sp, sv)) = star {
            pi = sp + 1;
            vi = sv + 1;
            star = Some((sp, sv + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// k8s-manifest-sigstore's `MatchPattern` for `ignoreFields` objects: empty or `*` any;
/// `-` the empty value; `a,b` alternatives; otherwise a wildcard pattern.
fn object_pattern_match(pattern: &str, value: &str) -> bool {
    if pattern.is_empty() {
        return true;
    }
    pattern.split(',').any(|alt| {
        let alt = alt.trim();
        if alt == "-" {
            value.is_empty()
        } else {
            glob_match(alt, value)
        }
    })
}

/// One `objects` item of an ignore binding (Kyverno / kubectl-sigstore shape).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ObjectReference {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

impl ObjectReference {
    pub fn matches(&self, id: &ObjectIdentity) -> bool {
        object_pattern_match(&self.group, &id.group)
            && object_pattern_match(&self.version, &id.version)
            && object_pattern_match(&self.kind, &id.kind)
            && object_pattern_match(&self.name, &id.name)
            && object_pattern_match(&self.namespace, id.namespace.as_deref().unwrap_or(""))
    }
}

/// One `kinds` entry, read as Kyverno v1.19.0 reads it: `kubeutils.ParseKindSelector`
/// (kyverno/kyverno `pkg/utils/kube/kind.go`) splits the text at `/`, splits the last part
/// again at `.` (`Pod.status`), and then, by the number of parts:
///
/// | parts | reading |
/// |---|---|
/// | 1 | `Kind` (any group, any version) |
/// | 2 | `*/*` everything with its subresources; `*/sub` (lower case) subresource `sub` of every kind; `version/Kind` when the first part is a version (`v1`, `v2beta1`, `*`); else `Kind/subresource` |
/// | 3 | `version/Kind/subresource` when the first part is a version, else `group/version/Kind` |
/// | 4 | `group/version/Kind/subresource` |
///
/// and `match.CheckKind` (`pkg/utils/match/kind.go`) matches each part with
/// `wildcard.Match` (`*` any run, `?` one character, case-sensitive), the subresource part
/// against the request's subresource (empty for the object itself). mansign verifies
/// objects, so a selector applies when its subresource part matches the empty subresource:
/// none, `*` (`PolicyException/*`, `kyverno.io/*/PolicyException/*`, `v2/PolicyException/*`).
/// What Kyverno's engine would match only on a subresource request (`Pod/status`,
/// `*/scale`, `*/*/PolicyException`, read as kind `*` subresource `PolicyException`) or never
/// (five parts, `Kind.group.tld`) is refused by [`KindSelector::parse`]: a selector mansign
/// would silently never match is a rule that lets everything through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindSelector {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub subresource: String,
}

/// Why a `kinds` entry was refused ([`KindSelector::parse`]): how Kyverno reads it, and why
/// that reading selects no object mansign could verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KindSelectorError {
    #[error(
        "kind selector {text:?} has more than four parts; Kyverno matches nothing with it \
         (forms: Kind, Kind/subresource, Kind.subresource, version/Kind, group/version/Kind, \
         each with an optional /subresource)"
    )]
    TooManyParts { text: String },
    /// Kyverno reads `text` as `reading`, which `problem` says is of no use.
    #[error("{}", refusal(.text, .reading, *.problem))]
    MatchesNothing {
        text: String,
        reading: KindSelector,
        problem: KindSelectorProblem,
    },
}

/// What is wrong with Kyverno's reading of a `kinds` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KindSelectorProblem {
    /// The last part holds more than one `.`: Kyverno splits it at every one.
    DottedKind,
    /// The reading has an empty kind or version.
    EmptyKindOrVersion,
    /// The reading selects a subresource only, never the object.
    SubresourceOnly,
}

fn refusal(text: &str, reading: &KindSelector, problem: KindSelectorProblem) -> String {
    match problem {
        KindSelectorProblem::DottedKind => format!(
            "kind selector {text:?}: Kyverno splits its last part at every `.`, reading it \
             as {reading}, which matches nothing; to name a kind of a group, write \
             group/version/Kind (e.g. cert-manager.io/*/Certificate)"
        ),
        KindSelectorProblem::EmptyKindOrVersion => format!(
            "kind selector {text:?} is read as {reading}; an empty kind or version matches \
             nothing"
        ),
        KindSelectorProblem::SubresourceOnly => format!(
            "kind selector {text:?} is read by Kyverno as {reading}: it selects requests \
             to that subresource only, never the object itself, and mansign verifies \
             objects (a write through a subresource is handled by the webhook on its own \
             terms, docs/admission.md); select the object with {kind} or {kind}/* \
             (object and subresources)",
            kind = reading.kind
        ),
    }
}

/// Kyverno's `versionRegex` `^(v\d((alpha|beta)\d)?|\*)$`: one digit, as Kyverno has it
/// (`v10/Foo` is read as kind `v10`, subresource `Foo`).
fn kyverno_version_like(part: &str) -> bool {
    if part == "*" {
        return true;
    }
    let Some(rest) = part.strip_prefix('v') else {
        return false;
    };
    let mut chars = rest.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_digit()) {
        return false;
    }
    let tail = chars.as_str();
    if tail.is_empty() {
        return true;
    }
    let Some(after) = tail
        .strip_prefix("alpha")
        .or_else(|| tail.strip_prefix("beta"))
    else {
        return false;
    };
    after.len() == 1 && after.chars().all(|c| c.is_ascii_digit())
}

impl KindSelector {
    /// Kyverno's reading, without mansign's refusals (for messages and tests).
    pub fn kyverno_reading(text: &str) -> Option<KindSelector> {
        let mut parts: Vec<&str> = text.split('/').collect();
        let last = parts.pop().unwrap_or_default();
        parts.extend(last.split('.'));
        let s = |g: &str, v: &str, k: &str, sub: &str| {
            Some(KindSelector {
                group: g.into(),
                version: v.into(),
                kind: k.into(),
                subresource: sub.into(),
            })
        };
        match *parts.as_slice() {
            [kind] => s("*", "*", kind, ""),
            ["*", "*"] => s("*", "*", "*", "*"),
            ["*", sub] if sub.to_lowercase() == sub => s("*", "*", "*", sub),
            [version, kind] if kyverno_version_like(version) => s("*", version, kind, ""),
            [kind, sub] => s("*", "*", kind, sub),
            [version, kind, sub] if kyverno_version_like(version) => s("*", version, kind, sub),
            [group, version, kind] => s(group, version, kind, ""),
            [group, version, kind, sub] => s(group, version, kind, sub),
            _ => None,
        }
    }

    /// Reads a `kinds` entry; the error says how Kyverno reads it and why mansign refuses.
    pub fn parse(text: &str) -> Result<KindSelector, KindSelectorError> {
        let Some(reading) = KindSelector::kyverno_reading(text) else {
            return Err(KindSelectorError::TooManyParts { text: text.into() });
        };
        let refused = |problem| KindSelectorError::MatchesNothing {
            text: text.into(),
            reading: reading.clone(),
            problem,
        };
        let last = text.rsplit('/').next().unwrap_or_default();
        if last.matches('.').count() > 1 {
            return Err(refused(KindSelectorProblem::DottedKind));
        }
        if reading.kind.is_empty() || reading.version.is_empty() {
            return Err(refused(KindSelectorProblem::EmptyKindOrVersion));
        }
        if !glob_match(&reading.subresource, "") {
            return Err(refused(KindSelectorProblem::SubresourceOnly));
        }
        Ok(reading)
    }

    /// True if the object (the main resource, never a subresource) is selected. With
    /// `any_version` the version part is not consulted (see [`RequestContext::any_version`]).
    pub fn matches(&self, id: &ObjectIdentity, any_version: bool) -> bool {
        glob_match(&self.group, &id.group)
            && (any_version || glob_match(&self.version, &id.version))
            && glob_match(&self.kind, &id.kind)
            && glob_match(&self.subresource, "")
    }
}

impl std::fmt::Display for KindSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let part = |name: &str, v: &str| match v {
            "*" => format!("any {name}"),
            "" if name == "group" => "the core group".to_string(),
            "" => format!("no {name}"),
            v => format!("{name} {v:?}"),
        };
        write!(
            f,
            "kind {:?} ({}, {}",
            self.kind,
            part("group", &self.group),
            part("version", &self.version)
        )?;
        match self.subresource.as_str() {
            "" => write!(f, ", the object)"),
            sub if glob_match(sub, "") => write!(f, ", the object and its subresources)"),
            sub => write!(f, ", subresource {sub:?} only)"),
        }
    }
}

/// True if a `kinds` entry selects the object; an entry [`KindSelector::parse`] refuses
/// selects nothing (the loaders refuse it first).
fn kind_matches(pattern: &str, id: &ObjectIdentity, any_version: bool) -> bool {
    KindSelector::parse(pattern).is_ok_and(|s| s.matches(id, any_version))
}

/// `resources` of a Kyverno resource filter.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceDescription {
    pub kinds: Vec<String>,
    /// Deprecated single name.
    pub name: Option<String>,
    pub names: Vec<String>,
    pub namespaces: Vec<String>,
    pub annotations: Option<serde_json::Map<String, Value>>,
    pub operations: Vec<String>,
    /// Label selectors need the cluster (namespaces) or are not supported yet: a rule
    /// using them is refused when loaded.
    pub selector: Option<Value>,
    pub namespace_selector: Option<Value>,
}

/// A subject of a Kyverno filter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Subject {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub api_group: Option<String>,
}

/// One Kyverno resource filter (an item of `any`/`all`, or the legacy inline form).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceFilter {
    pub resources: Option<ResourceDescription>,
    pub subjects: Vec<Subject>,
    pub roles: Vec<String>,
    pub cluster_roles: Vec<String>,
}

/// Kyverno `match` / `exclude`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct MatchResources {
    pub any: Vec<ResourceFilter>,
    pub all: Vec<ResourceFilter>,
    pub resources: Option<ResourceDescription>,
    pub subjects: Vec<Subject>,
    pub roles: Vec<String>,
    pub cluster_roles: Vec<String>,
}

/// What a filter is matched against: the object, its identity, the request context, and
/// the value of a condition the context does not decide (see [`MatchResources::matches`]).
struct Candidate<'a> {
    object: &'a Value,
    id: &'a ObjectIdentity,
    ctx: &'a RequestContext,
    unknown: bool,
}

impl ResourceDescription {
    /// Field names (relative) that cannot be evaluated, for the loader to refuse.
    pub fn unsupported(&self) -> Option<&'static str> {
        if self.selector.is_some() {
            Some("selector")
        } else if self.namespace_selector.is_some() {
            Some("namespaceSelector")
        } else {
            None
        }
    }

    fn matches(&self, c: &Candidate<'_>) -> bool {
        let Candidate {
            object,
            id,
            ctx,
            unknown,
        } = *c;
        if !self.kinds.is_empty()
            && !self
                .kinds
                .iter()
                .any(|k| kind_matches(k, id, ctx.any_version))
        {
            return false;
        }
        let names: Vec<&String> = self.names.iter().chain(self.name.iter()).collect();
        if !names.is_empty() && !names.iter().any(|n| glob_match(n, &id.name)) {
            return false;
        }
        if !self.namespaces.is_empty() {
            // An object without a namespace may be applied into any namespace (`-n`):
            // unknown, like the request facts; in a request it is cluster-scoped.
            // A Namespace is matched by its own name (Kyverno `checkNameSpace`,
            // pkg/engine/utils/match.go): `namespaces: [prod-*]` selects Namespace prod-a.
            let own = (id.kind == "Namespace" && id.group.is_empty()).then_some(&id.name);
            let in_namespaces = own
                .or(id.namespace.as_ref())
                .map_or(unknown && !ctx.namespace_known, |ns| {
                    self.namespaces.iter().any(|n| glob_match(n, ns))
                });
            if !in_namespaces {
                return false;
            }
        }
        if !self.operations.is_empty()
            && !ctx.operation.as_ref().map_or(unknown, |op| {
                self.operations.iter().any(|o| o.eq_ignore_ascii_case(op))
            })
        {
            return false;
        }
        if let Some(want) = &self.annotations {
            let have = object
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_object);
            // Kyverno: every wanted key/value pair (both wildcards) matches some annotation.
            for (key, pattern) in want {
                let pattern = pattern.as_str().unwrap_or_default();
                let found = have.is_some_and(|h| {
                    h.iter().any(|(k, v)| {
                        glob_match(key, k) && v.as_str().is_some_and(|v| glob_match(pattern, v))
                    })
                });
                if !found {
                    return false;
                }
            }
        }
        // Unsupported selectors are refused at load time; never reached with one set.
        self.unsupported().is_none()
    }
}

impl Subject {
    /// The load-time check: a subject mansign can evaluate against a request's user.
    /// `Err((field, reason))`, the field relative to the subject (`.kind`, `.namespace`).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !matches!(self.kind.as_str(), "User" | "Group" | "ServiceAccount") {
            return Err((
                ".kind",
                format!(
                    "subject kind {:?} is not User, Group or ServiceAccount: Kyverno \
                     (pkg/utils/match/subjects.go) matches no requesting user with it, so a \
                     match on it never applies and an exclude on it never excludes",
                    self.kind
                ),
            ));
        }
        if self.name.is_empty() {
            return Err((".name", "a subject needs a name".into()));
        }
        if self.kind == "ServiceAccount" && self.namespace.as_deref().is_none_or(str::is_empty) {
            return Err((
                ".namespace",
                "a ServiceAccount subject needs a namespace: the requesting user is \
                 system:serviceaccount:<namespace>:<name>, and a service account of that \
                 name can be created in any namespace"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The subject as the requesting user it names (`system:serviceaccount:ns:name`,
    /// `group system:masters`, `user alice`).
    pub fn describe(&self) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => format!(
                "service account system:serviceaccount:{}:{}",
                self.namespace.as_deref().unwrap_or_default(),
                self.name
            ),
            "Group" => format!("group {}", self.name),
            "User" => format!("user {}", self.name),
            other => format!("{other} {}", self.name),
        }
    }

    fn matches(&self, user: &UserInfo) -> bool {
        match self.kind.as_str() {
            "User" => glob_match(&self.name, &user.username),
            "Group" => user.groups.iter().any(|g| glob_match(&self.name, g)),
            "ServiceAccount" => {
                // Refused at load time; never a wildcard by omission.
                let Some(ns) = self.namespace.as_deref().filter(|n| !n.is_empty()) else {
                    return false;
                };
                glob_match(
                    &format!("system:serviceaccount:{ns}:{}", self.name),
                    &user.username,
                )
            }
            _ => false,
        }
    }
}

fn user_matches(
    subjects: &[Subject],
    roles: &[String],
    cluster_roles: &[String],
    ctx: &RequestContext,
    unknown: bool,
) -> bool {
    if subjects.is_empty() && roles.is_empty() && cluster_roles.is_empty() {
        return true;
    }
    let Some(user) = &ctx.user else {
        return unknown;
    };
    let bound = |wanted: &[String], have: &Option<Vec<String>>| {
        wanted.is_empty()
            || have
                .as_ref()
                .map_or(unknown, |have| wanted.iter().any(|r| have.contains(r)))
    };
    (subjects.is_empty() || subjects.iter().any(|s| s.matches(user)))
        && bound(roles, &user.roles)
        && bound(cluster_roles, &user.cluster_roles)
}

impl ResourceFilter {
    fn matches(&self, c: &Candidate<'_>) -> bool {
        self.resources.as_ref().is_none_or(|r| r.matches(c))
            && user_matches(
                &self.subjects,
                &self.roles,
                &self.cluster_roles,
                c.ctx,
                c.unknown,
            )
    }

    fn is_empty(&self) -> bool {
        self.resources.is_none()
            && self.subjects.is_empty()
            && self.roles.is_empty()
            && self.cluster_roles.is_empty()
    }
}

impl MatchResources {
    /// Every resource description, for load-time checks.
    pub fn descriptions(&self) -> impl Iterator<Item = &ResourceDescription> {
        self.any
            .iter()
            .chain(&self.all)
            .filter_map(|f| f.resources.as_ref())
            .chain(self.resources.iter())
    }

    /// Every subject of the block with its path below it (`any[0].subjects[1]`).
    pub fn subjects_with_paths(&self) -> Vec<(String, &Subject)> {
        let mut out = Vec::new();
        for (list, filters) in [("any", &self.any), ("all", &self.all)] {
            for (i, f) in filters.iter().enumerate() {
                for (j, s) in f.subjects.iter().enumerate() {
                    out.push((format!("{list}[{i}].subjects[{j}]"), s));
                }
            }
        }
        for (j, s) in self.subjects.iter().enumerate() {
            out.push((format!("subjects[{j}]"), s));
        }
        out
    }

    /// Every resource description with its path in the block (`any[0].resources`,
    /// `all[1].resources`, `resources`), so a load error names where it sits.
    pub fn descriptions_at(&self) -> Vec<(String, &ResourceDescription)> {
        let mut out = Vec::new();
        for (name, filters) in [("any", &self.any), ("all", &self.all)] {
            for (i, filter) in filters.iter().enumerate() {
                if let Some(r) = &filter.resources {
                    out.push((format!("{name}[{i}].resources"), r));
                }
            }
        }
        out.extend(self.resources.iter().map(|r| ("resources".to_string(), r)));
        out
    }

    /// True if nothing is specified (an empty block).
    pub fn is_empty(&self) -> bool {
        self.any.is_empty() && self.all.is_empty() && self.legacy().is_empty()
    }

    /// The inline (legacy) filter of the block: `resources`, `subjects`, `roles`,
    /// `clusterRoles` outside `any`/`all`.
    pub(crate) fn legacy(&self) -> ResourceFilter {
        ResourceFilter {
            resources: self.resources.clone(),
            subjects: self.subjects.clone(),
            roles: self.roles.clone(),
            cluster_roles: self.cluster_roles.clone(),
        }
    }

    /// Kyverno semantics: `any` — one filter matches; `all` — every filter matches; the
    /// legacy inline form is one filter. Several forms given: all of them must hold. An
    /// empty block matches nothing. `unknown`: the value of a condition on the operation
    /// or the user when the context does not say (see the module documentation).
    pub fn matches(
        &self,
        object: &Value,
        id: &ObjectIdentity,
        ctx: &RequestContext,
        unknown: bool,
    ) -> bool {
        if self.is_empty() {
            return false;
        }
        let c = Candidate {
            object,
            id,
            ctx,
            unknown,
        };
        let legacy = self.legacy();
        (self.any.is_empty() || self.any.iter().any(|f| f.matches(&c)))
            && (self.all.is_empty() || self.all.iter().all(|f| f.matches(&c)))
            && (legacy.is_empty() || legacy.matches(&c))
    }
}

/// Which objects a rule applies to.
#[derive(Debug, Clone, Default)]
pub struct RuleSelector {
    /// `None`: every object.
    pub include: Option<MatchResources>,
    pub exclude: Option<MatchResources>,
}

impl MatchResources {
    /// True if any filter has a condition on the requesting user.
    pub fn has_user_conditions(&self) -> bool {
        let filter = |f: &ResourceFilter| {
            !f.subjects.is_empty() || !f.roles.is_empty() || !f.cluster_roles.is_empty()
        };
        self.any.iter().chain(&self.all).any(filter) || filter(&self.legacy())
    }
}

impl RuleSelector {
    /// True if the rule applies: matched and not excluded. Unknown request facts count
    /// as met in `match` and as not met in `exclude`.
    pub fn applies_to(&self, object: &Value, id: &ObjectIdentity, ctx: &RequestContext) -> bool {
        self.include
            .as_ref()
            .is_none_or(|m| m.matches(object, id, ctx, true))
            && !self
                .exclude
                .as_ref()
                .is_some_and(|m| m.matches(object, id, ctx, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(name: &str, ns: Option<&str>) -> (Value, ObjectIdentity) {
        let mut v = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}});
        if let Some(ns) = ns {
            v["metadata"]["namespace"] = json!(ns);
        }
        let id = ObjectIdentity::of(&v).unwrap();
        (v, id)
    }

    /// A rule selector from the YAML of its match block and, if any, its exclude block.
    fn selector(include: &str, exclude: Option<&str>) -> RuleSelector {
        RuleSelector {
            include: Some(filter(include)),
            exclude: exclude.map(filter),
        }
    }

    fn filter(yaml: &str) -> MatchResources {
        let docs = crate::manifest::parse_documents(yaml, &crate::Limits::default()).unwrap();
        serde_json::from_value(docs.into_iter().next().unwrap().1).unwrap()
    }

    #[test]
    fn glob_matches_whole_value_with_stars_and_question_marks() {
        assert!(glob_match("test*", "test-service"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("test*", "my-test"));
        assert!(!glob_match("a*b", "a-b-c"));
        assert!(glob_match("a*b*c", "a-b-c"));
    }

    #[test]
    fn kinds_match_by_kind_version_and_group() {
        let (_, id) = service("s", None);
        assert!(kind_matches("Service", &id, false));
        assert!(kind_matches("v1/Service", &id, false));
        assert!(kind_matches("*/Service", &id, false));
        assert!(!kind_matches("Service/status", &id, false));
        assert!(!kind_matches("apps/v1/Service", &id, false));
        assert!(!kind_matches("v2/Service", &id, false));
    }

    fn reading(text: &str) -> (String, String, String, String) {
        let r = KindSelector::kyverno_reading(text).unwrap();
        (r.group, r.version, r.kind, r.subresource)
    }

    fn four(g: &str, v: &str, k: &str, s: &str) -> (String, String, String, String) {
        (g.into(), v.into(), k.into(), s.into())
    }

    #[test]
    fn kind_selectors_are_read_as_kyverno_reads_them() {
        // kyverno/kyverno v1.19.0 pkg/utils/kube/kind.go ParseKindSelector, case by case:
        // the text, then its group, version, kind and subresource.
        for (text, (g, v, k, sub)) in [
            ("Pod", ("*", "*", "Pod", "")),
            ("*/*", ("*", "*", "*", "*")),
            ("*/status", ("*", "*", "*", "status")),
            ("*/Pod", ("*", "*", "Pod", "")),
            ("v1/Pod", ("*", "v1", "Pod", "")),
            ("v2beta1/Pod", ("*", "v2beta1", "Pod", "")),
            ("Pod/status", ("*", "*", "Pod", "status")),
            ("Pod.status", ("*", "*", "Pod", "status")),
            ("v10/Pod", ("*", "*", "v10", "Pod")),
            ("v1/Pod/status", ("*", "v1", "Pod", "status")),
            ("v1/Pod.eviction", ("*", "v1", "Pod", "eviction")),
            ("*/Pod/*", ("*", "*", "Pod", "*")),
            ("*/*/Pod", ("*", "*", "*", "Pod")),
            ("apps/v1/Deployment", ("apps", "v1", "Deployment", "")),
            (
                "kyverno.io/*/PolicyException/*",
                ("kyverno.io", "*", "PolicyException", "*"),
            ),
            (
                "networking.k8s.io/v1/NetworkPolicy.status",
                ("networking.k8s.io", "v1", "NetworkPolicy", "status"),
            ),
            (
                "Certificate.cert-manager.io",
                ("Certificate", "cert-manager", "io", ""),
            ),
        ] {
            assert_eq!(reading(text), four(g, v, k, sub), "{text}");
        }
        assert!(KindSelector::kyverno_reading("a/b/c/d/e").is_none());
    }

    #[test]
    fn a_selector_whose_subresource_part_allows_none_selects_the_object() {
        let id = ObjectIdentity {
            group: "kyverno.io".into(),
            version: "v2".into(),
            kind: "PolicyException".into(),
            namespace: Some("ns".into()),
            name: "x".into(),
        };
        for form in [
            "PolicyException",
            "PolicyException/*",
            "PolicyException.*",
            "v2/PolicyException/*",
            "kyverno.io/*/PolicyException/*",
            "kyverno.io/v2/PolicyException.*",
            "*/*",
            "*",
            "*/PolicyException",
        ] {
            assert!(kind_matches(form, &id, false), "{form}");
        }
        for form in [
            "v2beta1/PolicyException/*",
            "policies.kyverno.io/*/PolicyException",
        ] {
            assert!(!kind_matches(form, &id, false), "{form}");
        }
    }

    #[test]
    fn selectors_that_select_no_object_are_refused_saying_how_kyverno_reads_them() {
        for (form, words) in [
            ("Pod/status", "subresource \"status\" only"),
            ("v1/Pod.eviction", "subresource \"eviction\" only"),
            (
                "*/*/PolicyException",
                "subresource \"PolicyException\" only",
            ),
            ("kyverno.io/PolicyException", "kind \"kyverno.io\""),
            ("Certificate.cert-manager.io", "group/version/Kind"),
            ("a/b/c/d/e", "more than four parts"),
            ("apps//Deployment", "empty kind or version"),
            ("", "empty kind or version"),
            ("Pod/s*", "subresource \"s*\" only"),
        ] {
            let err = KindSelector::parse(form).unwrap_err().to_string();
            assert!(err.contains(words), "{form}: {err}");
        }
    }

    #[test]
    fn in_a_request_a_pinned_version_matches_every_version_of_the_kind() {
        let (_, id) = service("s", None);
        assert!(kind_matches("v2/Service", &id, true));
        assert!(kind_matches("/v9/Service", &id, true));
        // The group and the kind still have to match.
        assert!(!kind_matches("apps/v1/Service", &id, true));
        assert!(!kind_matches("v1/Pod", &id, true));
        assert!(!kind_matches("Service/status", &id, true));
    }

    #[test]
    fn in_a_request_an_object_without_namespace_is_cluster_scoped() {
        let m = filter("any:\n- resources:\n    kinds: [Service]\n    namespaces: [team-a]\n");
        let (v, id) = service("s", None);
        // Offline: the file may be applied into team-a, so the rule applies (match) ...
        assert!(m.matches(&v, &id, &RequestContext::default(), true));
        // ... in a request the object is cluster-scoped: not in team-a.
        let request = RequestContext {
            namespace_known: true,
            ..RequestContext::default()
        };
        assert!(!m.matches(&v, &id, &request, true));
        let (v, id) = service("s", Some("team-a"));
        assert!(m.matches(&v, &id, &request, true));
    }

    #[test]
    fn any_filter_with_kinds_and_name_pattern() {
        let m = filter("any:\n- resources:\n    kinds: [Service]\n    name: test*\n");
        let ctx = RequestContext::default();
        let (v, id) = service("test-service", None);
        assert!(m.matches(&v, &id, &ctx, false));
        let (v, id) = service("other", None);
        assert!(!m.matches(&v, &id, &ctx, true));
    }

    #[test]
    fn namespace_filters_match_namespace_patterns() {
        let m = filter("resources:\n  kinds: [Service]\n  namespaces: [prod-*]\n");
        let ctx = RequestContext::default();
        let (v, id) = service("s", Some("prod-1"));
        assert!(m.matches(&v, &id, &ctx, false));
        let (v, id) = service("s", Some("dev"));
        assert!(!m.matches(&v, &id, &ctx, true));
    }

    #[test]
    fn object_without_namespace_may_be_in_any_namespace() {
        let sel = selector(
            "resources:\n  namespaces: [prod]\n",
            Some("resources:\n  names: [x]\n  namespaces: [prod]\n"),
        );
        let ctx = RequestContext::default();
        let (v, id) = service("s", None);
        assert!(sel.applies_to(&v, &id, &ctx), "match: might be in prod");
        let (v, id) = service("x", None);
        assert!(
            sel.applies_to(&v, &id, &ctx),
            "exclude: might not be in prod"
        );
    }

    #[test]
    fn annotation_filters_match_keys_and_values_by_wildcard() {
        let m = filter("resources:\n  annotations:\n    \"team.example/*\": pay*\n");
        let ctx = RequestContext::default();
        let (mut v, id) = service("s", None);
        assert!(!m.matches(&v, &id, &ctx, true));
        v["metadata"]["annotations"] = json!({"team.example/owner": "payments"});
        assert!(m.matches(&v, &id, &ctx, false));
        v["metadata"]["annotations"] = json!({"team.example/owner": "search"});
        assert!(!m.matches(&v, &id, &ctx, true));
    }

    const BY_CONTROLLER: &str = "any:\n- resources:\n    kinds: [Service]\n  subjects:\n  - kind: ServiceAccount\n    namespace: kube-system\n    name: replicaset-controller\n";

    fn request_by(username: &str) -> RequestContext {
        RequestContext {
            operation: Some("CREATE".into()),
            user: Some(UserInfo {
                username: username.into(),
                ..UserInfo::default()
            }),
            ..RequestContext::default()
        }
    }

    #[test]
    fn subject_filters_match_the_requesting_service_account() {
        let m = filter(BY_CONTROLLER);
        let (v, id) = service("s", None);
        let controller = request_by("system:serviceaccount:kube-system:replicaset-controller");
        assert!(m.matches(&v, &id, &controller, false));
        assert!(!m.matches(&v, &id, &request_by("alice"), true));
    }

    #[test]
    fn unknown_user_applies_a_rule_matching_on_subjects() {
        let sel = selector(BY_CONTROLLER, None);
        let (v, id) = service("s", None);
        assert!(sel.applies_to(&v, &id, &RequestContext::default()));
    }

    #[test]
    fn unknown_user_does_not_exclude_through_subjects() {
        let sel = selector("resources:\n  kinds: [Service]\n", Some(BY_CONTROLLER));
        let (v, id) = service("s", None);
        assert!(sel.applies_to(&v, &id, &RequestContext::default()));
        let controller = request_by("system:serviceaccount:kube-system:replicaset-controller");
        assert!(!sel.applies_to(&v, &id, &controller));
    }

    #[test]
    fn unknown_operation_applies_a_rule_limited_to_updates() {
        let sel = selector(
            "resources:\n  kinds: [Service]\n  operations: [UPDATE]\n",
            None,
        );
        let (v, id) = service("s", None);
        assert!(sel.applies_to(&v, &id, &RequestContext::default()));
        assert!(!sel.applies_to(&v, &id, &request_by("alice")));
    }

    #[test]
    fn excluded_objects_are_not_selected() {
        let sel = selector(
            "resources:\n  kinds: [Service]\n",
            Some("resources:\n  names: [skip-*]\n"),
        );
        let ctx = RequestContext::default();
        let (v, id) = service("skip-me", None);
        assert!(!sel.applies_to(&v, &id, &ctx));
        let (v, id) = service("keep", None);
        assert!(sel.applies_to(&v, &id, &ctx));
    }

    #[test]
    fn object_references_use_upstream_match_pattern() {
        let r = ObjectReference {
            kind: "ConfigMap,Secret".into(),
            namespace: "-".into(),
            ..ObjectReference::default()
        };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        assert!(r.matches(&ObjectIdentity::of(&cm).unwrap()));
        let cm_ns = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}});
        assert!(!r.matches(&ObjectIdentity::of(&cm_ns).unwrap()));
    }
}
