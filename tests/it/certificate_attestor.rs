//! Certificate attestors (Kyverno `certificates`): a pinned signing certificate, a CA chain,
//! or both. Certificates are made with rcgen, manifests are signed over their real message
//! M and the signature annotations embedded as `mansign sign` writes them.

use crate::common;
use crate::common::stack;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::dup_tests_a::template;
use common::write;
use mansign::annotations::{RekorBundle, RekorPayload};
use mansign::manifest::{build_message, parse_documents};
use mansign::policy::{LoadOptions, PolicyError, RequestContext, load_file, load_str};
use mansign::trust::TrustRoot;
use mansign::verify::{
    Attestor, CertificateAttestor, CertificateAttestorError, DocumentVerdict, SignerInfo, Verifier,
};
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _, LineEnding};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::path::Path;
use std::sync::Arc;

const DOC: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: prod\ndata:\n  mode: release\n";

/// A certificate authority made for the test.
struct Ca {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
}

impl Ca {
    fn root(name: &str) -> Ca {
        Ca::root_with(ca_params(name))
    }

    fn root_with(params: CertificateParams) -> Ca {
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { params, key, pem }
    }

    /// An intermediate CA issued by `self`.
    fn intermediate(&self, name: &str) -> Ca {
        self.intermediate_with(ca_params(name))
    }

    fn intermediate_with(&self, params: CertificateParams) -> Ca {
        let key = KeyPair::generate().unwrap();
        let pem = params
            .signed_by(&key, &Issuer::from_params(&self.params, &self.key))
            .unwrap()
            .pem();
        Ca { params, key, pem }
    }
}

fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    params
}

/// What a signing certificate looks like.
struct LeafSpec {
    name: &'static str,
    eku: Vec<ExtendedKeyUsagePurpose>,
    key_usages: Vec<KeyUsagePurpose>,
    /// (year, month, day), midnight UTC.
    not_before: (i32, u8, u8),
    not_after: (i32, u8, u8),
}

fn leaf_spec(name: &'static str) -> LeafSpec {
    LeafSpec {
        name,
        eku: vec![ExtendedKeyUsagePurpose::CodeSigning],
        key_usages: vec![KeyUsagePurpose::DigitalSignature],
        not_before: (2000, 1, 1),
        not_after: (2099, 1, 1),
    }
}

/// A signing key and its certificate.
struct Signer {
    key: p256::ecdsa::SigningKey,
    cert_pem: String,
}

impl Signer {
    /// A new P-256 key with a certificate issued by `issuer` (self-signed when `None`).
    fn new(spec: LeafSpec, issuer: Option<&Ca>) -> Signer {
        let key = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
        let cert_pem = certify(&key, spec, issuer);
        Signer { key, cert_pem }
    }

    fn signed_by(name: &'static str, issuer: &Ca) -> Signer {
        Signer::new(leaf_spec(name), Some(issuer))
    }

    fn self_signed(name: &'static str) -> Signer {
        Signer::new(leaf_spec(name), None)
    }

    fn public_key_pem(&self) -> String {
        self.key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap()
    }
}

/// A certificate for `key` (as rcgen wants it: a PKCS#8 key pair).
fn certify(key: &p256::ecdsa::SigningKey, spec: LeafSpec, issuer: Option<&Ca>) -> String {
    let pkcs8 = key.to_pkcs8_der().unwrap();
    let key_pair = KeyPair::try_from(pkcs8.as_bytes()).unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, spec.name);
    params.extended_key_usages = spec.eku;
    params.key_usages = spec.key_usages;
    let ymd = |(y, m, d): (i32, u8, u8)| rcgen::date_time_ymd(y, m, d);
    params.not_before = ymd(spec.not_before);
    params.not_after = ymd(spec.not_after);
    match issuer {
        None => params.self_signed(&key_pair).unwrap().pem(),
        Some(ca) => params
            .signed_by(&key_pair, &Issuer::from_params(&ca.params, &ca.key))
            .unwrap()
            .pem(),
    }
}

fn document() -> Value {
    parse_documents(DOC, &mansign::Limits::default())
        .unwrap()
        .remove(0)
        .1
}

/// DOC with one signature set by `key` over its message, carrying `certificate_pem` and
/// `bundle` as annotations.
fn signed_with(
    key: &p256::ecdsa::SigningKey,
    certificate_pem: Option<&str>,
    bundle: Option<RekorBundle>,
) -> Value {
    let mut value = document();
    let message = build_message([&value]);
    let signature: p256::ecdsa::DerSignature = key.sign(&message);
    common::embed_one(
        &mut value,
        &message,
        signature.as_bytes(),
        certificate_pem.map(str::to_string),
        bundle,
    );
    value
}

/// Signed by `signer`, its certificate in the `certificate` annotation.
fn signed(signer: &Signer) -> Value {
    signed_with(&signer.key, Some(&signer.cert_pem), None)
}

/// Signed by `signer`, without a certificate annotation.
fn signed_without_certificate(signer: &Signer) -> Value {
    signed_with(&signer.key, None, None)
}

fn verify(attestor: CertificateAttestor, object: &Value) -> DocumentVerdict {
    Verifier::new(vec![Attestor::Certificate(attestor)])
        .verify_object(object)
        .unwrap()
}

fn pinned(signer: &Signer) -> CertificateAttestor {
    CertificateAttestor::new("release.crt", Some(&signer.cert_pem), None).unwrap()
}

fn chain(pem: &str) -> CertificateAttestor {
    CertificateAttestor::new("ca.pem", None, Some(pem)).unwrap()
}

/// A signer whose certificate is `leaf_spec("release")` changed by `edit`, issued by `ca`
/// (self-signed when `None`); its signed object verified against the pinned certificate, or
/// against `ca`'s chain.
fn verify_leaf(ca: Option<&Ca>, edit: impl FnOnce(&mut LeafSpec)) -> DocumentVerdict {
    let mut spec = leaf_spec("release");
    edit(&mut spec);
    let signer = Signer::new(spec, ca);
    let attestor = match ca {
        Some(ca) => chain(&ca.pem),
        None => pinned(&signer),
    };
    verify(attestor, &signed(&signer))
}

/// A signer whose certificate `issuer` issued; its signed object verified against the chain
/// `chain_pem`.
fn verify_chain_leaf(issuer: &Ca, chain_pem: &str) -> DocumentVerdict {
    let signer = Signer::signed_by("release", issuer);
    verify(chain(chain_pem), &signed(&signer))
}

fn rejection(verdict: &DocumentVerdict) -> String {
    match &verdict.result {
        Ok(ok) => panic!("verified, expected a rejection: {}", ok.signer),
        Err(r) => {
            assert_eq!(r.check(), "signature", "{r}");
            r.to_string()
        }
    }
}

fn assert_rejected_because(verdict: &DocumentVerdict, reason: &str) {
    let text = rejection(verdict);
    assert!(text.contains(reason), "expected {reason:?} in: {text}");
}

// --- pinned certificate -------------------------------------------------------------

#[test]
fn pinned_certificate_verifies_its_signature() {
    let signer = Signer::self_signed("release");
    let verdict = verify(pinned(&signer), &signed(&signer));
    let ok = verdict.result.unwrap();
    assert!(
        matches!(ok.signer, SignerInfo::SigningCertificate { ref subject, transparency_log: None, .. } if subject == "CN=release"),
        "{}",
        ok.signer
    );
}

#[test]
fn pinned_certificate_verifies_set_without_certificate_annotation() {
    let signer = Signer::self_signed("release");
    let verdict = verify(pinned(&signer), &signed_without_certificate(&signer));
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn signer_reports_the_certificate_fingerprint() {
    let signer = Signer::self_signed("release");
    let der = pem::parse(&signer.cert_pem).unwrap().into_contents();
    let ok = verify(pinned(&signer), &signed(&signer)).result.unwrap();
    let SignerInfo::SigningCertificate { fingerprint, .. } = ok.signer else {
        panic!("{}", ok.signer);
    };
    assert_eq!(fingerprint, hex::encode(Sha256::digest(&der)));
}

#[test]
fn rejects_signature_by_another_certificate_than_the_pinned_one() {
    let (release, other) = (Signer::self_signed("release"), Signer::self_signed("other"));
    let verdict = verify(pinned(&release), &signed_without_certificate(&other));
    assert_rejected_because(
        &verdict,
        "signature does not match the message and the certificate's key",
    );
}

#[test]
fn rejects_set_signed_by_another_certificate_that_names_itself() {
    let (release, other) = (Signer::self_signed("release"), Signer::self_signed("other"));
    let verdict = verify(pinned(&release), &signed(&other));
    assert_rejected_because(&verdict, "is not the pinned certificate");
}

#[test]
fn rejects_set_whose_certificate_annotation_differs_from_the_pinned_one() {
    // Same key, another certificate: the signature alone would verify.
    let release = Signer::self_signed("release");
    let reissued = certify(&release.key, leaf_spec("release-reissued"), None);
    let verdict = verify(
        pinned(&release),
        &signed_with(&release.key, Some(&reissued), None),
    );
    assert_rejected_because(&verdict, "is not the pinned certificate");
}

#[test]
fn rejects_expired_pinned_certificate_without_bundle() {
    let verdict = verify_leaf(None, |spec| {
        spec.not_before = (2020, 1, 1);
        spec.not_after = (2021, 1, 1);
    });
    assert_rejected_because(&verdict, "certificate not valid at verification time");
}

#[test]
fn rejects_pinned_certificate_not_yet_valid() {
    let verdict = verify_leaf(None, |spec| spec.not_before = (2098, 1, 1));
    assert_rejected_because(&verdict, "not valid before");
}

#[test]
fn certificate_validity_is_checked_at_the_verifier_clock_without_bundle() {
    let mut spec = leaf_spec("release");
    spec.not_before = (2020, 1, 1);
    spec.not_after = (2021, 1, 1);
    let signer = Signer::new(spec, None);
    let inside: jiff::Timestamp = "2020-06-01T00:00:00Z".parse().unwrap();
    let verdict = Verifier::new(vec![Attestor::Certificate(pinned(&signer))])
        .with_clock(inside)
        .verify_object(&signed(&signer))
        .unwrap();
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn rejects_pinned_certificate_whose_eku_excludes_code_signing() {
    let verdict = verify_leaf(None, |spec| {
        spec.eku = vec![ExtendedKeyUsagePurpose::ServerAuth]
    });
    assert_rejected_because(&verdict, "no code-signing extended key usage");
}

#[test]
fn rejects_certificate_whose_key_usage_excludes_digital_signatures() {
    let verdict = verify_leaf(None, |spec| {
        spec.key_usages = vec![KeyUsagePurpose::KeyEncipherment]
    });
    assert_rejected_because(
        &verdict,
        "certificate key usage does not allow digital signatures",
    );
}

#[test]
fn pinned_certificate_without_eku_extension_verifies() {
    let verdict = verify_leaf(None, |spec| spec.eku = vec![]);
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn rejects_set_with_bundle_when_no_trust_root_is_configured() {
    let signer = Signer::self_signed("release");
    let object = signed_with(&signer.key, Some(&signer.cert_pem), Some(junk_bundle()));
    let verdict = verify(pinned(&signer), &object);
    assert_rejected_because(
        &verdict,
        "the set carries a Rekor bundle but no trust root is configured to check it",
    );
}

#[test]
fn rejects_set_whose_bundle_does_not_verify() {
    let signer = Signer::self_signed("release");
    let object = signed_with(&signer.key, Some(&signer.cert_pem), Some(junk_bundle()));
    let attestor = pinned(&signer).with_trust_root(Arc::new(TrustRoot::public_good().unwrap()));
    let verdict = verify(attestor, &object);
    assert_rejected_because(&verdict, "Rekor bundle does not verify");
}

/// A well-formed bundle from a log no trust root knows.
fn junk_bundle() -> RekorBundle {
    let body = json!({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {}});
    RekorBundle {
        signed_entry_timestamp: STANDARD.encode(b"not a signature"),
        payload: RekorPayload {
            body: STANDARD.encode(body.to_string()),
            integrated_time: 1_767_323_045,
            log_index: 1,
            log_id: "ab".repeat(32),
        },
    }
}

#[test]
fn pinned_cert_must_hold_exactly_one_certificate() {
    let (a, b) = (Signer::self_signed("a"), Signer::self_signed("b"));
    let both = format!("{}{}", a.cert_pem, b.cert_pem);
    let err = CertificateAttestor::new("x", Some(&both), None).unwrap_err();
    assert_eq!(
        err,
        CertificateAttestorError::SeveralCertificates { found: 2 }
    );
}

#[test]
fn attestor_needs_cert_or_cert_chain() {
    let err = CertificateAttestor::new("x", None, None).unwrap_err();
    assert_eq!(err, CertificateAttestorError::Empty);
}

#[test]
fn public_key_is_not_a_pinned_certificate() {
    let signer = Signer::self_signed("release");
    let err = CertificateAttestor::new("x", Some(&signer.public_key_pem()), None).unwrap_err();
    assert!(
        matches!(err, CertificateAttestorError::NotACertificate { ref tag, .. } if tag == "PUBLIC KEY"),
        "{err}"
    );
}

// --- CA chain ---------------------------------------------------------------------

#[test]
fn leaf_issued_by_the_chain_ca_verifies() {
    let ca = Ca::root("Acme Root");
    let verdict = verify_chain_leaf(&ca, &ca.pem);
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn leaf_issued_through_an_intermediate_of_the_chain_verifies() {
    let root = Ca::root("Acme Root");
    let intermediate = root.intermediate("Acme Signing CA");
    let pem = format!("{}{}", intermediate.pem, root.pem);
    let verdict = verify_chain_leaf(&intermediate, &pem);
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn rejects_leaf_under_intermediate_restricted_to_other_usages() {
    let root = Ca::root("Acme Root");
    let mut params = ca_params("Acme TLS CA");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let intermediate = root.intermediate_with(params);
    let pem = format!("{}{}", intermediate.pem, root.pem);
    let verdict = verify_chain_leaf(&intermediate, &pem);
    assert_rejected_because(&verdict, "certificate does not chain to the certChain root");
}

#[test]
fn rejects_chain_whose_root_is_not_valid_at_the_signing_time() {
    let mut params = ca_params("Old Root");
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let root = Ca::root_with(params);
    let verdict = verify_chain_leaf(&root, &root.pem);
    assert_rejected_because(
        &verdict,
        "certChain root CN=Old Root not valid at verification time",
    );
}

#[test]
fn rejects_leaf_issued_by_another_ca() {
    let (ca, other) = (Ca::root("Acme Root"), Ca::root("Evil Root"));
    let verdict = verify_chain_leaf(&other, &ca.pem);
    assert_rejected_because(&verdict, "certificate does not chain to the certChain root");
}

#[test]
fn rejects_intermediate_used_as_the_root() {
    // Only the chain's last certificate is a trust anchor; an intermediate listed first
    // does not let a sibling root's leaves in.
    let (root, other_root) = (Ca::root("Acme Root"), Ca::root("Evil Root"));
    let intermediate = root.intermediate("Acme Signing CA");
    let pem = format!("{}{}", intermediate.pem, other_root.pem);
    let verdict = verify_chain_leaf(&intermediate, &pem);
    assert_rejected_because(&verdict, "certificate does not chain to the certChain root");
}

#[test]
fn rejects_chain_leaf_without_code_signing_eku() {
    let ca = Ca::root("Acme Root");
    let verdict = verify_leaf(Some(&ca), |spec| spec.eku = vec![]);
    assert_rejected_because(&verdict, "no code-signing extended key usage");
}

#[test]
fn rejects_chain_leaf_with_only_other_ekus() {
    let ca = Ca::root("Acme Root");
    let verdict = verify_leaf(Some(&ca), |spec| {
        spec.eku = vec![ExtendedKeyUsagePurpose::ServerAuth]
    });
    assert_rejected_because(&verdict, "no code-signing extended key usage");
}

#[test]
fn rejects_chain_set_without_certificate_annotation() {
    let ca = Ca::root("Acme Root");
    let signer = Signer::signed_by("release", &ca);
    let verdict = verify(chain(&ca.pem), &signed_without_certificate(&signer));
    assert_rejected_because(&verdict, "signature set has no certificate annotation");
}

#[test]
fn rejects_expired_chain_leaf_without_bundle() {
    let ca = Ca::root("Acme Root");
    let verdict = verify_leaf(Some(&ca), |spec| {
        spec.not_before = (2020, 1, 1);
        spec.not_after = (2021, 1, 1);
    });
    assert_rejected_because(&verdict, "certificate not valid at verification time");
}

#[test]
fn rejects_chain_leaf_whose_signature_is_by_another_key() {
    let ca = Ca::root("Acme Root");
    let signer = Signer::signed_by("release", &ca);
    let attacker = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
    let verdict = verify(
        chain(&ca.pem),
        &signed_with(&attacker, Some(&signer.cert_pem), None),
    );
    assert_rejected_because(
        &verdict,
        "signature does not match the message and the certificate's key",
    );
}

// --- pinned certificate and chain -----------------------------------------------------

#[test]
fn pinned_certificate_of_the_chain_verifies() {
    let ca = Ca::root("Acme Root");
    let signer = Signer::signed_by("release", &ca);
    let attestor =
        CertificateAttestor::new("release", Some(&signer.cert_pem), Some(&ca.pem)).unwrap();
    let verdict = verify(attestor, &signed_without_certificate(&signer));
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn rejects_pinned_certificate_outside_the_chain() {
    let (ca, other) = (Ca::root("Acme Root"), Ca::root("Evil Root"));
    let signer = Signer::signed_by("release", &other);
    let attestor =
        CertificateAttestor::new("release", Some(&signer.cert_pem), Some(&ca.pem)).unwrap();
    let verdict = verify(attestor, &signed(&signer));
    assert_rejected_because(&verdict, "certificate does not chain to the certChain root");
}

#[test]
fn rejects_chain_signer_that_is_not_the_pinned_certificate() {
    let ca = Ca::root("Acme Root");
    let (release, colleague) = (
        Signer::signed_by("release", &ca),
        Signer::signed_by("colleague", &ca),
    );
    let attestor =
        CertificateAttestor::new("release", Some(&release.cert_pem), Some(&ca.pem)).unwrap();
    let verdict = verify(attestor, &signed(&colleague));
    assert_rejected_because(&verdict, "is not the pinned certificate");
}

// --- policy files -----------------------------------------------------------------

fn load_options() -> LoadOptions {
    LoadOptions::default().with_trust_root(Arc::new(TrustRoot::public_good().unwrap()))
}

fn policy_verdict(policy: &Path, object: &Value) -> mansign::policy::ObjectVerdict {
    load_file(policy, &load_options())
        .unwrap()
        .verify_object(object, &RequestContext::default())
        .unwrap()
}

/// A ManifestPolicy `release` whose one entry is a `certificates` entry with the fields
/// `certificates` (indented eight spaces).
fn mansign_policy(certificates: &str) -> String {
    template(
        "mansign-certificates-policy.yaml",
        &[("        # CERTIFICATES\n", certificates)],
    )
}

/// [`mansign_policy`] pinning `release.crt` of the chain `ca.pem` (paths relative to the
/// policy file).
fn cert_path_policy() -> String {
    mansign_policy("        certPath: release.crt\n        certChainPath: ca.pem\n")
}

/// Loading the policy text `policy` fails: its error.
/// The error loading `policy`; fails the test unless it names `what`.
fn load_error(policy: &str, what: &str) -> PolicyError {
    let err = load_str("policy.yaml", policy, Path::new("."), &load_options()).unwrap_err();
    assert_error_names(&err, what);
    err
}

/// Fails the test unless the policy error `err` names `what`.
fn assert_error_names(err: &PolicyError, what: &str) {
    assert!(err.to_string().contains(what), "{err}");
}

/// Fails the test unless the policy `verdict` rejects the object naming `reason`.
fn assert_policy_rejected_because(verdict: &mansign::policy::ObjectVerdict, reason: &str) {
    assert!(!verdict.is_verified(), "{verdict}");
    assert!(verdict.to_string().contains(reason), "{verdict}");
}

#[test]
fn mansign_policy_with_certificates_entry_verifies_the_pinned_signer() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::root("Acme Root");
    let signer = Signer::signed_by("release", &ca);
    write(dir.path(), "release.crt", &signer.cert_pem);
    write(dir.path(), "ca.pem", &ca.pem);
    let policy = write(dir.path(), "policy.yaml", &cert_path_policy());
    let verdict = policy_verdict(&policy, &signed(&signer));
    assert!(verdict.is_verified(), "{verdict}");
    assert!(
        verdict.to_string().contains("certificate CN=release"),
        "{verdict}"
    );
}

#[test]
fn mansign_policy_with_certificates_entry_rejects_another_signer_of_the_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::root("Acme Root");
    let (release, colleague) = (
        Signer::signed_by("release", &ca),
        Signer::signed_by("colleague", &ca),
    );
    write(dir.path(), "release.crt", &release.cert_pem);
    write(dir.path(), "ca.pem", &ca.pem);
    let policy = write(dir.path(), "policy.yaml", &cert_path_policy());
    let verdict = policy_verdict(&policy, &signed(&colleague));
    assert_policy_rejected_because(&verdict, "is not the pinned certificate");
}

#[test]
fn mansign_policy_with_inline_cert_chain_rejects_leaf_of_another_ca() {
    let (ca, other) = (Ca::root("Acme Root"), Ca::root("Evil Root"));
    let signer = Signer::signed_by("release", &other);
    let policy = mansign_policy(&pem_field(8, "certChain", &ca.pem));
    let verdict = inline_policy_verdict(&policy, &signed(&signer));
    assert_policy_rejected_because(&verdict, "does not chain to the certChain root");
}

#[test]
fn mansign_policy_refuses_cert_and_cert_path_together() {
    let signer = Signer::self_signed("release");
    let policy = mansign_policy(&format!(
        "        certPath: release.crt\n{}",
        pem_field(8, "cert", &signer.cert_pem)
    ));
    let err = load_error(
        &policy,
        "spec.attestors[0].entries[0].certificates: cert and certPath",
    );
    assert!(matches!(err, PolicyError::Invalid { .. }), "{err}");
}

#[test]
fn mansign_policy_with_unreadable_cert_path_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "policy.yaml", &cert_path_policy());
    let err = load_file(&policy, &load_options()).unwrap_err();
    assert_error_names(
        &err,
        "spec.attestors[0].entries[0].certificates.certPath: cannot read",
    );
}

fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// The YAML field `key: |` at `spaces` of indentation, with `pem` as its literal block.
fn pem_field(spaces: usize, key: &str, pem: &str) -> String {
    format!(
        "{}{key}: |\n{}",
        " ".repeat(spaces),
        indent(pem, spaces + 2)
    )
}

/// A Kyverno ClusterPolicy for ConfigMaps whose one entry is a `certificates` entry with
/// the fields `certificates` (indented fourteen spaces).
fn kyverno_policy(certificates: &str) -> String {
    template(
        "kyverno-certificates-policy.yaml",
        &[("              # CERTIFICATES\n", certificates)],
    )
}

/// The verdict on `object` of the policy text `policy` (mansign or Kyverno).
fn inline_policy_verdict(policy: &str, object: &Value) -> mansign::policy::ObjectVerdict {
    load_str("policy.yaml", policy, Path::new("."), &load_options())
        .unwrap()
        .verify_object(object, &RequestContext::default())
        .unwrap()
}

#[test]
fn kyverno_certificates_entry_verifies_leaf_of_its_chain() {
    let ca = Ca::root("Acme Root");
    let signer = Signer::signed_by("release", &ca);
    let policy = kyverno_policy(&format!(
        "{}              rekor:\n                url: https://rekor.sigstore.dev\n",
        pem_field(14, "certChain", &ca.pem)
    ));
    let verdict = inline_policy_verdict(&policy, &signed(&signer));
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn kyverno_certificates_entry_rejects_signer_that_is_not_the_pinned_cert() {
    let (release, other) = (Signer::self_signed("release"), Signer::self_signed("other"));
    let policy = kyverno_policy(&pem_field(14, "cert", &release.cert_pem));
    let verdict = inline_policy_verdict(&policy, &signed(&other));
    assert_policy_rejected_because(&verdict, "is not the pinned certificate");
}

#[test]
fn kyverno_certificates_entry_with_rekor_pubkey_is_refused_naming_it() {
    let signer = Signer::self_signed("release");
    let policy = kyverno_policy(&format!(
        "{}              rekor:\n{}",
        pem_field(14, "cert", &signer.cert_pem),
        pem_field(16, "pubkey", &signer.public_key_pem())
    ));
    let err = load_error(
        &policy,
        "spec.rules[0].validate.manifests.attestors[0].entries[0].certificates.rekor.pubkey",
    );
    assert!(matches!(err, PolicyError::Unsupported { .. }), "{err}");
}

#[test]
fn kyverno_certificates_entry_with_ctlog_tsa_chain_is_refused_naming_it() {
    let ca = Ca::root("Acme Root");
    let policy = kyverno_policy(&format!(
        "{}              ctlog:\n{}",
        pem_field(14, "certChain", &ca.pem),
        pem_field(16, "tsaCertChain", &ca.pem)
    ));
    load_error(&policy, "certificates.ctlog.tsaCertChain");
}

#[test]
fn kyverno_certificates_entry_with_unknown_field_is_refused_naming_it() {
    let ca = Ca::root("Acme Root");
    let policy = kyverno_policy(&format!(
        "{}              roots: x\n",
        pem_field(14, "certChain", &ca.pem)
    ));
    let err = load_error(&policy, "unknown field `roots`");
    assert!(matches!(err, PolicyError::Syntax { .. }), "{err}");
}

#[test]
fn kyverno_certificates_entry_without_cert_or_chain_is_refused() {
    let policy =
        kyverno_policy("              rekor:\n                url: https://rekor.sigstore.dev\n");
    load_error(
        &policy,
        "certificates: certificates needs cert, certChain or both",
    );
}

// --- Rekor integrated time (local Sigstore stack) -----------------------------------

/// Logs a hashedrekord entry for `signature` over M by `signer`'s public key in the
/// stack's Rekor; returns the bundle as cosign writes it.
fn log_signature(
    stack: &stack::Stack,
    signer: &Signer,
    message: &[u8],
    signature: &[u8],
) -> RekorBundle {
    stack.log_hashedrekord(message, signature, signer.public_key_pem().as_bytes())
}

#[test]
fn certificate_is_checked_at_the_rekor_integrated_time_when_the_set_has_a_bundle() {
    let stack = stack::Stack::start();
    // Valid from yesterday to the day after tomorrow; verified four days from now: only
    // the log time can pass it.
    let day = |offset: i64| {
        let d = jiff::Zoned::now()
            .with_time_zone(jiff::tz::TimeZone::UTC)
            .date()
            .checked_add(jiff::Span::new().days(offset))
            .unwrap();
        (i32::from(d.year()), d.month() as u8, d.day() as u8)
    };
    let mut spec = leaf_spec("release");
    spec.not_before = day(-1);
    spec.not_after = day(2);
    let signer = Signer::new(spec, None);
    let mut value = document();
    let message = build_message([&value]);
    let signature: p256::ecdsa::DerSignature = signer.key.sign(&message);
    let bundle = log_signature(&stack, &signer, &message, signature.as_bytes());
    let trust = Arc::new(TrustRoot::from_file(stack.trusted_root()).unwrap());
    drop(stack);
    common::embed_one(
        &mut value,
        &message,
        signature.as_bytes(),
        Some(signer.cert_pem.clone()),
        Some(bundle),
    );
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(96);
    let verifier = |object: &Value| {
        Verifier::new(vec![Attestor::Certificate(
            pinned(&signer).with_trust_root(trust.clone()),
        )])
        .with_clock(later)
        .verify_object(object)
        .unwrap()
    };
    let logged = verifier(&value).result.unwrap();
    assert!(
        matches!(
            logged.signer,
            SignerInfo::SigningCertificate {
                transparency_log: Some(_),
                ..
            }
        ),
        "{}",
        logged.signer
    );
    // The same signature without its bundle is checked at the clock, after notAfter.
    let unlogged = signed_with(&signer.key, Some(&signer.cert_pem), None);
    assert_rejected_because(
        &verifier(&unlogged),
        "certificate not valid at verification time",
    );
}
