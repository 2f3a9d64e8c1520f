//! base64 and gzip, bounded.

use crate::limits::Limits;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use flate2::Compression;
use flate2::write::GzEncoder;
use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};
use std::cell::RefCell;
use std::io::Write;

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
    gunzip(&data, limit)
}

/// gzip header flags (RFC 1952, 2.3.1).
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const FRESERVED: u8 = 0b1110_0000;
/// The longest file name or comment accepted in a header (flate2's bound, kept).
const MAX_HEADER_FIELD: usize = 65_535;

thread_local! {
    /// The inflater of this thread, reset for every member. Annotation values are small:
    /// a fresh general-purpose inflater (flate2's stream state with its 32 KiB window)
    /// for each of an object's three to five streams cost more than inflating them.
    static INFLATER: RefCell<DecompressorOxide> = RefCell::new(DecompressorOxide::new());
}

/// The most bytes deflate produces from one byte of input (a 258-byte match from about two
/// bits: 1,032 to 1).
const MAX_DEFLATE_RATIO: usize = 1032;

/// Every member of a gzip stream (RFC 1952), concatenated, at most `limit` bytes: what
/// flate2's `MultiGzDecoder` reads (the header's reserved flags, header CRC, CRC-32 and
/// size of each member are checked; bytes after a member must be another member), with
/// the inflater core it uses (miniz_oxide), decoding into one buffer instead of through
/// a sliding window. So the output buffer is sized once from the last member's size
/// field (exact for the usual single member, never more than `limit` + 1 bytes) and a
/// back-reference before the start of its member is refused, as zlib and Go refuse it.
/// Past `limit` the decoding stops: [`CodecError::Decompressed`].
fn gunzip(data: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let bad = |what: &str| CodecError::Gzip(what.to_string());
    let cap = limit.saturating_add(1);
    let size_hint = data
        .len()
        .checked_sub(4)
        .and_then(|at| data.get(at..))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, |b| u32::from_le_bytes(b) as usize);
    // The size field is the sender's word: never more than deflate can produce from this
    // input (1,032 bytes per byte at most) nor than the limit.
    let most = data.len().saturating_mul(MAX_DEFLATE_RATIO);
    let mut out = vec![0u8; size_hint.min(limit).min(most).saturating_add(1)];
    let mut pos = 0;
    let mut written = 0;
    while pos < data.len() {
        pos = member_body(data, pos)?;
        let start = written;
        let status = INFLATER.with_borrow_mut(|inflater| {
            inflater.init();
            loop {
                let (status, used, produced) = decompress(
                    inflater,
                    &data[pos..],
                    &mut out[start..],
                    written - start,
                    inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
                );
                pos += used;
                written += produced;
                match status {
                    TINFLStatus::HasMoreOutput if out.len() < cap => {
                        let grown = out.len().saturating_mul(2).max(64).min(cap);
                        out.resize(grown, 0);
                    }
                    other => return other,
                }
            }
        });
        // Past the limit the stream is refused for its size, whatever follows (the bound
        // is checked before anything after it is decoded).
        if written > limit || status == TINFLStatus::HasMoreOutput {
            return Err(CodecError::Decompressed { limit });
        }
        match status {
            TINFLStatus::Done => {}
            TINFLStatus::FailedCannotMakeProgress => {
                return Err(bad("unexpected end of the deflate stream"));
            }
            _ => return Err(bad("corrupt deflate stream")),
        }
        let trailer = data
            .get(pos..pos + 8)
            .ok_or_else(|| bad("unexpected end of the gzip trailer"))?;
        let member = &out[start..written];
        if trailer[..4] != crc32fast::hash(member).to_le_bytes()
            || trailer[4..] != (member.len() as u32).to_le_bytes()
        {
            return Err(bad("corrupt gzip stream does not have a matching checksum"));
        }
        pos += 8;
    }
    out.truncate(written);
    Ok(out)
}

/// The position of a member's deflate data: its header at `start` read and checked.
fn member_body(data: &[u8], start: usize) -> Result<usize, CodecError> {
    let bad = || CodecError::Gzip("invalid gzip header".into());
    let fixed = data.get(start..start + 10).ok_or_else(bad)?;
    if fixed[..3] != [0x1f, 0x8b, 8] || fixed[3] & FRESERVED != 0 {
        return Err(bad());
    }
    let flags = fixed[3];
    let mut pos = start + 10;
    if flags & FEXTRA != 0 {
        let len = data.get(pos..pos + 2).ok_or_else(bad)?;
        let len = u16::from_le_bytes([len[0], len[1]]) as usize;
        pos += 2 + len;
        if pos > data.len() {
            return Err(bad());
        }
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let field = data.get(pos..).ok_or_else(bad)?;
            let len = field.iter().position(|b| *b == 0).ok_or_else(bad)?;
            if len > MAX_HEADER_FIELD {
                return Err(CodecError::Gzip("gzip header field too long".into()));
            }
            pos += len + 1;
        }
    }
    if flags & FHCRC != 0 {
        let stored = data.get(pos..pos + 2).ok_or_else(bad)?;
        if u16::from_le_bytes([stored[0], stored[1]]) != crc32fast::hash(&data[start..pos]) as u16 {
            return Err(CodecError::Gzip(
                "corrupt gzip stream does not have a matching checksum".into(),
            ));
        }
        pos += 2;
    }
    Ok(pos)
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

    /// The reader before issue 26, kept as the reference: bytes without the gzip magic as
    /// they are, else flate2's `MultiGzDecoder` read through `take(limit + 1)`. Errors by
    /// kind only (the texts differ).
    fn flate2_reading(data: &[u8], limit: usize) -> Result<Vec<u8>, &'static str> {
        use flate2::bufread::MultiGzDecoder;
        use std::io::Read as _;
        if !data.starts_with(&[0x1f, 0x8b]) {
            return if data.len() > limit {
                Err("size")
            } else {
                Ok(data.to_vec())
            };
        }
        let mut out = Vec::new();
        MultiGzDecoder::new(data)
            .take(limit as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|_| "gzip")?;
        if out.len() > limit {
            return Err("size");
        }
        Ok(out)
    }

    fn this_reading(data: &[u8], limit: usize) -> Result<Vec<u8>, &'static str> {
        let limits = Limits {
            max_message_bytes: limit,
            ..Limits::default()
        };
        decode_maybe_gzip(data.to_vec(), &limits).map_err(|e| match e {
            CodecError::Gzip(_) => "gzip",
            CodecError::Decompressed { .. } => "size",
            _ => "other",
        })
    }

    /// A deterministic byte source (xorshift), so every run checks the same inputs.
    struct Bytes(u64);
    impl Bytes {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Text like an annotation's (JSON, PEM, YAML: compressible) or random bytes.
        fn payload(&mut self, len: usize) -> Vec<u8> {
            let words: &[&[u8]] = &[
                b"apiVersion",
                b": ",
                b"\n",
                b"MIIC",
                b"{\"body\":\"",
                b"sha256",
                b"  ",
            ];
            if self.next().is_multiple_of(3) {
                return (0..len).map(|_| self.next() as u8).collect();
            }
            let mut out = Vec::with_capacity(len);
            while out.len() < len {
                match self.next() % 4 {
                    0 => out.push(b'A' + (self.next() % 26) as u8),
                    _ => out.extend_from_slice(words[(self.next() % words.len() as u64) as usize]),
                }
            }
            out.truncate(len);
            out
        }
    }

    /// One gzip member of `payload`, with the optional header fields set by `flags`
    /// (FEXTRA, FNAME, FCOMMENT, FHCRC), as flate2's encoder and RFC 1952 write them.
    fn member(payload: &[u8], flags: u8, level: u32) -> Vec<u8> {
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), Compression::new(level));
        raw.write_all(payload).unwrap();
        let body = raw.finish().unwrap();
        let mut out = vec![0x1f, 0x8b, 8, flags, 0, 0, 0, 0, 0, 255];
        if flags & FEXTRA != 0 {
            out.extend_from_slice(&[4, 0, b'A', b'B', 0, 0]);
        }
        if flags & FNAME != 0 {
            out.extend_from_slice(b"name.txt\0");
        }
        if flags & FCOMMENT != 0 {
            out.extend_from_slice(b"a comment\0");
        }
        if flags & FHCRC != 0 {
            let crc = crc32fast::hash(&out) as u16;
            out.extend_from_slice(&crc.to_le_bytes());
        }
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out
    }

    /// Both readers give the same bytes or refuse, for the same reason. One difference
    /// is allowed: a corrupt stream whose back-reference reaches before its member's start
    /// is refused at once here, while flate2 (which reads it from its window) may first
    /// output past the bound and refuse it for its size; the stream must then be corrupt
    /// for flate2 too, given room.
    #[track_caller]
    fn same_reading(data: &[u8], limit: usize, what: &str) {
        let (this, reference) = (this_reading(data, limit), flate2_reading(data, limit));
        if this == Err("gzip") && reference == Err("size") {
            assert_eq!(flate2_reading(data, usize::MAX - 1), Err("gzip"), "{what}");
            return;
        }
        assert_eq!(this, reference, "{what} (limit {limit})");
    }

    #[test]
    fn reads_every_gzip_stream_as_flate2_reads_it() {
        let mut bytes = Bytes(0x2545_f491_4f6c_dd1d);
        let mut streams = vec![];
        for (i, len) in [0usize, 1, 5, 91, 969, 2435, 40_000]
            .into_iter()
            .enumerate()
        {
            let payload = bytes.payload(len);
            let flags = [0, FNAME, FEXTRA | FCOMMENT, FHCRC, FHCRC | FNAME | FEXTRA][i % 5];
            let one = member(&payload, flags, [0, 1, 6, 9][i % 4]);
            let two = [one.clone(), member(&bytes.payload(len / 2 + 3), 0, 6)].concat();
            streams.push((payload, one));
            streams.push((vec![], two));
        }
        for (n, (_, stream)) in streams.iter().enumerate() {
            let total = flate2_reading(stream, usize::MAX - 1).unwrap().len();
            // the bound: well above, exactly at, one below, far below the output size
            for limit in [total + 100, total, total.saturating_sub(1), total / 2, 0] {
                same_reading(stream, limit, &format!("stream {n}"));
            }
            if stream.len() > 6_000 {
                continue;
            }
            // cut anywhere, and one byte more after the end
            for cut in 0..stream.len() {
                same_reading(
                    &stream[..cut],
                    total + 1,
                    &format!("stream {n} cut at {cut}"),
                );
            }
            for extra in [&[0u8][..], &[0x1f], &[0x1f, 0x8b], &stream[..10]] {
                same_reading(
                    &[stream, extra].concat(),
                    total + 1,
                    &format!("stream {n} + {extra:?}"),
                );
            }
            // every byte changed, in three ways
            for at in 0..stream.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut bad = stream.clone();
                    bad[at] ^= flip;
                    same_reading(
                        &bad,
                        total + 1,
                        &format!("stream {n} byte {at} ^ {flip:#x}"),
                    );
                }
            }
        }
        // Reserved header flags, another method, a header field over the bound.
        let good = &streams[0].1;
        for (at, value) in [(3usize, 0x20u8), (3, 0x80), (2, 7)] {
            let mut bad = good.clone();
            bad[at] = value;
            same_reading(&bad, 1000, &format!("header byte {at} = {value:#x}"));
        }
        let mut long_name = vec![0x1f, 0x8b, 8, FNAME, 0, 0, 0, 0, 0, 255];
        long_name.extend(std::iter::repeat_n(b'n', MAX_HEADER_FIELD + 1));
        long_name.push(0);
        long_name.extend_from_slice(&good[10..]);
        same_reading(&long_name, 1000, "a file name of 65,536 bytes");
    }

    #[test]
    fn a_back_reference_before_its_member_is_refused() {
        // Stored "abc", then a second member whose only symbol copies 3 bytes from 3 back:
        // that would reach into the first member (zlib: "invalid distance too far back").
        let first = member(b"abc", 0, 0);
        // fixed Huffman block, BFINAL: length 3 (code 257), distance 3 (code 2), end of block
        let body = [0x03, 0x02, 0x02, 0x00];
        let mut second = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
        second.extend_from_slice(&body);
        second.extend_from_slice(&crc32fast::hash(b"abc").to_le_bytes());
        second.extend_from_slice(&3u32.to_le_bytes());
        let stream = [first, second].concat();
        assert_eq!(this_reading(&stream, 1000), Err("gzip"));
        assert_eq!(
            this_reading(&member(b"abc", 0, 0), 1000),
            Ok(b"abc".to_vec())
        );
    }
}
