//! The JSON arrays of the CLI's streamed reports ([`JsonArray`]), kept in a
//! [`Spill`] (in memory up to a bound, then in a temporary file).

pub(crate) use crate::signing::tree::spill::{SPILL_AT, Spill, Text};
use std::io::{Read, Write};

/// A JSON array built one entry at a time and kept in a [`Spill`], written as a member
/// of a top-level object exactly as `serde_json::to_string_pretty` writes the whole
/// object: the streamed report of a run of 100,000 files is the report of one whole run.
pub struct JsonArray {
    body: Spill,
    entries: usize,
}

impl JsonArray {
    pub fn new() -> Self {
        Self::with_spill_at(SPILL_AT)
    }

    pub fn with_spill_at(limit: usize) -> Self {
        JsonArray {
            body: Spill::new(limit),
            entries: 0,
        }
    }

    /// Appends one entry.
    pub fn push(&mut self, value: &serde_json::Value) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
        if self.entries > 0 {
            self.body.write_all(b",\n")?;
        }
        // An entry of a top-level object's array: every line indented two levels
        // (strings never hold a raw line break in JSON).
        let mut entry = String::with_capacity(text.len() + 64);
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                entry.push('\n');
            }
            entry.push_str("    ");
            entry.push_str(part);
        }
        self.body.write_all(entry.as_bytes())?;
        self.entries += 1;
        Ok(())
    }

    /// How many entries were pushed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries
    }

    /// `"key": [...]` as the member of a top-level pretty-printed object (no comma, no
    /// line break after it), to read back.
    pub fn into_member(self, key: &str) -> std::io::Result<Text> {
        let key = serde_json::to_string(key).map_err(std::io::Error::other)?;
        if self.entries == 0 {
            return Ok(Box::new(std::io::Cursor::new(format!("  {key}: []"))));
        }
        let head = std::io::Cursor::new(format!("  {key}: [\n"));
        let tail = std::io::Cursor::new("\n  ]");
        Ok(Box::new(head.chain(self.body.into_reader()?).chain(tail)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_array_is_the_member_serde_json_writes_spilled_or_not() {
        let entries = [
            serde_json::json!({"source": "a \"b\"\nc", "n": [1, 2]}),
            serde_json::json!(7),
            serde_json::json!({}),
        ];
        for spill_at in [4, usize::MAX] {
            for count in 0..=entries.len() {
                let mut array = JsonArray::with_spill_at(spill_at);
                for entry in &entries[..count] {
                    array.push(entry).unwrap();
                }
                assert_eq!(array.len(), count);
                let mut text = String::from("{\n");
                array
                    .into_member("files")
                    .unwrap()
                    .read_to_string(&mut text)
                    .unwrap();
                text.push_str(",\n  \"n\": 1\n}");
                let whole = serde_json::json!({"files": &entries[..count], "n": 1});
                assert_eq!(text, serde_json::to_string_pretty(&whole).unwrap());
            }
        }
    }
}
