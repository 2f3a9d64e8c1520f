//! Policy files: which objects must be signed, by whom, and what may differ.
//!
//! Two formats load into the same [`PolicySet`] (format reference: `docs/policy.md`):
//!
//! * mansign's own `mansign.dev/v1alpha1` `ManifestPolicy` ([`mansign`]);
//! * Kyverno `ClusterPolicy` / `Policy` documents (`kyverno.io/v1`, `v2beta1`) whose rules
//!   have `validate.manifests` ([`kyverno`]), unchanged. What mansign cannot honour
//!   (dry-run, OCI bundles, key references, ...) is refused when the file is loaded, with
//!   the file, document and field named — never silently ignored.
//!
//! A policy set is a list of rules. Each rule selects objects (`match`/`exclude`), requires
//! an [`AttestorPolicy`](crate::verify::AttestorPolicy) (attestor sets ANDed, `count`
//! N-of-M, nesting) and says which fields may differ. An object must pass **every** rule that
//! applies to it; an object no rule applies to is reported as not verified.
//!
//! ```no_run
//! use mansign::manifest::load_inputs;
//! use mansign::policy::{LoadOptions, RequestContext, load_file};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = load_file("policy.yaml".as_ref(), &LoadOptions::default())?;
//! let files = load_inputs(&["signed.yaml".into()], &mansign::Limits::default())?;
//! let verdict =
//!     policy.verify_documents(files.iter().flat_map(|f| &f.documents), &RequestContext::default());
//! for object in &verdict.objects {
//!     println!("{object}"); // per rule: the attestor entries that matched, or why not
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Files (no two files import each other; this file only declares and re-exports):
//!
//! | file | what |
//! |---|---|
//! | `model.rs` | what a policy is: [`PolicySet`], [`PolicyRule`], [`Location`] |
//! | `selector.rs`, `action.rs`, `key_ref.rs`, `fields.rs` | a rule's parts: `match`/`exclude`, failure actions, key references, ignore-field patterns |
//! | `load/` | reading policy files into a [`PolicySet`] ([`load_file`], [`load_str`]); `load/context.rs`: [`LoadOptions`], [`PolicyError`], what both formats build with |
//! | `mansign/`, `kyverno/` | the two formats' schemas and loaders |
//! | `typed.rs` | strict typed reading of a document, unknown fields named |
//! | `evaluate.rs`, `verdict.rs` | the one rule walk and its verdicts |
//! | `explain.rs`, `convert/`, `test_suite.rs` | `policy explain`, `policy convert`, `policy test` |

mod action;
pub mod convert;
mod evaluate;
pub mod explain;
mod fields;
mod key_ref;
pub mod kyverno;
mod load;
pub mod mansign;
mod model;
mod selector;
pub mod test_suite;
mod typed;
mod verdict;

pub use action::{ActionOverride, FailureAction, FailureActions};
pub use evaluate::{CacheMode, Evaluation, evaluate_rules};
pub use fields::{FieldError, mansign_field_pattern, translate_upstream_field};
pub use key_ref::{
    COSIGN_PUB, KeyObject, KeyReference, KeyReferenceError, KeyValueError, ResolvedKeys,
    parse_data_variable,
};
pub use load::context::{LoadOptions, PolicyError};
pub use load::{load_file, load_file_with_keys, load_str, load_str_with_keys};
pub use model::{IgnoreBinding, Location, NamespaceBinding, PolicyRule, PolicySet, RuleSource};
pub use selector::{
    KindSelector, KindSelectorError, KindSelectorProblem, MatchResources, ObjectReference,
    RequestContext, ResourceDescription, ResourceFilter, RuleSelector, Subject, UserInfo,
    glob_match,
};
pub use verdict::{ObjectVerdict, PolicyVerdict, RuleVerdict};

/// The identity builder's exact and regex claims, as both formats read them; `verify`'s
/// `--certificate-*` flags build their identity the same way.
#[cfg(feature = "cli")]
pub(crate) use load::context::given_claims;
