//! Tells sbx which build it is: `sbx --version` prints the version, the
//! commit and its date, and whether the tree had changes not committed
//! (`sbx 0.1.0 (1a2b3c4d5e6f 2026-12-02, dirty)`), as cargo's and ruff's
//! do. Cache keys and `sbx merge` depend on the exact build, so a report
//! can be traced to it. Outside git (a crate from crates.io, an unpacked
//! source archive) the commit comes from cargo's `.cargo_vcs_info.json`
//! when there is one, else the version stands alone. Git is asked, never
//! required: a build without it still succeeds.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit, its date and the dirty flag from git, when this is a
/// checkout.
fn from_git() -> Option<(String, Option<String>, bool)> {
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let date = git(&["log", "-1", "--format=%cs", "HEAD"]).filter(|d| !d.is_empty());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    // Rebuilt when HEAD moves, the index changes or a source file does.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        for file in ["HEAD", "index"] {
            let path = Path::new(&dir).join(file);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    if let Some(dir) = git(&["rev-parse", "--git-common-dir"]) {
        let refs = Path::new(&dir).join("refs");
        if refs.exists() {
            println!("cargo:rerun-if-changed={}", refs.display());
        }
    }
    for path in ["src", "crates", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={path}");
    }
    Some((commit, date, dirty))
}

/// The commit cargo recorded when it packaged this crate.
fn from_cargo_vcs_info() -> Option<(String, Option<String>, bool)> {
    println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
    let text = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + 6..];
    let start = rest.find('"')? + 1;
    let len = rest[start..].find('"')?;
    let sha: String = rest[start..start + len].chars().take(12).collect();
    let dirty = text.contains("\"dirty\": true") || text.contains("\"dirty\":true");
    Some((sha, None, dirty))
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let inside_git = Path::new(".git").exists();
    let found = if inside_git {
        from_git()
    } else {
        from_cargo_vcs_info()
    };
    let long = match found {
        Some((commit, date, dirty)) => {
            let mut said = commit;
            if let Some(date) = date {
                said.push(' ');
                said.push_str(&date);
            }
            if dirty {
                said.push_str(", dirty");
            }
            format!("{version} ({said})")
        }
        None => version.to_string(),
    };
    println!("cargo:rustc-env=SBX_LONG_VERSION={long}");
}
