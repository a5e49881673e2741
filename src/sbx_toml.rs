//! `sbx.toml`: option defaults read from a file. Its tables are subcommands
//! (`[eval]`, `[run]`, `[doctor]`) and their keys are that subcommand's long
//! option names, read from clap's own definition, so an option added to the
//! command line is a key without further work. The values of the running
//! subcommand's table are spliced into the command line, right after the
//! subcommand's name, for every option that neither the command line nor
//! its environment variable gave; clap then parses the result as it parses
//! any command line, so a value from the file is validated exactly as the
//! same flag would be. Precedence: flags, then environment variables, then
//! the file, then the built-in defaults.
//!
//! Without `--config`, the file is searched as cargo searches for
//! `Cargo.toml`: `./sbx.toml`, then in each parent folder, up to the
//! repository's root (a folder holding `.git`) or the filesystem's root.
//! A found file's relative paths are relative to its own folder. Every
//! found file, wherever it was found, is as untrusted as a candidate: see
//! [`untrusted`].

use std::ffi::OsString;
use std::fs;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};

use clap::error::ContextKind;
use clap::parser::ValueSource;
use clap::{
    Arg, ArgAction, ArgMatches, Command, CommandFactory, FromArgMatches, Parser, ValueHint,
};

use crate::cli::Cli;
use crate::error::{Error, Origin, Result};

/// The file searched for, from the current folder up, when `--config` is
/// not given.
pub(crate) const FILE_NAME: &str = "sbx.toml";

/// The folder whose presence marks a repository's root: the search stops
/// there.
const REPOSITORY_MARK: &str = ".git";

/// The subcommands whose options the file may set: its only tables.
pub(crate) const TABLES: &[&str] = &["eval", "run", "doctor"];

/// The table of language entries (`[languages.EXT]`, see
/// `spec::languages::with_overrides`); not a subcommand's.
pub(crate) const LANGUAGES: &str = "languages";

/// The option that names the file; never a key.
const CONFIG: &str = "config";

/// Keys whose option has a positional twin (`sbx run FILE [IMAGE]
/// [TIMEOUT]`): the positional, when given, wins over the file as the
/// option does. (subcommand, key, id of the positional)
const TWINS: &[(&str, &str, &str)] = &[
    ("run", "image", "image_arg"),
    ("run", "timeout", "timeout_arg"),
];

/// The command line once the file's defaults are in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The whole command line, the file's options after the subcommand.
    pub argv: Vec<OsString>,
    /// The file they came from.
    pub file: PathBuf,
    /// The table (the subcommand's name).
    pub table: String,
    /// The keys whose values were spliced in.
    pub keys: Vec<String>,
}

/// Options that a file sbx found on its own may never set: they run a
/// program on this host or choose where candidates go. (key, why)
const NEVER_FOUND: &[(&str, &str)] = &[
    ("docker", "it names a program sbx would run on this host"),
    (
        "engine",
        "it chooses the engine that candidates are sent to",
    ),
    (
        "security-opt",
        "it replaces the container's confinement profiles",
    ),
    (
        "runtime",
        "it chooses the runtime that confines the container",
    ),
];

/// Limits on the sandbox that a found file may lower, never raise above
/// the built-in default: (subcommand, key, default).
const LIMITS: &[(&str, &str, &str)] = &[
    ("", "memory", crate::spec::DEFAULT_MEMORY),
    ("", "tmpfs-size", crate::spec::DEFAULT_TMPFS_SIZE),
    ("", "cpus", crate::spec::DEFAULT_CPUS),
    ("", "pids-limit", crate::spec::DEFAULT_PIDS_LIMIT),
    ("", "timeout", crate::spec::DEFAULT_TIMEOUT),
    ("eval", "max-output", crate::spec::DEFAULT_MAX_OUTPUT),
    (
        "eval",
        "compile-timeout",
        crate::spec::languages::DEFAULT_COMPILE_TIMEOUT,
    ),
    (
        "eval",
        "compile-memory",
        crate::spec::languages::DEFAULT_COMPILE_MEMORY,
    ),
];

/// The path options sbx only reads. Every other path option (a `PathBuf`
/// in clap: `output`, `junit`, `summary`, `cache`, `samples`, whose results
/// go beside it, and any added later) names something sbx writes: from a
/// found file, inside the file's folder only.
const READ_ONLY_PATHS: &[&str] = &["tasks", "gen", "problems"];

/// A table of the file: its name and its keys' settings, in key order.
type Table = (String, Vec<(String, Setting)>);

/// One key's value, typed by its option's kind.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Setting {
    /// A flag: `true` gives it, `false` leaves it out.
    Flag(bool),
    /// An option's values: one, or several for a repeatable option.
    Values(Vec<String>),
}

/// Why the command line could not be parsed.
#[derive(Debug)]
pub(crate) enum ParseFailure {
    /// clap's own error, usage, `--help` or `--version`: printed as clap
    /// prints it, with clap's exit code.
    Clap(clap::Error),
    /// A bad settings file, or a value from it that clap refused: one line.
    Sbx(Error),
}

/// Parses the command line, with the defaults of the settings file that
/// applies (`--config FILE`, else the `sbx.toml` that [`find`] finds) for
/// `run`, `eval` and `doctor`. A clap error (usage, `--help`, `--version`)
/// is returned as clap gives it; a bad file, or a value from it that clap
/// refuses, as one line naming the file and the key.
pub(crate) fn parse_command_line(
    argv: Vec<OsString>,
) -> std::result::Result<(Cli, Option<Applied>), ParseFailure> {
    let mut matches = Cli::command()
        .try_get_matches_from(&argv)
        .map_err(ParseFailure::Clap)?;
    match apply(&argv, &matches).map_err(ParseFailure::Sbx)? {
        None => Cli::from_arg_matches_mut(&mut matches)
            .map(|cli| (cli, None))
            .map_err(|e| ParseFailure::Clap(e.format(&mut Cli::command()))),
        Some(applied) => match Cli::try_parse_from(&applied.argv) {
            Ok(cli) => {
                // At a terminal, say what the file changed: nobody should
                // run with a setting they have not seen.
                if std::io::stderr().is_terminal() {
                    crate::console::note(&format!(
                        "sbx: options from `{}`: [{}] {}",
                        applied.file.display(),
                        applied.table,
                        applied.keys.join(", ")
                    ));
                }
                Ok((cli, Some(applied)))
            }
            Err(e) => Err(ParseFailure::Sbx(refused(&applied, &e))),
        },
    }
}

/// An invalid option whose value came from the file gets the file and the
/// key named (`invalid --memory `lots`: ...` then says where `lots` was
/// written). Any other error is returned as it is.
pub(crate) fn blame(applied: Option<&Applied>, err: Error) -> Error {
    match (applied, err) {
        (Some(applied), Error::InvalidOption(mut invalid)) => {
            if let Some(key) = applied
                .keys
                .iter()
                .find(|key| key.as_str() == invalid.key())
            {
                invalid.from = Some(Origin {
                    file: applied.file.clone(),
                    table: applied.table.clone(),
                    key: key.clone(),
                });
            }
            Error::InvalidOption(invalid)
        }
        (_, err) => err,
    }
}

/// For `matches` parsed from `argv`: reads the settings file that applies,
/// checks all of it (every table and key, each value's type), and returns
/// the command line with its defaults; `None` when no file applies or it
/// sets nothing the command line did not.
pub(crate) fn apply(argv: &[OsString], matches: &ArgMatches) -> Result<Option<Applied>> {
    let Some((name, sub)) = matches.subcommand() else {
        return Ok(None);
    };
    if !TABLES.contains(&name) {
        return Ok(None);
    }
    // A file named with --config is the user's choice; one found in the
    // current folder or above may be the tree's, as untrusted as a
    // candidate.
    let (file, text, found) = match sub.get_one::<PathBuf>(CONFIG) {
        Some(path) => match fs::read_to_string(path) {
            Ok(text) => (path.clone(), text, false),
            Err(e) => return Err(bad(path, format!("cannot read it: {e}"))),
        },
        None => match find()? {
            Some((path, text)) => (path, text, true),
            None => return Ok(None),
        },
    };
    // A found file's relative paths are relative to its folder (`..` for
    // one found in the parent folder); `--config`'s, to the current
    // folder, as on the command line.
    let base = match (found, file.parent()) {
        (true, Some(parent)) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::new(),
    };
    let mut cli = Cli::command();
    cli.build();
    let tables = check(&file, &text, &cli)?;
    let Some((_, settings)) = tables.into_iter().find(|(table, _)| table == name) else {
        return Ok(None);
    };
    let cmd = cli
        .find_subcommand(name)
        .expect("every table is a subcommand");
    let given = |id: &str| {
        matches!(
            sub.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    let mut options: Vec<OsString> = Vec::new();
    let mut keys = Vec::new();
    for (key, setting) in settings {
        let arg = option(cmd, &key).expect("checked keys are options");
        // An empty positional is not given (the script's `${2:-...}`).
        let twin_given = TWINS.iter().any(|&(s, k, positional)| {
            s == name
                && k == key
                && given(positional)
                && sub
                    .get_one::<String>(positional)
                    .is_some_and(|v| !v.is_empty())
        });
        let conflict_given = cmd
            .get_arg_conflicts_with(arg)
            .iter()
            .any(|other| given(other.get_id().as_str()));
        if given(arg.get_id().as_str()) || twin_given || conflict_given {
            continue;
        }
        let is_path = matches!(
            arg.get_value_hint(),
            ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
        );
        if found {
            if let Some(why) = untrusted(name, &key, &setting, is_path, &base) {
                return Err(bad(
                    &file,
                    format!(
                        "[{name}] {key}: refused from a file sbx found on its own ({why}); to allow it on purpose, name the file with --config {} (or one of your own outside the tree), or give --{key} on the command line",
                        file.display()
                    ),
                ));
            }
        }
        match setting {
            Setting::Flag(true) => options.push(format!("--{key}").into()),
            Setting::Flag(false) => continue,
            Setting::Values(values) => {
                for v in values {
                    let mut option = OsString::from(format!("--{key}="));
                    if is_path && !v.is_empty() && !Path::new(&v).is_absolute() {
                        option.push(base.join(&v));
                    } else {
                        option.push(&v);
                    }
                    options.push(option);
                }
            }
        }
        keys.push(key);
    }
    if options.is_empty() {
        return Ok(None);
    }
    // No option of sbx's own comes before the subcommand, so its name is
    // the first argument that equals it.
    let at = argv
        .iter()
        .skip(1)
        .position(|a| a == name)
        .map(|i| i + 2)
        .expect("the subcommand is on the command line");
    let mut spliced = argv[..at].to_vec();
    spliced.extend(options);
    spliced.extend_from_slice(&argv[at..]);
    Ok(Some(Applied {
        argv: spliced,
        file,
        table: name.to_string(),
        keys,
    }))
}

/// The `sbx.toml` that applies without `--config`: the first of
/// `./sbx.toml`, `../sbx.toml`, ... up to the first folder holding `.git`
/// (the repository's root, whose own `sbx.toml` is still read) or the
/// filesystem's root, as its path from here (`sbx.toml`, `../sbx.toml`)
/// and its text. A file that is there but cannot be read is an error
/// naming it; a parent folder that cannot be searched ends the search.
pub(crate) fn find() -> Result<Option<(PathBuf, String)>> {
    let mut dir = PathBuf::new();
    loop {
        let path = dir.join(FILE_NAME);
        match fs::read_to_string(&path) {
            Ok(text) => return Ok(Some((path, text))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && dir.as_os_str() != "" => {
                return Ok(None)
            }
            Err(e) => return Err(bad(&path, format!("cannot read it: {e}"))),
        }
        let here = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir.as_path()
        };
        if fs::symlink_metadata(here.join(REPOSITORY_MARK)).is_ok() {
            return Ok(None);
        }
        // The filesystem's root is its own parent.
        match fs::canonicalize(here) {
            Ok(real) if real.parent().is_some() => dir.push(".."),
            _ => return Ok(None),
        }
    }
}

/// Why a found file may not set `key` of `[table]` to `setting`, if it
/// may not: the keys of [`NEVER_FOUND`], a network other than `none`,
/// root as the user, a limit above its default, and a written path (a
/// path option not in [`READ_ONLY_PATHS`]) that leaves the file's folder
/// `base` (empty: the current folder). Where the file was found changes
/// nothing else. A value that does not parse is left to the option's own
/// check, which refuses it anyway.
fn untrusted(
    table: &str,
    key: &str,
    setting: &Setting,
    is_path: bool,
    base: &Path,
) -> Option<String> {
    use crate::spec;
    if let Some((_, why)) = NEVER_FOUND.iter().find(|(k, _)| *k == key) {
        return Some((*why).to_string());
    }
    let Setting::Values(values) = setting else {
        return None;
    };
    let value = values.first().map(String::as_str).unwrap_or_default();
    match key {
        "network" if values.iter().any(|v| v != spec::DEFAULT_NETWORK) => {
            return Some("it opens the container's network; only `none` is taken".into())
        }
        "user" if values.iter().any(|v| is_root(v)) => {
            return Some("it runs the program as root (uid or gid 0)".into())
        }
        "jobs"
            if value
                .parse::<usize>()
                .is_ok_and(|n| n > spec::default_jobs()) =>
        {
            return Some(format!(
                "it raises the number of containers at once above the default, {}",
                spec::default_jobs()
            ))
        }
        _ => {}
    }
    if let Some((_, _, default)) = LIMITS
        .iter()
        .find(|(t, k, _)| *k == key && (t.is_empty() || *t == table))
    {
        if above(key, value, default) {
            return Some(format!(
                "it raises a limit of the sandbox above its default, {default}"
            ));
        }
    }
    if is_path && !READ_ONLY_PATHS.contains(&key) {
        let path = Path::new(value);
        let mut why = outside(base, path);
        if why.is_none() && key == "samples" {
            let mut results = path.as_os_str().to_owned();
            results.push("_results.jsonl");
            why = outside(base, Path::new(&results));
        }
        return why.map(|why| format!("it writes {why}"));
    }
    None
}

/// Whether `USER[:GROUP]` names uid or gid 0.
fn is_root(user: &str) -> bool {
    user.split(':')
        .any(|id| !id.is_empty() && id.bytes().all(|b| b == b'0'))
}

/// Whether `value` of the limit `key` is above `default` (no limit at all
/// included); `false` when it does not parse.
fn above(key: &str, value: &str, default: &str) -> bool {
    use crate::spec;
    match key {
        "memory" | "tmpfs-size" | "compile-memory" => {
            spec::parse_size(key, value).is_ok()
                && spec::size_in_bytes(value) > spec::size_in_bytes(default)
        }
        "cpus" => match (value.parse::<f64>(), default.parse::<f64>()) {
            (Ok(v), Ok(d)) => v > d,
            _ => false,
        },
        "pids-limit" => match (value.parse::<u64>(), default.parse::<u64>()) {
            (Ok(v), Ok(d)) => v > d,
            _ => false,
        },
        "max-output" => match (
            spec::parse_bytes(key, value),
            spec::parse_bytes(key, default),
        ) {
            (Ok(v), Ok(d)) => v > d,
            _ => false,
        },
        // Timeouts as `sbx run` reads them: `0` and `inf` are no limit.
        _ => match (
            spec::parse_gnu_timeout(value),
            spec::parse_gnu_timeout(default),
        ) {
            (Ok(None), _) => true,
            (Ok(Some(v)), Ok(Some(d))) => v > d,
            _ => false,
        },
    }
}

/// Where a path written from a found file would leave the file's folder
/// `base` (empty: the current folder): an absolute path, a `..`, or a
/// symlink on the way (the file itself included), each read now.
fn outside(base: &Path, path: &Path) -> Option<String> {
    use std::path::Component;
    let shown = crate::console::quote(&path.to_string_lossy());
    if path.as_os_str().is_empty() {
        return None;
    }
    let mut walked = base.to_path_buf();
    for part in path.components() {
        match part {
            Component::Normal(name) => walked.push(name),
            Component::CurDir => continue,
            Component::ParentDir => return Some(format!("outside its folder ({shown} has `..`)")),
            Component::RootDir | Component::Prefix(_) => {
                return Some(format!("outside its folder ({shown} is absolute)"))
            }
        }
        match fs::symlink_metadata(&walked) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Some(format!(
                    "through a symlink (`{}`), which may lead outside its folder",
                    walked.display()
                ))
            }
            Ok(_) => {}
            // Not there yet: nothing below it can be a symlink now.
            Err(_) => break,
        }
    }
    None
}

/// Checks the whole file against the command line's definition: every
/// table a subcommand that takes settings, every key one of its long
/// options, every value of the option's kind. Its tables, in file order.
fn check(file: &Path, text: &str, cli: &Command) -> Result<Vec<Table>> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|span| format!("line {}: ", text[..span.start].matches('\n').count() + 1))
            .unwrap_or_default();
        bad(
            file,
            format!("not valid TOML: {line}{}", e.message().trim()),
        )
    })?;
    let mut tables = Vec::new();
    for (name, value) in doc {
        if name == LANGUAGES {
            // Checked here (and installed for this process): the language
            // table is every subcommand's, not one's options.
            let table = crate::spec::languages::with_overrides(&value)
                .map_err(|message| bad(file, message))?;
            crate::spec::languages::install(table);
            continue;
        }
        let (Some(cmd), true) = (cli.find_subcommand(&name), TABLES.contains(&name.as_str()))
        else {
            return Err(bad(
                file,
                format!(
                    "unknown table `{name}` (tables: [{}], [{LANGUAGES}.EXT])",
                    TABLES.join("], [")
                ),
            ));
        };
        let toml::Value::Table(table) = value else {
            return Err(bad(
                file,
                format!(
                    "`{name}` must be a table ([{name}]), not {} {}",
                    article(value.type_str()),
                    value.type_str()
                ),
            ));
        };
        let mut settings = Vec::new();
        for (key, value) in table {
            let arg = option(cmd, &key).ok_or_else(|| {
                bad(
                    file,
                    format!(
                        "[{name}] unknown key `{key}` (keys are the long options of `sbx {name}`)"
                    ),
                )
            })?;
            let setting = setting(arg, &value).map_err(|expected| {
                bad(
                    file,
                    format!(
                        "[{name}] {key}: expected {expected}, found {} {}",
                        article(value.type_str()),
                        value.type_str()
                    ),
                )
            })?;
            settings.push((key, setting));
        }
        tables.push((name, settings));
    }
    Ok(tables)
}

/// The option of `cmd` whose long name is `key`, if it may be a key.
fn option<'a>(cmd: &'a Command, key: &str) -> Option<&'a Arg> {
    cmd.get_arguments().find(|arg| {
        arg.get_long() == Some(key)
            && key != CONFIG
            && !arg.is_positional()
            && matches!(
                arg.get_action(),
                ArgAction::Set | ArgAction::Append | ArgAction::SetTrue | ArgAction::SetFalse
            )
    })
}

/// `value` as a setting of `arg`, or what was expected instead.
fn setting(arg: &Arg, value: &toml::Value) -> std::result::Result<Setting, &'static str> {
    let scalar = |value: &toml::Value| match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        _ => None,
    };
    match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => match value {
            toml::Value::Boolean(b) => Ok(Setting::Flag(*b)),
            _ => Err("true or false"),
        },
        ArgAction::Append => {
            const EXPECTED: &str = "an array of strings or numbers";
            match value {
                toml::Value::Array(items) => items
                    .iter()
                    .map(|item| scalar(item).ok_or(EXPECTED))
                    .collect::<std::result::Result<_, _>>()
                    .map(Setting::Values),
                other => scalar(other)
                    .map(|v| Setting::Values(vec![v]))
                    .ok_or(EXPECTED),
            }
        }
        _ => scalar(value)
            .map(|v| Setting::Values(vec![v]))
            .ok_or("a string or a number"),
    }
}

fn article(type_name: &str) -> &'static str {
    if type_name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// One line for a value of the file that clap refused: which key, what clap
/// said.
fn refused(applied: &Applied, err: &clap::Error) -> Error {
    let rendered = err.to_string();
    let first = rendered.lines().next().unwrap_or_default();
    let said = first.strip_prefix("error: ").unwrap_or(first);
    let arg = match err.get(ContextKind::InvalidArg) {
        Some(clap::error::ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let key = applied.keys.iter().find(|key| {
        let long = format!("--{key}");
        arg == long || arg.starts_with(&format!("{long} ")) || arg.starts_with(&format!("{long}="))
    });
    match key {
        Some(key) => bad(&applied.file, format!("[{}] {key}: {said}", applied.table)),
        None => bad(&applied.file, format!("[{}]: {said}", applied.table)),
    }
}

fn bad(file: &Path, message: String) -> Error {
    Error::Settings {
        path: file.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blame_names_the_file_for_an_option_it_set_only() {
        let applied = Applied {
            argv: Vec::new(),
            file: PathBuf::from("sbx.toml"),
            table: "eval".into(),
            keys: vec!["image".into(), "partition".into()],
        };
        let image = blame(
            Some(&applied),
            crate::spec::parse_image("--privileged").unwrap_err(),
        );
        assert!(
            image
                .to_string()
                .ends_with(" (from `sbx.toml`, [eval] image)"),
            "{image}"
        );
        let partition = blame(
            Some(&applied),
            crate::spec::partition::Partition::parse("x").unwrap_err(),
        );
        assert_eq!(
            partition.to_string(),
            "invalid --partition `x`: expected hash:K/N or count:K/N (from `sbx.toml`, [eval] partition)"
        );
        // An option the file did not set, and an error of another kind, are
        // returned as they are.
        let timeout = crate::spec::parse_timeout("lots").unwrap_err().to_string();
        assert_eq!(
            blame(
                Some(&applied),
                crate::spec::parse_timeout("lots").unwrap_err()
            )
            .to_string(),
            timeout
        );
        let usage = blame(Some(&applied), Error::Usage("invalid --image x".into()));
        assert_eq!(usage.to_string(), "invalid --image x");
    }

    fn checked(text: &str) -> Result<Vec<Table>> {
        let mut cli = Cli::command();
        cli.build();
        check(Path::new("sbx.toml"), text, &cli)
    }

    fn line(err: Error) -> String {
        err.to_line()
    }

    #[test]
    fn keys_are_long_options_typed_by_their_kind() {
        let tables = checked(
            "[eval]\ntasks = \"t.json\"\njobs = 3\nrel-tol = 1e-3\nno-cache = true\nk = [1, 5]\nengine = \"default\"\n[run]\ntimeout = 2.5\n",
        )
        .unwrap();
        let values = |v: &[&str]| Setting::Values(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            tables,
            [
                (
                    "eval".to_string(),
                    // In key order (the file's order does not matter).
                    vec![
                        ("engine".to_string(), values(&["default"])),
                        ("jobs".to_string(), values(&["3"])),
                        ("k".to_string(), values(&["1", "5"])),
                        ("no-cache".to_string(), Setting::Flag(true)),
                        ("rel-tol".to_string(), values(&["0.001"])),
                        ("tasks".to_string(), values(&["t.json"])),
                    ]
                ),
                (
                    "run".to_string(),
                    vec![("timeout".to_string(), values(&["2.5"]))]
                ),
            ]
        );
    }

    #[test]
    fn bad_files_name_the_file_and_the_key() {
        let cases = [
            ("[eval]\njbos = 2\n", "sbx: config file `sbx.toml`: [eval] unknown key `jbos` (keys are the long options of `sbx eval`)"),
            ("[eval]\njobs = true\n", "sbx: config file `sbx.toml`: [eval] jobs: expected a string or a number, found a boolean"),
            ("[eval]\nno-cache = \"yes\"\n", "sbx: config file `sbx.toml`: [eval] no-cache: expected true or false, found a string"),
            ("[eval]\nk = [1, [2]]\n", "sbx: config file `sbx.toml`: [eval] k: expected an array of strings or numbers, found an array"),
            ("[eval]\ntasks = [\"a\"]\n", "sbx: config file `sbx.toml`: [eval] tasks: expected a string or a number, found an array"),
            ("[gc]\nrun = \"x\"\n", "sbx: config file `sbx.toml`: unknown table `gc` (tables: [eval], [run], [doctor], [languages.EXT])"),
            ("[evil]\n", "sbx: config file `sbx.toml`: unknown table `evil` (tables: [eval], [run], [doctor], [languages.EXT])"),
            ("eval = 1\n", "sbx: config file `sbx.toml`: `eval` must be a table ([eval]), not an integer"),
            ("[eval]\nconfig = \"x\"\n", "sbx: config file `sbx.toml`: [eval] unknown key `config` (keys are the long options of `sbx eval`)"),
            ("[eval]\nhelp = true\n", "sbx: config file `sbx.toml`: [eval] unknown key `help` (keys are the long options of `sbx eval`)"),
            ("[run]\nfile = \"x\"\n", "sbx: config file `sbx.toml`: [run] unknown key `file` (keys are the long options of `sbx run`)"),
            ("[eval]\njobs = \n", "sbx: config file `sbx.toml`: not valid TOML: line 2: string values must be quoted, expected literal string"),
        ];
        for (text, expected) in cases {
            let got = line(checked(text).unwrap_err());
            assert!(!got.contains('\n'), "{got}");
            assert_eq!(got, expected, "for {text:?}");
        }
    }
}
