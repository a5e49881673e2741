//! The nearest of some known names to one that matched none (an unknown
//! task field, a `--only` id, a misnamed candidate), for a "did you mean"
//! hint. Pure.

/// The known name nearest to `name` by edit distance (case-insensitive),
/// if one is near enough to be a slip: at most a third of the longer name's
/// characters, and at least one character in common.
pub(crate) fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .into_iter()
        .map(|k| (distance(&lower, &k.to_lowercase()), k))
        .filter(|(d, k)| {
            let longest = name.chars().count().max(k.chars().count());
            *d < longest && *d * 3 <= longest.max(3)
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance in characters.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("helo", "hello"), 1);
        assert_eq!(distance("timout", "timeout"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn slips_are_found_and_strangers_are_not() {
        let fields = ["id", "stdin", "expect", "timeout", "image"];
        assert_eq!(nearest("timout", fields), Some("timeout"));
        assert_eq!(nearest("Expected", fields), Some("expect"));
        assert_eq!(nearest("stdn", fields), Some("stdin"));
        assert_eq!(nearest("extra", fields), None);
        assert_eq!(nearest("zz", fields), None);
        assert_eq!(
            nearest("HumanEval/1", ["HumanEval/0", "HumanEval/10"]),
            Some("HumanEval/0")
        );
    }
}
