//! Text kept for the end of a run ([`Spill`]): in memory up to a bound, then in an anonymous
//! temporary file, so that what a run keeps for its end (the staged outputs, stdout's text,
//! the report's listing; in the CLI, verify's report) does not hold the run's memory in
//! proportion to its number of files.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes of report kept in memory before the rest goes to a temporary file: small, so that
/// a run's memory stays flat (a temporary file costs nothing a report would notice).
pub const SPILL_AT: usize = 256 << 10;

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

    /// Everything written so far, from the start, left in place to be read again. Nothing
    /// may be written after (the file's offset is shared with the reader).
    pub fn reread(&mut self) -> std::io::Result<Text> {
        match &mut self.file {
            None => Ok(Box::new(std::io::Cursor::new(self.memory.clone()))),
            Some(writer) => {
                writer.flush()?;
                let mut file = writer.get_ref().try_clone()?;
                file.seek(SeekFrom::Start(0))?;
                Ok(Box::new(std::io::BufReader::new(file)))
            }
        }
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

/// Bytes of a [`PathLog`] kept in memory before the rest goes to a temporary file.
const PATH_LOG_AT: usize = 64 << 10;

/// Records of paths (a fixed number per record) kept for the end of a run in a
/// [`Spill`]: what a run staged, or the inputs it will remove, without holding memory in
/// proportion to its number of files. Any path round-trips (no separator is assumed).
pub struct PathLog {
    body: Spill,
    width: usize,
    records: usize,
}

impl PathLog {
    /// A log of records of `width` paths each.
    pub fn new(width: usize) -> Self {
        PathLog {
            body: Spill::new(PATH_LOG_AT),
            width,
            records: 0,
        }
    }

    /// Appends a record (`paths.len()` must be the log's width).
    pub fn push(&mut self, paths: &[&Path]) -> std::io::Result<()> {
        if paths.len() != self.width {
            return Err(std::io::Error::other("a path record of the wrong width"));
        }
        for path in paths {
            let bytes = path_bytes(path);
            let len = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
            self.body.write_all(&len.to_le_bytes())?;
            self.body.write_all(&bytes)?;
        }
        self.records += 1;
        Ok(())
    }

    /// How many records were pushed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.records
    }

    /// The records pushed so far, in order, left in place to be read again (nothing may be
    /// pushed after).
    pub fn reread_records(&mut self) -> std::io::Result<PathRecords> {
        Ok(PathRecords {
            reader: self.body.reread()?,
            width: self.width,
            left: self.records,
        })
    }

    /// The records, in the order pushed.
    pub fn into_records(self) -> std::io::Result<PathRecords> {
        Ok(PathRecords {
            reader: self.body.into_reader()?,
            width: self.width,
            left: self.records,
        })
    }
}

/// The records of a [`PathLog`], read back.
pub struct PathRecords {
    reader: Text,
    width: usize,
    left: usize,
}

impl Iterator for PathRecords {
    type Item = std::io::Result<Vec<PathBuf>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut record = Vec::with_capacity(self.width);
        for _ in 0..self.width {
            let mut len = [0u8; 4];
            if let Err(e) = self.reader.read_exact(&mut len) {
                self.left = 0;
                return Some(Err(e));
            }
            let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
            if let Err(e) = self.reader.read_exact(&mut bytes) {
                self.left = 0;
                return Some(Err(e));
            }
            record.push(path_from_bytes(bytes));
        }
        Some(Ok(record))
    }
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(unix)]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().into_owned().into_bytes()
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

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
    fn a_path_log_reads_back_every_record_spilled_or_not() {
        let odd = PathBuf::from("dir with space/new\nline/ä.yaml");
        let mut log = PathLog::new(2);
        for i in 0..5000 {
            let other = PathBuf::from(format!("out/{i}.yaml"));
            log.push(&[&odd, &other]).unwrap();
        }
        assert!(log.push(&[&odd]).is_err(), "a record of the wrong width");
        assert_eq!(log.len(), 5000);
        let records: Vec<Vec<PathBuf>> = log
            .into_records()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records.len(), 5000);
        assert_eq!(records[4999], vec![odd, PathBuf::from("out/4999.yaml")]);
    }

    #[test]
    fn a_spill_within_its_limit_stays_in_memory() {
        let mut spill = Spill::new(100);
        spill.write_all(b"line\n").unwrap();
        assert!(!spill.spilled());
        assert_eq!(read_all(spill), b"line\n");
    }
}
