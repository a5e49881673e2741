//! Natural order of names: runs of digits compare as numbers, so `s8`
//! comes before `s10` (as `ls -v` and file managers sort). Pure.

use std::cmp::Ordering;

/// Compares `a` and `b` naturally: digit runs by value (then by length, so
/// `s08` and `s8` still differ), everything else byte by byte.
pub(crate) fn natural_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let run = |s: &[u8], from: usize| {
                let end = s[from..]
                    .iter()
                    .position(|c| !c.is_ascii_digit())
                    .map_or(s.len(), |n| from + n);
                (from, end)
            };
            let ((a0, a1), (b0, b1)) = (run(a, i), run(b, j));
            let (da, db) = (trim_zeros(&a[a0..a1]), trim_zeros(&b[b0..b1]));
            let by_value = da.len().cmp(&db.len()).then_with(|| da.cmp(db));
            let order = by_value.then_with(|| (a1 - a0).cmp(&(b1 - b0)));
            if order != Ordering::Equal {
                return order;
            }
            (i, j) = (a1, b1);
        } else {
            match a[i].cmp(&b[j]) {
                Ordering::Equal => (i, j) = (i + 1, j + 1),
                order => return order,
            }
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[zeros..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_compare_as_numbers() {
        let mut names = vec![
            "s10.py", "s11.py", "s8.py", "s1.py", "a.py", "s2b.py", "s2a.py", "s08.py",
        ];
        names.sort_by(|a, b| natural_cmp(a.as_bytes(), b.as_bytes()));
        assert_eq!(
            names,
            ["a.py", "s1.py", "s2a.py", "s2b.py", "s8.py", "s08.py", "s10.py", "s11.py"]
        );
        assert_eq!(natural_cmp(b"x", b"x"), Ordering::Equal);
        assert_eq!(natural_cmp(b"x", b"x1"), Ordering::Less);
        let huge = "9".repeat(100);
        assert_eq!(natural_cmp(huge.as_bytes(), b"10"), Ordering::Greater);
    }
}
