//! mansign's own test data under `testdata/dup-tests-a/` (listed in `testdata/README.md`):
//! reading a file, and filling in a template's placeholders.
#![allow(dead_code)]

use std::path::Path;

/// The text of `testdata/dup-tests-a/<name>`; a missing file fails the test.
pub fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/dup-tests-a")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("testdata/dup-tests-a/{name} cannot be read: {e}"))
}

/// [`data`] with each `(placeholder, value)` of `fills` replaced everywhere, in order; a placeholder
/// the file does not hold fails the test.
pub fn template(name: &str, fills: &[(&str, &str)]) -> String {
    let mut text = data(name);
    for (placeholder, value) in fills {
        assert!(
            text.contains(placeholder),
            "testdata/dup-tests-a/{name} holds no {placeholder}"
        );
        text = text.replace(placeholder, value);
    }
    text
}

/// Fails the test, showing `text`, unless it contains `needle`.
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not in:\n{text}");
}
