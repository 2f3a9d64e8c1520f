//! What a conversion takes and gives: the options, the converted documents and notes, and
//! the refusal of what a `ManifestPolicy` cannot say.

use crate::manifest::{Document, to_yaml};
use crate::policy::{LoadOptions, Location, PolicyError};
use serde_json::Value;

/// How keyless entries without an issuer get one.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConvertOptions {
    /// `--issuer`: the issuer of every keyless entry that names none.
    pub issuer: Option<String>,
    /// `--from-signed`: signed manifests to learn issuers from (their keyless signatures
    /// are verified against the trust root of `load`).
    pub from_signed: Vec<Document>,
    /// Trust root and limits for checking the input (as `verify --policy` loads it).
    pub load: LoadOptions,
}

/// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
/// so it is built from [`ConvertOptions::default()`] and these, never as a literal.
impl ConvertOptions {
    /// Sets `issuer` to `Some(value)`.
    pub fn with_issuer(mut self, value: String) -> Self {
        self.issuer = Some(value);
        self
    }
}

crate::setters::setters! {
    ConvertOptions {
        /// Sets `from_signed`.
        with_from_signed => from_signed: Vec<Document>,
        /// Sets `load`.
        with_load => load: LoadOptions,
    }
}

/// A converted policy file.
#[derive(Debug, Clone, Default)]
pub struct Conversion {
    /// The output documents: `ManifestPolicy` for every Kyverno rule, other
    /// `ManifestPolicy` documents of the input unchanged.
    pub documents: Vec<Value>,
    /// What the user should know: issuers learned, fields dropped and why.
    pub notes: Vec<String>,
    /// The `configMap` context entries of the Kyverno rule being converted (entry name to
    /// namespace and ConfigMap name), for its `"{{ NAME.data.KEY }}"` keys.
    pub(super) config_maps: std::collections::BTreeMap<String, (String, String)>,
}

impl Conversion {
    /// The documents as one YAML stream.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for (i, doc) in self.documents.iter().enumerate() {
            if i > 0 {
                out.push_str("---\n");
            }
            out.push_str(&to_yaml(doc));
        }
        out
    }
}

pub(super) fn refuse(at: &Location, reason: impl Into<String>) -> PolicyError {
    PolicyError::Unsupported {
        at: at.clone(),
        reason: format!("cannot be carried over: {}", reason.into()),
    }
}

pub(super) fn text(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}
