//! cosign's legacy `RekorBundle` (the `bundle` annotation): a Rekor v1 entry plus its
//! Signed Entry Timestamp. Field names and order follow cosign's Go struct so the JSON we
//! write is what kubectl-sigstore and Kyverno read.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RekorBundle {
    /// base64 of the SET: the log's signature over the canonical JSON of `Payload`.
    #[serde(rename = "SignedEntryTimestamp")]
    pub signed_entry_timestamp: String,
    #[serde(rename = "Payload")]
    pub payload: RekorPayload,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RekorPayload {
    /// base64 of the canonical Rekor entry JSON (hashedrekord or rekord).
    pub body: String,
    #[serde(rename = "integratedTime")]
    pub integrated_time: i64,
    #[serde(rename = "logIndex")]
    pub log_index: i64,
    /// Hex SHA-256 of the log's public key.
    #[serde(rename = "logID")]
    pub log_id: String,
}
