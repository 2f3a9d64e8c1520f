//! base64 and gzip, bounded.

use crate::limits::Limits;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use flate2::Compression;
use flate2::bufread::MultiGzDecoder;
use flate2::write::GzEncoder;
use std::io::{Read, Write};

/// Why an annotation value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    #[error("value is {len} bytes, over the limit of {limit}")]
    TooLong { len: usize, limit: usize },
    #[error("not valid base64: {0}")]
    Base64(String),
    #[error("not valid gzip: {0}")]
    Gzip(String),
    #[error("decompresses to more than the limit of {limit} bytes")]
    Decompressed { limit: usize },
}

/// gzip with default compression, no file name, mtime 0.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(
        Vec::with_capacity(data.len() / 2 + 64),
        Compression::default(),
    );
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

pub fn encode_gzip_base64(data: &[u8]) -> String {
    STANDARD.encode(gzip(data))
}

/// Standard base64 with padding; line breaks are ignored (Go's `StdEncoding` skips `\r` and
/// `\n`, and YAML folding can introduce them).
pub fn decode_base64(value: &str, limits: &Limits) -> Result<Vec<u8>, CodecError> {
    if value.len() > limits.max_annotation_bytes {
        return Err(CodecError::TooLong {
            len: value.len(),
            limit: limits.max_annotation_bytes,
        });
    }
    // Line breaks (as `base64 -w 76` writes them) are dropped, then surrounding whitespace.
    // Most values have no line break: those are decoded without a copy.
    let decoded = if value.bytes().any(|b| b == b'\n' || b == b'\r') {
        let cleaned: String = value.chars().filter(|c| *c != '\n' && *c != '\r').collect();
        STANDARD.decode(cleaned.trim())
    } else {
        STANDARD.decode(value.trim())
    };
    decoded.map_err(|e| CodecError::Base64(e.to_string()))
}

/// gunzip when the bytes are gzip (magic `1f 8b`), else the bytes as they are
/// (kubectl-sigstore accepts messages that are not gzipped). Corrupt gzip is an error,
/// not a fallback to the raw bytes. Output is bounded by `max_message_bytes`.
pub fn decode_maybe_gzip(data: Vec<u8>, limits: &Limits) -> Result<Vec<u8>, CodecError> {
    let limit = limits.max_message_bytes;
    if !data.starts_with(&[0x1f, 0x8b]) {
        if data.len() > limit {
            return Err(CodecError::Decompressed { limit });
        }
        return Ok(data);
    }
    // Room for a typical expansion up front (bounded by the limit), instead of growing
    // from empty through many small reads.
    let mut out = Vec::with_capacity(data.len().saturating_mul(4).min(limit) + 1);
    MultiGzDecoder::new(data.as_slice())
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| CodecError::Gzip(e.to_string()))?;
    if out.len() > limit {
        return Err(CodecError::Decompressed { limit });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_base64_round_trips() {
        let l = Limits::default();
        let enc = encode_gzip_base64(b"hello");
        assert!(enc.starts_with("H4sI"));
        let raw = decode_base64(&enc, &l).unwrap();
        assert_eq!(decode_maybe_gzip(raw, &l).unwrap(), b"hello");
    }

    #[test]
    fn plain_bytes_pass_through() {
        assert_eq!(
            decode_maybe_gzip(b"apiVersion: v1".to_vec(), &Limits::default()).unwrap(),
            b"apiVersion: v1"
        );
    }

    #[test]
    fn line_breaks_in_base64_are_ignored() {
        assert_eq!(
            decode_base64("aGVs\nbG8=\r\n", &Limits::default()).unwrap(),
            b"hello"
        );
    }

    #[test]
    fn rejects_bad_base64() {
        assert!(matches!(
            decode_base64("not base64!", &Limits::default()),
            Err(CodecError::Base64(_))
        ));
    }

    #[test]
    fn rejects_corrupt_gzip() {
        let mut g = gzip(b"hello world hello world");
        let n = g.len();
        g.truncate(n - 6);
        assert!(matches!(
            decode_maybe_gzip(g, &Limits::default()),
            Err(CodecError::Gzip(_))
        ));
    }

    #[test]
    fn rejects_oversized_values_and_bombs() {
        let l = Limits {
            max_annotation_bytes: 8,
            max_message_bytes: 1000,
            ..Limits::default()
        };
        assert!(matches!(
            decode_base64("aGVsbG8gd29ybGQ=", &l),
            Err(CodecError::TooLong { .. })
        ));
        let bomb = gzip(&vec![b'a'; 100_000]);
        assert!(matches!(
            decode_maybe_gzip(bomb, &l),
            Err(CodecError::Decompressed { limit: 1000 })
        ));
    }
}
