//! A compiled candidate's build as the compile container writes it for the
//! runner: a tar archive of the build directory (`COMPILE_PACK_SCRIPT`),
//! read strictly into the files the runner protocol carries. The archive
//! comes out of a container that ran the compiler on the candidate's
//! source, so it is read as untrusted: regular files and directories only
//! (no link, device or fifo), plain relative paths, at most `MAX_FILES`
//! files and `MAX_BUILD` bytes in all. Anything else is `Err`, and sbx runs
//! that build from its volume instead (a container per case), never
//! half of it.

use sbx_runner::protocol::{valid_build_path, BuildFile};

/// The most bytes of files a build delivered to the runner may hold (the
/// protocol's frame is 64 MiB; the source travels in it too).
pub(crate) const MAX_BUILD: usize = 48 << 20;
/// The most files a delivered build may hold.
pub(crate) const MAX_FILES: usize = 10_000;

const BLOCK: usize = 512;

/// The files of a tar archive (ustar, GNU or pax, as GNU tar and busybox
/// write them), in archive order; directories are implied by the paths.
pub(crate) fn read(archive: &[u8]) -> Result<Vec<BuildFile>, String> {
    let mut files = Vec::new();
    let mut total = 0usize;
    let mut at = 0usize;
    // A GNU `L` or pax `path` record names the next entry.
    let mut long_name: Option<String> = None;
    loop {
        let Some(header) = archive.get(at..at + BLOCK) else {
            return Err("the archive ends inside a header".into());
        };
        if header.iter().all(|&b| b == 0) {
            // The end: one or two zero blocks (then padding).
            return Ok(files);
        }
        if !checksum_ok(header) {
            return Err("a header's checksum does not match".into());
        }
        let size = octal(&header[124..136]).ok_or("a header's size is not a number")?;
        let size = usize::try_from(size).map_err(|_| "a header's size is too large")?;
        let data_start = at + BLOCK;
        let data_end = data_start
            .checked_add(size)
            .filter(|&end| end <= archive.len())
            .ok_or("the archive ends inside a file")?;
        let data = &archive[data_start..data_end];
        at = data_start + size.div_ceil(BLOCK) * BLOCK;
        let kind = header[156];
        let name = match long_name.take() {
            Some(name) => name,
            None => header_name(header)?,
        };
        match kind {
            b'L' => {
                let text = data.split(|&b| b == 0).next().unwrap_or_default();
                long_name = Some(utf8(text)?);
                continue;
            }
            b'x' => {
                long_name = pax_path(data)?;
                continue;
            }
            // A global pax header names nothing.
            b'g' => continue,
            _ => {}
        }
        let path = relative(&name)?;
        match kind {
            b'0' | 0 => {
                let Some(path) = path else {
                    return Err("a file named `.`".into());
                };
                total += size;
                if total > MAX_BUILD {
                    return Err(format!("the build is larger than {} MiB", MAX_BUILD >> 20));
                }
                files.push(BuildFile {
                    path,
                    bytes: data.to_vec(),
                });
                if files.len() > MAX_FILES {
                    return Err(format!("the build has more than {MAX_FILES} files"));
                }
            }
            b'5' => {}
            other => {
                return Err(format!(
                    "`{name}` is not a regular file or directory (type {:?})",
                    char::from(other)
                ))
            }
        }
    }
}

/// The header's checksum (bytes 148..156, octal) against the sum of its
/// bytes with that field read as spaces.
fn checksum_ok(header: &[u8]) -> bool {
    let Some(want) = octal(&header[148..156]) else {
        return false;
    };
    let sum: u64 = header
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(b)
            }
        })
        .sum();
    sum == want
}

/// An octal field (NUL- or space-terminated, maybe space-padded).
fn octal(field: &[u8]) -> Option<u64> {
    let text: &[u8] = field
        .split(|&b| b == 0 || b == b' ')
        .find(|part| !part.is_empty())
        .unwrap_or(b"0");
    let text = std::str::from_utf8(text).ok()?;
    u64::from_str_radix(text, 8).ok()
}

fn utf8(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a path is not UTF-8".to_string())
}

/// The header's own name: ustar's prefix, `/`, then its name.
fn header_name(header: &[u8]) -> Result<String, String> {
    let field = |range: std::ops::Range<usize>| {
        let bytes = &header[range];
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        utf8(&bytes[..end])
    };
    let name = field(0..100)?;
    let ustar = &header[257..262] == b"ustar";
    // GNU's format keeps other data where ustar's prefix is.
    let gnu = &header[257..265] == b"ustar  \0";
    let prefix = if ustar && !gnu {
        field(345..500)?
    } else {
        String::new()
    };
    Ok(if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    })
}

/// The `path` record of a pax extended header, if any.
fn pax_path(data: &[u8]) -> Result<Option<String>, String> {
    let mut rest = data;
    let mut path = None;
    while !rest.is_empty() {
        let space = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or("a malformed pax record")?;
        let len: usize = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|&n| n > space && n <= rest.len())
            .ok_or("a malformed pax record")?;
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(value) = record.strip_prefix(b"path=") {
            path = Some(utf8(value)?);
        }
        rest = &rest[len..];
    }
    Ok(path)
}

/// `./a/b` as `a/b`; `.` and `./` as `None`; anything that is not a plain
/// relative path is `Err`.
fn relative(name: &str) -> Result<Option<String>, String> {
    let trimmed = name.trim_end_matches('/');
    let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
    if trimmed.is_empty() || trimmed == "." {
        return Ok(None);
    }
    if valid_build_path(trimmed) {
        Ok(Some(trimmed.to_string()))
    } else {
        Err(format!(
            "`{}` is not a plain relative path",
            name.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One ustar header (and its data, padded) as tar writes it.
    fn entry(name: &str, kind: u8, data: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000755");
        h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        let mut out = h;
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(BLOCK) * BLOCK, 0);
        out
    }

    fn archive(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut out: Vec<u8> = entries.concat();
        out.extend_from_slice(&[0u8; 2 * BLOCK]);
        out
    }

    #[test]
    fn files_and_directories_as_tar_writes_them() {
        let a = archive(&[
            entry("./", b'5', b""),
            entry("./main", b'0', b"\x7fELF binary"),
            entry("./pkg/", b'5', b""),
            entry("./pkg/Main$1.class", b'0', &[0xCA, 0xFE, 0xBA, 0xBE]),
            entry("./empty", b'0', b""),
        ]);
        let files = read(&a).unwrap();
        let got: Vec<(&str, usize)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.bytes.len()))
            .collect();
        assert_eq!(got, [("main", 11), ("pkg/Main$1.class", 4), ("empty", 0)]);
        assert_eq!(files[0].bytes, b"\x7fELF binary");
    }

    #[test]
    fn gnu_long_names_and_pax_paths() {
        let long = format!("./{}.class", "A".repeat(150));
        let mut gnu = entry("././@LongLink", b'L', format!("{long}\0").as_bytes());
        gnu.extend(entry("./AAAA", b'0', b"x"));
        let record = format!("path={}\n", &long[2..]);
        let record = format!("{} {record}", record.len() + 4);
        let mut pax = entry("./PaxHeaders/x", b'x', record.as_bytes());
        pax.extend(entry("./BBBB", b'0', b"y"));
        for stream in [gnu, pax] {
            let files = read(&archive(&[stream])).unwrap();
            assert_eq!(files.len(), 1);
            assert_eq!(files[0].path, long[2..]);
        }
    }

    #[test]
    fn links_devices_bad_paths_and_broken_archives_are_refused() {
        for (name, kind) in [
            ("./link", b'2'),
            ("./hard", b'1'),
            ("./dev", b'3'),
            ("./fifo", b'6'),
        ] {
            let err = read(&archive(&[entry(name, kind, b"")])).unwrap_err();
            assert!(err.contains("not a regular file"), "{name}: {err}");
        }
        for name in ["/etc/passwd", "../up", "./a/../../b", "a//b"] {
            let err = read(&archive(&[entry(name, b'0', b"x")])).unwrap_err();
            assert!(err.contains("plain relative path"), "{name}: {err}");
        }
        let good = archive(&[entry("./main", b'0', b"0123456789")]);
        assert!(read(&good[..BLOCK + 4]).is_err(), "cut inside the file");
        assert!(read(&good[..100]).is_err(), "cut inside the header");
        assert!(read(&[]).is_err(), "empty");
        let mut bad = good.clone();
        bad[0] = b'X';
        assert!(read(&bad).unwrap_err().contains("checksum"));
    }

    #[test]
    fn a_build_above_the_limit_is_refused() {
        let big = vec![0u8; MAX_BUILD / 2 + 1];
        let a = archive(&[entry("./a", b'0', &big), entry("./b", b'0', &big)]);
        assert!(read(&a).unwrap_err().contains("larger than 48 MiB"));
    }
}
