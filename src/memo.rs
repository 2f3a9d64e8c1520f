//! The last value a thread decoded, by the input it came from.
//!
//! Objects signed in one run share one certificate, which each object carries in several
//! encodings (its annotation's base64 and gzip, its PEM, the Rekor body's copy), and
//! decoding those costs more than the rest of recognising it. The same input decodes to the
//! same value, so [`remembered`] keeps each thread's last success beside its input,
//! compares a new input with it whole, and decodes only what differs. A failure is never
//! kept: a refused input is refused again, by the same decoding.

use std::cell::RefCell;
use std::thread::LocalKey;

/// A thread's last input and what it decoded to.
pub(crate) type Last<K, V> = RefCell<Option<(K, V)>>;

/// The value `last` holds for an input that `is_input` recognises; otherwise `decode()`,
/// kept with `input()` when it succeeds.
pub(crate) fn remembered<K, V: Clone, E>(
    last: &'static LocalKey<Last<K, V>>,
    is_input: impl Fn(&K) -> bool,
    input: impl FnOnce() -> K,
    decode: impl FnOnce() -> Result<V, E>,
) -> Result<V, E> {
    let kept = last.with_borrow(|last| {
        last.as_ref()
            .filter(|(k, _)| is_input(k))
            .map(|(_, v)| v.clone())
    });
    if let Some(value) = kept {
        return Ok(value);
    }
    let value = decode()?;
    last.set(Some((input(), value.clone())));
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static LAST: Last<String, usize> = const { RefCell::new(None) };
    }

    fn length(text: &str, decodes: &mut usize) -> Result<usize, String> {
        remembered(
            &LAST,
            |k| k == text,
            || text.to_owned(),
            || {
                *decodes += 1;
                if text.is_empty() {
                    Err("empty".into())
                } else {
                    Ok(text.len())
                }
            },
        )
    }

    #[test]
    fn the_same_input_is_decoded_once_another_afresh_and_a_failure_every_time() {
        let mut decodes = 0;
        assert_eq!(length("abc", &mut decodes), Ok(3));
        assert_eq!(length("abc", &mut decodes), Ok(3));
        assert_eq!(decodes, 1);
        assert_eq!(length("abcd", &mut decodes), Ok(4));
        assert_eq!(decodes, 2);
        assert!(length("", &mut decodes).is_err());
        assert!(length("", &mut decodes).is_err());
        assert_eq!(decodes, 4);
        // the failure kept nothing: the last success is still there
        assert_eq!(length("abcd", &mut decodes), Ok(4));
        assert_eq!(decodes, 4);
    }
}
