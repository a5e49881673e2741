//! The man pages in `docs/man/` are generated from the clap definition
//! (`sbx::cli::Cli`) by clap_mangen, one page per visible (sub)command, so
//! options are documented in one place. This test fails when a committed
//! page differs from what the definition renders; `SBX_BLESS=1 cargo test
//! --test quick manpage::` rewrites them.

use std::fs;
use std::path::PathBuf;

use clap::CommandFactory;
use clap_mangen::Man;

/// Every page, as clap_mangen's `generate_to` names them, in memory: the
/// title, NAME, OPTIONS, SUBCOMMANDS and VERSION rendered by clap_mangen;
/// SYNOPSIS with each option's value (`--tasks FILE`); DESCRIPTION, EXIT
/// STATUS, ENVIRONMENT, FILES and EXAMPLES from `sbx::manual`, the source
/// the README's exit-code table is made from too.
fn pages() -> Vec<(String, Vec<u8>)> {
    fn collect(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            collect(sub, out);
        }
        let man = Man::new(cmd.clone());
        let name = man.get_filename();
        let command = name.trim_end_matches(".1").to_string();
        let mut page = Vec::new();
        let w = &mut page;
        man.render_title(w).expect("in memory");
        man.render_name_section(w).expect("in memory");
        synopsis(&cmd, &command, w);
        manual_sections(&command, w);
        if cmd.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(w).expect("in memory");
        }
        if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
            man.render_subcommands_section(w).expect("in memory");
        }
        man.render_version_section(w).expect("in memory");
        out.push((name, once_preamble(&page)));
    }
    // The pages name the release, not the commit a build came from.
    let mut cmd = sbx::cli::Cli::command()
        .disable_help_subcommand(true)
        .version(env!("CARGO_PKG_VERSION"));
    cmd.build();
    let mut out = Vec::new();
    collect(cmd, &mut out);
    out.sort();
    out
}

/// The page with roff's preamble (the `Aq` string) once, at its top:
/// each section rendered apart brings its own.
fn once_preamble(page: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let preamble = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let rest = text.replacen(preamble, "", usize::MAX);
    format!("{preamble}{rest}").into_bytes()
}

/// SYNOPSIS: the command, then each option with its value, as `--tasks
/// FILE` (clap_mangen gives the flags alone), then the positionals.
fn synopsis(cmd: &clap::Command, command: &str, w: &mut Vec<u8>) {
    use clap_mangen::roff::{bold, italic, roman, Roff};
    let mut line = vec![bold(command.replace('-', " ")), roman(" ")];
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let takes = arg.get_action().takes_values();
        let values = arg
            .get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
        let flag = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => {
                let (open, close) = if arg.is_required_set() {
                    ("", "")
                } else {
                    ("[", "]")
                };
                line.push(roman(open));
                line.push(italic(values));
                line.push(roman(close));
                line.push(roman(" "));
                continue;
            }
        };
        let (open, close) = if arg.is_required_set() {
            ("", "")
        } else {
            ("[", "]")
        };
        line.push(roman(open));
        line.push(bold(flag));
        if takes {
            line.push(roman(" "));
            line.push(italic(values));
        }
        line.push(roman(close));
        if matches!(arg.get_action(), clap::ArgAction::Append) {
            line.push(roman("..."));
        }
        line.push(roman(" "));
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        line.push(italic("COMMAND"));
    }
    let mut roff = Roff::default();
    roff.control("SH", ["SYNOPSIS"]);
    roff.text(line);
    roff.to_writer(w).expect("in memory");
}

/// DESCRIPTION, EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES from
/// `sbx::manual`.
fn manual_sections(command: &str, w: &mut Vec<u8>) {
    use clap_mangen::roff::{bold, roman, Roff};
    let page = sbx::manual::page(command);
    let mut roff = Roff::default();
    roff.control("SH", ["DESCRIPTION"]);
    roff.text([roman(page.description)]);
    let mut table = |title: &str, rows: Vec<(String, String)>| {
        if rows.is_empty() {
            return;
        }
        roff.control("SH", [title]);
        for (key, what) in rows {
            if key.is_empty() {
                roff.text([roman(what)]);
                continue;
            }
            roff.control("TP", []);
            roff.text([bold(key)]);
            roff.text([roman(what)]);
        }
    };
    table("EXIT STATUS", sbx::manual::exit_status(command));
    let pairs = |list: &[(&str, &str)]| {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    table("ENVIRONMENT", pairs(page.environment));
    table("FILES", pairs(page.files));
    table("EXAMPLES", pairs(page.examples));
    roff.to_writer(w).expect("in memory");
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/man")
}

#[test]
fn committed_man_pages_match_the_clap_definition() {
    let pages = pages();
    assert!(pages.iter().any(|(name, _)| name == "sbx.1"), "{pages:?}");
    if std::env::var_os("SBX_BLESS").is_some() {
        fs::create_dir_all(dir()).expect("create docs/man");
        for (name, page) in &pages {
            fs::write(dir().join(name), page).expect("write a man page");
        }
    }
    let mut stale = Vec::new();
    for (name, page) in &pages {
        match fs::read(dir().join(name)) {
            Ok(committed) if &committed == page => {}
            Ok(_) => stale.push(format!("{name}: differs")),
            Err(e) => stale.push(format!("{name}: {e}")),
        }
    }
    let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    for entry in fs::read_dir(dir()).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !names.contains(&name.as_str()) {
            stale.push(format!("{name}: no such (sub)command"));
        }
    }
    assert!(
        stale.is_empty(),
        "docs/man is out of date (run `SBX_BLESS=1 cargo test --test quick manpage::`):\n{}",
        stale.join("\n")
    );
}

/// The README's exit-code table is the one the man pages' EXIT STATUS
/// sections are made from (`sbx::manual`), so the two cannot disagree.
#[test]
fn readme_exit_codes_are_the_manual_s() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = fs::read_to_string(&path).expect("README");
    let start_mark = "<!-- exit codes: generated from src/manual.rs by tests/quick/manpage.rs (SBX_BLESS=1 rewrites) -->\n";
    let end_mark = "<!-- end of exit codes -->";
    let start = readme
        .find(start_mark)
        .expect("the README marks its exit-code table")
        + start_mark.len();
    let end = start + readme[start..].find(end_mark).expect("its end");
    let table = sbx::manual::exit_table_markdown();
    if std::env::var_os("SBX_BLESS").is_some() {
        let text = format!("{}{table}{}", &readme[..start], &readme[end..]);
        fs::write(&path, text).expect("write README");
        return;
    }
    assert_eq!(
        &readme[start..end],
        table,
        "README's exit codes differ from src/manual.rs (SBX_BLESS=1 cargo test --test quick manpage::)"
    );
}

/// Every page has the sections a CI user looks for, and DESCRIPTION never
/// repeats NAME.
#[test]
fn pages_have_exit_status_environment_files_examples() {
    for (name, page) in pages() {
        let text = String::from_utf8(page).expect("UTF-8");
        for section in ["SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "EXAMPLES"] {
            assert!(
                text.contains(&format!(".SH \"{section}\""))
                    || text.contains(&format!(".SH {section}\n")),
                "{name}: no {section}\n{text}"
            );
        }
        let section = |title: &str| {
            let at = text
                .find(&format!(".SH {title}\n"))
                .unwrap_or_else(|| panic!("{name}: {title}"));
            let rest = &text[at + title.len() + 5..];
            rest[..rest.find(".SH").unwrap_or(rest.len())]
                .trim()
                .to_string()
        };
        let name_line = section("NAME");
        let summary = name_line.split(" \\- ").nth(1).unwrap_or_default();
        assert!(
            !section("DESCRIPTION").contains(summary),
            "{name}: DESCRIPTION repeats NAME"
        );
    }
    let eval = pages()
        .into_iter()
        .find(|(n, _)| n == "sbx-eval.1")
        .expect("sbx-eval.1")
        .1;
    let eval = String::from_utf8(eval).expect("UTF-8");
    // SYNOPSIS names each option's value.
    assert!(
        eval.contains("[\\fB\\-\\-tasks\\fR \\fIFILE\\fR]"),
        "{eval}"
    );
    assert!(
        eval.contains("NO_COLOR") && eval.contains("SAMPLES_results.jsonl"),
        "{eval}"
    );
}
