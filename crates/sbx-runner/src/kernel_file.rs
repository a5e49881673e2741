//! Reading the kernel's small text files (`/proc`, `/sys`) in one `read`.
//!
//! `fs::read` sizes its buffer from the file's length, which these files
//! report as 0: it then reads them 32 bytes at a time, after a `statx`, and
//! a `status` file costs ten system calls. The reset reads dozens of them
//! between every two cases.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Room for any file the runner reads this way (`/proc/PID/status` is
/// about 1.5 KiB); a longer one is still read whole, in more calls.
const ROOM: usize = 4096;

/// The whole file, read with one `open`, one `read` for the text and one
/// for the end of file.
/// (`File::read_to_end` would ask the file's length and position first.)
pub(crate) fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    let mut bytes = vec![0u8; ROOM];
    let mut len = 0;
    loop {
        if len == bytes.len() {
            bytes.resize(len * 2, 0);
        }
        match file.read(&mut bytes[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(len);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_proc_file_whole() {
        let status = super::read("/proc/self/status").unwrap();
        let text = String::from_utf8_lossy(&status);
        assert!(text.starts_with("Name:"), "{text}");
        // The last line of a status file is whole.
        assert!(text.ends_with('\n'), "{text}");
        assert!(text.contains("\nUid:"), "{text}");
    }

    #[test]
    fn a_file_longer_than_the_room_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        let long: Vec<u8> = (0..3 * super::ROOM).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &long).unwrap();
        assert_eq!(super::read(&path).unwrap(), long);
        assert!(super::read(dir.path().join("missing")).is_err());
    }
}
