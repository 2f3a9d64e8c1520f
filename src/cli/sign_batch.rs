//! The second pass of `mansign sign`: the planned files are signed window by window
//! (at most [`crate::manifest::INPUT_WINDOW`] files, one signer call each; a keyless signer keeps
//! its certificate across windows), each window's new signatures are verified against the
//! trust root, and so is each `--bundle-out` bundle, as its reader will verify it (the
//! whole Sigstore bundle check: chain, SCT, inclusion proof and checkpoint, SET, signature
//! over the message, signer); then its outputs and `--bundle-out` files are staged beside
//! their targets.
//! Nothing is renamed into place before the last window was staged
//! ([`super::output::Staging`]), so a failure anywhere leaves no output, and the memory of
//! a run does not grow with the number of files (see BENCHMARKS.md, "Scale").

use super::output::{Staging, Target};
use super::sign_plan::{Digest32, Plan, Removals};
use super::sign_report::SignRecord;
use crate::annotations::{AnnotationDomain, extract};
use crate::conformance::{
    BundleArtifact, BundleKey, BundleVerifier, ExpectedSigner, SigstoreBundle,
};
use crate::limits::Limits;
use crate::manifest::{ManifestFile, to_yaml};
use crate::signing::keyless::SigningCertificate;
use crate::signing::{
    KeySigner, KeylessSigner, SignOptions, Signer, TlogUploadingSigner, sign_files,
};
use crate::trust::TrustRoot;
use anyhow::{Context, bail};

/// The signer of this run.
pub(super) enum RunSigner {
    Key(KeySigner),
    KeyWithTlog(TlogUploadingSigner<KeySigner>),
    Keyless(Box<KeylessSigner>),
}

impl RunSigner {
    fn as_dyn(&self) -> &dyn Signer {
        match self {
            RunSigner::Key(s) => s,
            RunSigner::KeyWithTlog(s) => s,
            RunSigner::Keyless(s) => s.as_ref(),
        }
    }

    /// What this signer's new signature sets are verified as, once for the run; `None` for
    /// a key without the log (nothing in its sets to check against a trust root).
    fn new_sets(&self) -> anyhow::Result<Option<NewSets>> {
        Ok(match self {
            RunSigner::Key(_) => None,
            RunSigner::Keyless(_) => Some(NewSets::Certificate),
            RunSigner::KeyWithTlog(s) => Some(NewSets::LoggedKey(
                p256::pkcs8::DecodePublicKey::from_public_key_pem(s.public_key_pem())
                    .map(|k: p256::PublicKey| {
                        p256::pkcs8::EncodePublicKey::to_public_key_der(&k)
                            .map(|d| d.as_bytes().to_vec())
                    })
                    .context("cannot re-read our own public key")?
                    .context("cannot encode our own public key")?,
            )),
        })
    }

    /// Who the `--bundle-out` bundles of a call must name as their signer: the identity
    /// and issuer of the `certificate` it returned, or our public key.
    fn bundle_signer(
        &self,
        certificate: Option<&SigningCertificate>,
    ) -> anyhow::Result<ExpectedSigner> {
        Ok(match self {
            RunSigner::Key(_) => bail!("--bundle-out needs --tlog-upload"),
            RunSigner::KeyWithTlog(s) => ExpectedSigner::Key(
                BundleKey::from_pem("the signing key's public key", s.public_key_pem())
                    .context("cannot read back our own public key")?,
            ),
            RunSigner::Keyless(_) => {
                let Some(cert) = certificate else {
                    bail!("--bundle-out: no certificate for the signatures just made");
                };
                match (&cert.identity, &cert.issuer) {
                    (Some(identity), Some(issuer)) => {
                        ExpectedSigner::identity(identity.as_str(), issuer.as_str())
                    }
                    _ => bail!("--bundle-out: the certificate names no identity or issuer"),
                }
            }
        })
    }
}

/// What a run's new signature sets are verified as: keyless sets (certificate and log
/// entry), or key sets logged in Rekor with this DER public key.
enum NewSets {
    Certificate,
    LoggedKey(Vec<u8>),
}

/// What the windows of a run produced, staged and not yet written.
pub(super) struct SignedRun {
    pub staging: Staging,
    pub documents: usize,
    pub signatures: usize,
    /// Documents whose new signature was verified against the trust root.
    pub checked: usize,
    /// Every certificate the run signed with, in order (one, unless the run outlived it).
    pub certificates: Vec<SigningCertificate>,
    /// The report, gathered window by window.
    pub record: SignRecord,
    /// `--remove-input`: the inputs to remove once the outputs are written.
    pub removals: Option<Removals>,
}

/// How a run signs: the signer, the options, the root new signatures are checked against
/// (none for key signing without the log), and what it reports.
pub(super) struct SignRun<'a> {
    pub signer: &'a RunSigner,
    pub options: &'a SignOptions,
    pub trust: Option<&'a TrustRoot>,
    /// `-v` and `--format json`
    pub verbose: bool,
    pub json: bool,
    pub remove_input: bool,
}

impl SignRun<'_> {
    /// Signs, verifies and stages every window of `plan` (see the module docs).
    pub fn sign(&self, plan: &mut Plan<'_>) -> anyhow::Result<SignedRun> {
        let mut run = SignedRun {
            staging: Staging::with_prefix(plan.staged_prefix()).watched(),
            documents: 0,
            signatures: 0,
            checked: 0,
            certificates: Vec::new(),
            record: SignRecord::new(self.verbose, self.json),
            removals: self
                .remove_input
                .then(|| Removals::new(self.options.limits)),
        };
        // How new sets are checked, derived once for the run.
        let check = match self.trust {
            Some(trust) => self.signer.new_sets()?.map(|kind| (trust, kind)),
            None => None,
        };
        let limits = self.options.limits;
        let signed = plan.windows(&limits, |plan, mut files, digests| {
            self.sign_window(plan, &mut files, &digests, check.as_ref(), &mut run)
        });
        match signed {
            Ok(()) => Ok(run),
            // Removed now, so that a staged file that cannot be removed is named in the error.
            Err(e) => Err(run.staging.discard(e)),
        }
    }

    /// Signs one window, verifies its new signatures, stages its outputs and records them.
    fn sign_window(
        &self,
        plan: &Plan<'_>,
        files: &mut [ManifestFile],
        digests: &[Digest32],
        check: Option<&(&TrustRoot, NewSets)>,
        run: &mut SignedRun,
    ) -> anyhow::Result<()> {
        let summary = sign_files(files, self.signer.as_dyn(), self.options)?;
        if let Some((trust, kind)) = check {
            run.checked += self_verify(
                files,
                &self.options.domain,
                &self.options.limits,
                trust,
                kind,
            )?;
        }
        let (log_indexes, bundles): (Vec<i64>, Vec<String>) = summary
            .log_entries
            .into_iter()
            .map(|e| (e.log_index, e.bundle_json))
            .unzip();
        let planned_bundles: Vec<_> = files
            .iter()
            .flat_map(|file| plan.bundle_files(file, &plan.target(file)))
            .collect();
        if plan.bundles() {
            if bundles.len() != summary.messages.len() || planned_bundles.len() != bundles.len() {
                bail!(
                    "--bundle-out: {} Sigstore bundle(s) and {} message(s) for {} signature(s) \
                     (bundles need --tlog-upload)",
                    bundles.len(),
                    summary.messages.len(),
                    planned_bundles.len()
                );
            }
            // Verified before anything of the window is staged: a bundle the reader would
            // refuse fails the run, with nothing written.
            let Some((trust, _)) = check else {
                bail!("--bundle-out: no trust root to verify the bundles against");
            };
            let signer = self.signer.bundle_signer(summary.certificate.as_ref())?;
            for ((files, json), message) in
                planned_bundles.iter().zip(&bundles).zip(&summary.messages)
            {
                verify_bundle(trust, &self.options.limits, json, message, &signer).with_context(
                    || {
                        format!(
                            "{}: the Sigstore bundle does not verify against {}, as `mansign \
                             verify-bundle` would read it; nothing was written",
                            files.bundle.display(),
                            trust.origin()
                        )
                    },
                )?;
            }
        }
        for (file, digest) in files.iter().zip(digests) {
            let target = plan.target(file);
            run.staging.add(&target, &render(file))?;
            run.record
                .file(&file.source, &target, file.documents.len())?;
            if let Some(removals) = &mut run.removals {
                removals.add(&file.source, &target, digest)?;
            }
        }
        if plan.bundles() {
            for ((files, json), message) in
                planned_bundles.iter().zip(bundles).zip(&summary.messages)
            {
                // M is YAML text built by mansign's emitter, so always UTF-8.
                let message = std::str::from_utf8(message)
                    .context("--bundle-out: a signed message is not UTF-8 text")?;
                run.staging
                    .add(&Target::File(files.bundle.clone()), &(json + "\n"))?;
                run.staging
                    .add(&Target::File(files.message.clone()), message)?;
                run.record.bundle(files)?;
            }
        }
        run.record.log_indexes(&log_indexes)?;
        run.documents += summary.documents;
        run.signatures += summary.signatures;
        if let Some(cert) = summary.certificate
            && run.certificates.last() != Some(&cert)
        {
            run.certificates.push(cert);
        }
        Ok(())
    }
}

/// Verifies one `--bundle-out` bundle and the message beside it as `mansign verify-bundle`
/// (and sigstore-python, cosign verify-blob) will: every check of
/// [`BundleVerifier::verify`], from the JSON text that is written.
fn verify_bundle(
    trust: &TrustRoot,
    limits: &Limits,
    json: &str,
    message: &[u8],
    signer: &ExpectedSigner,
) -> anyhow::Result<()> {
    let bundle = SigstoreBundle::from_json(json)?;
    BundleVerifier::new(trust).with_limits(*limits).verify(
        &bundle,
        BundleArtifact::Bytes(message),
        signer,
    )?;
    Ok(())
}

/// Verifies every signature set this run added, from the signed documents themselves
/// (what a verifier will read): full Sigstore verification for keyless sets, SET and
/// entry consistency for key sets logged in Rekor. Returns how many were checked.
fn self_verify(
    files: &[ManifestFile],
    domain: &AnnotationDomain,
    limits: &Limits,
    trust: &TrustRoot,
    kind: &NewSets,
) -> anyhow::Result<usize> {
    let mut checked = 0;
    for file in files {
        for doc in &file.documents {
            let signed = extract(&doc.value, domain, limits)
                .with_context(|| format!("{}: reading back the new signature", doc.origin))?;
            // With --append the new set is the last one; the others were there before.
            let Some(set) = signed.sets.last() else {
                bail!("{}: no signature after signing", doc.origin);
            };
            let (verified, what) = match kind {
                NewSets::Certificate => (
                    crate::verify::verify_certificate_set(trust, &signed.message, set).map(|_| ()),
                    "the new signature does not verify",
                ),
                NewSets::LoggedKey(der) => (
                    crate::verify::verify_key_set_with_bundle(trust, &signed.message, set, der)
                        .map(|_| ()),
                    "the new signature's Rekor entry does not verify",
                ),
            };
            verified.with_context(|| {
                format!(
                    "{}: {what} against {}; nothing was written (signing against another \
                     Sigstore instance? pass its --trusted-root)",
                    doc.origin,
                    trust.origin()
                )
            })?;
            checked += 1;
        }
    }
    Ok(checked)
}

/// The output text of a file: its documents as YAML, separated by `---`; a `.json` input
/// stays JSON (one pretty-printed object per document, a JSON stream kubectl reads).
pub fn render(file: &ManifestFile) -> String {
    if file.is_json() {
        return file
            .documents
            .iter()
            .map(|d| {
                let mut text =
                    serde_json::to_string_pretty(&d.value).unwrap_or_else(|_| "{}".into());
                text.push('\n');
                text
            })
            .collect();
    }
    file.documents
        .iter()
        .map(|d| to_yaml(&d.value))
        .collect::<Vec<_>>()
        .join("---\n")
}
