//! The `#!` line of a candidate, read the way Linux reads it: the
//! interpreter path, then at most one argument (the rest of the line,
//! trimmed). The runner runs `INTERPRETER [ARG] FILE` itself because `/tmp`
//! is noexec.

/// The most bytes of the first line the kernel looks at (BINPRM_BUF_SIZE).
const MAX_LINE: usize = 256;

/// The interpreter words of `program`'s `#!` line, or why there are none.
pub(crate) fn parse(program: &[u8]) -> Result<Vec<String>, String> {
    let Some(rest) = program.strip_prefix(b"#!") else {
        return Err("the candidate has no `#!` line and no interpreter was given".into());
    };
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    if end + 2 > MAX_LINE {
        return Err(format!("the `#!` line is longer than {MAX_LINE} bytes"));
    }
    let line =
        std::str::from_utf8(&rest[..end]).map_err(|_| "the `#!` line is not UTF-8".to_string())?;
    let line = line.trim_matches([' ', '\t', '\r']);
    let (interpreter, arg) = match line.find([' ', '\t']) {
        Some(at) => (&line[..at], line[at..].trim_matches([' ', '\t'])),
        None => (line, ""),
    };
    if interpreter.is_empty() {
        return Err("the `#!` line names no interpreter".into());
    }
    let mut words = vec![interpreter.to_string()];
    if !arg.is_empty() {
        words.push(arg.to_string());
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn interpreter_and_one_argument_like_the_kernel() {
        assert_eq!(parse(b"#!/bin/sh\necho").unwrap(), ["/bin/sh"]);
        assert_eq!(
            parse(b"#!/usr/bin/env python3\n").unwrap(),
            ["/usr/bin/env", "python3"]
        );
        assert_eq!(parse(b"#! /bin/sh -eu\n").unwrap(), ["/bin/sh", "-eu"]);
        // The rest of the line is one argument, as Linux passes it.
        assert_eq!(
            parse(b"#!/usr/bin/env  python3 -u  \r\nx").unwrap(),
            ["/usr/bin/env", "python3 -u"]
        );
        assert_eq!(parse(b"#!/bin/sh").unwrap(), ["/bin/sh"]);
    }

    #[test]
    fn no_shebang_empty_or_overlong_lines_are_refused() {
        assert!(parse(b"print(1)\n").is_err());
        assert!(parse(b"").is_err());
        assert!(parse(b"#!\n").is_err());
        assert!(parse(b"#!   \t\n").is_err());
        let mut long = b"#!/bin/".to_vec();
        long.extend(vec![b'x'; 300]);
        assert!(parse(&long).is_err());
        assert!(parse(b"#!/bin/\xff\n").is_err());
    }
}
