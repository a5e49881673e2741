//! The docs' performance figures are measured ones. `docs/benchmarks.md`
//! is the record of `scripts/bench.sh` runs (each section says the command
//! and the date); every other page (README.md, docs/**) may only quote it:
//! - each ratio (`x0.91`, `x13.5`) must appear in docs/benchmarks.md;
//! - no page says "N times" faster or slower (a ratio is written `xN`, so
//!   that the rule above can check it);
//! - the README's Performance section: each duration (`1.9 s`) must be a
//!   duration of docs/benchmarks.md, rounded as written.
//!
//! A figure that changes in the record must change where it is quoted.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/**/*.md but the record itself.
fn pages() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("docs/") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md")
                && !path.ends_with("docs/benchmarks.md")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn record() -> String {
    fs::read_to_string(root().join("docs/benchmarks.md")).expect("docs/benchmarks.md")
}

fn name(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Words of the `xN` form that are not ratios.
const ARCHITECTURES: [&str; 2] = ["x86", "x32"];

#[test]
fn every_ratio_in_the_docs_is_in_the_benchmark_record() {
    let record = record();
    let ratio = regex::Regex::new(r"(?:^|[\s(])(x\d+(?:\.\d+)?)\b").expect("regex");
    let times = regex::Regex::new(r"\b\d+(?:\.\d+)? times\b").expect("regex");
    let mut unsourced = Vec::new();
    for page in pages() {
        let text = fs::read_to_string(&page).expect("read");
        for (n, line) in text.lines().enumerate() {
            for caps in ratio.captures_iter(line) {
                let figure = &caps[1];
                // The names of an architecture (x86-64) and an ABI (x32),
                // not ratios.
                if ARCHITECTURES.contains(&figure) {
                    continue;
                }
                let cited = regex::Regex::new(&format!(r"\b{}\b", regex::escape(figure)))
                    .expect("regex")
                    .is_match(&record);
                if !cited {
                    unsourced.push(format!(
                        "{}:{}: {figure} is not in docs/benchmarks.md",
                        name(&page),
                        n + 1
                    ));
                }
            }
            for m in times.find_iter(line) {
                unsourced.push(format!(
                    "{}:{}: `{}`: write a measured ratio (xN from docs/benchmarks.md)",
                    name(&page),
                    n + 1,
                    m.as_str()
                ));
            }
        }
    }
    assert!(
        unsourced.is_empty(),
        "figures without a source:\n{}",
        unsourced.join("\n")
    );
}

#[test]
fn the_readme_s_durations_are_the_record_s() {
    let record = record();
    let duration = regex::Regex::new(r"\b(\d+(?:\.\d+)?) s\b").expect("regex");
    let measured: Vec<f64> = duration
        .captures_iter(&record)
        .filter_map(|c| c[1].parse().ok())
        .collect();
    let readme = fs::read_to_string(root().join("README.md")).expect("README");
    let start = readme
        .find("\n## Performance")
        .expect("a Performance section");
    let section = &readme[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |i| i + 1)];
    let mut unsourced = Vec::new();
    for caps in duration.captures_iter(section) {
        let said = &caps[1];
        let decimals = said.split_once('.').map_or(0, |(_, d)| d.len());
        let found = measured.iter().any(|m| format!("{m:.decimals$}") == said);
        if !found {
            unsourced.push(format!(
                "README Performance: {said} s is no duration of docs/benchmarks.md"
            ));
        }
    }
    assert!(unsourced.is_empty(), "{}", unsourced.join("\n"));
}
