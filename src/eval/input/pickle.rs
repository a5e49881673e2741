//! The one pickle LiveCodeBench's files hold: a `str` (its private tests'
//! JSON), read without unpickling. Unpickling is running code, so only the
//! opcodes that pickling a `str` writes are read (protocols 0 to 5: PROTO,
//! FRAME, SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, MEMOIZE, BINPUT,
//! LONG_BINPUT, STOP); any other opcode is refused by name, and so is a
//! pickle that holds anything but one `str`.

/// Why a pickle was refused (a fragment for an error line).
pub(crate) type Refusal = String;

/// The text a pickled `str` holds, borrowed from `bytes`.
pub(crate) fn pickled_str(bytes: &[u8]) -> Result<&str, Refusal> {
    let mut at = 0;
    // Every str pushed; a pickle of one str pushes exactly one. (A second
    // one is refused at STOP, so that what follows it, a GLOBAL say, is
    // what a refusal names.)
    let mut pushed: Vec<&[u8]> = Vec::new();
    let take = |at: &mut usize, n: usize| -> Result<&[u8], Refusal> {
        let end = at
            .checked_add(n)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| format!("the pickle ends inside an opcode at byte {}", *at))?;
        let part = &bytes[*at..end];
        *at = end;
        Ok(part)
    };
    let length = |part: &[u8]| -> usize {
        let mut n: u64 = 0;
        for (i, b) in part.iter().enumerate() {
            n |= u64::from(*b) << (8 * i);
        }
        usize::try_from(n).unwrap_or(usize::MAX)
    };
    loop {
        let Some(&op) = bytes.get(at) else {
            return Err("the pickle ends without STOP".into());
        };
        let opcode_at = at;
        at += 1;
        match op {
            // PROTO n
            0x80 => {
                let version = take(&mut at, 1)?[0];
                if version > 5 {
                    return Err(format!("pickle protocol {version} is not one of 0 to 5"));
                }
            }
            // FRAME: an 8-byte length, then the frame's opcodes inline.
            0x95 => {
                take(&mut at, 8)?;
            }
            // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
            0x8c | b'X' | 0x8d => {
                let width = match op {
                    0x8c => 1,
                    b'X' => 4,
                    _ => 8,
                };
                let n = length(take(&mut at, width)?);
                pushed.push(take(&mut at, n)?);
            }
            // MEMOIZE, BINPUT i, LONG_BINPUT i: the memo is never read back.
            0x94 => {}
            b'q' => {
                take(&mut at, 1)?;
            }
            b'r' => {
                take(&mut at, 4)?;
            }
            // STOP
            b'.' => {
                if at != bytes.len() {
                    return Err(format!("bytes after the pickle's STOP at byte {opcode_at}"));
                }
                let [s] = pushed[..] else {
                    return Err(format!("the pickle holds {} strs, not one", pushed.len()));
                };
                return std::str::from_utf8(s)
                    .map_err(|_| "the pickled str is not UTF-8".to_string());
            }
            other => {
                return Err(format!(
                "pickle opcode {} at byte {opcode_at} is not allowed: only a pickled str is read",
                opcode_name(other)
            ))
            }
        }
    }
}

/// An opcode as the pickle module names it (the ones that matter for a
/// refusal), or its byte.
fn opcode_name(op: u8) -> String {
    let name = match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        b'b' => "BUILD",
        b'(' => "MARK",
        b']' => "EMPTY_LIST",
        b'}' => "EMPTY_DICT",
        b')' => "EMPTY_TUPLE",
        b'V' => "UNICODE",
        b'S' => "STRING",
        b'U' => "SHORT_BINSTRING",
        b'T' => "BINSTRING",
        b'C' => "SHORT_BINBYTES",
        b'B' => "BINBYTES",
        b'J' => "BININT",
        b'K' => "BININT1",
        b'I' => "INT",
        b'N' => "NONE",
        b'g' => "GET",
        b'h' => "BINGET",
        b'p' => "PUT",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        b'0' => "POP",
        _ => "",
    };
    if name.is_empty() {
        format!("0x{op:02x}")
    } else {
        format!("0x{op:02x} ({name})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pickles_python_writes_for_a_str_are_read() {
        // pickle.dumps('hi', protocol=p) for p in 2, 4, 5 (as Python 3.11 writes them).
        let p2 = b"\x80\x02X\x02\x00\x00\x00hiq\x00.";
        let p4 = b"\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x8c\x02hi\x94.";
        let p5 = b"\x80\x05\x95\x06\x00\x00\x00\x00\x00\x00\x00\x8c\x02hi\x94.";
        for p in [&p2[..], p4, p5] {
            assert_eq!(pickled_str(p), Ok("hi"), "{p:?}");
        }
        let long = [
            b"\x80\x04\x8d".as_slice(),
            &3u64.to_le_bytes(),
            "é!".as_bytes(),
            b"r\x01\x00\x00\x00.",
        ]
        .concat();
        assert_eq!(pickled_str(&long), Ok("é!"));
    }

    #[test]
    fn anything_but_one_str_is_refused_by_opcode() {
        // pickle.dumps(os.system) would start with GLOBAL or STACK_GLOBAL.
        let cases: [(&[u8], &str); 9] = [
            (b"cos\nsystem\n(S'id'\ntR.", "0x63 (GLOBAL)"),
            (b"\x80\x04\x8c\x02os\x93.", "0x93 (STACK_GLOBAL)"),
            (b"\x80\x04\x8c\x02hi\x8c\x02ho.", "holds 2 strs, not one"),
            (b"\x80\x04.", "holds 0 strs"),
            (b"\x80\x04\x8c\x05hi.", "ends inside an opcode"),
            (b"\x80\x04\x8c\x02hi", "ends without STOP"),
            (b"\x80\x09\x8c\x02hi.", "protocol 9"),
            (b"\x80\x04\x8c\x02hi.x", "bytes after"),
            (b"\x80\x04\x8c\x02\xff\xfe.", "not UTF-8"),
        ];
        for (bytes, want) in cases {
            let err = pickled_str(bytes).unwrap_err();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
        // A length that overflows is an end inside an opcode, never a panic.
        let huge = [b"\x80\x04\x8d".as_slice(), &u64::MAX.to_le_bytes(), b"."].concat();
        assert!(pickled_str(&huge).unwrap_err().contains("ends inside"));
    }
}
