//! The reference a user reads from the binary itself: `--help` grouped
//! under headings with `-h` kept short, and `--version` naming the build
//! (the commit, its date, whether the tree was dirty).

use std::process::Command;

fn sbx(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(args)
        .output()
        .expect("run sbx");
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn eval_help_is_grouped_under_headings_and_h_is_short() {
    let long = sbx(&["eval", "--help"]);
    let headings: Vec<&str> = long
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    assert_eq!(
        headings,
        [
            "Options:",
            "Inputs:",
            "Judging:",
            "Limits:",
            "Output:",
            "Engines:",
            "Isolation:"
        ],
        "{long}"
    );
    // Each option sits under its heading.
    let under = |heading: &str, flag: &str| {
        let at = long.find(&format!("\n{heading}:\n")).expect(heading);
        let rest = &long[at + heading.len() + 3..];
        let end = rest
            .lines()
            .take_while(|l| l.is_empty() || l.starts_with(' '))
            .map(|l| l.len() + 1)
            .sum::<usize>();
        rest[..end.min(rest.len())].contains(flag)
    };
    assert!(under("Inputs", "--samples <FILE>"), "{long}");
    assert!(under("Judging", "--min-pass-at <K=X>"), "{long}");
    assert!(under("Limits", "--memory <SIZE>"), "{long}");
    assert!(under("Isolation", "--isolate <ISOLATE>"), "{long}");
    assert!(under("Output", "--junit <FILE>"), "{long}");
    assert!(under("Engines", "--engine <ENGINE[,jobs=N]>"), "{long}");
    let short = sbx(&["eval", "-h"]);
    assert!(
        short.lines().count() * 2 < long.lines().count(),
        "-h stays short: {} lines against {}",
        short.lines().count(),
        long.lines().count()
    );
    assert!(short.contains("\nInputs:\n"), "{short}");
}

#[test]
fn version_names_the_commit_and_whether_the_tree_was_dirty() {
    let said = sbx(&["--version"]);
    let re = regex::Regex::new(
        r"^sbx (\d+\.\d+\.\d+) \(([0-9a-f]{12}) (\d{4}-\d{2}-\d{2})(, dirty)?\)\n$",
    )
    .expect("regex");
    let caps = re
        .captures(&said)
        .unwrap_or_else(|| panic!("built in a git checkout: {said:?}"));
    assert_eq!(&caps[1], env!("CARGO_PKG_VERSION"));
    // The commit is this checkout's HEAD.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git");
    assert_eq!(String::from_utf8_lossy(&head.stdout).trim(), &caps[2]);
    // Every subcommand says the same.
    assert_eq!(
        sbx(&["eval", "--version"]),
        said.replacen("sbx ", "sbx-eval ", 1)
    );
}
