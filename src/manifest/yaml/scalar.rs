//! Scalars read twice: as YAML 1.2 (what mansign signs) and as kubectl reads them.
//!
//! This is the only place in mansign that decides what a YAML scalar means. A scalar is
//! accepted when both readings give the same JSON value; otherwise the manifest is refused,
//! because a signature over one reading says nothing about what the cluster receives.
//!
//! * **YAML 1.2** — the core schema (YAML 1.2.2 §10.3.2): `null`/`Null`/`NULL`/`~`/empty,
//!   `true`/`True`/`TRUE`/`false`/`False`/`FALSE`, decimal integers `[-+]?[0-9]+`, `0o` octal,
//!   `0x` hex, floats `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, `.inf`/`.nan`.
//! * **kubectl** — `kubectl apply -f` decodes YAML with sigs.k8s.io/yaml over its go-yaml v2
//!   fork (YAML 1.1), then sends the JSON it converted to. The rules below port
//!   `resolve()` of `sigs.k8s.io/yaml/goyaml.v2/resolve.go` (the `resolveMap` of bools and
//!   nulls, `resolveTable` hints, `strconv.ParseInt(plain, 0, 64)` then `ParseUint` on the
//!   text with every `_` removed, the `yamlStyleFloat` regular expression, the `math/big`
//!   fallback of newer releases), the timestamp rule of `decode.go` (a timestamp decoded into
//!   `interface{}` stays a string), and the key conversion of `convertToJSONableObject` in
//!   `sigs.k8s.io/yaml/yaml.go` (string, int and bool keys become strings; null, uint64 and
//!   big-integer keys are errors; float keys are formatted as 32-bit Go floats).
//!   `testdata/yaml-readings/kubectl-readings.json` records what kubectl itself printed for
//!   173 scalars, and `tests/it/yaml_readings.rs` holds this port to it.
//!
//! Quoted and block scalars are strings in both readings, unless a core tag says otherwise
//! (`!!int "0755"` is 493 for kubectl and 755 in YAML 1.2: refused).

use super::error::shorten;
use serde_json::Value;
use std::fmt;

/// How a scalar was written, as far as its meaning is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// Plain (unquoted): resolved by each reader's schema.
    Plain,
    /// Single- or double-quoted, literal or folded block: a string unless tagged.
    Quoted,
}

/// The core tags a scalar may carry (`!!str` ... `!!null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoreTag {
    Str,
    Int,
    Float,
    Bool,
    Null,
}

impl CoreTag {
    pub(crate) fn name(self) -> &'static str {
        match self {
            CoreTag::Str => "!!str",
            CoreTag::Int => "!!int",
            CoreTag::Float => "!!float",
            CoreTag::Bool => "!!bool",
            CoreTag::Null => "!!null",
        }
    }
}

/// What one reader makes of a scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Reading {
    Null,
    Bool(bool),
    /// An integer that fits 64-bit signed.
    Int(i64),
    /// An integer outside 64-bit signed. kubectl turns it into a rounded float64 (its
    /// unstructured decoder keeps `int64` or falls back to `float64`); YAML 1.2 keeps it
    /// exact. Never accepted.
    HugeInt,
    /// A float (possibly infinite or NaN, which JSON cannot carry).
    Float(f64),
    /// The scalar's own text.
    Str,
    /// The tag does not accept the text (`!!int abc`).
    Invalid,
}

/// Why a scalar cannot be signed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    /// The readings differ; both rendered for the message.
    Ambiguous {
        yaml12: String,
        kubectl: String,
        fix: String,
    },
    /// An integer beyond 64 bits.
    OutOfRange,
    /// Infinity or NaN: not a JSON number.
    NotFinite,
    /// The tag does not accept the text in at least one reading.
    TagMismatch { tag: &'static str },
    /// A key that is not a string in the two readings (null, float, or beyond 64 bits).
    KeyNotString { reading: String },
}

/// The value of a scalar (not a key), or why it is refused.
pub(crate) fn value(text: &str, written: Written, tag: Option<CoreTag>) -> Result<Value, Refusal> {
    accepted(text, written, tag).map(|r| into_value(r, || text.to_string()))
}

/// The reading of a scalar used as a value when both readings agree, or why not. Build the
/// value with [`into_value`].
pub(crate) fn accepted(
    text: &str,
    written: Written,
    tag: Option<CoreTag>,
) -> Result<Reading, Refusal> {
    let (a, b) = (yaml12(text, written, tag), kubectl(text, written, tag));
    if let Some(tag) = tag
        && (a == Reading::Invalid || b == Reading::Invalid)
    {
        return Err(Refusal::TagMismatch { tag: tag.name() });
    }
    check_pair(text, a, b)?;
    match a {
        Reading::Float(f) if !f.is_finite() => Err(Refusal::NotFinite),
        // check_pair refused these already.
        Reading::HugeInt | Reading::Invalid => Err(Refusal::OutOfRange),
        r => Ok(r),
    }
}

/// The JSON value of an accepted reading; `text` is called only for a string (so a parser's
/// owned string can be moved in rather than copied).
pub(crate) fn into_value(reading: Reading, text: impl FnOnce() -> String) -> Value {
    match reading {
        Reading::Null => Value::Null,
        Reading::Bool(v) => Value::Bool(v),
        Reading::Int(i) => Value::from(i),
        Reading::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        Reading::Str | Reading::HugeInt | Reading::Invalid => Value::String(text()),
    }
}

/// The string a scalar becomes as a mapping key, or why it is refused.
///
/// kubectl turns int and bool keys into their decimal / `true` text and refuses null keys;
/// mansign does the same with the YAML 1.2 reading and additionally refuses float keys
/// (kubectl formats them as 32-bit Go floats, `3.14159265358979` → `3.1415927`, which no
/// YAML 1.2 reading shares).
pub(crate) fn key(text: &str, written: Written, tag: Option<CoreTag>) -> Result<String, Refusal> {
    let (a, b) = (yaml12(text, written, tag), kubectl(text, written, tag));
    if let Some(tag) = tag
        && (a == Reading::Invalid || b == Reading::Invalid)
    {
        return Err(Refusal::TagMismatch { tag: tag.name() });
    }
    let as_key = |r: Reading| -> Result<String, Refusal> {
        match r {
            Reading::Str => Ok(text.to_string()),
            Reading::Int(i) => Ok(i.to_string()),
            Reading::Bool(v) => Ok(v.to_string()),
            Reading::HugeInt => Err(Refusal::OutOfRange),
            other => Err(Refusal::KeyNotString {
                reading: describe(other, text),
            }),
        }
    };
    let ambiguous = |yaml12: String, kubectl: String| Refusal::Ambiguous {
        yaml12,
        kubectl,
        fix: fix(text, b),
    };
    match (as_key(a), as_key(b)) {
        (Ok(ka), Ok(kb)) if ka == kb => Ok(ka),
        (Ok(ka), Ok(kb)) => Err(ambiguous(
            format!("the key {}", json_string(&ka)),
            format!("the key {}", json_string(&kb)),
        )),
        (Ok(ka), Err(_)) => Err(ambiguous(
            format!("the key {}", json_string(&ka)),
            describe(b, text),
        )),
        (Err(_), Ok(kb)) => Err(ambiguous(
            describe(a, text),
            format!("the key {}", json_string(&kb)),
        )),
        (Err(e), Err(_)) => Err(e),
    }
}

/// Refuses a pair of readings that are not the same JSON value.
fn check_pair(text: &str, a: Reading, b: Reading) -> Result<(), Refusal> {
    if a == Reading::HugeInt || b == Reading::HugeInt {
        return Err(Refusal::OutOfRange);
    }
    let finite = |r: Reading| !matches!(r, Reading::Float(f) if !f.is_finite());
    if !finite(a) || !finite(b) {
        return Err(Refusal::NotFinite);
    }
    if same_json(a, b) {
        return Ok(());
    }
    Err(Refusal::Ambiguous {
        yaml12: describe(a, text),
        kubectl: describe(b, text),
        fix: fix(text, b),
    })
}

/// Equal as JSON values: numbers by value (`08` is 8 and 8.0 alike), strings by text.
fn same_json(a: Reading, b: Reading) -> bool {
    match (a, b) {
        (Reading::Null, Reading::Null) | (Reading::Str, Reading::Str) => true,
        (Reading::Bool(x), Reading::Bool(y)) => x == y,
        (Reading::Int(x), Reading::Int(y)) => x == y,
        (Reading::Float(x), Reading::Float(y)) => x.is_finite() && x == y,
        (Reading::Int(i), Reading::Float(f)) | (Reading::Float(f), Reading::Int(i)) => {
            int_equals_float(i, f)
        }
        _ => false,
    }
}

/// Exact comparison (no rounding through `i as f64`).
fn int_equals_float(i: i64, f: f64) -> bool {
    // 2^63 is exactly representable; every integral f64 in [-2^63, 2^63) converts exactly.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    f.is_finite() && f.fract() == 0.0 && (-TWO_63..TWO_63).contains(&f) && f as i64 == i
}

/// A reading, for error messages.
fn describe(r: Reading, text: &str) -> String {
    match r {
        Reading::Null => "null".into(),
        Reading::Bool(v) => format!("the boolean {v}"),
        Reading::Int(i) => format!("the integer {i}"),
        Reading::HugeInt => "an integer beyond 64 bits".into(),
        Reading::Float(f) if f.is_finite() => format!("the number {}", Number(f)),
        Reading::Float(_) => "a non-finite number".into(),
        Reading::Str => format!("the string {}", json_string(text)),
        Reading::Invalid => "an error".into(),
    }
}

/// How to write what was meant, unambiguously.
fn fix(text: &str, kubectl: Reading) -> String {
    let quoted = json_string(text);
    match kubectl {
        Reading::Null => format!("quote it: {quoted}, or write null"),
        Reading::Bool(v) => format!("quote it: {quoted}, or write {v}"),
        Reading::Int(i) => format!("quote it: {quoted}, or write {i}"),
        Reading::Float(f) if f.is_finite() => format!("quote it: {quoted}, or write {}", Number(f)),
        _ => format!("quote it: {quoted}"),
    }
}

/// A string as JSON for a message (shortened: a message stays readable whatever the input).
fn json_string(s: &str) -> String {
    Value::String(shorten(s)).to_string()
}

/// A finite float as YAML 1.2 writes it unambiguously (`1000.0`, `0.5`, `1e21`).
struct Number(f64);

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::Number::from_f64(self.0) {
            Some(n) => write!(f, "{n}"),
            None => write!(f, "{}", self.0),
        }
    }
}

// ---------------------------------------------------------------------------------------
// YAML 1.2 core schema

/// The YAML 1.2 core-schema reading.
pub(crate) fn yaml12(text: &str, written: Written, tag: Option<CoreTag>) -> Reading {
    // `!!float 1`: the core float expression matches integers too.
    let int_as_float = |_| is_core_float(text).then(|| core_float(text));
    schema_reading(text, written, tag, core_plain, int_as_float)
}

/// A scalar's reading in a schema whose plain reading is `plain`: a `!!str` or quoted
/// scalar is a string, a plain one is read by `plain`, and a scalar with another tag is
/// read as if plain (whatever its quoting) and must have the tag's kind; an integer under
/// `!!float` is what `int_as_float` makes of it (`None`: invalid).
fn schema_reading(
    text: &str,
    written: Written,
    tag: Option<CoreTag>,
    plain: fn(&str) -> Reading,
    int_as_float: impl FnOnce(Reading) -> Option<Reading>,
) -> Reading {
    match (tag, written) {
        (Some(CoreTag::Str), _) | (None, Written::Quoted) => Reading::Str,
        (None, Written::Plain) => plain(text),
        (Some(tag), _) => {
            let r = plain(text);
            match (tag, r) {
                (CoreTag::Null, Reading::Null)
                | (CoreTag::Bool, Reading::Bool(_))
                | (CoreTag::Int, Reading::Int(_) | Reading::HugeInt)
                | (CoreTag::Float, Reading::Float(_)) => r,
                (CoreTag::Float, Reading::Int(_) | Reading::HugeInt) => {
                    int_as_float(r).unwrap_or(Reading::Invalid)
                }
                _ => Reading::Invalid,
            }
        }
    }
}

fn core_plain(text: &str) -> Reading {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Reading::Null,
        "true" | "True" | "TRUE" => return Reading::Bool(true),
        "false" | "False" | "FALSE" => return Reading::Bool(false),
        ".nan" | ".NaN" | ".NAN" => return Reading::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Reading::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Reading::Float(f64::NEG_INFINITY),
        _ => {}
    }
    // [-+]?[0-9]+
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return int_reading(i128_from_digits(unsigned, 10), text.starts_with('-'));
    }
    // 0o[0-7]+ and 0x[0-9a-fA-F]+ (lower-case prefixes, no sign)
    if let Some(d) = text.strip_prefix("0o")
        && !d.is_empty()
        && d.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return int_reading(i128_from_digits(d, 8), false);
    }
    if let Some(d) = text.strip_prefix("0x")
        && !d.is_empty()
        && d.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return int_reading(i128_from_digits(d, 16), false);
    }
    if is_core_float(text) {
        return core_float(text);
    }
    Reading::Str
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` — the YAML 1.2 core float, and
/// byte for byte go-yaml's `yamlStyleFloat`.
fn is_core_float(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Rounds to nearest as both Go's `strconv.ParseFloat` and Rust do; overflow is infinite.
fn core_float(text: &str) -> Reading {
    match text.parse::<f64>() {
        Ok(f) => Reading::Float(f),
        Err(_) => Reading::Str,
    }
}

/// Digits of an already validated number; `None` when beyond 128 bits.
fn i128_from_digits(digits: &str, radix: u32) -> Option<i128> {
    let mut n: i128 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix)? as i128;
        n = n.checked_mul(radix as i128)?.checked_add(d)?;
    }
    Some(n)
}

fn int_reading(magnitude: Option<i128>, negative: bool) -> Reading {
    let Some(m) = magnitude else {
        return Reading::HugeInt;
    };
    let v = if negative { -m } else { m };
    i64::try_from(v).map_or(Reading::HugeInt, Reading::Int)
}

// ---------------------------------------------------------------------------------------
// kubectl: go-yaml v2 resolve() as sigs.k8s.io/yaml uses it

/// kubectl's reading.
pub(crate) fn kubectl(text: &str, written: Written, tag: Option<CoreTag>) -> Reading {
    // decode.go: a scalar without tag that is not plain ("!n.implicit") is a string.
    // resolve(tag, in): the text is resolved as if plain (whatever its quoting), then
    // must have the tag's kind; `!!float` also takes an int/int64 result as a float (not
    // a huge one).
    let int_as_float = |r| match r {
        Reading::Int(i) => Some(Reading::Float(i as f64)),
        _ => None,
    };
    schema_reading(text, written, tag, go_resolve, int_as_float)
}

/// `resolve("", in)` of go-yaml v2.
fn go_resolve(text: &str) -> Reading {
    // resolveTable: the first byte decides which rules apply at all ("" hints 'N').
    #[derive(PartialEq)]
    enum Hint {
        None,
        Map,
        Dot,
        Number,
    }
    let hint = match text.as_bytes().first() {
        None => Hint::Map,
        Some(b'+' | b'-' | b'0'..=b'9') => Hint::Number,
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => {
            Hint::Map
        }
        Some(b'.') => Hint::Dot,
        Some(_) => Hint::None,
    };
    if hint == Hint::None {
        return Reading::Str;
    }
    // resolveMap
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Reading::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Reading::Bool(false);
        }
        "" | "~" | "null" | "Null" | "NULL" => return Reading::Null,
        ".nan" | ".NaN" | ".NAN" => return Reading::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Reading::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Reading::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match hint {
        Hint::Dot => go_parse_float(text).map_or(Reading::Str, Reading::Float),
        Hint::Number => {
            // The timestamp test comes first in go-yaml, but it only accepts text that starts
            // with four digits and '-', which none of the numeric rules below accept: such
            // text is a string either way (decode.go keeps timestamps as strings when decoding
            // into interface{}, as sigs.k8s.io/yaml does).
            let plain: String = text.chars().filter(|&c| c != '_').collect();
            if let Ok(i) = go_parse_int(&plain) {
                return Reading::Int(i);
            }
            let uint = go_parse_uint(&plain);
            if uint.is_ok() {
                return Reading::HugeInt; // a uint64 above i64::MAX
            }
            if is_core_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Reading::Float(f);
            }
            // The "0b" branches that follow in resolve.go are unreachable since Go 1.13
            // (ParseInt base 0 reads 0b itself). Newer releases then try math/big on a
            // ParseUint range error: a huge integer (kubectl 1.32 still keeps the text).
            if uint == Err(GoNumError::Range) && go_big_int_syntax(&plain) {
                return Reading::HugeInt;
            }
            Reading::Str
        }
        Hint::Map | Hint::None => Reading::Str,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoNumError {
    Syntax,
    Range,
}

/// `strconv.ParseUint(s, 0, 64)` (underscores already removed).
fn go_parse_uint(s: &str) -> Result<u64, GoNumError> {
    if s.is_empty() {
        return Err(GoNumError::Syntax);
    }
    let b = s.as_bytes();
    let (base, digits): (u64, &[u8]) = if b[0] == b'0' {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, &b[2..]),
            Some(b'o') if b.len() >= 3 => (8, &b[2..]),
            Some(b'x') if b.len() >= 3 => (16, &b[2..]),
            _ => (8, &b[1..]),
        }
    } else {
        (10, b)
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            c if c.is_ascii_alphabetic() => u64::from(c.to_ascii_lowercase() - b'a') + 10,
            _ => return Err(GoNumError::Syntax),
        };
        if d >= base {
            return Err(GoNumError::Syntax);
        }
        // Go returns the range error as soon as the value overflows, before looking at the
        // rest of the text.
        n = n
            .checked_mul(base)
            .and_then(|n| n.checked_add(d))
            .ok_or(GoNumError::Range)?;
    }
    Ok(n)
}

/// `strconv.ParseInt(s, 0, 64)` (underscores already removed).
fn go_parse_int(s: &str) -> Result<i64, GoNumError> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let un = go_parse_uint(rest)?;
    if negative {
        if un > 1u64 << 63 {
            return Err(GoNumError::Range);
        }
        Ok((un as i64).wrapping_neg())
    } else {
        i64::try_from(un).map_err(|_| GoNumError::Range)
    }
}

/// `big.Int.SetString(s, 0)` accepting the text (sign, base prefix, digits of the base).
fn go_big_int_syntax(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let b = s.as_bytes();
    let (base, digits): (u32, &[u8]) = if b.first() == Some(&b'0') && b.len() >= 2 {
        match b[1].to_ascii_lowercase() {
            b'b' => (2, &b[2..]),
            b'o' => (8, &b[2..]),
            b'x' => (16, &b[2..]),
            _ => (8, &b[1..]),
        }
    } else {
        (10, b)
    };
    !digits.is_empty() && digits.iter().all(|&c| char::from(c).is_digit(base))
}

/// `strconv.ParseFloat(s, 64)` for the text go-yaml hands it: a `.`-led scalar, or one that
/// matched `yamlStyleFloat` after removing underscores. Go accepts `_` between digits
/// (`.5_0`); an out-of-range value is an error (the scalar stays a string).
fn go_parse_float(s: &str) -> Option<f64> {
    if !go_underscores_ok(s) {
        return None;
    }
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if !is_core_float(&plain) {
        // ParseFloat also reads "inf", "nan" and hex floats, which never reach here: the
        // callers pass text starting with '.' or matching the decimal expression.
        return None;
    }
    let f: f64 = plain.parse().ok()?;
    f.is_finite().then_some(f)
}

/// `underscoreOK` of Go's strconv: every `_` sits between digits.
fn go_underscores_ok(s: &str) -> bool {
    let mut saw = '^';
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    for c in s.chars() {
        if c.is_ascii_digit() {
            saw = '0';
        } else if c == '_' {
            if saw != '0' {
                return false;
            }
            saw = '_';
        } else {
            if saw == '_' {
                return false;
            }
            saw = '!';
        }
    }
    saw != '_'
}

/// The first escape of a double-quoted scalar that kubectl's YAML parser refuses, as
/// written (`\/`, `\uD800`), or `None`. `source` starts at the opening quote and may run past
/// the closing one (the scan stops there).
///
/// kubectl decodes YAML with go-yaml v2 (go.yaml.in/yaml/v2 v2.4.4, scannerc.go,
/// `yaml_parser_scan_flow_scalar`), which knows the escapes `\0 \a \b \t \<TAB> \n \v \f \r \e
/// \<SPACE> \" \' \\ \N \_ \L \P \xXX \uXXXX \UXXXXXXXX` and an escaped line break, and refuses any
/// code point in U+D800..U+DFFF or above U+10FFFF. YAML 1.2 (mansign's parser) also reads
/// `\/` and `\<TAB>`, and a JSON document inside a YAML stream is JSON to mansign but YAML to
/// kubectl: `"a\/b"` or a surrogate pair `"\ud83d\ude00"` is text for one and an error for
/// the other, so mansign refuses them (issue 22).
pub(crate) fn escape_kubectl_refuses(source: &str) -> Option<String> {
    let mut chars = source.chars();
    if chars.next() != Some('"') {
        return None;
    }
    while let Some(c) = chars.next() {
        match c {
            '"' => return None,
            '\\' => {
                let e = chars.next()?;
                let digits = match e {
                    '0' | 'a' | 'b' | 't' | '\t' | 'n' | 'v' | 'f' | 'r' | 'e' | ' ' | '"'
                    | '\'' | '\\' | 'N' | '_' | 'L' | 'P' | '\n' | '\r' => continue,
                    'x' => 2,
                    'u' => 4,
                    'U' => 8,
                    other => return Some(format!("\\{other}")),
                };
                let hex: String = chars.by_ref().take(digits).collect();
                let code = (hex.len() == digits && hex.chars().all(|h| h.is_ascii_hexdigit()))
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten();
                match code {
                    Some(v) if !(0xD800..=0xDFFF).contains(&v) && v <= 0x10FFFF => {}
                    _ => return Some(format!("\\{e}{hex}")),
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain_value(s: &str) -> Result<Value, Refusal> {
        value(s, Written::Plain, None)
    }

    #[test]
    fn yaml_1_1_booleans_are_ambiguous() {
        for s in [
            "y", "Y", "yes", "Yes", "YES", "n", "no", "NO", "on", "On", "off", "OFF",
        ] {
            assert!(
                matches!(plain_value(s), Err(Refusal::Ambiguous { .. })),
                "{s}"
            );
            assert!(
                matches!(key(s, Written::Plain, None), Err(Refusal::Ambiguous { .. })),
                "{s}"
            );
        }
    }

    #[test]
    fn numbers_both_readings_share_are_accepted() {
        assert_eq!(plain_value("80").unwrap(), json!(80));
        assert_eq!(plain_value("-1").unwrap(), json!(-1));
        assert_eq!(plain_value("1.5").unwrap(), json!(1.5));
        assert_eq!(plain_value("1e3").unwrap(), json!(1000.0));
        assert_eq!(plain_value("0x1F").unwrap(), json!(31));
        assert_eq!(plain_value("0o17").unwrap(), json!(15));
        assert_eq!(plain_value("08").unwrap(), json!(8));
        assert_eq!(plain_value("007").unwrap(), json!(7));
        assert_eq!(plain_value("1.0").unwrap(), json!(1.0));
        assert_eq!(plain_value("true").unwrap(), json!(true));
        assert_eq!(plain_value("~").unwrap(), json!(null));
        assert_eq!(plain_value("").unwrap(), json!(null));
        assert_eq!(plain_value("nginx").unwrap(), json!("nginx"));
        assert_eq!(plain_value("2001-12-14").unwrap(), json!("2001-12-14"));
    }

    #[test]
    fn numbers_kubectl_reads_otherwise_are_refused() {
        for s in [
            "0755", "010", "0X1F", "0O17", "0b101", "+0x1F", "-0x1F", "1_000", ".5_0", "1_0.5",
        ] {
            let err = plain_value(s).unwrap_err();
            assert!(matches!(err, Refusal::Ambiguous { .. }), "{s}: {err:?}");
        }
    }

    #[test]
    fn integers_beyond_64_bits_and_non_finite_floats_are_refused() {
        assert_eq!(plain_value("9223372036854775808"), Err(Refusal::OutOfRange));
        assert_eq!(plain_value("0x8000000000000000"), Err(Refusal::OutOfRange));
        assert_eq!(plain_value("0X1FFFFFFFFFFFFFFFF"), Err(Refusal::OutOfRange));
        assert_eq!(plain_value(".inf"), Err(Refusal::NotFinite));
        assert_eq!(plain_value("-.Inf"), Err(Refusal::NotFinite));
        assert_eq!(plain_value(".nan"), Err(Refusal::NotFinite));
        assert_eq!(plain_value("9223372036854775807").unwrap(), json!(i64::MAX));
        assert_eq!(
            plain_value("-9223372036854775808").unwrap(),
            json!(i64::MIN)
        );
    }

    #[test]
    fn quoted_scalars_are_strings_unless_tagged() {
        assert_eq!(value("on", Written::Quoted, None).unwrap(), json!("on"));
        assert_eq!(value("0755", Written::Quoted, None).unwrap(), json!("0755"));
        assert_eq!(
            value("0755", Written::Plain, Some(CoreTag::Str)).unwrap(),
            json!("0755")
        );
        // kubectl: 493 (resolved as if plain); YAML 1.2: 755.
        assert!(matches!(
            value("0755", Written::Quoted, Some(CoreTag::Int)),
            Err(Refusal::Ambiguous { .. })
        ));
        assert_eq!(
            value("12", Written::Quoted, Some(CoreTag::Int)).unwrap(),
            json!(12)
        );
        assert_eq!(
            value("1", Written::Plain, Some(CoreTag::Float)).unwrap(),
            json!(1.0)
        );
        assert!(matches!(
            value("abc", Written::Plain, Some(CoreTag::Int)),
            Err(Refusal::TagMismatch { .. })
        ));
        assert!(matches!(
            value("yes", Written::Plain, Some(CoreTag::Bool)),
            Err(Refusal::TagMismatch { .. })
        ));
    }

    #[test]
    fn keys_become_strings_as_kubectl_writes_them() {
        assert_eq!(key("9000", Written::Plain, None).unwrap(), "9000");
        assert_eq!(key("0x1F", Written::Plain, None).unwrap(), "31");
        assert_eq!(key("true", Written::Plain, None).unwrap(), "true");
        assert_eq!(key("True", Written::Plain, None).unwrap(), "true");
        assert_eq!(key("on", Written::Quoted, None).unwrap(), "on");
        assert!(matches!(
            key("null", Written::Plain, None),
            Err(Refusal::KeyNotString { .. })
        ));
        assert!(matches!(
            key("1.5", Written::Plain, None),
            Err(Refusal::KeyNotString { .. })
        ));
        assert_eq!(
            key("18446744073709551615", Written::Plain, None),
            Err(Refusal::OutOfRange)
        );
    }

    #[test]
    fn go_integer_parsing_follows_strconv() {
        assert_eq!(go_parse_int("0755"), Ok(493));
        assert_eq!(go_parse_int("-0x8000000000000000"), Ok(i64::MIN));
        assert_eq!(go_parse_int("0x"), Err(GoNumError::Syntax));
        assert_eq!(go_parse_int("08"), Err(GoNumError::Syntax));
        assert_eq!(go_parse_int("0"), Ok(0));
        assert_eq!(
            go_parse_uint("99999999999999999999x"),
            Err(GoNumError::Range)
        );
        assert!(go_underscores_ok(".5_0"));
        assert!(!go_underscores_ok("._5"));
    }

    /// `scripts/kubectl-readings.sh` recorded what `kubectl` printed for each scalar of
    /// `testdata/yaml-readings/scalars.json`, as a value and as a key.
    #[test]
    fn the_kubectl_reading_is_what_kubectl_printed() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/yaml-readings/kubectl-readings.json"
        );
        let recorded: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let readings = recorded["readings"].as_object().unwrap();
        assert!(readings.len() > 150);
        for (text, seen) in readings {
            let r = kubectl(text, Written::Plain, None);
            // As a value: kubectl sends JSON; float64 values that are integral print as
            // integers, huge integers as rounded floats.
            let value = &seen["value"];
            let ok = match (r, value.get("json")) {
                (Reading::Float(f), None) => !f.is_finite() && value["error"] == true,
                (_, None) => false,
                (Reading::Null, Some(v)) => v.is_null(),
                (Reading::Bool(b), Some(v)) => v.as_bool() == Some(b),
                (Reading::Int(i), Some(v)) => v.as_i64() == Some(i),
                (Reading::Float(f), Some(v)) => v.as_f64() == Some(f),
                (Reading::Str, Some(v)) => v.as_str() == Some(text.as_str()),
                // uint64 and math/big integers: a rounded float, or (kubectl up to 1.32, which
                // lacks the math/big fallback) the text.
                (Reading::HugeInt, Some(v)) => {
                    v.as_f64().is_some_and(|f| f.abs() >= 9.2e18)
                        || v.as_str() == Some(text.as_str())
                }
                (Reading::Invalid, Some(_)) => false,
            };
            assert!(
                ok,
                "value {text:?}: port reads {r:?}, kubectl printed {value}"
            );
            // As a key: a string, or an error for null, uint64 and math/big keys.
            let Some(key) = seen.get("key") else {
                continue;
            };
            let ok = match r {
                Reading::Null => key["error"] == true,
                Reading::Bool(b) => key["string"].as_str() == Some(&*b.to_string()),
                Reading::Int(i) => key["string"].as_str() == Some(&*i.to_string()),
                Reading::Str => key["string"] == text.as_str(),
                Reading::HugeInt => key["error"] == true || key["string"] == text.as_str(),
                // Go formats float keys as 32-bit floats; mansign refuses them.
                Reading::Float(_) => key["string"].is_string(),
                Reading::Invalid => false,
            };
            assert!(ok, "key {text:?}: port reads {r:?}, kubectl printed {key}");
        }
    }
}
