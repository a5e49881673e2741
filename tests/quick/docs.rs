//! Every link in README.md, CHANGELOG.md and docs/**/*.md points somewhere:
//! a relative link names a file or folder that exists, and a `#anchor`
//! names a heading of its target (GitHub's slug rules: lowercased,
//! punctuation but `-` and `_` dropped, spaces to `-`, repeats suffixed
//! `-1`, `-2`). No network: `http(s):` and `mailto:` links are not followed.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files whose links are checked.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("docs/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines outside fenced code blocks, with their numbers (1-based).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if !fence {
            out.push((i + 1, line));
        }
    }
    out
}

/// A line without its inline code spans (a `[x](y)` inside backticks is not
/// a link).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links `[text](target)` of a text, with their
/// line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (number, line) in prose(text) {
        let line = without_code(line);
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            out.push((number, target.to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a Markdown text.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for (_, line) in prose(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// What is wrong with the links of one file (`doc`, whose text is `text`).
fn broken(doc: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (line, target) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (target.as_str(), None),
        };
        let path = if file.is_empty() {
            doc.to_path_buf()
        } else {
            doc.parent().expect("a file has a folder").join(file)
        };
        let at = format!("{}:{line}: `{target}`", doc.display());
        if file.starts_with('/') || !path.exists() {
            problems.push(format!("{at}: no such file"));
            continue;
        }
        if let Some(anchor) = anchor {
            let heads = if file.is_empty() {
                Ok(anchors(text))
            } else {
                fs::read_to_string(&path).map(|t| anchors(&t))
            };
            if !heads.is_ok_and(|h| h.contains(anchor)) {
                problems.push(format!("{at}: no heading with that anchor"));
            }
        }
    }
    problems
}

#[test]
fn every_link_resolves() {
    let mut problems = Vec::new();
    for doc in documents() {
        let text = fs::read_to_string(&doc).expect("a readable Markdown file");
        problems.extend(broken(&doc, &text));
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_sees_what_is_broken() {
    let doc = root().join("README.md");
    let text = "# Top\n\n## Two words\n\n## Two words\n\n\
                [a](#top) [b](#two-words-1) [c](docs/SUMMARY.md) [d](https://x.invalid/)\n\
                `[e](nowhere.md)`\n```\n[f](nowhere.md)\n```\n\
                [g](nowhere.md) [h](#missing) [i](docs/SUMMARY.md#nothing-here)\n";
    let found = broken(&doc, text);
    assert_eq!(found.len(), 3, "{found:#?}");
    for target in ["nowhere.md", "#missing", "#nothing-here"] {
        assert!(
            found.iter().any(|p| p.contains(target)),
            "{target}: {found:#?}"
        );
    }
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("sbx.toml"), "sbxtoml");
    assert_eq!(slug("Isolation (`--isolate`)"), "isolation---isolate");
    assert_eq!(
        slug("Partitions and `sbx merge`"),
        "partitions-and-sbx-merge"
    );
    assert_eq!(slug("sbx doctor, gc and diff"), "sbx-doctor-gc-and-diff");
}
