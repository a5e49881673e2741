//! The layering of `src/` stays true: every module imports only from the
//! layers below it (the order `LAYERS` writes, once), and the files of one
//! folder import each other without a cycle. Read from the source text:
//! every `crate::NAME` and `super::NAME` path outside comments.
//!
//! The in-container runner is a crate of its own (crates/sbx-runner), the
//! trust boundary: sbx reaches it only through its public face, from the
//! `runner` layer up, the crate's manifest names nothing of sbx, and its
//! modules import each other without a cycle.
//!
//! The folders of `src/eval/` are the steps of an eval, in the order it
//! runs (`EVAL_FOLDERS`): each imports only from the steps before it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, bottom first, each rank with what it
/// owns: the one place the layer order is written. `src/lib.rs` points
/// here, and the layer map of docs/contributing.md is rendered from it
/// (`the_layer_map_is_rendered_from_layers`; `SBX_BLESS=1 cargo test
/// --test quick layers::` rewrites it). A module may import from the ranks before
/// its own, never from its own rank's others or from later ones. A new
/// module must be placed here.
const LAYERS: &[(&[&str], &str)] = &[
    (
        &["exit", "signals", "limits", "escape", "manual"],
        "exit codes, the signals sbx handles, the open-file limit, outside text made safe for a terminal, the manual's text (exit codes, environment, files, examples) that the man pages and the README share",
    ),
    (&["error"], "the one error enum, each variant with its context"),
    (&["console"], "sbx's own stdout and stderr, which never panic"),
    (
        &["files"],
        "private directories, bounded reads, files written whole",
    ),
    (
        &["spec"],
        "validated values and the command line's plain choices (`spec/languages.rs`, `spec/partition.rs`)",
    ),
    (&["cli"], "clap types, no I/O"),
    (
        &["sbx_toml"],
        "option defaults from `sbx.toml`, spliced into the command line",
    ),
    (
        &["docker"],
        "`argv` (pure argument vectors), `process` (the only place that spawns, waits, kills and drains), `control` and `events` (short commands and the engine's record, read from one event stream per engine)",
    ),
    (
        &["runner"],
        "the host's session with the in-container runner; the runner itself (sbx as a container's PID 1, its reset, the framed protocol both sides speak) is the crate [`crates/sbx-runner`](../crates/sbx-runner/src/lib.rs), which depends on nothing of sbx and whose modules import each other without a cycle (`tests/quick/layers.rs` checks both)",
    ),
    (
        &["session"],
        "run id, run lock, staged candidates, one container run",
    ),
    (
        &["engines"],
        "which engines, their set-up, baking, cleaning",
    ),
    (&["verdict"], "a run's output and outcome to a verdict"),
    (
        &["report"],
        "results as JSON, text, JUnit, summary; pass@k; merge",
    ),
    (
        &["diff"],
        "two reports compared (`sbx diff`): `parse`, `stats` (McNemar, the sign-flip test), `compare` (the gate), `text`, `json`",
    ),
    (
        &["eval"],
        "an eval's steps, one folder each in the order an eval runs (`EVAL_FOLDERS`): input, sealed, humaneval, livecodebench, plan, judge, run",
    ),
    (
        &["requests"],
        "the command line's arguments to validated requests",
    ),
    (
        &["cmd"],
        "the subcommands: `run`, `eval`, `doctor`, `gc`, `diff`, `merge`",
    ),
    (
        &["lib"],
        "the crate root: dispatches to `cmd`, or, for the hidden `__runner`, to `sbx_runner`",
    ),
];

/// The folders of `src/eval/`, in the order an eval runs, first first
/// (`eval/mod.rs` says why): a file imports from its own folder and from
/// the folders before it, never from a later one.
const EVAL_FOLDERS: &[&str] = &[
    "input",
    "sealed",
    "humaneval",
    "livecodebench",
    "plan",
    "judge",
    "run",
];

/// The runner crate's public face: the only names `src/` may use after
/// `sbx_runner::`. Its pid1, reset, posture, shebang and zygote stay inside it;
/// `supervise` is there for the line its case-mode supervisor ends with,
/// which the host reads as it reads the protocol; `LIVECODEBENCH_BLOCK`
/// for the import block its zygote runs once, which LiveCodeBench's
/// harnesses include.
const RUNNER_FACE: &[&str] = &[
    "LIVECODEBENCH_BLOCK",
    "protocol",
    "supervise",
    "exit",
    "main",
    "SUBCOMMAND",
    "PROBE",
    "MAX_OUTPUT",
    "NO_ZYGOTE",
    "CONTROL",
    "VERSION",
];

/// The lowest layer that may use the runner crate.
const RUNNER_LAYER: &str = "runner";

fn rank(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(modules, _)| modules.contains(&module))
}

/// The layer map as docs/contributing.md shows it: one row per rank,
/// bottom first.
fn layer_map() -> String {
    let mut table = String::from("| layer | what it owns |\n|---|---|\n");
    for (modules, owns) in LAYERS {
        let names: Vec<String> = modules.iter().map(|m| format!("`{m}`")).collect();
        table.push_str(&format!("| {} | {owns} |\n", names.join(", ")));
    }
    table
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without `//` comments (doc comments included: they may name
/// other modules in prose).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // `//` inside a string such as "unix://" is kept.
            Some(i) if line[..i].matches('"').count() % 2 == 0 => &line[..i],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first name after each `prefix` in `code`, braces opened:
/// `crate::a::b` and `crate::{a, b::c}` give `a` (and `b`).
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    names.push(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

/// A file's place: its top-level module, the folder it sits in (`a` for
/// `a/x.rs`, `a/b` for `a/b/x.rs`) and its own name there (`None` for a
/// top-level file or `src/a/mod.rs`). `a/b/mod.rs` is file `b` of folder
/// `a`, whose siblings are the files of `a/b/`.
fn place(src: &Path, file: &Path) -> (String, Option<(String, String)>) {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    match parts.as_slice() {
        [top] => (top.clone(), None),
        [folder, name] if name == "mod" => (folder.clone(), None),
        [folder, name] => (folder.clone(), Some((folder.clone(), name.clone()))),
        [top, sub, name] if name == "mod" => (top.clone(), Some((top.clone(), sub.clone()))),
        [top, sub, name] => (top.clone(), Some((format!("{top}/{sub}"), name.clone()))),
        _ => panic!(
            "{}: a folder deeper than two levels; extend this test",
            rel.display()
        ),
    }
}

/// Every upward or sideways import between top-level modules, and every
/// cycle between the files of one folder.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    // folder -> file -> siblings it imports
    let mut siblings: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let (module, within_folder) = place(src, file);
        if module == "main" {
            continue;
        }
        let Some(mine) = rank(&module) else {
            problems.push(format!(
                "{}: module `{module}` has no place in LAYERS",
                file.display()
            ));
            continue;
        };
        let code = code_of(&fs::read_to_string(file).expect("a readable source file"));
        if code.contains("super::super") {
            problems.push(format!(
                "{}: `super::super` leaves its module",
                file.display()
            ));
        }
        let mut used_siblings = BTreeSet::new();
        for target in names_after(&code, "crate::") {
            if target == module {
                continue;
            }
            match rank(&target) {
                Some(theirs) if theirs < mine => {}
                Some(_) => problems.push(format!(
                    "{}: `{module}` imports `crate::{target}`, which is not below it",
                    file.display()
                )),
                None => problems.push(format!(
                    "{}: imports `crate::{target}`, which has no place in LAYERS",
                    file.display()
                )),
            }
        }
        for name in names_after(&code, "sbx_runner::") {
            if rank(RUNNER_LAYER).is_some_and(|runner| mine < runner) {
                problems.push(format!(
                    "{}: `{module}` uses the runner crate, which is not below it",
                    file.display()
                ));
            }
            if !RUNNER_FACE.contains(&name.as_str()) {
                problems.push(format!(
                    "{}: uses `sbx_runner::{name}`, which is not the runner crate's public face",
                    file.display()
                ));
            }
        }
        if let Some((folder, own)) = &within_folder {
            let within = format!("crate::{}::", folder.replace('/', "::"));
            for name in names_after(&code, &within)
                .into_iter()
                .chain(names_after(&code, "super::"))
            {
                if &name != own && name != "*" && !name.is_empty() {
                    used_siblings.insert(name);
                }
            }
            siblings
                .entry(folder.clone())
                .or_default()
                .insert(own.clone(), used_siblings);
        }
    }
    for (folder, graph) in &siblings {
        problems.extend(cycles(graph, &format!("src/{folder}/")));
    }
    problems.sort();
    problems.dedup();
    problems
}

/// Every import cycle of `graph` (module -> the modules it imports),
/// reported once from each module on it, as "`place`: import cycle a -> b
/// -> a".
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>, place: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for start in graph.keys() {
        // Depth-first from `start`: reaching it again is a cycle.
        let mut stack: Vec<Vec<String>> = vec![vec![start.clone()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = path.last().expect("a non-empty path");
            for next in graph.get(last).into_iter().flatten() {
                if next == start {
                    problems.push(format!(
                        "{place}: import cycle {} -> {start}",
                        path.join(" -> ")
                    ));
                } else if graph.contains_key(next) && seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push(longer);
                }
            }
        }
    }
    problems
}

/// Every import cycle between the modules of the runner crate, whose
/// `src/` is flat: each file but `lib.rs` is a module, and a module's
/// imports are the `crate::NAME` and `super::NAME` paths (`super` of a
/// top-level file is the crate root) that name another module. The
/// crate's modules have no layer order of their own; `lib.rs`, the root,
/// may name them all.
fn runner_cycles(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let module_of = |file: &Path| -> Option<String> {
        let rel = file.strip_prefix(src).expect("a file under src/");
        (rel.components().count() == 1)
            .then(|| rel.to_string_lossy().trim_end_matches(".rs").to_string())
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(file) else {
            problems.push(format!(
                "{}: the runner crate has a folder; extend this test",
                file.display()
            ));
            continue;
        };
        if module == "lib" {
            continue;
        }
        let code = code_of(&fs::read_to_string(file).expect("a readable source file"));
        let imports = names_after(&code, "crate::")
            .into_iter()
            .chain(names_after(&code, "super::"))
            .filter(|name| name != &module && modules.contains(name) && name != "lib")
            .collect();
        graph.insert(module, imports);
    }
    problems.extend(cycles(&graph, "crates/sbx-runner/src/"));
    problems.sort();
    problems
}

/// Every import of a file of `src/eval/` from a later folder of
/// `EVAL_FOLDERS`, and every file or folder there that has no place in it.
fn eval_order_problems(src: &Path) -> Vec<String> {
    let eval = src.join("eval");
    let mut files = Vec::new();
    rust_files(&eval, &mut files);
    files.sort();
    let rank = |folder: &str| EVAL_FOLDERS.iter().position(|f| *f == folder);
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&eval).expect("a file under src/eval/");
        let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into()).collect();
        let folder = match parts.as_slice() {
            [name] if name == "mod.rs" => continue,
            [_] => {
                problems.push(format!(
                    "{}: a file of src/eval/ outside its folders",
                    file.display()
                ));
                continue;
            }
            [folder, ..] => folder.clone(),
            [] => continue,
        };
        let Some(mine) = rank(&folder) else {
            problems.push(format!(
                "{}: folder `eval/{folder}` has no place in EVAL_FOLDERS",
                file.display()
            ));
            continue;
        };
        let code = code_of(&fs::read_to_string(file).expect("a readable source file"));
        for target in names_after(&code, "crate::eval::") {
            match rank(&target) {
                Some(theirs) if theirs <= mine => {}
                Some(_) => problems.push(format!(
                    "{}: `eval/{folder}` imports `crate::eval::{target}`, a later step",
                    file.display()
                )),
                None => problems.push(format!(
                    "{}: imports `crate::eval::{target}`, which is no folder of EVAL_FOLDERS",
                    file.display()
                )),
            }
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

/// What is wrong with the runner crate's manifest: a dependency on any sbx
/// crate (by name or by a path out of the crate) or lints not the
/// workspace's (which forbid `unsafe`).
fn runner_manifest_problems(text: &str) -> Vec<String> {
    let manifest: toml::Table = match text.parse() {
        Ok(table) => table,
        Err(e) => return vec![format!("unreadable manifest: {e}")],
    };
    let mut problems = Vec::new();
    let mut tables = vec![&manifest];
    if let Some(toml::Value::Table(targets)) = manifest.get("target") {
        tables.extend(targets.values().filter_map(toml::Value::as_table));
    }
    for table in tables {
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = table.get(section).and_then(toml::Value::as_table) else {
                continue;
            };
            for (name, spec) in deps {
                let package = spec
                    .get("package")
                    .and_then(toml::Value::as_str)
                    .unwrap_or(name);
                if package == "sbx" || package.starts_with("sbx-") || package.starts_with("sbx_") {
                    problems.push(format!("[{section}] names the sbx crate `{package}`"));
                }
                if let Some(path) = spec.get("path").and_then(toml::Value::as_str) {
                    problems.push(format!(
                        "[{section}] `{name}` is a path dependency ({path})"
                    ));
                }
            }
        }
    }
    let workspace_lints = manifest
        .get("lints")
        .and_then(|lints| lints.get("workspace"))
        .and_then(toml::Value::as_bool);
    if workspace_lints != Some(true) {
        problems.push("[lints] is not `workspace = true`".into());
    }
    problems
}

#[test]
fn the_runner_crate_depends_on_nothing_of_sbx() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = fs::read_to_string(root.join("crates/sbx-runner/Cargo.toml"))
        .expect("the runner crate's manifest");
    let problems = runner_manifest_problems(&text);
    assert!(problems.is_empty(), "runner crate: {problems:#?}");
    // The workspace's lints, which the crate takes, forbid `unsafe`.
    let workspace: toml::Table = fs::read_to_string(root.join("Cargo.toml"))
        .expect("the workspace manifest")
        .parse()
        .expect("a valid workspace manifest");
    let unsafe_code = workspace
        .get("workspace")
        .and_then(|w| w.get("lints"))
        .and_then(|l| l.get("rust"))
        .and_then(|r| r.get("unsafe_code"))
        .and_then(toml::Value::as_str);
    assert_eq!(unsafe_code, Some("forbid"));
}

#[test]
fn the_manifest_check_sees_sbx_dependencies() {
    let bad = r#"
[package]
name = "sbx-runner"

[dependencies]
rustix = "1"
sbx = { path = "../.." }
helper = { path = "../helper", package = "sbx-helper" }

[target.'cfg(unix)'.dev-dependencies]
sbx_cli = "0.1"
"#;
    let problems = runner_manifest_problems(bad);
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(has("names the sbx crate `sbx`"), "{problems:#?}");
    assert!(has("names the sbx crate `sbx-helper`"), "{problems:#?}");
    assert!(has("names the sbx crate `sbx_cli`"), "{problems:#?}");
    assert!(has("path dependency (../..)"), "{problems:#?}");
    assert!(has("[lints] is not"), "{problems:#?}");
    assert!(!has("rustix"), "a system-call crate is fine: {problems:#?}");
    assert_eq!(problems.len(), 6, "{problems:#?}");
    let good = "[dependencies]\nrustix.workspace = true\n\n[lints]\nworkspace = true\n";
    assert_eq!(runner_manifest_problems(good), Vec::<String>::new());
}

/// docs/contributing.md shows the order checked here, never one of its
/// own.
#[test]
fn the_layer_map_is_rendered_from_layers() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/contributing.md");
    let doc = fs::read_to_string(&path).expect("docs/contributing.md");
    let start_mark =
        "<!-- layer map: generated from LAYERS in tests/quick/layers.rs (SBX_BLESS=1 rewrites) -->\n";
    let end_mark = "<!-- end of layer map -->";
    let start = doc
        .find(start_mark)
        .expect("docs/contributing.md marks its layer map")
        + start_mark.len();
    let end = start + doc[start..].find(end_mark).expect("its end");
    let table = layer_map();
    if std::env::var_os("SBX_BLESS").is_some() {
        let text = format!("{}{table}{}", &doc[..start], &doc[end..]);
        fs::write(&path, text).expect("write docs/contributing.md");
        return;
    }
    assert_eq!(
        &doc[start..end],
        table,
        "docs/contributing.md's layer map differs from LAYERS (SBX_BLESS=1 cargo test --test quick layers::)"
    );
}

#[test]
fn modules_import_only_from_layers_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = violations(&src);
    assert!(
        problems.is_empty(),
        "layering broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_runner_crate_has_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/sbx-runner/src");
    let problems = runner_cycles(&src);
    assert!(
        problems.is_empty(),
        "runner crate:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_runner_check_sees_cycles() {
    // The checker itself, on a small flat crate: a cycle of three modules
    // through `super::` and `crate::` is reported from each of them; a
    // name that is no module, a test's `super::`, a comment and the
    // crate root are not imports.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    let write = |rel: &str, text: &str| fs::write(src.join(rel), text).expect("a file");
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::main;\n");
    write("a.rs", "use super::b::X;\nuse crate::exit;\n");
    write(
        "b.rs",
        "use crate::{c, VERSION};\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    write("c.rs", "use super::a::Y; // crate::d in a comment\n");
    write("d.rs", "use super::exit;\nuse crate::lib;\n");
    write("exit.rs", "mod tests {\n    use super::parse;\n}\n");
    let problems = runner_cycles(src);
    assert_eq!(
        problems,
        [
            "crates/sbx-runner/src/: import cycle a -> b -> c -> a",
            "crates/sbx-runner/src/: import cycle b -> c -> a -> b",
            "crates/sbx-runner/src/: import cycle c -> a -> b -> c",
        ],
        "{problems:#?}"
    );
    // Without the edge that closes it, nothing is left.
    write("c.rs", "use super::exit;\n");
    assert_eq!(runner_cycles(src), Vec::<String>::new());
    // A folder is more than this check reads.
    fs::create_dir(src.join("sub")).expect("a folder");
    write("sub/e.rs", "");
    assert!(runner_cycles(src)[0].contains("has a folder; extend this test"));
}

#[test]
fn the_check_sees_upward_imports_and_cycles() {
    // The checker itself, on a small tree: an upward import, a module with
    // no layer, and a cycle inside a folder must each be reported.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        fs::write(path, text).expect("a file");
    };
    write("lib.rs", "pub mod spec;\npub mod docker;\n");
    // `spec` is below `docker`: importing it upward is a violation.
    write(
        "spec.rs",
        "use crate::docker::Docker; // crate::cmd in a comment\n",
    );
    write("docker/mod.rs", "pub mod a;\npub mod b;\n");
    write(
        "docker/a.rs",
        "use super::b::X;\nuse crate::{error, spec};\n",
    );
    write("docker/b.rs", "use crate::docker::a::Y;\n");
    // A folder inside a folder: its files' siblings are each other.
    write("cmd/doctor/mod.rs", "mod c;\nmod d;\nuse super::eval;\n");
    write("cmd/doctor/c.rs", "use super::d::X;\n");
    write("cmd/doctor/d.rs", "use crate::cmd::doctor::c::Y;\n");
    write("newthing.rs", "use crate::exit;\n");
    // The runner crate: below its layer, and past its public face.
    write("error.rs", "use sbx_runner::exit::USAGE;\n");
    write(
        "cmd/mod.rs",
        "use sbx_runner::{protocol::Message, SUBCOMMAND};\nuse sbx_runner::reset::Wiper;\n",
    );
    let problems = violations(src);
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(has("`spec` imports `crate::docker`"), "{problems:#?}");
    assert!(has("module `newthing` has no place"), "{problems:#?}");
    assert!(has("import cycle"), "{problems:#?}");
    assert!(
        !has("crate::cmd"),
        "comments are not imports: {problems:#?}"
    );
    assert!(
        !has("crate::error"),
        "a downward import is fine: {problems:#?}"
    );
    assert!(
        has("`error` uses the runner crate, which is not below it"),
        "{problems:#?}"
    );
    assert!(
        has("uses `sbx_runner::reset`, which is not the runner crate's public face"),
        "{problems:#?}"
    );
    assert!(
        !has("sbx_runner::protocol") && !has("sbx_runner::SUBCOMMAND") && !has("sbx_runner::exit"),
        "the public face, from the runner layer up, is fine: {problems:#?}"
    );
    assert!(has("src/cmd/doctor/: import cycle"), "{problems:#?}");
    // Each cycle is reported once from each of its two files.
    assert_eq!(problems.len(), 8, "{problems:#?}");
}

#[test]
fn eval_folders_import_only_from_the_steps_before() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = eval_order_problems(&src);
    assert!(
        problems.is_empty(),
        "eval/ out of order:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_eval_check_sees_later_steps_and_strays() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        fs::write(path, text).expect("a file");
    };
    write("eval/mod.rs", "pub mod input;\npub mod plan;\n");
    write("eval/input/mod.rs", "pub mod tasks;\n");
    // `input` runs before `plan`: importing it is a violation.
    write(
        "eval/input/tasks.rs",
        "use crate::eval::plan::units::Unit; // crate::eval::run in a comment\nuse super::nearest;\n",
    );
    write(
        "eval/plan/units.rs",
        "use crate::eval::input::tasks::Task;\nuse crate::eval::{input, sealed};\nuse crate::eval::plan::partition;\n",
    );
    write("eval/stray.rs", "");
    write("eval/extra/x.rs", "use crate::eval::input::tasks::Task;\n");
    write("eval/run/a.rs", "use crate::eval::nowhere::X;\n");
    let problems = eval_order_problems(src);
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(
        has("`eval/input` imports `crate::eval::plan`, a later step"),
        "{problems:#?}"
    );
    assert!(
        has("a file of src/eval/ outside its folders"),
        "{problems:#?}"
    );
    assert!(has("folder `eval/extra` has no place"), "{problems:#?}");
    assert!(
        has("`crate::eval::nowhere`, which is no folder"),
        "{problems:#?}"
    );
    assert!(
        !has("crate::eval::run"),
        "comments are not imports: {problems:#?}"
    );
    assert!(
        !has("crate::eval::input`") && !has("crate::eval::sealed") && !has("units.rs"),
        "earlier steps and its own folder are fine: {problems:#?}"
    );
    assert_eq!(problems.len(), 4, "{problems:#?}");
}
