//! Text kept for the end of a run ([`Spill`]): in memory up to a bound, then in an anonymous
//! temporary file, so that what a run prints at its end (verify's report, sign's stdout)
//! does not hold the run's memory in proportion to its number of files.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

/// Bytes of report kept in memory before the rest goes to a temporary file.
pub const SPILL_AT: usize = 4 << 20;

/// Text kept for the end of a run: in memory up to its limit, then in an anonymous
/// temporary file (removed when dropped). Where no temporary file can be made, the text
/// stays in memory, as it always did.
pub struct Spill {
    memory: Vec<u8>,
    file: Option<BufWriter<File>>,
    limit: usize,
}

impl Spill {
    pub fn new(limit: usize) -> Self {
        Spill {
            memory: Vec::new(),
            file: None,
            limit,
        }
    }

    /// True once the text went to a temporary file.
    #[cfg(test)]
    fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// Everything written, from the start.
    pub fn into_reader(self) -> std::io::Result<Text> {
        match self.file {
            None => Ok(Box::new(std::io::Cursor::new(self.memory))),
            Some(writer) => {
                let mut file = writer.into_inner().map_err(|e| e.into_error())?;
                file.seek(SeekFrom::Start(0))?;
                Ok(Box::new(std::io::BufReader::new(file)))
            }
        }
    }
}

impl Write for Spill {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(file) = &mut self.file {
            return file.write(buf);
        }
        self.memory.extend_from_slice(buf);
        if self.memory.len() > self.limit {
            match tempfile::tempfile() {
                Ok(file) => {
                    let mut writer = BufWriter::new(file);
                    writer.write_all(&self.memory)?;
                    self.memory = Vec::new();
                    self.file = Some(writer);
                }
                // No writable temporary directory: keep it in memory.
                Err(_) => self.limit = usize::MAX,
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// A report's text to read back, from its start.
pub type Text = Box<dyn Read>;

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(spill: Spill) -> Vec<u8> {
        let mut out = Vec::new();
        spill.into_reader().unwrap().read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn a_spill_past_its_limit_moves_to_a_file_and_reads_back_whole() {
        let mut spill = Spill::new(10);
        spill.write_all(b"0123456789").unwrap();
        assert!(!spill.spilled());
        spill.write_all(b"abc").unwrap();
        assert!(spill.spilled());
        spill.write_all(b"def\n").unwrap();
        assert_eq!(read_all(spill), b"0123456789abcdef\n");
    }

    #[test]
    fn a_spill_within_its_limit_stays_in_memory() {
        let mut spill = Spill::new(100);
        spill.write_all(b"line\n").unwrap();
        assert!(!spill.spilled());
        assert_eq!(read_all(spill), b"line\n");
    }
}
