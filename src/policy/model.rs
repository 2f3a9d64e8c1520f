//! What a policy is: rules (which objects, which signers, which differences), the set they
//! form, and where in a policy file each part was written. Built by the loader
//! (`load/`); evaluated by `evaluate.rs`.

use super::action::FailureActions;
use super::key_ref::KeyReference;
use super::selector::{MatchResources, ObjectReference, RequestContext, RuleSelector};
use super::verdict::{ObjectVerdict, PolicyVerdict};
use crate::manifest::{
    Document, DocumentOrigin, FieldPattern, GitopsBindings, GroupKind, IdentityError, IgnoreFields,
    IgnoreProfiles, ObjectIdentity, Source, Tolerances,
};
use crate::verify::Verifier;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// Where in a policy file something is: file, document (1-based) and field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub origin: String,
    pub document: usize,
    pub field: String,
}

impl Location {
    pub(in crate::policy) fn at(&self, field: impl fmt::Display) -> Location {
        Location {
            origin: self.origin.clone(),
            document: self.document,
            field: if self.field.is_empty() {
                field.to_string()
            } else {
                format!("{}.{field}", self.field)
            },
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.origin, self.document)?;
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        Ok(())
    }
}

/// Where a document signed without a namespace is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceBinding {
    /// Nowhere but cluster scope: the object must have no namespace either.
    Strict,
    /// In whatever namespace the object is (Kyverno: `metadata.namespace` is ignored for
    /// documents signed without one; a document signed *with* a namespace still binds).
    AnyNamespace,
    /// Only in these namespaces.
    Listed(Vec<String>),
}

/// Fields that may differ for the objects a binding selects.
#[derive(Debug, Clone)]
pub struct IgnoreBinding {
    /// Empty: every object.
    pub objects: Vec<ObjectReference>,
    pub fields: Vec<FieldPattern>,
}

/// One rule: which objects, which signers, which differences.
#[derive(Debug, Clone)]
pub struct PolicyRule {
    /// `metadata.name` of the policy document.
    pub policy: String,
    pub rule: String,
    /// Where the rule was defined.
    pub location: Location,
    pub selector: RuleSelector,
    /// Objects must be in this namespace (a namespaced Kyverno `Policy`).
    pub namespace: Option<String>,
    /// Requirement, annotation domain and limits (ignore fields and tolerances are set per
    /// object).
    pub verifier: Verifier,
    pub ignore: Vec<IgnoreBinding>,
    /// The ignore profiles that apply (`kubernetes,argocd`).
    pub profiles: IgnoreProfiles,
    /// Custom kinds whose `status` is a subresource (see [`Tolerances::status_kinds`]).
    pub status_kinds: Vec<GroupKind>,
    /// The values the `argocd` and `flux` profiles accept (see [`Tolerances::gitops`]).
    pub gitops: GitopsBindings,
    pub digest_pinning: bool,
    pub namespace_binding: NamespaceBinding,
    /// What a failure of this rule does in the cluster (`Enforce` or `Audit`, per
    /// namespace). Offline every failure fails the run.
    pub failure_action: FailureActions,
    /// Which format the rule came from, and what it said about enforcement.
    pub source: RuleSource,
    /// The public keys this rule names by reference ([`KeyReference`]) whose value was not
    /// available or not usable when it was loaded, each with the reason and the policy
    /// location. Non-empty: the rule's verifier refuses every object
    /// ([`Rejection::KeyUnresolved`](crate::verify::Rejection::KeyUnresolved)), and the
    /// failure is enforced whatever the rule's failure action.
    pub unresolved_keys: Vec<String>,
}

/// The format a rule was written in (for `policy explain`: what differs from the source).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RuleSource {
    /// mansign's `ManifestPolicy`.
    #[default]
    Mansign,
    /// A Kyverno `ClusterPolicy`/`Policy` rule, with the action it names as written: its
    /// `validate.failureAction`, else the policy's `spec.validationFailureAction` (`Enforce`,
    /// `enforce`, `Audit`, `audit`); `None` when neither is set. The effective action is
    /// [`PolicyRule::failure_action`].
    Kyverno { failure_action: Option<String> },
}

impl PolicyRule {
    /// True if this rule applies to the object. An object without a namespace may be
    /// applied into any namespace, so a namespaced `Policy` applies to it too.
    pub fn applies_to(&self, object: &Value, id: &ObjectIdentity, ctx: &RequestContext) -> bool {
        match (&self.namespace, &id.namespace) {
            (Some(ns), Some(object_ns)) if ns != object_ns => return false,
            // A request's object without a namespace is cluster-scoped: a namespaced
            // `Policy` does not apply to it.
            (Some(_), None) if ctx.namespace_known => return false,
            _ => {}
        }
        self.selector.applies_to(object, id, ctx)
    }

    /// The verifier for one object: the rule's requirement with the ignore fields and
    /// tolerances that apply to this object.
    pub fn verifier_for(&self, id: &ObjectIdentity) -> Verifier {
        let fields = self
            .ignore
            .iter()
            .filter(|b| b.objects.is_empty() || b.objects.iter().any(|o| o.matches(id)))
            .flat_map(|b| b.fields.iter().cloned())
            .collect();
        let namespace_binding = match &self.namespace_binding {
            NamespaceBinding::Strict => Vec::new(),
            NamespaceBinding::AnyNamespace => id.namespace.iter().cloned().collect(),
            NamespaceBinding::Listed(list) => list.clone(),
        };
        self.verifier
            .clone()
            .with_ignore_fields(IgnoreFields(fields))
            .with_tolerances(Tolerances {
                profiles: self.profiles,
                digest_pinning: self.digest_pinning,
                namespace_binding,
                status_kinds: self.status_kinds.clone(),
                gitops: self.gitops.clone(),
                admission: None,
            })
    }
}

/// Rules loaded from one or more policy documents.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    pub rules: Vec<PolicyRule>,
    /// Things the loader wants the user to know (skipped non-manifest rules, fields that
    /// have no effect because mansign always checks them).
    pub notes: Vec<String>,
    /// The files the policies name and that were read to load them (`keys.path`,
    /// `keyless.trustedRoot`, `certificates.certPath`, `certificates.certChainPath`), as
    /// resolved: the admission server watches them with the policy files.
    pub named_files: Vec<PathBuf>,
    /// The Secrets and ConfigMaps the policies read public keys from, each once, in order.
    pub key_references: Vec<KeyReference>,
}

impl PolicySet {
    /// Adds the rules, notes and named files of another set.
    pub fn extend(&mut self, other: PolicySet) {
        self.rules.extend(other.rules);
        self.notes.extend(other.notes);
        for file in other.named_files {
            if !self.named_files.contains(&file) {
                self.named_files.push(file);
            }
        }
        for reference in other.key_references {
            if !self.key_references.contains(&reference) {
                self.key_references.push(reference);
            }
        }
    }

    /// Every rule's unresolved key references with their reasons (see
    /// [`PolicyRule::unresolved_keys`]).
    pub fn unresolved_keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        for reason in self.rules.iter().flat_map(|r| &r.unresolved_keys) {
            if !out.contains(reason) {
                out.push(reason.clone());
            }
        }
        out
    }

    /// What offline verification (no admission request) makes of the rules' conditions on
    /// the requesting user, one note per rule that has any: a condition in `match` counts as
    /// met and one in `exclude` as not met, so the rule is checked wherever a request could
    /// make it apply (an exclusion that cannot be evaluated never lets an object skip a
    /// check). `mansign verify` prints them; the webhook evaluates the conditions.
    pub fn offline_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for rule in &self.rules {
            let in_match = rule
                .selector
                .include
                .as_ref()
                .is_some_and(MatchResources::has_user_conditions);
            let in_exclude = rule
                .selector
                .exclude
                .as_ref()
                .is_some_and(MatchResources::has_user_conditions);
            let what = match (in_match, in_exclude) {
                (false, false) => continue,
                (true, false) => "its match condition on the requesting user is taken as met",
                (false, true) => {
                    "its exclusion by requesting user is taken as not met (the objects are \
                     checked)"
                }
                (true, true) => {
                    "its match condition on the requesting user is taken as met and its \
                     exclusion by requesting user as not met (the objects are checked)"
                }
            };
            notes.push(format!(
                "{}: rule {:?}: no admission request offline: {what}; the webhook (admission \
                 serve/review) evaluates the request's user",
                rule.location, rule.rule
            ));
        }
        notes
    }

    /// Verifies every document; see [`ObjectVerdict`].
    pub fn verify_documents<'a>(
        &self,
        docs: impl IntoIterator<Item = &'a Document>,
        ctx: &RequestContext,
    ) -> PolicyVerdict {
        // Documents are independent: verified on every core, results in input order.
        let docs: Vec<&Document> = docs.into_iter().collect();
        PolicyVerdict {
            objects: crate::verify::map_in_order(
                &docs,
                crate::verify::default_parallelism(),
                |d| self.verify_document(d, ctx),
            ),
        }
    }

    /// Verifies an object that did not come from a file (library callers, the webhook).
    pub fn verify_object(
        &self,
        object: &Value,
        ctx: &RequestContext,
    ) -> Result<ObjectVerdict, IdentityError> {
        let origin = DocumentOrigin {
            source: Source::Named("object".into()),
            index: 0,
            item: None,
        };
        let doc = Document::new(origin, object.clone())?;
        let mut verdict = self.verify_document(&doc, ctx);
        verdict.origin = None;
        for r in &mut verdict.rules {
            r.verdict.origin = None;
        }
        Ok(verdict)
    }
}
