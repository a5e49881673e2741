//! A problem's tests on disk, decoded once and read back one test at a
//! time while its samples are judged: sbx never holds every problem's
//! tests at once, only the one test (or, for a functional problem, the
//! one problem) being judged. Each test is two length-prefixed records
//! (input, then output), in LiveCodeBench's order: public, then private.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// What `write` wrote: how many tests, and the SHA-256 (hex) of the bytes
/// written, which names the tests in cache keys and digests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub count: usize,
    pub sha256: String,
}

/// Writes a problem's tests to `path`.
pub(crate) fn write<'a>(
    path: &Path,
    tests: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> std::io::Result<Written> {
    use sha2::{Digest, Sha256};
    let mut out = BufWriter::new(File::create(path)?);
    let mut hasher = Sha256::new();
    let mut count = 0;
    for (input, output) in tests {
        for part in [input, output] {
            let len = (part.len() as u64).to_le_bytes();
            out.write_all(&len)?;
            out.write_all(part.as_bytes())?;
            hasher.update(len);
            hasher.update(part.as_bytes());
        }
        count += 1;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_data()?;
    let sha256 = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Written { count, sha256 })
}

/// The tests of one problem, read in order.
#[derive(Debug)]
pub(crate) struct Reader {
    file: BufReader<File>,
    path: PathBuf,
}

impl Reader {
    pub(crate) fn open(path: &Path) -> Result<Reader, String> {
        let file = File::open(path)
            .map_err(|e| format!("cannot read the decoded tests `{}`: {e}", path.display()))?;
        Ok(Reader {
            file: BufReader::new(file),
            path: path.to_path_buf(),
        })
    }

    fn part(&mut self) -> Result<Option<String>, String> {
        let mut len = [0u8; 8];
        match self.file.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(self.broken(&e.to_string())),
        }
        let len = usize::try_from(u64::from_le_bytes(len)).map_err(|_| self.broken("length"))?;
        let mut bytes = Vec::new();
        (&mut self.file)
            .take(len as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| self.broken(&e.to_string()))?;
        if bytes.len() != len {
            return Err(self.broken("cut short"));
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| self.broken("not UTF-8"))
    }

    fn broken(&self, why: &str) -> String {
        format!(
            "the decoded tests `{}` are broken: {why}",
            self.path.display()
        )
    }
}

impl Iterator for Reader {
    /// A test's input and output.
    type Item = Result<(String, String), String>;

    fn next(&mut self) -> Option<Self::Item> {
        match (self.part(), self.part()) {
            (Ok(None), _) => None,
            (Ok(Some(input)), Ok(Some(output))) => Some(Ok((input, output))),
            (Ok(Some(_)), Ok(None)) => Some(Err(self.broken("an input without its output"))),
            (Err(e), _) | (_, Err(e)) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_come_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let n = write(&path, [("1 2\n", "3\n"), ("", "é")]).unwrap();
        assert_eq!(n.count, 2);
        // The digest is the file's own.
        let bytes = std::fs::read(&path).unwrap();
        let sha: String = {
            use sha2::{Digest, Sha256};
            Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        assert_eq!(n.sha256, sha);
        let read: Vec<(String, String)> =
            Reader::open(&path).unwrap().map(Result::unwrap).collect();
        assert_eq!(
            read,
            [("1 2\n".into(), "3\n".into()), (String::new(), "é".into())]
        );
        std::fs::write(&path, [5, 0, 0, 0, 0, 0, 0, 0, b'a']).unwrap();
        let err = Reader::open(&path).unwrap().next().unwrap().unwrap_err();
        assert!(err.contains("cut short"), "{err}");
    }
}
