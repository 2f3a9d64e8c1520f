//! What a failed rule does in the cluster: `Enforce` (the request is denied) or `Audit`
//! (allowed, with a warning and a log line), per rule and per namespace.
//!
//! Kyverno's fields, in the order Kyverno consults them for a rule (`EngineResponse.
//! GetValidationFailureAction` in kyverno `pkg/engine/api`): the rule's
//! `validate.failureActionOverrides`, the rule's `validate.failureAction`, the policy's
//! `spec.validationFailureActionOverrides`, the policy's `spec.validationFailureAction`.
//! mansign resolves them per rule (Kyverno takes the first validate rule's for the whole
//! policy) and, when a policy names no action at all, **enforces**: Kyverno's CRD default
//! is `Audit`, which for a signature check means "anyone may apply anything"
//! (docs/policy.md says so).
//!
//! Offline (`mansign verify --policy`) a failure always fails the run; the action is shown.

use super::selector::glob_match;
use std::fmt;

/// What a failed rule does to the admission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FailureAction {
    /// Deny the request.
    #[default]
    Enforce,
    /// Allow it, with an `AdmissionResponse` warning naming the policy, rule and reason.
    Audit,
}

impl FailureAction {
    /// Kyverno's spellings: `Enforce`/`enforce`, `Audit`/`audit` (the lower-case forms are
    /// the deprecated ones Kyverno still accepts). Anything else is `None`.
    pub fn parse(text: &str) -> Option<FailureAction> {
        match text {
            "Enforce" | "enforce" => Some(FailureAction::Enforce),
            "Audit" | "audit" => Some(FailureAction::Audit),
            _ => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            FailureAction::Enforce => "Enforce",
            FailureAction::Audit => "Audit",
        }
    }
}

impl fmt::Display for FailureAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action for objects in some namespaces (Kyverno `failureActionOverrides` item;
/// `namespaceSelector` needs the cluster's namespace labels and is refused when loaded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionOverride {
    pub action: FailureAction,
    /// Wildcard patterns (`*`, `?`), as Kyverno's `wildcard.Match`.
    pub namespaces: Vec<String>,
}

impl ActionOverride {
    fn matches(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|p| glob_match(p, namespace))
    }
}

/// The action of one rule: overrides by namespace, in the order they are consulted, then
/// the default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FailureActions {
    pub overrides: Vec<ActionOverride>,
    pub default: FailureAction,
}

impl FailureActions {
    /// One action everywhere.
    pub fn always(action: FailureAction) -> Self {
        FailureActions {
            overrides: Vec::new(),
            default: action,
        }
    }

    /// The action for an object in `namespace` (`None`: cluster-scoped, matched as the
    /// empty namespace, as Kyverno does).
    pub fn for_namespace(&self, namespace: Option<&str>) -> FailureAction {
        let ns = namespace.unwrap_or("");
        self.overrides
            .iter()
            .find(|o| o.matches(ns))
            .map_or(self.default, |o| o.action)
    }

    /// The action when the namespace is not known (offline, an object without one that
    /// may be applied anywhere): `Enforce` if any namespace would enforce.
    pub fn strictest(&self) -> FailureAction {
        if self.default == FailureAction::Enforce
            || self
                .overrides
                .iter()
                .any(|o| o.action == FailureAction::Enforce)
        {
            FailureAction::Enforce
        } else {
            FailureAction::Audit
        }
    }

    /// True when the action depends on the namespace.
    pub fn has_overrides(&self) -> bool {
        !self.overrides.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kyverno_spellings_parse_and_nothing_else() {
        assert_eq!(
            FailureAction::parse("Enforce"),
            Some(FailureAction::Enforce)
        );
        assert_eq!(
            FailureAction::parse("enforce"),
            Some(FailureAction::Enforce)
        );
        assert_eq!(FailureAction::parse("Audit"), Some(FailureAction::Audit));
        assert_eq!(FailureAction::parse("audit"), Some(FailureAction::Audit));
        assert_eq!(FailureAction::parse("ENFORCE"), None);
        assert_eq!(FailureAction::parse(""), None);
    }

    #[test]
    fn first_matching_override_wins_then_the_default() {
        let actions = FailureActions {
            overrides: vec![
                ActionOverride {
                    action: FailureAction::Audit,
                    namespaces: vec!["dev-*".into()],
                },
                ActionOverride {
                    action: FailureAction::Enforce,
                    namespaces: vec!["dev-prod".into(), "*".into()],
                },
            ],
            default: FailureAction::Audit,
        };
        assert_eq!(actions.for_namespace(Some("dev-a")), FailureAction::Audit);
        assert_eq!(
            actions.for_namespace(Some("dev-prod")),
            FailureAction::Audit
        );
        assert_eq!(actions.for_namespace(Some("prod")), FailureAction::Enforce);
        assert_eq!(actions.for_namespace(None), FailureAction::Enforce);
        assert_eq!(actions.strictest(), FailureAction::Enforce);
    }

    #[test]
    fn audit_everywhere_is_audit_when_the_namespace_is_unknown() {
        let actions = FailureActions::always(FailureAction::Audit);
        assert_eq!(actions.strictest(), FailureAction::Audit);
        assert_eq!(actions.for_namespace(Some("x")), FailureAction::Audit);
    }
}
