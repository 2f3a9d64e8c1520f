//! PEM text read strictly: complete blocks with only whitespace around and between them.
//!
//! The `pem` crate (like Go's `pem.Decode`, which cosign and Kyverno use) skips text it
//! does not recognise, so a key list whose second block lost its END line is read as one
//! key: an "all entries" attestor set made of that list then needs one signer instead of
//! two (issue 35, item 8). Every PEM reader of keys and certificates in mansign reads
//! through [`pem_blocks`], which refuses that instead: a BEGIN line without its END line,
//! a BEGIN line inside a block, and any other text outside the blocks.

use super::error::KeyError;

const BEGIN: &str = "-----BEGIN ";
const END: &str = "-----END ";

/// Every PEM block of `text`, in order, or why the text is not only PEM blocks. A text
/// with no BEGIN line at all is [`KeyError::NoPemBlock`]; an empty list is never returned.
pub(crate) fn pem_blocks(text: &str) -> Result<Vec<pem::Pem>, KeyError> {
    if !text.contains(BEGIN) {
        return Err(KeyError::NoPemBlock);
    }
    let mut blocks = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let number = blocks.len() + 1;
        let first_line = rest.lines().next().unwrap_or_default().trim_end();
        if !rest.starts_with(BEGIN) {
            return Err(KeyError::TextOutsidePemBlock {
                after_block: blocks.len(),
                found: first_line.chars().take(40).collect(),
            });
        }
        let label = first_line
            .strip_prefix(BEGIN)
            .and_then(|l| l.strip_suffix("-----"))
            .unwrap_or(first_line)
            .to_string();
        let body_start = first_line.len();
        let body = &rest[body_start..];
        // The block ends at the first END line; a BEGIN line before it means this block
        // was never closed.
        let unterminated = || KeyError::UnterminatedPemBlock {
            block: number,
            label: label.clone(),
        };
        let end = body.find(END).ok_or_else(unterminated)?;
        if body[..end].contains(BEGIN) {
            return Err(unterminated());
        }
        let after_end = &body[end + END.len()..];
        let close = after_end.find("-----").ok_or_else(unterminated)?;
        let block_len = body_start + end + END.len() + close + "-----".len();
        let block = pem::parse(&rest[..block_len]).map_err(|e| KeyError::InvalidPem {
            source: super::error::PemSyntax(e),
        })?;
        blocks.push(block);
        rest = rest[block_len..].trim_start();
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    const B: &str = "-----BEGIN PUBLIC KEY-----\nBBBB\n-----END PUBLIC KEY-----\n";

    #[test]
    fn complete_blocks_with_whitespace_around_are_read() {
        let text = format!("\n  {A}\n\n{B}  \n");
        let blocks = pem_blocks(&text).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1].contents(), [0x04, 0x10, 0x41]);
        // CRLF line endings too.
        assert_eq!(pem_blocks(&A.replace('\n', "\r\n")).unwrap().len(), 1);
    }

    #[test]
    fn a_second_block_without_its_end_line_is_refused_not_dropped() {
        // pem::parse_many reads this as one block: the second key would be lost.
        let truncated = format!("{A}-----BEGIN PUBLIC KEY-----\nBBBB\n");
        assert_eq!(pem::parse_many(&truncated).unwrap().len(), 1);
        let err = pem_blocks(&truncated).unwrap_err();
        assert!(
            matches!(err, KeyError::UnterminatedPemBlock { block: 2, ref label } if label == "PUBLIC KEY"),
            "{err}"
        );
    }

    #[test]
    fn a_first_block_without_its_end_line_is_refused() {
        let text = format!("-----BEGIN PUBLIC KEY-----\nAAAA\n{B}");
        let err = pem_blocks(&text).unwrap_err();
        assert!(
            matches!(err, KeyError::UnterminatedPemBlock { block: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn text_outside_the_blocks_is_refused() {
        for text in [
            format!("{A}trailing"),
            format!("comment\n{A}"),
            format!("{A}x{B}"),
        ] {
            let err = pem_blocks(&text).unwrap_err();
            assert!(
                matches!(err, KeyError::TextOutsidePemBlock { .. }),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn text_without_a_begin_line_is_no_block() {
        assert!(matches!(pem_blocks(""), Err(KeyError::NoPemBlock)));
        assert!(matches!(pem_blocks("not a key"), Err(KeyError::NoPemBlock)));
    }
}
