//! The second pass of a signing run: the planned files are signed window by window
//! (at most [`crate::manifest::INPUT_WINDOW`] files, one signer call each; a keyless signer keeps
//! its certificate across windows), each window's new signatures are verified against the
//! trust root, and so is each `--bundle-out` bundle, as its reader will verify it (the
//! whole Sigstore bundle check: chain, SCT, inclusion proof and checkpoint, SET, signature
//! over the message, signer; see [`BundleCheck`]); then its outputs and `--bundle-out`
//! files are staged beside their targets.
//! Nothing is renamed into place before the last window was staged
//! ([`super::staging::Staging`]), so a failure anywhere leaves no output, and the memory of
//! a run does not grow with the number of files (see BENCHMARKS.md, "Scale").

use super::error::{BoxedCause, TreeError};
use super::plan::{Digest32, Plan, Removals};
use super::report::TreeReport;
use super::staging::{Staging, Target};
use crate::annotations::{AnnotationDomain, extract};
use crate::limits::Limits;
use crate::manifest::{ManifestFile, to_yaml};
use crate::signing::{
    KeySigner, KeylessSigner, SignOptions, Signer, SigningCertificate, TlogUploadingSigner,
    sign_files,
};
use crate::trust::TrustRoot;

/// The signer of a run: a key, a key whose signatures are logged in Rekor, or keyless (one
/// Fulcio certificate for the run, every signature logged).
#[non_exhaustive]
pub enum RunSigner {
    Key(KeySigner),
    KeyWithTlog(TlogUploadingSigner<KeySigner>),
    Keyless(Box<KeylessSigner>),
}

impl From<KeySigner> for RunSigner {
    fn from(signer: KeySigner) -> Self {
        RunSigner::Key(signer)
    }
}

impl From<TlogUploadingSigner<KeySigner>> for RunSigner {
    fn from(signer: TlogUploadingSigner<KeySigner>) -> Self {
        RunSigner::KeyWithTlog(signer)
    }
}

impl From<KeylessSigner> for RunSigner {
    fn from(signer: KeylessSigner) -> Self {
        RunSigner::Keyless(Box::new(signer))
    }
}

/// Who a `--bundle-out` bundle must name as its signer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BundleSigner {
    /// The signing key, its public key as PEM.
    Key { public_key_pem: String },
    /// The identity and issuer of the certificate the signature was made with.
    Identity { subject: String, issuer: String },
}

/// The check of each `--bundle-out` bundle before anything is written: the Sigstore bundle
/// (v0.3 JSON, as written) and the message beside it verify against `trust` as their reader
/// will verify them, signed by `signer`. [`crate::conformance::BundleVerifier`] is that
/// check (`mansign sign --bundle-out` uses it); the bundles are not checked without one.
pub trait BundleCheck {
    fn check(
        &self,
        trust: &TrustRoot,
        limits: &Limits,
        bundle_json: &str,
        message: &[u8],
        signer: &BundleSigner,
    ) -> Result<(), BoxedCause>;
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
    fn new_sets(&self) -> Result<Option<NewSets>, TreeError> {
        Ok(match self {
            RunSigner::Key(_) => None,
            RunSigner::Keyless(_) => Some(NewSets::Certificate),
            RunSigner::KeyWithTlog(s) => {
                let key = <p256::PublicKey as p256::pkcs8::DecodePublicKey>::from_public_key_pem(
                    s.public_key_pem(),
                )
                .map_err(|e| TreeError::OwnPublicKey {
                    step: "cannot re-read our own public key",
                    source: Box::new(e),
                })?;
                let der = p256::pkcs8::EncodePublicKey::to_public_key_der(&key).map_err(|e| {
                    TreeError::OwnPublicKey {
                        step: "cannot encode our own public key",
                        source: Box::new(e),
                    }
                })?;
                Some(NewSets::LoggedKey(der.as_bytes().to_vec()))
            }
        })
    }

    /// Who the `--bundle-out` bundles of a call must name as their signer: the identity
    /// and issuer of the `certificate` it returned, or our public key.
    fn bundle_signer(
        &self,
        certificate: Option<&SigningCertificate>,
    ) -> Result<BundleSigner, TreeError> {
        Ok(match self {
            RunSigner::Key(_) => return Err(TreeError::BundleNeedsTlog),
            RunSigner::KeyWithTlog(s) => BundleSigner::Key {
                public_key_pem: s.public_key_pem().to_string(),
            },
            RunSigner::Keyless(_) => {
                let Some(cert) = certificate else {
                    return Err(TreeError::BundleNoCertificate);
                };
                match (&cert.identity, &cert.issuer) {
                    (Some(identity), Some(issuer)) => BundleSigner::Identity {
                        subject: identity.clone(),
                        issuer: issuer.clone(),
                    },
                    _ => return Err(TreeError::BundleNoIdentity),
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

/// How a run signs: the signer, the options, the root new signatures are checked against
/// (none for key signing without the log), the check of `--bundle-out` bundles, and what
/// happens around the windows.
pub(super) struct SignRun<'a> {
    pub signer: &'a RunSigner,
    pub options: &'a SignOptions,
    pub trust: Option<&'a TrustRoot>,
    pub bundle_check: Option<&'a dyn BundleCheck>,
    pub remove_inputs: bool,
    pub watch_interrupts: bool,
}

/// What the windows of a run produced, staged and not yet written.
struct Staged {
    staging: Staging,
    report: TreeReport,
    removals: Option<Removals>,
}

impl SignRun<'_> {
    /// Signs, verifies and stages every window of `plan` (see the module docs), then writes
    /// every output and removes the inputs (with `remove_inputs`).
    pub fn sign(&self, plan: &mut Plan<'_>) -> Result<TreeReport, TreeError> {
        // How new sets are checked, derived once for the run.
        let check = match self.trust {
            Some(trust) => self.signer.new_sets()?.map(|kind| (trust, kind)),
            None => None,
        };
        let staging = Staging::with_prefix(plan.staged_prefix());
        let mut run = Staged {
            staging: if self.watch_interrupts {
                staging.watched()
            } else {
                staging
            },
            report: TreeReport::new(),
            removals: self
                .remove_inputs
                .then(|| Removals::new(self.options.limits)),
        };
        run.report.trust = check.as_ref().map(|(trust, _)| trust.origin().to_string());
        let limits = self.options.limits;
        let signed = plan.windows(&limits, |plan, mut files, digests| {
            self.sign_window(plan, &mut files, &digests, check.as_ref(), &mut run)
        });
        let Staged {
            staging,
            mut report,
            mut removals,
        } = run;
        if let Err(e) = signed {
            // Removed now, so that a staged file that cannot be removed is named in the error.
            return Err(staging.discard(e));
        }
        // An input edited after its window was signed fails the run before anything is
        // written: removing it would lose the edit.
        if let Some(removals) = &mut removals
            && let Err(e) = removals.check_unchanged()
        {
            return Err(staging.discard(e));
        }
        staging.commit()?;
        if let Some(removals) = removals {
            let (removed, failed) = removals.remove();
            report.set_removed(removed);
            if let Some(source) = failed {
                return Err(TreeError::AfterCommit(Box::new(source)));
            }
        }
        Ok(report)
    }

    /// Signs one window, verifies its new signatures, stages its outputs and records them.
    fn sign_window(
        &self,
        plan: &Plan<'_>,
        files: &mut [ManifestFile],
        digests: &[Digest32],
        check: Option<&(&TrustRoot, NewSets)>,
        run: &mut Staged,
    ) -> Result<(), TreeError> {
        let summary = sign_files(files, self.signer.as_dyn(), self.options)?;
        if let Some((trust, kind)) = check {
            run.report.verified += self_verify(
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
                return Err(TreeError::BundleCount {
                    bundles: bundles.len(),
                    messages: summary.messages.len(),
                    signatures: planned_bundles.len(),
                });
            }
            // Verified before anything of the window is staged: a bundle the reader would
            // refuse fails the run, with nothing written.
            let Some((trust, _)) = check else {
                return Err(TreeError::BundleNoTrust);
            };
            let signer = self.signer.bundle_signer(summary.certificate.as_ref())?;
            if let Some(bundle_check) = self.bundle_check {
                for ((files, json), message) in
                    planned_bundles.iter().zip(&bundles).zip(&summary.messages)
                {
                    bundle_check
                        .check(trust, &self.options.limits, json, message, &signer)
                        .map_err(|source| TreeError::BundleDoesNotVerify {
                            path: files.bundle.clone(),
                            trust: trust.origin().to_string(),
                            source,
                        })?;
                }
            }
        }
        for (file, digest) in files.iter().zip(digests) {
            let target = plan.target(file);
            run.staging.add(&target, &render(file))?;
            run.report
                .record_file(&file.source, &target, file.documents.len())?;
            if let Some(removals) = &mut run.removals {
                removals.add(&file.source, &target, digest)?;
            }
        }
        if plan.bundles() {
            for ((files, json), message) in
                planned_bundles.iter().zip(bundles).zip(&summary.messages)
            {
                // M is YAML text built by mansign's emitter, so always UTF-8.
                let message = std::str::from_utf8(message).map_err(TreeError::MessageNotUtf8)?;
                run.staging
                    .add(&Target::File(files.bundle.clone()), &(json + "\n"))?;
                run.staging
                    .add(&Target::File(files.message.clone()), message)?;
                run.report.record_bundle(files)?;
            }
        }
        for index in log_indexes {
            run.report.record_log_index(index)?;
        }
        run.report.files += files.len();
        run.report.documents += summary.documents;
        run.report.signatures += summary.signatures;
        if let Some(cert) = summary.certificate
            && run.report.certificates.last() != Some(&cert)
        {
            run.report.certificates.push(cert);
        }
        Ok(())
    }
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
) -> Result<usize, TreeError> {
    let mut checked = 0;
    for file in files {
        for doc in &file.documents {
            let signed =
                extract(&doc.value, domain, limits).map_err(|source| TreeError::ReadBack {
                    origin: doc.origin.clone(),
                    source: Box::new(source),
                })?;
            // With --append the new set is the last one; the others were there before.
            let Some(set) = signed.sets.last() else {
                return Err(TreeError::NoSignatureAfterSigning {
                    origin: doc.origin.clone(),
                });
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
            verified.map_err(|source| TreeError::SelfCheck {
                origin: doc.origin.clone(),
                what,
                trust: trust.origin().to_string(),
                source: Box::new(source),
            })?;
            checked += 1;
        }
    }
    Ok(checked)
}

/// The output text of a file: its documents as YAML, separated by `---`; a `.json` input
/// stays JSON (one pretty-printed object per document, a JSON stream kubectl reads).
fn render(file: &ManifestFile) -> String {
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
