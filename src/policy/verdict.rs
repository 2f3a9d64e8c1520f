//! Verdicts under a policy file: one per object, naming every rule that applied.

use super::action::FailureAction;
use crate::manifest::{DocumentOrigin, ObjectIdentity};
use crate::verify::DocumentVerdict;
use serde_json::{Value, json};
use std::fmt;

/// The verdict of one rule for one object.
#[derive(Debug, Clone)]
pub struct RuleVerdict {
    /// `metadata.name` of the policy document.
    pub policy: String,
    pub rule: String,
    pub verdict: DocumentVerdict,
    /// What a failure of this rule does in the cluster, for this object's namespace (the
    /// strictest when the object has none). Offline every failure fails.
    pub action: FailureAction,
}

/// The verdict for one object: every rule that applies must verify it. An object no rule
/// applies to is **not verified** (it is not a pass: a policy file that forgets a kind must
/// not let that kind through).
#[derive(Debug, Clone)]
pub struct ObjectVerdict {
    pub origin: Option<DocumentOrigin>,
    pub object: ObjectIdentity,
    pub rules: Vec<RuleVerdict>,
}

/// True when there is at least one item and every item verified: nothing verifies nothing.
fn all_verified<T>(items: &[T], verified: impl Fn(&T) -> bool) -> bool {
    !items.is_empty() && items.iter().all(verified)
}

impl RuleVerdict {
    /// The verify JSON of [`DocumentVerdict::to_json`] without the object's place (the
    /// object verdict has it), with `policy`, `rule` and `action` added.
    fn to_json(&self) -> Value {
        let mut j = self.verdict.to_json();
        if let Some(m) = j.as_object_mut() {
            m.remove("source");
            m.remove("document");
            m.remove("item");
            m.remove("object");
        }
        j["policy"] = json!(self.policy);
        j["rule"] = json!(self.rule);
        j["action"] = json!(self.action.as_str());
        j
    }
}

impl ObjectVerdict {
    /// True when at least one rule applies and every rule that applies verified.
    pub fn is_verified(&self) -> bool {
        all_verified(&self.rules, |r| r.verdict.is_verified())
    }

    /// True when no rule of the policy applies to this object.
    pub fn no_rule_applies(&self) -> bool {
        self.rules.is_empty()
    }

    /// JSON form: the object, `verified`, and per rule the verify JSON of
    /// [`DocumentVerdict::to_json`] with `policy` and `rule` added.
    pub fn to_json(&self) -> Value {
        let rules: Vec<Value> = self.rules.iter().map(RuleVerdict::to_json).collect();
        let mut v = json!({
            "source": self.origin.as_ref().map(|o| o.source.to_string()),
            "document": self.origin.as_ref().map(|o| o.index + 1),
            "object": self.object,
            "verified": self.is_verified(),
            "rules": rules,
        });
        if let Some(item) = self.origin.as_ref().and_then(|o| o.item) {
            v["item"] = json!(item + 1);
        }
        if self.no_rule_applies() {
            // `code` as on every other failure (docs/schema/verify-output.schema.json).
            v["failure"] = json!({
                "check": "no-policy-rule",
                "code": "no-policy-rule",
                "reason": "no policy rule applies to this object"
            });
        }
        v
    }
}

impl fmt::Display for ObjectVerdict {
    /// One line per rule (`... : policy P rule R: verified (...)`), or one line saying no
    /// rule applies.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match &self.origin {
            Some(o) => format!("{o}: {}", self.object),
            None => self.object.to_string(),
        };
        if self.rules.is_empty() {
            return write!(
                f,
                "{prefix}: NOT VERIFIED [no-policy-rule] no policy rule applies to this object"
            );
        }
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let result = match &r.verdict.result {
                Ok(ok) if ok.entries.is_empty() => {
                    format!(
                        "verified (signature set {}, {})",
                        ok.signature_set, ok.signer
                    )
                }
                Ok(ok) => format!(
                    "verified ({})",
                    ok.entries
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                Err(e) => format!("FAILED [{}] ({}) {e}", e.check(), r.action),
            };
            write!(f, "{prefix}: policy {} rule {}: {result}", r.policy, r.rule)?;
        }
        Ok(())
    }
}

/// Verdicts for a run under a policy file.
#[derive(Debug, Clone, Default)]
pub struct PolicyVerdict {
    pub objects: Vec<ObjectVerdict>,
}

impl PolicyVerdict {
    /// True when there is at least one object and every object verified.
    pub fn is_verified(&self) -> bool {
        all_verified(&self.objects, ObjectVerdict::is_verified)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "verified": self.is_verified(),
            // The same key as without a policy: one entry per document (or List item).
            "documents": self.objects.iter().map(ObjectVerdict::to_json).collect::<Vec<_>>(),
        })
    }
}
