//! A Sigstore instance made by the test, offline: a Fulcio CA hierarchy (root and
//! intermediate) whose validity the test chooses, a CT log that embeds real SCTs in the
//! leaf certificates, and a Rekor log ([`TestLog`]) that signs SETs over whatever entry it
//! is sent. With it a test makes keyless signatures whose only fault is the one it is
//! about: an intermediate or root that expired before the signing time, a certificate
//! without an SCT logged as legacy `rekord`, a bundle with too many entries.
//!
//! Shared by `tests/it/fulcio_chain_validity.rs`, `tests/it/advisories.rs` and the tamper
//! matrix. Nothing here is read from testdata/: every key and certificate is made per test.
#![allow(dead_code)]

use super::rekor_log::TestLog;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mansign::annotations::{RekorBundle, RekorPayload, SignatureSet};
use mansign::manifest::{build_message, parse_documents, to_yaml};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{DerSignature, SigningKey};
use p256::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use x509_cert::der::asn1::{BitString, OctetString};
use x509_cert::der::oid::ObjectIdentifier;
use x509_cert::der::{Decode as _, Encode as _};

/// The signer's identity in every certificate of the instance.
pub const IDENTITY: &str =
    "https://github.com/acme/deploy/.github/workflows/sign.yaml@refs/heads/main";
pub const ISSUER: &str = "https://token.actions.githubusercontent.com";
/// The document every signature of the instance is over.
pub const DOC: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  mode: strict\n";
/// The signing time of [`TestInstance::sign`]: 2025-06-01T12:00:00Z. Every leaf is valid
/// from 2025-06-01 to 2025-06-03.
pub const SIGNING_TIME: i64 = 1_748_779_200;

const SCT_LIST_OID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.11129.2.4.2");

/// A (year, month, day) at UTC midnight.
pub type Day = (i32, u8, u8);

/// The validity of each CA certificate, and the authority's `validFor` in the trust root.
#[derive(Clone, Copy)]
pub struct Validity {
    pub root: (Day, Day),
    pub intermediate: (Day, Day),
    /// `validFor` of the authority: start, and end if closed.
    pub valid_for: (&'static str, Option<&'static str>),
}

impl Validity {
    /// Every certificate valid from 2020 to 2040, the authority open since 2020.
    pub const GOOD: Validity = Validity {
        root: ((2020, 1, 1), (2040, 1, 1)),
        intermediate: ((2020, 1, 1), (2040, 1, 1)),
        valid_for: ("2020-01-01T00:00:00Z", None),
    };
    /// The intermediate expired on 2024-01-01, before [`SIGNING_TIME`].
    pub const EXPIRED_INTERMEDIATE: Validity = Validity {
        intermediate: ((2020, 1, 1), (2024, 1, 1)),
        ..Validity::GOOD
    };
    /// The root expired on 2024-01-01; the authority's window is still open.
    pub const EXPIRED_ROOT: Validity = Validity {
        root: ((2020, 1, 1), (2024, 1, 1)),
        ..Validity::GOOD
    };
    /// The intermediate expires on 2025-06-02, inside the leaf's validity: valid at
    /// [`SIGNING_TIME`], expired a day later.
    pub const INTERMEDIATE_EXPIRES_DURING_LEAF: Validity = Validity {
        intermediate: ((2020, 1, 1), (2025, 6, 2)),
        ..Validity::GOOD
    };
    /// The intermediate is valid only from 2026-01-01, after [`SIGNING_TIME`].
    pub const FUTURE_INTERMEDIATE: Validity = Validity {
        intermediate: ((2026, 1, 1), (2040, 1, 1)),
        ..Validity::GOOD
    };
}

struct Ca {
    key: SigningKey,
    params: rcgen::CertificateParams,
    pair: rcgen::KeyPair,
    der: Vec<u8>,
}

fn rcgen_pair(key: &SigningKey) -> rcgen::KeyPair {
    rcgen::KeyPair::try_from(key.to_pkcs8_der().unwrap().as_bytes()).unwrap()
}

fn ca_params(cn: &str, (from, until): (Day, Day)) -> rcgen::CertificateParams {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "mansign.test");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    params.not_before = rcgen::date_time_ymd(from.0, from.1, from.2);
    params.not_after = rcgen::date_time_ymd(until.0, until.1, until.2);
    params
}

/// DER UTF8String, the encoding Fulcio uses for extension 1.3.6.1.4.1.57264.1.8.
fn der_utf8(s: &str) -> Vec<u8> {
    assert!(s.len() < 128);
    let mut v = vec![0x0c, s.len() as u8];
    v.extend_from_slice(s.as_bytes());
    v
}

/// One keyless signature of the instance: the message, the set, and the leaf.
pub struct Signed {
    pub message: Vec<u8>,
    pub set: SignatureSet,
    pub leaf_der: Vec<u8>,
    pub leaf_key: SigningKey,
}

/// A Fulcio root and intermediate, a CT log and a Rekor log, all made by the test.
pub struct TestInstance {
    pub validity: Validity,
    root: Ca,
    intermediate: Ca,
    ct_key: SigningKey,
    pub log: TestLog,
}

impl TestInstance {
    pub fn new(validity: Validity) -> TestInstance {
        let root_key = SigningKey::random(&mut rand_core::OsRng);
        let root_pair = rcgen_pair(&root_key);
        let root_params = ca_params("test-fulcio-root", validity.root);
        let root_der = root_params.self_signed(&root_pair).unwrap().der().to_vec();
        let inter_key = SigningKey::random(&mut rand_core::OsRng);
        let inter_pair = rcgen_pair(&inter_key);
        let mut inter_params = ca_params("test-fulcio-intermediate", validity.intermediate);
        inter_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        let inter_der = inter_params
            .signed_by(
                &inter_pair,
                &rcgen::Issuer::from_params(&root_params, &root_pair),
            )
            .unwrap()
            .der()
            .to_vec();
        TestInstance {
            validity,
            root: Ca {
                key: root_key,
                params: root_params,
                pair: root_pair,
                der: root_der,
            },
            intermediate: Ca {
                key: inter_key,
                params: inter_params,
                pair: inter_pair,
                der: inter_der,
            },
            ct_key: SigningKey::random(&mut rand_core::OsRng),
            log: TestLog::new(),
        }
    }

    fn ct_spki(&self) -> Vec<u8> {
        self.ct_key
            .verifying_key()
            .to_public_key_der()
            .unwrap()
            .as_bytes()
            .to_vec()
    }

    /// The instance's `trusted_root.json`.
    pub fn trusted_root_json(&self) -> Value {
        let ct_spki = self.ct_spki();
        let mut valid_for = json!({"start": self.validity.valid_for.0});
        if let Some(end) = self.validity.valid_for.1 {
            valid_for["end"] = json!(end);
        }
        let root = json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [],
            "certificateAuthorities": [{
                "subject": {"organization": "mansign.test", "commonName": "test-fulcio-root"},
                "uri": "https://fulcio.test.invalid",
                "certChain": {"certificates": [
                    {"rawBytes": STANDARD.encode(&self.intermediate.der)},
                    {"rawBytes": STANDARD.encode(&self.root.der)}
                ]},
                "validFor": valid_for
            }],
            "ctlogs": [{
                "baseUrl": "https://ctfe.test.invalid",
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": STANDARD.encode(&ct_spki),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2020-01-01T00:00:00Z"}
                },
                "logId": {"keyId": STANDARD.encode(Sha256::digest(&ct_spki))}
            }],
            "timestampAuthorities": []
        });
        self.log.added_to(root)
    }

    pub fn trust_root(&self) -> mansign::trust::TrustRoot {
        mansign::trust::TrustRoot::from_json(&self.trusted_root_json().to_string()).unwrap()
    }

    /// A Fulcio-shaped leaf for `key` issued by the intermediate, valid 2025-06-01 to
    /// 2025-06-03, with an embedded SCT by the instance's CT log when `with_sct`.
    pub fn leaf(&self, key: &SigningKey, with_sct: bool) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![rcgen::SanType::URI(IDENTITY.try_into().unwrap())];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.custom_extensions = vec![rcgen::CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
            der_utf8(ISSUER),
        )];
        params.not_before = rcgen::date_time_ymd(2025, 6, 1);
        params.not_after = rcgen::date_time_ymd(2025, 6, 3);
        let issuer = rcgen::Issuer::from_params(&self.intermediate.params, &self.intermediate.pair);
        let plain = params
            .signed_by(&rcgen_pair(key), &issuer)
            .unwrap()
            .der()
            .to_vec();
        if !with_sct {
            return plain;
        }
        self.with_embedded_sct(&plain)
    }

    /// `precert` (DER, issued by the intermediate) with an RFC 6962 SCT list extension
    /// holding one SCT by the CT log over it, re-signed by the intermediate.
    fn with_embedded_sct(&self, precert: &[u8]) -> Vec<u8> {
        let mut cert = x509_cert::Certificate::from_der(precert).unwrap();
        let tbs = cert.tbs_certificate.to_der().unwrap();
        let issuer = x509_cert::Certificate::from_der(&self.intermediate.der).unwrap();
        let issuer_spki = issuer
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .unwrap();
        let timestamp = (SIGNING_TIME as u64) * 1000;
        // RFC 6962 §3.2 digitally-signed struct of a precert entry.
        let mut signed = vec![0u8, 0u8];
        signed.extend_from_slice(&timestamp.to_be_bytes());
        signed.extend_from_slice(&1u16.to_be_bytes());
        signed.extend_from_slice(&Sha256::digest(&issuer_spki));
        signed.extend_from_slice(&(tbs.len() as u32).to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&0u16.to_be_bytes());
        let signature: DerSignature = self.ct_key.sign(&signed);
        let mut sct = vec![0u8];
        sct.extend_from_slice(&Sha256::digest(self.ct_spki()));
        sct.extend_from_slice(&timestamp.to_be_bytes());
        sct.extend_from_slice(&0u16.to_be_bytes());
        sct.extend_from_slice(&[4, 3]);
        sct.extend_from_slice(&(signature.as_bytes().len() as u16).to_be_bytes());
        sct.extend_from_slice(signature.as_bytes());
        let mut list = ((sct.len() + 2) as u16).to_be_bytes().to_vec();
        list.extend_from_slice(&(sct.len() as u16).to_be_bytes());
        list.extend_from_slice(&sct);
        let inner = OctetString::new(list).unwrap().to_der().unwrap();
        cert.tbs_certificate
            .extensions
            .get_or_insert_with(Vec::new)
            .push(x509_cert::ext::Extension {
                extn_id: SCT_LIST_OID,
                critical: false,
                extn_value: OctetString::new(inner).unwrap(),
            });
        let tbs = cert.tbs_certificate.to_der().unwrap();
        let signature: DerSignature = self.intermediate.key.sign(&tbs);
        cert.signature = BitString::from_bytes(signature.as_bytes()).unwrap();
        cert.to_der().unwrap()
    }

    /// [`DOC`] signed with a fresh key and a leaf of this instance (with an embedded SCT
    /// when `with_sct`), logged as `kind` (`hashedrekord` or `rekord`) at `time`.
    pub fn sign_at(&self, kind: &str, with_sct: bool, time: i64) -> Signed {
        let key = SigningKey::random(&mut rand_core::OsRng);
        let leaf_der = self.leaf(&key, with_sct);
        let pem = pem::encode_config(
            &pem::Pem::new("CERTIFICATE", leaf_der.clone()),
            pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
        );
        let value = parse_documents(DOC, &mansign::Limits::default())
            .unwrap()
            .remove(0)
            .1;
        let message = build_message([&value]);
        let signature: DerSignature = key.sign(&message);
        let hash = hex::encode(Sha256::digest(&message));
        let mut spec = json!({
            "data": {"hash": {"algorithm": "sha256", "value": hash}},
            "signature": {
                "content": STANDARD.encode(signature.as_bytes()),
                "publicKey": {"content": STANDARD.encode(pem.as_bytes())}
            }
        });
        if kind == "rekord" {
            spec["signature"]["format"] = json!("x509");
        }
        let body = json!({"apiVersion": "0.0.1", "kind": kind, "spec": spec});
        let mut set = SignatureSet {
            index: 0,
            signature: signature.as_bytes().to_vec(),
            certificate_pem: Some(pem),
            bundle: Some(RekorBundle {
                signed_entry_timestamp: String::new(),
                payload: RekorPayload {
                    body: STANDARD.encode(body.to_string()),
                    integrated_time: time,
                    log_index: 7,
                    log_id: self.log.log_id_hex.clone(),
                },
            }),
        };
        self.log.sign_as_is(&mut set);
        Signed {
            message,
            set,
            leaf_der,
            leaf_key: key,
        }
    }

    /// [`Self::sign_at`] at [`SIGNING_TIME`].
    pub fn sign(&self, kind: &str, with_sct: bool) -> Signed {
        self.sign_at(kind, with_sct, SIGNING_TIME)
    }

    /// The leaf's subject public key and the intermediate, for bundle tests.
    pub fn intermediate_der(&self) -> &[u8] {
        &self.intermediate.der
    }
}

impl Signed {
    /// The same signature with another set (e.g. re-logged at another time).
    pub fn with_set(&self, set: SignatureSet) -> Signed {
        Signed {
            message: self.message.clone(),
            set,
            leaf_der: self.leaf_der.clone(),
            leaf_key: self.leaf_key.clone(),
        }
    }

    /// [`DOC`] with this signature in its annotations, as YAML.
    pub fn manifest_yaml(&self) -> String {
        let mut value = parse_documents(DOC, &mansign::Limits::default())
            .unwrap()
            .remove(0)
            .1;
        super::embed_one(
            &mut value,
            &self.message,
            &self.set.signature,
            self.set.certificate_pem.clone(),
            self.set.bundle.clone(),
        );
        to_yaml(&value)
    }

    /// The signed object, as JSON.
    pub fn object(&self) -> Value {
        mansign::manifest::parse_documents(&self.manifest_yaml(), &mansign::Limits::default())
            .unwrap()
            .remove(0)
            .1
    }

    /// A Sigstore bundle v0.1 of this signature over [`Signed::message`] (the artifact), with
    /// its one `hashedrekord` entry and SET.
    pub fn bundle_json(&self) -> Value {
        let bundle = self.set.bundle.as_ref().unwrap();
        let p = &bundle.payload;
        json!({
            "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1",
            "verificationMaterial": {
                "x509CertificateChain": {"certificates": [{"rawBytes": STANDARD.encode(&self.leaf_der)}]},
                "tlogEntries": [{
                    "logIndex": p.log_index.to_string(),
                    "logId": {"keyId": STANDARD.encode(hex::decode(&p.log_id).unwrap())},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": p.integrated_time.to_string(),
                    "inclusionPromise": {"signedEntryTimestamp": bundle.signed_entry_timestamp},
                    "canonicalizedBody": p.body
                }]
            },
            "messageSignature": {
                "messageDigest": {
                    "algorithm": "SHA2_256",
                    "digest": STANDARD.encode(Sha256::digest(&self.message))
                },
                "signature": STANDARD.encode(&self.set.signature)
            }
        })
    }
}
