//! Signature sets: reading them out of an object's annotations and writing them in.

use super::codec::{CodecError, decode_base64, decode_maybe_gzip, encode_gzip_base64};
use super::{AnnotationDomain, RekorBundle};
use crate::limits::Limits;
use crate::memo::{Last, remembered};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};
use std::cell::RefCell;

/// One signature over the message, with what is needed to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureSet {
    /// Position: 0 for `signature`, N for `signature_N`.
    pub index: usize,
    /// Raw signature bytes (DER ECDSA for P-256 keys).
    pub signature: Vec<u8>,
    /// PEM of the signing certificate (keyless).
    pub certificate_pem: Option<String>,
    /// Transparency-log evidence.
    pub bundle: Option<RekorBundle>,
}

/// Everything signature-related found on one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedAnnotations {
    /// The decoded message M (the signed bytes).
    pub message: Vec<u8>,
    pub sets: Vec<SignatureSet>,
}

/// Why signature annotations could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotationError {
    #[error("not signed: annotation {key} is missing")]
    NoMessage { key: String },
    #[error("no signature: annotation {key} is missing")]
    NoSignature { key: String },
    #[error("annotation {key}: {reason}")]
    Malformed { key: String, reason: String },
    #[error("`metadata.annotations` is not a mapping")]
    AnnotationsNotAMap,
    #[error("more than {limit} signature sets")]
    TooManySets { limit: usize },
    /// The object's annotations are larger than the API server accepts.
    #[error(
        "annotations total {size} bytes, more than the {limit} bytes the Kubernetes API server \
         accepts for one object"
    )]
    TooLarge { size: usize, limit: usize },
    #[error(
        "cannot append: the existing signatures cover a different message (the document \
         changed since it was signed); sign again without --append"
    )]
    AppendMessageMismatch,
}

impl AnnotationError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            AnnotationError::NoMessage { .. } => "not-signed",
            AnnotationError::NoSignature { .. } => "no-signature",
            AnnotationError::Malformed { .. } => "malformed-annotation",
            AnnotationError::AnnotationsNotAMap => "malformed-annotation",
            AnnotationError::TooManySets { .. } => "too-many-signature-sets",
            AnnotationError::AppendMessageMismatch => "append-message-mismatch",
            AnnotationError::TooLarge { .. } => "annotations-too-large",
        }
    }
}

fn malformed(key: &str, reason: impl ToString) -> AnnotationError {
    AnnotationError::Malformed {
        key: key.to_string(),
        reason: reason.to_string(),
    }
}

fn annotations(value: &Value) -> Result<Option<&Map<String, Value>>, AnnotationError> {
    match value.get("metadata").and_then(|m| m.get("annotations")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(AnnotationError::AnnotationsNotAMap),
    }
}

fn string_value<'a>(
    ann: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, AnnotationError> {
    match ann.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(malformed(key, "value is not a string")),
    }
}

fn decode(
    ann: &Map<String, Value>,
    key: &str,
    gz: bool,
    limits: &Limits,
) -> Result<Option<Vec<u8>>, AnnotationError> {
    let Some(v) = string_value(ann, key)? else {
        return Ok(None);
    };
    decode_value(v, key, gz, limits).map(Some)
}

/// The bytes of annotation `key`'s value `v`: base64, then gzip when `gz` (and it is gzip).
fn decode_value(v: &str, key: &str, gz: bool, limits: &Limits) -> Result<Vec<u8>, AnnotationError> {
    let raw = decode_base64(v, limits).map_err(|e: CodecError| malformed(key, e))?;
    if gz {
        decode_maybe_gzip(raw, limits).map_err(|e| malformed(key, e))
    } else {
        Ok(raw)
    }
}

thread_local! {
    /// The certificate annotation this thread decoded last, under which limits, and its
    /// bytes ([`crate::memo`]; batch signing asks Fulcio once for a run): its base64 and gzip
    /// are a third of an object's decoding. At most `max_signature_material_bytes`.
    static LAST_CERTIFICATE: Last<(String, Limits), Vec<u8>> = const { RefCell::new(None) };
}

/// [`decode`] of a certificate annotation, through [`LAST_CERTIFICATE`].
fn decode_certificate(
    ann: &Map<String, Value>,
    key: &str,
    limits: &Limits,
) -> Result<Option<Vec<u8>>, AnnotationError> {
    let Some(value) = string_value(ann, key)? else {
        return Ok(None);
    };
    remembered(
        &LAST_CERTIFICATE,
        |(v, l)| v == value && l == limits,
        || (value.to_owned(), *limits),
        || decode_value(value, key, true, limits),
    )
    .map(Some)
}

/// Reads the message and every signature set (`signature`, `signature_1`, ... up to the
/// first missing index, as kubectl-sigstore does).
pub fn extract(
    value: &Value,
    domain: &AnnotationDomain,
    limits: &Limits,
) -> Result<SignedAnnotations, AnnotationError> {
    let empty = Map::new();
    let ann = annotations(value)?.unwrap_or(&empty);
    // The API server's own bound (keys and values of all annotations together): nothing
    // larger is a real object, and refusing it first bounds all decoding below.
    let size: usize = ann
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > limits.max_annotations_total_bytes {
        return Err(AnnotationError::TooLarge {
            size,
            limit: limits.max_annotations_total_bytes,
        });
    }
    let message_key = domain.message_key();
    let message = decode(ann, &message_key, true, limits)?
        .ok_or(AnnotationError::NoMessage { key: message_key })?;
    // A certificate or a Rekor bundle is a few KiB: each is bounded by
    // `max_signature_material_bytes` once decompressed, and all of an object's together by
    // `max_signature_material_total_bytes`, so 32 sets of gzip-bombed bundles cost at most
    // that much decoding, not 32 times the message limit.
    let small = Limits {
        max_message_bytes: limits.max_signature_material_bytes,
        ..*limits
    };
    let mut material_total = 0usize;
    let mut decode_material = |key: &str, certificate: bool| {
        let decoded = if certificate {
            decode_certificate(ann, key, &small)?
        } else {
            decode(ann, key, true, &small)?
        };
        let Some(bytes) = decoded else {
            return Ok(None);
        };
        material_total = material_total.saturating_add(bytes.len());
        if material_total > limits.max_signature_material_total_bytes {
            Err(malformed(
                key,
                format!(
                    "the certificates and Rekor bundles of this object decode to more than {} \
                     bytes together",
                    limits.max_signature_material_total_bytes
                ),
            ))
        } else {
            Ok(Some(bytes))
        }
    };
    let mut sets = Vec::new();
    for index in 0.. {
        let sig_key = domain.signature_key(index);
        let Some(signature) = decode(ann, &sig_key, false, limits)? else {
            if index == 0 {
                return Err(AnnotationError::NoSignature { key: sig_key });
            }
            break;
        };
        if index >= limits.max_signature_sets {
            return Err(AnnotationError::TooManySets {
                limit: limits.max_signature_sets,
            });
        }
        if signature.is_empty() {
            return Err(malformed(&sig_key, "empty signature"));
        }
        let cert_key = domain.certificate_key(index);
        let certificate_pem = decode_material(&cert_key, true)?
            .map(|b| {
                String::from_utf8(b)
                    .map_err(|_| malformed(&cert_key, "certificate is not PEM text"))
            })
            .transpose()?;
        let bundle_key = domain.bundle_key(index);
        let bundle = decode_material(&bundle_key, false)?
            .map(|b| {
                serde_json::from_slice::<RekorBundle>(&b)
                    .map_err(|e| malformed(&bundle_key, format!("not a Rekor bundle: {e}")))
            })
            .transpose()?;
        sets.push(SignatureSet {
            index,
            signature,
            certificate_pem,
            bundle,
        });
    }
    Ok(SignedAnnotations { message, sets })
}

/// Removes every signature annotation (exact key names, see
/// [`AnnotationDomain::is_signature_key`]); drops `metadata.annotations` when it ends up
/// empty, as kubectl-sigstore does when building M.
pub fn strip_signature_annotations(value: &mut Value, domain: &AnnotationDomain) {
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(Value::Object(ann)) = meta.get_mut("annotations") {
        ann.retain(|k, _| !domain.is_signature_key(k));
        if ann.is_empty() {
            meta.remove("annotations");
        }
    }
}

/// What [`strip_signature_annotations`] leaves of a copy of `value`, without copying the
/// signature annotations first (a few KiB of base64 an object): the same map operations,
/// in the same order, on a copy of everything else.
pub(crate) fn without_signature_annotations(value: &Value, domain: &AnnotationDomain) -> Value {
    let Value::Object(object) = value else {
        return value.clone();
    };
    let Some(Value::Object(meta)) = object.get("metadata") else {
        return value.clone();
    };
    let Some(Value::Object(ann)) = meta.get("annotations") else {
        return value.clone();
    };
    let kept: Map<String, Value> = ann
        .iter()
        .filter(|(k, _)| !domain.is_signature_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let empty = kept.is_empty();
    let mut kept = Some(kept);
    let mut copy_meta = Map::with_capacity(meta.len());
    for (k, v) in meta {
        let v = if k == "annotations" {
            Value::Object(kept.take().unwrap_or_default())
        } else {
            v.clone()
        };
        copy_meta.insert(k.clone(), v);
    }
    if empty {
        copy_meta.remove("annotations");
    }
    let mut copy = Map::with_capacity(object.len());
    for (k, v) in object {
        if k == "metadata" {
            copy.insert(k.clone(), Value::Object(std::mem::take(&mut copy_meta)));
        } else {
            copy.insert(k.clone(), v.clone());
        }
    }
    Value::Object(copy)
}

/// How [`embed`] treats signatures already on the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedMode {
    /// Remove every existing signature annotation (including stale `_N` sets, which
    /// kubectl-sigstore leaves behind), then write the new sets from index 0.
    Replace,
    /// Keep the existing sets and the message; add the new sets after them. The existing
    /// message must equal the new one.
    Append,
}

/// Writes the message and the sets into `metadata.annotations`.
pub fn embed(
    value: &mut Value,
    domain: &AnnotationDomain,
    message: &[u8],
    sets: &[SignatureSet],
    mode: EmbedMode,
    limits: &Limits,
) -> Result<(), AnnotationError> {
    let first_index = match mode {
        EmbedMode::Replace => {
            strip_signature_annotations(value, domain);
            0
        }
        EmbedMode::Append => match extract(value, domain, limits) {
            Ok(existing) => {
                if existing.message != message {
                    return Err(AnnotationError::AppendMessageMismatch);
                }
                existing.sets.len()
            }
            Err(AnnotationError::NoMessage { .. } | AnnotationError::NoSignature { .. }) => {
                strip_signature_annotations(value, domain);
                0
            }
            Err(e) => return Err(e),
        },
    };
    if first_index + sets.len() > limits.max_signature_sets {
        return Err(AnnotationError::TooManySets {
            limit: limits.max_signature_sets,
        });
    }
    let meta = value
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or(AnnotationError::AnnotationsNotAMap)?;
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(AnnotationError::AnnotationsNotAMap)?;
    let message_key = domain.message_key();
    if !ann.contains_key(&message_key) {
        ann.insert(message_key, Value::String(encode_gzip_base64(message)));
    }
    for (offset, set) in sets.iter().enumerate() {
        let i = first_index + offset;
        ann.insert(
            domain.signature_key(i),
            Value::String(STANDARD.encode(&set.signature)),
        );
        if let Some(pem) = &set.certificate_pem {
            ann.insert(
                domain.certificate_key(i),
                Value::String(encode_gzip_base64(pem.as_bytes())),
            );
        }
        if let Some(bundle) = &set.bundle {
            let json =
                serde_json::to_vec(bundle).map_err(|e| malformed(&domain.bundle_key(i), e))?;
            ann.insert(
                domain.bundle_key(i),
                Value::String(encode_gzip_base64(&json)),
            );
        }
    }
    for key in ann.keys() {
        if let Some(Value::String(v)) = ann.get(key)
            && v.len() > limits.max_annotation_bytes
        {
            return Err(malformed(
                key,
                format!(
                    "value is {} bytes, over the limit of {}",
                    v.len(),
                    limits.max_annotation_bytes
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(sig: &[u8]) -> SignatureSet {
        SignatureSet {
            index: 0,
            signature: sig.to_vec(),
            certificate_pem: None,
            bundle: None,
        }
    }

    fn object() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {"keep": "me"}}})
    }

    /// Embeds one set per signature into `v`, with the default domain and limits.
    fn embed_sets(
        v: &mut Value,
        message: &[u8],
        sigs: &[&[u8]],
        mode: EmbedMode,
    ) -> Result<(), AnnotationError> {
        let sets: Vec<SignatureSet> = sigs.iter().copied().map(set).collect();
        let (d, l) = (AnnotationDomain::default(), Limits::default());
        embed(v, &d, message, &sets, mode, &l)
    }

    /// [`object`] with `message` and one set per signature written in.
    fn signed(message: &[u8], sigs: &[&[u8]]) -> Value {
        let mut v = object();
        embed_sets(&mut v, message, sigs, EmbedMode::Replace).unwrap();
        v
    }

    /// [`object`] with only the message annotation (over `M`) written in.
    fn with_message() -> Value {
        let mut v = object();
        *ann(&mut v, "message") = json!(encode_gzip_base64(b"M"));
        v
    }

    /// Reads the sets back with the default domain and limits.
    fn read(v: &Value) -> Result<SignedAnnotations, AnnotationError> {
        extract(v, &AnnotationDomain::default(), &Limits::default())
    }

    /// The annotation `cosign.sigstore.dev/<name>` of `v`.
    fn ann<'a>(v: &'a mut Value, name: &str) -> &'a mut Value {
        &mut v["metadata"]["annotations"][format!("cosign.sigstore.dev/{name}")]
    }

    fn gzip_b64(bytes: &[u8]) -> String {
        use base64::Engine as _;
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(bytes).unwrap();
        base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap())
    }

    #[test]
    fn a_copy_without_signatures_is_a_stripped_clone_key_order_included() {
        let d = AnnotationDomain::default();
        let sig = |k: &str| format!("cosign.sigstore.dev/{k}");
        let cases = [
            json!({"kind": "A", "metadata": {"name": "a", "annotations": {(sig("message")): "m", "keep": "k", (sig("signature")): "s"}, "labels": {"x": "y"}}, "spec": [1]}),
            // only signatures: annotations dropped, and (as Map::remove does) the last key
            // of metadata takes its place
            json!({"metadata": {"annotations": {(sig("message")): "m", (sig("bundle_1")): "b"}, "name": "a", "uid": "u"}, "kind": "A"}),
            json!({"metadata": {"name": "a", "annotations": {}}}),
            json!({"metadata": {"name": "a", "annotations": "not a map"}}),
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": ["not", "a", "map"]}),
            json!({"kind": "no metadata"}),
            json!(["not an object"]),
            json!("text"),
            json!({"metadata": {"annotations": {"keep": "k", (sig("certificate")): "c", "other.dev/x": "o"}}}),
        ];
        for case in cases {
            let mut stripped = case.clone();
            strip_signature_annotations(&mut stripped, &d);
            let copy = without_signature_annotations(&case, &d);
            assert_eq!(copy, stripped, "{case}");
            // and in the same order (serde_json's maps keep insertion order here)
            assert_eq!(copy.to_string(), stripped.to_string(), "{case}");
        }
    }

    #[test]
    fn a_certificate_decoded_before_reads_the_same_and_a_changed_one_afresh() {
        let mut v = signed(b"M", &[b"sig"]);
        *ann(&mut v, "certificate") = json!(gzip_b64(b"PEM one"));
        let pem = |v: &Value| read(v).map(|s| s.sets[0].certificate_pem.clone());
        assert_eq!(pem(&v), Ok(Some("PEM one".into())));
        assert_eq!(pem(&v), Ok(Some("PEM one".into())));
        *ann(&mut v, "certificate") = json!(gzip_b64(b"PEM two"));
        assert_eq!(pem(&v), Ok(Some("PEM two".into())));
        // Refused afresh every time, and the certificate remembered before is still right.
        *ann(&mut v, "certificate") = json!("H4sI!");
        assert!(matches!(pem(&v), Err(AnnotationError::Malformed { .. })));
        assert!(matches!(pem(&v), Err(AnnotationError::Malformed { .. })));
        *ann(&mut v, "certificate") = json!(gzip_b64(b"PEM two"));
        assert_eq!(pem(&v), Ok(Some("PEM two".into())));
        // The same value under a tighter bound is decoded again, and refused by it.
        let tight = Limits {
            max_signature_material_bytes: 3,
            ..Limits::default()
        };
        assert!(extract(&v, &AnnotationDomain::default(), &tight).is_err());
        assert_eq!(pem(&v), Ok(Some("PEM two".into())));
    }

    fn with_bundles(sets: usize, bundle_bytes: usize) -> Value {
        use base64::Engine as _;
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut ann = serde_json::Map::new();
        ann.insert("cosign.sigstore.dev/message".into(), json!(gzip_b64(b"M")));
        for i in 0..sets {
            let suffix = if i == 0 {
                String::new()
            } else {
                format!("_{i}")
            };
            ann.insert(
                format!("cosign.sigstore.dev/signature{suffix}"),
                json!(b64(b"sig")),
            );
            // A well-formed bundle padded with whitespace (valid JSON) to `bundle_bytes`.
            let mut bundle = br#"{"SignedEntryTimestamp":"c2V0","Payload":{"body":"e30=","integratedTime":1,"logIndex":0,"logID":"00"}}"#.to_vec();
            bundle.resize(bundle_bytes, b' ');
            ann.insert(
                format!("cosign.sigstore.dev/bundle{suffix}"),
                json!(gzip_b64(&bundle)),
            );
        }
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": ann}})
    }

    #[test]
    fn a_bundle_that_decompresses_beyond_its_limit_is_refused() {
        let err = read(&with_bundles(1, 65 * 1024)).unwrap_err();
        assert!(
            err.to_string().contains("cosign.sigstore.dev/bundle"),
            "{err}"
        );
    }

    #[test]
    fn all_sets_together_may_not_decompress_beyond_the_total_limit() {
        // 32 bundles of 60 KiB: each under its own limit, 1.9 MiB together; a few KiB of
        // annotations once compressed.
        let err = read(&with_bundles(32, 60 * 1024)).unwrap_err();
        assert!(
            err.to_string()
                .contains("decode to more than 1048576 bytes together"),
            "{err}"
        );
    }

    #[test]
    fn embed_then_extract_round_trips() {
        let v = signed(b"M", &[b"s0", b"s1"]);
        let got = read(&v).unwrap();
        assert_eq!(got.message, b"M");
        assert_eq!(got.sets.len(), 2);
        assert_eq!(got.sets[1].index, 1);
        assert_eq!(got.sets[1].signature, b"s1");
        assert_eq!(v["metadata"]["annotations"]["keep"], "me");
    }

    #[test]
    fn replace_removes_stale_sets() {
        let mut v = signed(b"M", &[b"a", b"b", b"c"]);
        *ann(&mut v, "bundle_2") = json!("stale");
        embed_sets(&mut v, b"M2", &[b"z"], EmbedMode::Replace).unwrap();
        let keys: Vec<&String> = v["metadata"]["annotations"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(
            keys,
            [
                "keep",
                "cosign.sigstore.dev/message",
                "cosign.sigstore.dev/signature"
            ]
        );
    }

    #[test]
    fn append_adds_after_existing_sets_and_keeps_message() {
        let mut v = signed(b"M", &[b"a"]);
        let msg_before = ann(&mut v, "message").clone();
        embed_sets(&mut v, b"M", &[b"b"], EmbedMode::Append).unwrap();
        assert_eq!(*ann(&mut v, "message"), msg_before);
        let got = read(&v).unwrap();
        assert_eq!(
            got.sets
                .iter()
                .map(|s| s.signature.clone())
                .collect::<Vec<_>>(),
            [b"a".to_vec(), b"b".to_vec()]
        );
    }

    #[test]
    fn append_refuses_a_different_message() {
        let mut v = signed(b"M", &[b"a"]);
        assert_eq!(
            embed_sets(&mut v, b"other", &[b"b"], EmbedMode::Append),
            Err(AnnotationError::AppendMessageMismatch)
        );
    }

    #[test]
    fn missing_message_and_signature_are_named() {
        assert!(matches!(
            read(&object()),
            Err(AnnotationError::NoMessage { .. })
        ));
        let mut v = with_message();
        *ann(&mut v, "signature_1") = json!("YQ==");
        let err = read(&v).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no signature: annotation cosign.sigstore.dev/signature is missing"
        );
    }

    #[test]
    fn malformed_values_name_the_key() {
        let mut v = with_message();
        *ann(&mut v, "signature") = json!("!!!");
        let err = read(&v).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("annotation cosign.sigstore.dev/signature: not valid base64"),
            "{err}"
        );
        *ann(&mut v, "signature") = json!("YQ==");
        *ann(&mut v, "bundle") = json!(encode_gzip_base64(b"{}"));
        let err = read(&v).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("annotation cosign.sigstore.dev/bundle: not a Rekor bundle"),
            "{err}"
        );
    }

    #[test]
    fn certificates_and_bundles_decompress_no_larger_than_an_annotation() {
        let v = signed(b"M", &[b"a"]);
        let big = encode_gzip_base64(&vec![b'A'; Limits::default().max_annotation_bytes + 1]);
        for name in ["certificate", "bundle"] {
            let mut w = v.clone();
            *ann(&mut w, name) = json!(big);
            let err = read(&w).unwrap_err();
            assert!(
                err.to_string().contains("decompresses to more than"),
                "{name}: {err}"
            );
        }
    }

    #[test]
    fn strip_drops_empty_annotations() {
        let d = AnnotationDomain::default();
        let mut v =
            json!({"metadata": {"name": "a", "annotations": {"cosign.sigstore.dev/message": "x"}}});
        strip_signature_annotations(&mut v, &d);
        assert_eq!(v, json!({"metadata": {"name": "a"}}));
    }
}
