//! The Rekor checks mansign runs itself: the SET over an entry (for the paths that do not
//! go through sigstore-verify: legacy `rekord` entries, and `hashedrekord` entries whose
//! certificate this trust root already vouched for), and mansign's one reading of a logged
//! `hashedrekord` or `rekord` body ([`LoggedSignature`]), used on **every** path, the one
//! through sigstore-verify included, so that a body is judged the same whether or not its
//! certificate was seen before (issue 28).

use super::adapter::SigningMaterial;
use super::error::SigstoreError;
use super::rekor_entry::RekorEntry;
use crate::memo::{Last, remembered};
use crate::trust::{RekorSetError, TrustRoot};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use std::cell::RefCell;

thread_local! {
    /// The `spec.signature.publicKey.content` this thread read last and the PEM block it
    /// holds ([`crate::memo`]): entries of one signing run log one certificate.
    static LAST_VERIFIER: Last<String, pem::Pem> = const { RefCell::new(None) };
}

/// The RFC 8785 canonical JSON the SET signs. Keys in code-unit order; the values are
/// base64, hex and integers, which need no escaping beyond what serde_json does. The body
/// is re-encoded from the decoded bytes, so the SET covers exactly what is interpreted.
fn set_payload(entry: &RekorEntry) -> String {
    format!(
        r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
        STANDARD.encode(&entry.body),
        entry.integrated_time,
        entry.log_id_hex(),
        entry.log_index
    )
}

/// The SET verifies: ECDSA by the trust root's Rekor key for the entry's `logID`, valid at
/// `time` (the integrated time), over [`set_payload`].
pub(super) fn verify_set(
    trust: &TrustRoot,
    entry: &RekorEntry,
    time: jiff::Timestamp,
) -> Result<(), SigstoreError> {
    trust
        .verify_rekor_set(
            &entry.log_id,
            time,
            set_payload(entry).as_bytes(),
            &entry.set,
        )
        .map_err(|e| {
            SigstoreError::SignedEntryTimestamp(match e {
                RekorSetError::KeyNotValidAt => format!(
                    "the key of Rekor log {} was not valid at {time}",
                    entry.log_id_hex()
                ),
                RekorSetError::BadSignature => {
                    format!("not signed by the key of Rekor log {}", entry.log_id_hex())
                }
            })
        })
}

/// The first three checks of the paths that check an entry without sigstore-verify (legacy
/// `rekord` entries, vouched `hashedrekord` entries), in this order, the first failure
/// winning: the body reads as [`LoggedSignature::read`] requires, the SET verifies at the
/// integrated time ([`verify_set`]), and the integrated time is not in the future. Returns
/// the reading and the integrated time.
pub(super) fn read_with_set(
    trust: &TrustRoot,
    entry: &RekorEntry,
) -> Result<(LoggedSignature, jiff::Timestamp), SigstoreError> {
    let logged = LoggedSignature::read(entry)?;
    let time = entry.integrated_timestamp()?;
    verify_set(trust, entry, time)?;
    if time > jiff::Timestamp::now() {
        return Err(SigstoreError::IntegratedTime(format!(
            "integrated time {time} is in the future"
        )));
    }
    Ok((logged, time))
}

/// The fields of a `hashedrekord` or `rekord` 0.0.1 body that say what was signed. serde
/// refuses a duplicate key at every level (JSON decoders differ on which one wins);
/// unknown fields are ignored, as by the log's own schema types.
#[derive(Deserialize)]
struct Body {
    spec: Spec,
}

#[derive(Deserialize)]
struct Spec {
    data: Data,
    signature: Signature,
}

#[derive(Deserialize)]
struct Data {
    hash: Option<Hash>,
}

#[derive(Deserialize)]
struct Hash {
    algorithm: String,
    value: String,
}

#[derive(Deserialize)]
struct Signature {
    content: String,
    /// `rekord` only: `x509` for a certificate or a PKIX key.
    format: Option<String>,
    #[serde(rename = "publicKey")]
    public_key: PublicKey,
}

#[derive(Deserialize)]
struct PublicKey {
    content: String,
}

/// What a `hashedrekord` or `rekord` 0.0.1 body says was signed, decoded by
/// [`LoggedSignature::read`]: the signature bytes, the PEM block of the certificate or key,
/// and the SHA-256 of the signed message.
#[derive(Debug)]
pub(super) struct LoggedSignature {
    signature: Vec<u8>,
    verifier: pem::Pem,
    sha256: [u8; 32],
}

impl LoggedSignature {
    /// Reads the body of a `hashedrekord` or `rekord` 0.0.1 entry (the caller checked the
    /// kind), exactly: every failure is [`SigstoreError::MalformedEntry`].
    ///
    /// 1. JSON with `spec.data.hash`, `spec.signature.content` and
    ///    `spec.signature.publicKey.content`, no key twice;
    /// 2. `spec.data.hash.algorithm` is `sha256`, spelled so (not `SHA256`, `sha-256` or
    ///    `SHA2_256`, which sigstore-verify would also read as SHA-256), and
    ///    `spec.data.hash.value` is 64 hex digits;
    /// 3. `spec.signature.content` and `spec.signature.publicKey.content` are base64 in the
    ///    standard alphabet with canonical padding and nothing around them (no whitespace,
    ///    no URL-safe or unpadded form), the latter of a UTF-8 PEM block;
    /// 4. (`rekord`) `spec.signature.format` is `x509`.
    ///
    /// Stricter than sigstore-verify 0.15.1 on purpose, so that running this check on its
    /// path too makes that path refuse every body the vouched path refuses: sigstore-verify
    /// compares only the hash value, never the algorithm (`verify_impl/hashedrekord.rs`,
    /// `verify_hashedrekord_entry`), reads the algorithm case-insensitively in three
    /// spellings (sigstore-types 0.15.1 `hash.rs`, `FromStr for HashAlgorithm`), and decodes
    /// the base64 fields in either alphabet, padded or not (sigstore-types 0.15.1
    /// `encoding.rs`, `decode_protojson_base64`). Its PEM reading is the `pem` crate's, as
    /// here. Rekor stores what the client sent in these fields (cosign and mansign send the
    /// canonical forms), so a real log's entries read the same either way.
    pub(super) fn read(entry: &RekorEntry) -> Result<Self, SigstoreError> {
        let malformed =
            |what: String| SigstoreError::MalformedEntry(format!("{} body: {what}", entry.kind));
        let body: Body =
            serde_json::from_slice(&entry.body).map_err(|e| malformed(e.to_string()))?;
        let spec = body.spec;
        if entry.kind == "rekord" && spec.signature.format.as_deref() != Some("x509") {
            return Err(malformed(format!(
                "spec.signature.format {:?} is not x509",
                spec.signature.format.unwrap_or_default()
            )));
        }
        let hash = spec
            .data
            .hash
            .ok_or_else(|| malformed("no spec.data.hash".into()))?;
        if hash.algorithm != "sha256" {
            return Err(malformed(format!(
                "spec.data.hash.algorithm {:?} is not sha256",
                hash.algorithm
            )));
        }
        let mut sha256 = [0u8; 32];
        hex::decode_to_slice(&hash.value, &mut sha256)
            .map_err(|_| malformed("spec.data.hash.value is not 64 hex digits".into()))?;
        let exact_base64 = |field: &str, text: &str| {
            STANDARD.decode(text).map_err(|_| {
                malformed(format!(
                    "{field} is not base64 (standard alphabet, padded, nothing around it)"
                ))
            })
        };
        let signature = exact_base64("spec.signature.content", &spec.signature.content)?;
        let content = &spec.signature.public_key.content;
        let verifier = remembered(
            &LAST_VERIFIER,
            |text| text == content,
            || content.clone(),
            || {
                let bytes = exact_base64("spec.signature.publicKey.content", content)?;
                String::from_utf8(bytes)
                    .ok()
                    .and_then(|text| pem::parse(text).ok())
                    .ok_or_else(|| malformed("spec.signature.publicKey.content is not PEM".into()))
            },
        )?;
        Ok(LoggedSignature {
            signature,
            verifier,
            sha256,
        })
    }

    /// The entry is about this signature: the same signature bytes, the same certificate
    /// DER (or public key), and SHA-256(M) (CVE-2022-36056).
    pub(super) fn describes(
        &self,
        message: &[u8],
        signature: &[u8],
        material: SigningMaterial<'_>,
    ) -> Result<(), SigstoreError> {
        if self.signature != signature {
            return Err(SigstoreError::EntryMismatch(
                "the logged signature is not the annotation's signature".into(),
            ));
        }
        let (tag, der) = match &material {
            SigningMaterial::Certificate(der) => ("CERTIFICATE", der),
            SigningMaterial::PublicKey(key) => ("PUBLIC KEY", key),
        };
        // A block of the other kind is no verifier for this set at all (as sigstore-verify
        // reads it: a certificate set's entry must log a certificate).
        if self.verifier.tag() != tag {
            return Err(SigstoreError::MalformedEntry(format!(
                "spec.signature.publicKey.content is a {} block, not a {tag}",
                self.verifier.tag()
            )));
        }
        if self.verifier.contents() != *der {
            return Err(SigstoreError::EntryMismatch(
                match material {
                    SigningMaterial::Certificate(_) => {
                        "the logged certificate is not the annotation's"
                    }
                    SigningMaterial::PublicKey(_) => "the logged public key is not the trusted key",
                }
                .into(),
            ));
        }
        let digest = Sha256::digest(message);
        if self.sha256[..] != digest[..] {
            return Err(SigstoreError::EntryMismatch(format!(
                "the logged hash {} is not SHA-256 of the message ({})",
                hex::encode(self.sha256),
                hex::encode(digest)
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE};

    #[test]
    fn set_payload_is_canonical_json_with_sorted_keys() {
        let entry = entry("rekord", b"{}".to_vec());
        assert_eq!(
            set_payload(&entry),
            format!(
                r#"{{"body":"e30=","integratedTime":1631694290,"logID":"{}","logIndex":693859}}"#,
                "ab".repeat(32)
            )
        );
    }

    fn entry(kind: &str, body: Vec<u8>) -> RekorEntry {
        RekorEntry {
            set: vec![],
            body,
            kind: kind.into(),
            api_version: "0.0.1".into(),
            integrated_time: 1_631_694_290,
            log_index: 693_859,
            log_id: [0xab; 32],
        }
    }

    const KEY_DER: &[u8] = b"key-der";
    /// DER whose base64 has `+` and `/`, so the URL-safe form differs.
    const SIGNATURE: &[u8] = &[0xfb, 0xff, 0xbf, 0x01];

    fn pem_b64() -> String {
        STANDARD.encode(pem::encode(&pem::Pem::new("PUBLIC KEY", KEY_DER.to_vec())))
    }

    /// A body over message `m` by [`KEY_DER`], with `edit` applied to its JSON.
    fn body(kind: &str, edit: impl FnOnce(&mut serde_json::Value)) -> RekorEntry {
        let mut v = serde_json::json!({
            "apiVersion": "0.0.1",
            "kind": kind,
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hex::encode(Sha256::digest(b"m"))}},
                "signature": {
                    "content": STANDARD.encode(SIGNATURE),
                    "format": "x509",
                    "publicKey": {"content": pem_b64()}
                }
            }
        });
        edit(&mut v);
        entry(kind, v.to_string().into_bytes())
    }

    fn judge(entry: &RekorEntry, message: &[u8], signature: &[u8]) -> Result<(), SigstoreError> {
        LoggedSignature::read(entry)?.describes(
            message,
            signature,
            SigningMaterial::PublicKey(KEY_DER),
        )
    }

    #[test]
    fn an_entry_about_another_signature_key_or_message_does_not_describe_this_one() {
        for kind in ["hashedrekord", "rekord"] {
            let e = body(kind, |_| {});
            judge(&e, b"m", SIGNATURE).unwrap();
            let logged = LoggedSignature::read(&e).unwrap();
            let cases = [
                logged.describes(b"m", b"other", SigningMaterial::PublicKey(KEY_DER)),
                logged.describes(b"other", SIGNATURE, SigningMaterial::PublicKey(KEY_DER)),
                logged.describes(b"m", SIGNATURE, SigningMaterial::PublicKey(b"other-key")),
            ];
            for result in cases {
                assert!(
                    matches!(result, Err(SigstoreError::EntryMismatch(_))),
                    "{result:?}"
                );
            }
        }
    }

    #[test]
    fn a_body_is_read_exactly() {
        use serde_json::{Value, json};
        let sig_b64 = STANDARD.encode(SIGNATURE);
        let pem = pem_b64();
        let pem_text = STANDARD.decode(&pem).unwrap();
        type Edit = Box<dyn Fn(&mut Value)>;
        let set = |path: &'static [&'static str], value: Value| -> Edit {
            Box::new(move |v: &mut Value| {
                let mut at = v;
                for p in path {
                    at = &mut at[*p];
                }
                *at = value.clone();
            })
        };
        const ALG: &[&str] = &["spec", "data", "hash", "algorithm"];
        const SIG: &[&str] = &["spec", "signature", "content"];
        const KEY: &[&str] = &["spec", "signature", "publicKey", "content"];
        let refused: Vec<(&str, Edit)> = vec![
            ("sha512", set(ALG, json!("sha512"))),
            ("SHA256", set(ALG, json!("SHA256"))),
            ("sha-256", set(ALG, json!("sha-256"))),
            ("SHA2_256", set(ALG, json!("SHA2_256"))),
            ("no hash", set(&["spec", "data"], json!({}))),
            ("null hash", set(&["spec", "data", "hash"], Value::Null)),
            (
                "short hash",
                set(&["spec", "data", "hash", "value"], json!("abcd")),
            ),
            (
                "spaced hash",
                set(
                    &["spec", "data", "hash", "value"],
                    json!(format!(" {}", hex::encode(Sha256::digest(b"m")))),
                ),
            ),
            ("spaced signature", set(SIG, json!(format!(" {sig_b64}\n")))),
            (
                "URL-safe signature",
                set(SIG, json!(URL_SAFE.encode(SIGNATURE))),
            ),
            (
                "unpadded signature",
                set(SIG, json!(STANDARD_NO_PAD.encode(SIGNATURE))),
            ),
            ("spaced key", set(KEY, json!(format!("{pem}\n")))),
            (
                "unpadded key",
                set(KEY, json!(STANDARD_NO_PAD.encode(&pem_text))),
            ),
            ("key not PEM", set(KEY, json!(STANDARD.encode(KEY_DER)))),
            (
                "no key",
                set(&["spec", "signature", "publicKey"], json!({})),
            ),
        ];
        for kind in ["hashedrekord", "rekord"] {
            for (name, edit) in &refused {
                let result = judge(&body(kind, edit), b"m", SIGNATURE);
                assert!(
                    matches!(result, Err(SigstoreError::MalformedEntry(_))),
                    "{kind} {name}: {result:?}"
                );
            }
            // Hex digits of either case are the same digest.
            let upper = hex::encode(Sha256::digest(b"m")).to_uppercase();
            judge(
                &body(kind, set(&["spec", "data", "hash", "value"], json!(upper))),
                b"m",
                SIGNATURE,
            )
            .unwrap();
        }
        // rekord needs format x509; hashedrekord has no format.
        let no_format = |v: &mut Value| {
            v["spec"]["signature"]
                .as_object_mut()
                .unwrap()
                .remove("format");
        };
        judge(&body("hashedrekord", no_format), b"m", SIGNATURE).unwrap();
        let result = judge(&body("rekord", no_format), b"m", SIGNATURE);
        assert!(
            matches!(result, Err(SigstoreError::MalformedEntry(_))),
            "{result:?}"
        );
        let result = judge(
            &body(
                "rekord",
                set(&["spec", "signature", "format"], json!("pgp")),
            ),
            b"m",
            SIGNATURE,
        );
        assert!(
            matches!(result, Err(SigstoreError::MalformedEntry(_))),
            "{result:?}"
        );
    }

    #[test]
    fn a_verifier_block_of_the_other_kind_is_malformed() {
        // the same bytes as a certificate are not the trusted key
        let logged = LoggedSignature::read(&body("hashedrekord", |_| {})).unwrap();
        let result = logged.describes(b"m", SIGNATURE, SigningMaterial::Certificate(KEY_DER));
        assert!(
            matches!(result, Err(SigstoreError::MalformedEntry(_))),
            "{result:?}"
        );
    }

    #[test]
    fn a_duplicate_key_is_refused() {
        let e = body("hashedrekord", |_| {});
        let text = String::from_utf8(e.body.clone()).unwrap();
        let doubled = text.replacen(
            "\"algorithm\":",
            "\"algorithm\":\"sha512\",\"algorithm\":",
            1,
        );
        assert_ne!(doubled, text);
        let result = judge(
            &entry("hashedrekord", doubled.into_bytes()),
            b"m",
            SIGNATURE,
        );
        assert!(
            matches!(result, Err(SigstoreError::MalformedEntry(_))),
            "{result:?}"
        );
    }
}
