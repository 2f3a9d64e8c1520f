//! A cosign `RekorBundle` annotation decoded into the Rekor entry it vouches for: the SET,
//! the canonicalized body and the fields the SET covers. Parsing checks shape only; the
//! SET and the body are verified by the keyless and key-bundle paths.

use super::error::SigstoreError;
use super::evidence::RekorEvidence;
use crate::annotations::RekorBundle;
use crate::trust::TrustRoot;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// A `RekorBundle` checked for shape: everything the SET covers, decoded.
#[derive(Debug)]
pub(super) struct RekorEntry {
    pub set: Vec<u8>,
    pub body: Vec<u8>,
    pub kind: String,
    pub api_version: String,
    pub integrated_time: i64,
    pub log_index: u64,
    pub log_id: [u8; 32],
}

impl RekorEntry {
    pub(super) fn parse(bundle: &RekorBundle) -> Result<Self, SigstoreError> {
        let bad = |what: &str| SigstoreError::MalformedBundle(what.to_string());
        let set = STANDARD
            .decode(bundle.signed_entry_timestamp.trim())
            .map_err(|_| bad("SignedEntryTimestamp is not base64"))?;
        let p = &bundle.payload;
        let body = STANDARD
            .decode(p.body.trim())
            .map_err(|_| bad("Payload.body is not base64"))?;
        let mut log_id = [0u8; 32];
        hex::decode_to_slice(&p.log_id, &mut log_id)
            .map_err(|_| bad("Payload.logID is not 64 hex digits"))?;
        let log_index =
            u64::try_from(p.log_index).map_err(|_| bad("Payload.logIndex is negative"))?;
        if p.integrated_time <= 0 {
            return Err(bad("Payload.integratedTime is not a positive Unix time"));
        }
        #[derive(serde::Deserialize)]
        struct KindHeader {
            kind: String,
            #[serde(rename = "apiVersion")]
            api_version: String,
        }
        let header: KindHeader = serde_json::from_slice(&body)
            .map_err(|e| SigstoreError::MalformedBundle(format!("Payload.body: {e}")))?;
        Ok(RekorEntry {
            set,
            body,
            kind: header.kind,
            api_version: header.api_version,
            integrated_time: p.integrated_time,
            log_index,
            log_id,
        })
    }

    pub(super) fn log_id_hex(&self) -> String {
        hex::encode(self.log_id)
    }

    pub(super) fn integrated_timestamp(&self) -> Result<jiff::Timestamp, SigstoreError> {
        jiff::Timestamp::from_second(self.integrated_time)
            .map_err(|_| SigstoreError::MalformedBundle("integratedTime out of range".into()))
    }

    pub(super) fn evidence(&self) -> RekorEvidence {
        RekorEvidence {
            log_index: self.log_index,
            log_id: self.log_id_hex(),
            integrated_time: self.integrated_time,
        }
    }

    pub(super) fn require_known_log(&self, trust: &TrustRoot) -> Result<(), SigstoreError> {
        if trust.knows_rekor_log(&self.log_id) {
            Ok(())
        } else {
            Err(SigstoreError::UnknownLog {
                log_id: self.log_id_hex(),
                trust_root: trust.origin().to_string(),
            })
        }
    }

    pub(super) fn is(&self, kind: &str, version: &str) -> bool {
        self.kind == kind && self.api_version == version
    }

    pub(super) fn unsupported(&self) -> SigstoreError {
        SigstoreError::UnsupportedEntry {
            kind: self.kind.clone(),
            version: self.api_version.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::RekorPayload;

    fn bundle(body: &str, log_id: &str, index: i64, time: i64) -> RekorBundle {
        RekorBundle {
            signed_entry_timestamp: STANDARD.encode(b"set"),
            payload: RekorPayload {
                body: body.to_string(),
                integrated_time: time,
                log_index: index,
                log_id: log_id.to_string(),
            },
        }
    }

    fn body(kind: &str) -> String {
        STANDARD.encode(format!(
            r#"{{"apiVersion":"0.0.1","kind":"{kind}","spec":{{}}}}"#
        ))
    }

    const LOG_ID: &str = "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d";

    #[test]
    fn entry_reads_kind_and_version_from_body() {
        let e = RekorEntry::parse(&bundle(&body("rekord"), LOG_ID, 1, 2)).unwrap();
        assert!(e.is("rekord", "0.0.1"));
        assert_eq!(e.log_id_hex(), LOG_ID);
    }

    #[test]
    fn entry_rejects_short_log_id() {
        let err = RekorEntry::parse(&bundle(&body("rekord"), "c0d2", 1, 2)).unwrap_err();
        assert!(matches!(err, SigstoreError::MalformedBundle(_)), "{err}");
    }

    #[test]
    fn entry_rejects_negative_log_index() {
        let err = RekorEntry::parse(&bundle(&body("rekord"), LOG_ID, -1, 2)).unwrap_err();
        assert!(matches!(err, SigstoreError::MalformedBundle(_)), "{err}");
    }

    #[test]
    fn entry_rejects_body_that_is_not_json() {
        let err = RekorEntry::parse(&bundle(&STANDARD.encode("x"), LOG_ID, 1, 2)).unwrap_err();
        assert!(matches!(err, SigstoreError::MalformedBundle(_)), "{err}");
    }

    #[test]
    fn entry_rejects_zero_integrated_time() {
        let err = RekorEntry::parse(&bundle(&body("rekord"), LOG_ID, 1, 0)).unwrap_err();
        assert!(matches!(err, SigstoreError::MalformedBundle(_)), "{err}");
    }
}
