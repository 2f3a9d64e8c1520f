//! Kubernetes YAML documents: loading, identity, the signed message M and diffs.
//!
//! A [`Document`] is one Kubernetes object read from a file, a directory or stdin. It is held
//! as a JSON-compatible tree (`serde_json::Value` with insertion order kept) because that is
//! what the API server, Kyverno and kubectl-sigstore compare: YAML comments and styles carry
//! no meaning for admission.

mod compare;
mod document;
mod expiry;
mod legacy_tar;
mod load;
mod message;
mod yaml;

pub use compare::diff::{
    CompareError, Comparison, DiffKind, Difference, FieldDiff, FieldPath, FieldPattern,
    FieldPatternError, IgnoreFields, MAX_REPORTED_DIFFS, Segment, Step, compare, diff_documents,
    write_path,
};
pub use compare::gitops::{
    ARGOCD_INSTALLATION_ID_ANNOTATION, ARGOCD_INSTANCE_LABEL, ARGOCD_TRACKING_ID_ANNOTATION,
    FLUX_LABELS, FluxKustomization, GitopsBindings, GitopsNameError, check_argocd_application,
    check_argocd_installation_id, tracking_id_names,
};
pub use compare::tolerance::{
    AdmissionWrite, GroupKind, GroupKindError, IgnoreProfile, IgnoreProfiles,
    LAST_APPLIED_ANNOTATION, Tolerances, UnboundGitopsKey, has_status_subresource,
    unbound_gitops_keys, upstream_dotted,
};
pub use document::{Document, DocumentOrigin, IdentityError, ObjectIdentity, Source};
pub use expiry::{
    EXPIRES_ANNOTATION, SIGNED_AT_ANNOTATION, TimeAnnotationError, TimeSpecError, expiry_of,
    parse_duration, parse_expires, set_expiry, set_signed_at, signed_at_of,
};
pub use legacy_tar::LegacyTarError;
#[cfg(feature = "cli")]
pub(crate) use load::visit_inputs_with;
pub use load::{
    ExcludePatternError, InputProblems, InputSelection, MANIFEST_EXTENSIONS, ManifestFile,
    load_inputs, load_inputs_with, load_reader,
};
pub(crate) use load::{
    Found, INPUT_WINDOW, digest_of_file, is_glob_input, load_found_digested, visit_found_windows,
    visit_loaded_windows,
};
pub use message::{MessageError, build_message, parse_message};
pub use yaml::error::{ScalarReadings, YamlError, YamlLocation};
pub use yaml::read::parse_documents;
pub use yaml::write::to_yaml;

use std::path::PathBuf;

/// Why a manifest could not be read. Every variant names the file, and where it applies
/// the document (1-based, as a person counts) and the field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    #[error("{path}: cannot read")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{source_name}: larger than the limit of {limit} bytes")]
    TooLarge { source_name: String, limit: usize },
    #[error("{source_name}")]
    Yaml {
        source_name: String,
        #[source]
        error: YamlError,
    },
    #[error("{source_name}: document {document}: not a Kubernetes object: {reason}")]
    NotAnObject {
        source_name: String,
        document: usize,
        reason: String,
    },
    #[error("{path}: no .yaml, .yml or .json files found")]
    EmptyDirectory { path: PathBuf },
    #[error(
        "{path}: not a manifest file (.yaml, .yml, .json): kubectl skips it, but other tools \
         may read it, so mansign does not pass over it silently; leave it out with --exclude \
         {name:?} (a pattern without '/' matches at any depth, as in .gitignore) or move it out \
         of the tree", path = path.display(),
        name = relative.file_name().unwrap_or(relative.as_os_str()).to_string_lossy()
    )]
    NotAManifestFile { path: PathBuf, relative: PathBuf },
    #[error(
        "{path}: symbolic link loop (it leads back to {ancestor}); remove the link or --exclude it",
        path = path.display(), ancestor = ancestor.display()
    )]
    SymlinkLoop { path: PathBuf, ancestor: PathBuf },
    #[error("{source_name}: contains no Kubernetes objects")]
    NoDocuments { source_name: String },
    /// A FIFO, socket or device where a manifest file was expected: reading one can block
    /// forever or yield other bytes on each read, so it is refused before it is opened for
    /// reading (standard input is read with `-`).
    #[error(
        "{path}: not a regular file (a {kind}); only regular files are read as manifests \
         (pipe a stream to `-f -` instead)",
        path = path.display()
    )]
    NotARegularFile { path: PathBuf, kind: &'static str },
}
