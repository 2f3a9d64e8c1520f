//! [`SignTree`]: what a run signs and where it writes, and its two steps, [`SignTree::plan`]
//! (read and check everything, sign nothing) and [`PlannedTree::sign`].

use super::error::TreeError;
use super::plan::{Plan, TreeOutput};
use super::report::TreeReport;
use super::run::{BundleCheck, RunSigner, SignRun};
use crate::manifest::InputSelection;
use crate::signing::SignOptions;
use crate::trust::TrustRoot;
use std::path::PathBuf;
use std::sync::Arc;

/// A signing run over files, directories, glob patterns or stdin (`-`), built step by step;
/// see [the module docs](super) for what a run guarantees.
pub struct SignTree {
    inputs: Vec<PathBuf>,
    selection: InputSelection,
    output: TreeOutput,
    bundle_dir: Option<PathBuf>,
    bundle_check: Option<Box<dyn BundleCheck + Send + Sync>>,
    options: SignOptions,
    trust: Option<Arc<TrustRoot>>,
    remove_inputs: bool,
    watch_interrupts: bool,
}

impl std::fmt::Debug for SignTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignTree")
            .field("inputs", &self.inputs)
            .field("output", &self.output)
            .field("bundle_dir", &self.bundle_dir)
            .field("options", &self.options)
            .field("remove_inputs", &self.remove_inputs)
            .field("watch_interrupts", &self.watch_interrupts)
            .finish_non_exhaustive()
    }
}

impl SignTree {
    /// A run over `inputs`, in order: a file, a directory (recursive: every `.yaml`, `.yml`
    /// and `.json` file; any other file in it is an error unless excluded), a glob pattern
    /// (`unsigned/*.yaml`) or `-` for stdin. Written beside the input
    /// ([`TreeOutput::Beside`]) unless [`SignTree::output`] says otherwise.
    pub fn new<I, P>(inputs: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        SignTree {
            inputs: inputs.into_iter().map(Into::into).collect(),
            selection: InputSelection::default(),
            output: TreeOutput::default(),
            bundle_dir: None,
            bundle_check: None,
            options: SignOptions::default(),
            trust: None,
            remove_inputs: false,
            watch_interrupts: false,
        }
    }

    /// Files and directories left out below a directory argument (`--exclude`).
    pub fn selection(mut self, selection: InputSelection) -> Self {
        self.selection = selection;
        self
    }

    /// Where the signed manifests go (`-o`).
    pub fn output(mut self, output: TreeOutput) -> Self {
        self.output = output;
        self
    }

    /// Also write, per signature, its Sigstore bundle and the signed message into `dir`
    /// (`--bundle-out`; needs a signer that logs, and [`SignTree::verify_against`]). Each
    /// bundle is checked by [`SignTree::bundle_check`] before anything is written, when one
    /// is given.
    pub fn bundle_out(mut self, dir: impl Into<PathBuf>) -> Self {
        self.bundle_dir = Some(dir.into());
        self
    }

    /// The check of each `--bundle-out` bundle (see [`BundleCheck`]).
    pub fn bundle_check(mut self, check: impl BundleCheck + Send + Sync + 'static) -> Self {
        self.bundle_check = Some(Box::new(check));
        self
    }

    /// What a signature covers, append or replace, the annotation domain, the bounds on
    /// the inputs (also used to read them), the signed expiry and signing time. Without a
    /// signing time the run takes one when [`PlannedTree::sign`] starts, the same for every
    /// window.
    pub fn options(mut self, options: SignOptions) -> Self {
        self.options = options;
        self
    }

    /// Verify every new signature against `trust`, read back from the signed documents,
    /// before anything is written (for a signer that logs: a key without the log has
    /// nothing to check against a trust root). Signing against another Sigstore instance
    /// needs its root here: a signature nobody can verify is an error.
    pub fn verify_against(mut self, trust: Arc<TrustRoot>) -> Self {
        self.trust = Some(trust);
        self
    }

    /// Delete the input files once every output was written (never on error, never an
    /// input that is also an output, never one whose bytes changed since they were signed).
    pub fn remove_inputs(mut self, remove: bool) -> Self {
        self.remove_inputs = remove;
        self
    }

    /// On SIGINT, SIGTERM or SIGHUP while the run stages its outputs, remove what was staged
    /// and end the process with 128 + the signal (what `mansign sign` does). Off by
    /// default: a library does not take over a program's signals unasked.
    pub fn watch_interrupts(mut self, watch: bool) -> Self {
        self.watch_interrupts = watch;
        self
    }

    /// The first pass: reads and parses every input, and checks what the run will write
    /// (a clash of outputs or of `--bundle-out` files, a directory in an output's place, a
    /// tree without an output), before anything is signed: a bad file must not cost an
    /// identity token. Reports every problem of the inputs at once
    /// ([`TreeError::Inputs`]).
    pub fn plan(&self) -> Result<PlannedTree<'_>, TreeError> {
        if self.output == TreeOutput::Beside {
            refuse_tree_beside(&self.inputs)?;
        }
        let plan = Plan::read(
            &self.inputs,
            &self.selection,
            &self.options.limits,
            &self.output,
            self.bundle_dir.as_deref(),
            self.options.scope,
        )?;
        Ok(PlannedTree { tree: self, plan })
    }

    /// [`SignTree::plan`], then [`PlannedTree::sign`].
    pub fn sign(&self, signer: &RunSigner) -> Result<TreeReport, TreeError> {
        self.plan()?.sign(signer)
    }
}

/// Without an output, one file is signed to `FILE.signed` beside it, as kubectl-sigstore
/// does. A tree signed that way would be a tree of `.signed` files, which `kubectl apply -f
/// DIR` skips and mansign refuses as files that are not manifests: a directory, several
/// inputs, or a glob pattern matching several files (refused in the first pass) need an
/// output.
pub(crate) fn refuse_tree_beside(inputs: &[PathBuf]) -> Result<(), TreeError> {
    if let Some(dir) = inputs.iter().find(|i| i.is_dir()) {
        return Err(super::plan::needs_output(
            "a directory",
            &dir.display().to_string(),
        ));
    }
    if inputs.len() > 1 {
        return Err(super::plan::needs_output("several inputs", "the inputs"));
    }
    Ok(())
}

/// A run whose inputs were read and checked ([`SignTree::plan`]), ready to be signed.
pub struct PlannedTree<'a> {
    tree: &'a SignTree,
    plan: Plan<'a>,
}

impl std::fmt::Debug for PlannedTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedTree")
            .field("files", &self.plan.files)
            .field("documents", &self.plan.documents)
            .finish_non_exhaustive()
    }
}

impl PlannedTree<'_> {
    /// Files the first pass read.
    pub fn files(&self) -> usize {
        self.plan.files
    }

    /// Documents the first pass read.
    pub fn documents(&self) -> usize {
        self.plan.documents
    }

    /// The second pass: signs window by window, verifies, stages, then writes every output
    /// (all or nothing) and removes the inputs if asked. The inputs read again must be the
    /// ones the first pass read, to the byte.
    pub fn sign(mut self, signer: &RunSigner) -> Result<TreeReport, TreeError> {
        let tree = self.tree;
        let options = match tree.options.signed_at {
            Some(_) => tree.options.clone(),
            // One signing time for every window of the run.
            None => tree.options.clone().with_signed_at(jiff::Timestamp::now()),
        };
        SignRun {
            signer,
            options: &options,
            trust: tree.trust.as_deref(),
            bundle_check: tree
                .bundle_check
                .as_ref()
                .map(|check| check.as_ref() as &dyn BundleCheck),
            remove_inputs: tree.remove_inputs,
            watch_interrupts: tree.watch_interrupts,
        }
        .sign(&mut self.plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::KeySigner;
    use crate::signing::tree::{Target, WrittenFile};
    use std::path::Path;

    fn signer() -> RunSigner {
        RunSigner::from(KeySigner::new(p256::ecdsa::SigningKey::random(
            &mut rand_core::OsRng,
        )))
    }

    fn config_map(name: &str) -> String {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
    }

    /// `count` files, `team-N/cm-NNN.yaml`, one document each.
    fn tree(root: &Path, count: usize) {
        for i in 0..count {
            let dir = root.join(format!("team-{}", i / 50));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join(format!("cm-{i:03}.yaml")),
                config_map(&format!("cm-{i}")),
            )
            .unwrap();
        }
    }

    #[test]
    fn a_tree_of_two_windows_is_signed_and_reported_in_input_order() {
        let dir = tempfile::tempdir().unwrap();
        let unsigned = dir.path().join("unsigned");
        tree(&unsigned, 130);
        let signed = dir.path().join("signed");
        let mut report = SignTree::new([&unsigned])
            .output(TreeOutput::Dir(signed.clone()))
            .sign(&signer())
            .unwrap();
        assert_eq!(
            (report.files(), report.documents(), report.signatures()),
            (130, 130, 130)
        );
        assert!(report.certificates().is_empty() && report.trust_root().is_none());
        // Read back twice: the listing stays.
        for _ in 0..2 {
            let written: Vec<WrittenFile> = report.written().unwrap().map(Result::unwrap).collect();
            assert_eq!(written.len(), 130);
            assert_eq!(
                written[129].source,
                crate::manifest::Source::File(unsigned.join("team-2/cm-129.yaml"))
            );
            assert_eq!(
                written[129].output,
                Target::File(signed.join("team-2/cm-129.yaml"))
            );
            assert_eq!(written[0].documents, 1);
        }
        assert_eq!(report.log_indexes().unwrap().count(), 0);
        assert_eq!(report.bundle_files().unwrap().count(), 0);
        assert_eq!(report.removed_inputs().unwrap().count(), 0);
        let text = std::fs::read_to_string(signed.join("team-0/cm-000.yaml")).unwrap();
        assert!(text.contains("cosign.sigstore.dev/signature"), "{text}");
    }

    #[test]
    fn the_plan_refuses_before_anything_is_signed_or_written() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 2);
        let a = dir.path().join("team-0/cm-000.yaml");
        let b = dir.path().join("team-0/cm-001.yaml");
        let err = SignTree::new([&a, &b]).plan().unwrap_err();
        assert!(matches!(err, TreeError::NeedsOutput { .. }), "{err}");
        let err = SignTree::new([dir.path()])
            .output(TreeOutput::File(dir.path().join("one.yaml")))
            .plan()
            .unwrap_err();
        assert!(matches!(err, TreeError::OneOutputFile { .. }), "{err}");
        let err = SignTree::new([dir.path().join("missing.yaml")])
            .plan()
            .unwrap_err();
        assert!(matches!(err, TreeError::Inputs(_)), "{err}");
        assert!(!dir.path().join("one.yaml").exists());
    }

    #[test]
    fn remove_inputs_removes_them_after_the_outputs_are_written_and_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        let unsigned = dir.path().join("unsigned");
        tree(&unsigned, 3);
        let signed = dir.path().join("signed");
        let mut report = SignTree::new([&unsigned])
            .output(TreeOutput::Dir(signed.clone()))
            .remove_inputs(true)
            .sign(&signer())
            .unwrap();
        let removed: Vec<PathBuf> = report
            .removed_inputs()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(removed.len(), 3);
        assert!(removed.iter().all(|p| !p.exists()));
        assert!(signed.join("team-0/cm-002.yaml").is_file());
    }

    #[test]
    fn a_bundle_out_without_a_logging_signer_fails_with_nothing_written() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("cm.yaml");
        std::fs::write(&input, config_map("a")).unwrap();
        let bundles = dir.path().join("bundles");
        let err = SignTree::new([&input])
            .bundle_out(&bundles)
            .sign(&signer())
            .unwrap_err();
        assert!(
            crate::error::chain(&err).contains("--bundle-out"),
            "{}",
            crate::error::chain(&err)
        );
        assert!(!bundles.exists() && !dir.path().join("cm.yaml.signed").exists());
    }
}
