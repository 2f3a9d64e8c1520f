//! Why signing a tree failed: [`TreeError`], one variant per step. Each says only its own
//! step (`{path}: cannot write`) and leaves the cause to `source()`; printed with
//! [`crate::error::chain`] they read as `mansign sign` prints them.

use crate::annotations::AnnotationError;
use crate::manifest::{DocumentOrigin, InputProblems, ManifestError};
use crate::signing::SignError;
use std::path::PathBuf;

/// A cause that is not one of mansign's own types (a key encoding error, what a
/// [`BundleCheck`](super::BundleCheck) returned).
pub type BoxedCause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why signing a tree failed (see the module docs of [`crate::signing::tree`]: nothing was
/// written unless the variant says so).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// Every problem the first pass found in the inputs.
    #[error(transparent)]
    Inputs(#[from] InputProblems),
    /// An input read again in the second pass.
    #[error(transparent)]
    Manifest(Box<ManifestError>),
    /// A run that writes beside its inputs (no output given) met more than one file.
    #[error(
        "sign of {what} needs -o: write -o signed/ (a tree mirroring {tree}, which \
         `kubectl apply -R -f signed/` and `mansign verify signed/` read), or -o - for one \
         stream on stdout; without -o only a single file is signed, to FILE.signed beside it"
    )]
    NeedsOutput {
        /// `a directory`, `several inputs`, `a glob pattern matching several files`.
        what: String,
        /// What `-o DIR/` would mirror.
        tree: String,
    },
    #[error(
        "-o {}: more than one input file but one output file; use a directory (`-o DIR/`)",
        .path.display()
    )]
    OneOutputFile { path: PathBuf },
    #[error("{}: cannot write: is a directory", .path.display())]
    IsADirectory { path: PathBuf },
    #[error(
        "two inputs would be written to {}: sign them in separate runs or pass their directory",
        .path.display()
    )]
    OutputClash { path: PathBuf },
    #[error(
        "--bundle-out: two signatures would be written to {} (bundles are named after the \
         output file name); sign files with the same name in separate runs",
        .path.display()
    )]
    BundleClash { path: PathBuf },
    #[error("stdin: cannot be read twice")]
    StdinTwice,
    /// A window of the second pass is not the one the first pass read.
    #[error(
        "{names}: changed during the run (a file added, removed, renamed or edited since the \
         first read); nothing was written"
    )]
    Changed { names: String },
    /// The second pass ended before the first pass's last window.
    #[error(
        "{inputs}: changed during the run (files removed since the first read); nothing was \
         written"
    )]
    FilesRemoved { inputs: String },
    /// Keeping or reading back what a run keeps in temporary files (the staged outputs,
    /// stdout's text, the inputs to remove, the report).
    #[error("{step}")]
    Keep {
        step: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is corrupt")]
    Corrupt(&'static str),
    #[error("{}: cannot read the input again", .path.display())]
    ReadAgain {
        path: PathBuf,
        #[source]
        source: Box<ManifestError>,
    },
    #[error(
        "{}: changed after it was signed (--remove-input removes an input only while it \
         holds the bytes signed); the input is kept",
        .path.display()
    )]
    InputChanged { path: PathBuf },
    /// A failure after every output was written, removing the inputs (`remove_inputs`).
    #[error("the outputs were written")]
    AfterCommit(#[source] Box<TreeError>),
    #[error("{}: signed, but cannot remove the input", .path.display())]
    RemoveInput {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot create output directory", .dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot resolve the output directory", .dir.display())]
    ResolveDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: output directory is not writable", .dir.display())]
    DirNotWritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a file name", .path.display())]
    NotAFileName { path: PathBuf },
    #[error("{}: staged after the run was committed", .path.display())]
    StagedAfterCommit { path: PathBuf },
    #[error("{}: cannot keep the staged output", .path.display())]
    KeepStaged {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot write", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("stdout was closed before the output was written")]
    StdoutClosed,
    #[error("cannot write to stdout")]
    Stdout(#[source] std::io::Error),
    /// Staged files that could not be removed after `source` failed the run: `note` names
    /// them.
    #[error("{note}")]
    LeftBehind {
        note: String,
        #[source]
        source: Box<TreeError>,
    },
    /// The signing key's own public key, read back for the checks of its logged sets.
    #[error("{step}")]
    OwnPublicKey {
        step: &'static str,
        #[source]
        source: BoxedCause,
    },
    #[error(transparent)]
    Sign(Box<SignError>),
    #[error("--bundle-out needs --tlog-upload")]
    BundleNeedsTlog,
    #[error("--bundle-out: no certificate for the signatures just made")]
    BundleNoCertificate,
    #[error("--bundle-out: the certificate names no identity or issuer")]
    BundleNoIdentity,
    #[error("--bundle-out: no trust root to verify the bundles against")]
    BundleNoTrust,
    #[error(
        "--bundle-out: {bundles} Sigstore bundle(s) and {messages} message(s) for \
         {signatures} signature(s) (bundles need --tlog-upload)"
    )]
    BundleCount {
        bundles: usize,
        messages: usize,
        signatures: usize,
    },
    #[error(
        "{}: the Sigstore bundle does not verify against {trust}, as `mansign verify-bundle` \
         would read it; nothing was written",
        .path.display()
    )]
    BundleDoesNotVerify {
        path: PathBuf,
        /// The trust root's origin.
        trust: String,
        #[source]
        source: BoxedCause,
    },
    #[error("--bundle-out: a signed message is not UTF-8 text")]
    MessageNotUtf8(#[source] std::str::Utf8Error),
    #[error("{origin}: reading back the new signature")]
    ReadBack {
        origin: DocumentOrigin,
        #[source]
        source: Box<AnnotationError>,
    },
    #[error("{origin}: no signature after signing")]
    NoSignatureAfterSigning { origin: DocumentOrigin },
    /// A new signature that does not verify against the trust root.
    #[error(
        "{origin}: {what} against {trust}; nothing was written (signing against another \
         Sigstore instance? pass its --trusted-root)"
    )]
    SelfCheck {
        origin: DocumentOrigin,
        /// `the new signature does not verify`, or its Rekor entry.
        what: &'static str,
        /// The trust root's origin.
        trust: String,
        #[source]
        source: Box<crate::verify::SigstoreError>,
    },
}

impl From<ManifestError> for TreeError {
    fn from(e: ManifestError) -> Self {
        TreeError::Manifest(Box::new(e))
    }
}

impl From<SignError> for TreeError {
    fn from(e: SignError) -> Self {
        TreeError::Sign(Box::new(e))
    }
}

impl TreeError {
    /// [`TreeError::Keep`] of `step` (`cannot keep the list of staged outputs`).
    pub(crate) fn keep(step: impl Into<String>) -> impl FnOnce(std::io::Error) -> TreeError {
        let step = step.into();
        move |source| TreeError::Keep { step, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    /// A variant with a cause says its own step only, and the chain shows the cause once:
    /// `{path}: cannot write: <the I/O error>`, as `mansign sign` printed it.
    #[test]
    fn a_step_leaves_its_cause_to_source() {
        let io = || std::fs::read("/nonexistent/mansign-tree-error").unwrap_err();
        let errors = [
            TreeError::Write {
                path: "out/a.yaml".into(),
                source: io(),
            },
            TreeError::LeftBehind {
                note: "nothing was written, but 1 staged file(s) could not be removed".into(),
                source: Box::new(TreeError::CreateDir {
                    dir: "out".into(),
                    source: io(),
                }),
            },
            TreeError::AfterCommit(Box::new(TreeError::RemoveInput {
                path: "in/a.yaml".into(),
                source: io(),
            })),
        ];
        let cause = io().to_string();
        for e in &errors {
            assert!(e.source().is_some(), "{e}");
            assert!(!e.to_string().contains(&cause), "{e}");
            assert_eq!(crate::error::chain(e).matches(&cause).count(), 1, "{e}");
        }
        assert_eq!(
            crate::error::chain(&errors[0]),
            format!("out/a.yaml: cannot write: {cause}")
        );
        assert_eq!(
            crate::error::chain(&errors[2]),
            format!(
                "the outputs were written: in/a.yaml: signed, but cannot remove the input: {cause}"
            )
        );
    }
}
