//! The man pages in `docs/man/` are generated from the clap definition
//! (`sbx::cli::Cli`) by clap_mangen, one page per visible (sub)command, so
//! options are documented in one place. This test fails when a committed
//! page differs from what the definition renders; `SBX_BLESS=1 cargo test
//! --test manpage` rewrites them.

use std::fs;
use std::path::PathBuf;

use clap::CommandFactory;
use clap_mangen::Man;

/// Every page, as clap_mangen's `generate_to` names and renders them, in
/// memory.
fn pages() -> Vec<(String, Vec<u8>)> {
    fn collect(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            collect(sub, out);
        }
        let man = Man::new(cmd);
        let mut page = Vec::new();
        man.render(&mut page)
            .expect("rendering into memory cannot fail");
        out.push((man.get_filename(), page));
    }
    let mut cmd = sbx::cli::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    collect(cmd, &mut out);
    out.sort();
    out
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
        "docs/man is out of date (run `SBX_BLESS=1 cargo test --test manpage`):\n{}",
        stale.join("\n")
    );
}
