//! The language table: each candidate extension, its compile command (if
//! any), its run command and the name its source must have. Pure data and
//! substitution, and the compile step's limits; the compile step itself is
//! `eval::compile`'s.
//!
//! Commands are lists of words, never given to a shell. Three placeholders
//! are replaced inside words: `{src}` (the source's file name, in the
//! compile's working directory), `{out}` (`BUILD_DIR`, where the compile
//! writes and the run reads, read-only) and `{class}` (Java's main class).

use std::sync::OnceLock;
use std::time::Duration;

/// Where a compiled candidate's output is: written by the compile
/// container, mounted read-only in the run's.
pub const BUILD_DIR: &str = "/sbx/build";

/// The default `--compile-timeout`, in seconds.
pub(crate) const DEFAULT_COMPILE_TIMEOUT: &str = "30";
/// The default `--compile-memory`: javac, rustc and go build of one file
/// each stay well below it (see docs/benchmarks.md's measurements).
pub(crate) const DEFAULT_COMPILE_MEMORY: &str = "1g";

/// The compile step's own limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompileLimits {
    pub timeout: Duration,
    /// A validated size, such as `1g`.
    pub memory: String,
}

impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits {
            timeout: Duration::from_secs(30),
            memory: DEFAULT_COMPILE_MEMORY.into(),
        }
    }
}

/// How the source file is named for its compiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceName {
    /// Always this name (`main.c`).
    Fixed(&'static str),
    /// `<class>.java`, where `<class>` is the source's public top-level
    /// class, or `Main` when it declares none (javac requires a public
    /// class to live in a file of its name).
    JavaPublicClass,
}

/// One language of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Language {
    /// The candidate's extension, without the dot.
    pub extension: &'static str,
    /// For messages: `C++`.
    pub name: &'static str,
    /// The compile command, run in the directory holding the source;
    /// `None` for interpreted languages.
    pub compile: Option<&'static [&'static str]>,
    /// The run command. For an interpreted language, the words placed
    /// before the candidate's path; for a compiled one, the whole command.
    pub run: &'static [&'static str],
    pub source: SourceName,
}

impl Language {
    pub(crate) fn is_compiled(&self) -> bool {
        self.compile.is_some()
    }
}

const fn interpreted(
    extension: &'static str,
    name: &'static str,
    run: &'static [&'static str],
) -> Language {
    Language {
        extension,
        name,
        compile: None,
        run,
        source: SourceName::Fixed(""),
    }
}

/// The built-in table, in the order `eval` looks for `gen/<id>.<ext>`.
pub(crate) const LANGUAGES: &[Language] = &[
    interpreted("py", "Python", &["python3"]),
    interpreted("sh", "shell", &["sh"]),
    interpreted("js", "JavaScript", &["node"]),
    interpreted("rb", "Ruby", &["ruby"]),
    Language {
        extension: "c",
        name: "C",
        compile: Some(&[
            "gcc",
            "-O2",
            "-std=gnu17",
            "-o",
            "{out}/main",
            "{src}",
            "-lm",
        ]),
        run: &["{out}/main"],
        source: SourceName::Fixed("main.c"),
    },
    Language {
        extension: "cpp",
        name: "C++",
        compile: Some(&["g++", "-O2", "-std=gnu++17", "-o", "{out}/main", "{src}"]),
        run: &["{out}/main"],
        source: SourceName::Fixed("main.cpp"),
    },
    Language {
        extension: "cc",
        name: "C++",
        compile: Some(&["g++", "-O2", "-std=gnu++17", "-o", "{out}/main", "{src}"]),
        run: &["{out}/main"],
        source: SourceName::Fixed("main.cc"),
    },
    Language {
        extension: "go",
        name: "Go",
        compile: Some(&["go", "build", "-o", "{out}/main", "{src}"]),
        run: &["{out}/main"],
        source: SourceName::Fixed("main.go"),
    },
    Language {
        extension: "rs",
        name: "Rust",
        compile: Some(&[
            "rustc",
            "--edition",
            "2021",
            "-O",
            "-o",
            "{out}/main",
            "{src}",
        ]),
        run: &["{out}/main"],
        source: SourceName::Fixed("main.rs"),
    },
    Language {
        extension: "java",
        name: "Java",
        compile: Some(&["javac", "-encoding", "UTF-8", "-d", "{out}", "{src}"]),
        // The serial collector: one GC thread, within the pids limit.
        run: &["java", "-XX:+UseSerialGC", "-cp", "{out}", "{class}"],
        source: SourceName::JavaPublicClass,
    },
];

/// The table in use: the built-in one, with `sbx.toml`'s `[languages]`
/// entries once `install`ed.
pub(crate) fn table() -> &'static [Language] {
    INSTALLED.get().copied().unwrap_or(LANGUAGES)
}

static INSTALLED: OnceLock<&'static [Language]> = OnceLock::new();

/// The candidate extensions `eval` looks for, in the table's order.
pub(crate) fn candidate_extensions() -> Vec<&'static str> {
    table().iter().map(|l| l.extension).collect()
}

/// The language of an extension.
pub(crate) fn by_extension(extension: &str) -> Option<&'static Language> {
    table().iter().find(|l| l.extension == extension)
}

/// Makes `table` (built by `with_overrides`) the table of this process.
/// Once: a second call changes nothing.
pub(crate) fn install(table: Vec<Language>) {
    // Leaked once per process: the table lives as long as sbx does.
    let _ = INSTALLED.set(Vec::leak(table));
}

/// The built-in table with the entries of `sbx.toml`'s `[languages]`
/// table (`value`): `[languages.EXT]` with `run`, `compile`, `source` and
/// `name`. An entry for a known extension replaces the keys it gives; a new
/// extension is added after the built-in ones and needs `run`. Commands
/// are arrays of words (or a string split on whitespace, without quotes);
/// `compile = []` makes a language interpreted. `Err` is one line, naming
/// the entry and the key.
pub(crate) fn with_overrides(value: &toml::Value) -> Result<Vec<Language>, String> {
    let leak = |s: String| -> &'static str { String::leak(s) };
    let toml::Value::Table(entries) = value else {
        return Err("`languages` must be a table of [languages.EXT] tables".into());
    };
    let mut table: Vec<Language> = LANGUAGES.to_vec();
    for (ext, entry) in entries {
        let valid_ext = !ext.is_empty()
            && ext.len() <= 16
            && ext
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'+');
        if !valid_ext {
            return Err(format!(
                "[languages.{ext}]: an extension is 1 to 16 letters, digits, `_` or `+`, without the dot"
            ));
        }
        let toml::Value::Table(keys) = entry else {
            return Err(format!("[languages.{ext}] must be a table"));
        };
        let words = |key: &str, value: &toml::Value| -> Result<Vec<&'static str>, String> {
            let words: Vec<String> = match value {
                toml::Value::String(s) => {
                    if s.contains(['\'', '"', '\\']) {
                        return Err(format!(
                            "[languages.{ext}] {key}: quotes and backslashes are not supported in a string (it is split on whitespace, never by a shell); give an array of words"
                        ));
                    }
                    s.split_whitespace().map(str::to_string).collect()
                }
                toml::Value::Array(items) => items
                    .iter()
                    .map(|item| match item {
                        toml::Value::String(s) if !s.contains('\0') => Ok(s.clone()),
                        _ => Err(format!(
                            "[languages.{ext}] {key}: expected an array of strings"
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                other => {
                    return Err(format!(
                        "[languages.{ext}] {key}: expected an array of strings, found {}",
                        other.type_str()
                    ))
                }
            };
            if words.first().is_some_and(|w| w.starts_with('-')) {
                return Err(format!(
                    "[languages.{ext}] {key}: the command cannot start with `-`"
                ));
            }
            Ok(words.into_iter().map(leak).collect())
        };
        let ext: &'static str = leak(ext.clone());
        let existing = table.iter().position(|l| l.extension == ext);
        let mut language = match existing {
            Some(i) => table[i].clone(),
            None => Language {
                extension: ext,
                name: ext,
                compile: None,
                run: &[],
                source: SourceName::Fixed(leak(format!("main.{ext}"))),
            },
        };
        for (key, value) in keys {
            match key.as_str() {
                "run" => {
                    let run = words("run", value)?;
                    if run.is_empty() {
                        return Err(format!("[languages.{ext}] run: the command is empty"));
                    }
                    language.run = Vec::leak(run);
                }
                "compile" => {
                    let compile = words("compile", value)?;
                    language.compile = (!compile.is_empty()).then(|| &*Vec::leak(compile));
                }
                "source" => match value {
                    toml::Value::String(name)
                        if !name.is_empty()
                            && !name.contains('/')
                            && !name.starts_with('.')
                            && !name.contains('\0') =>
                    {
                        language.source = SourceName::Fixed(leak(name.clone()));
                    }
                    _ => {
                        return Err(format!(
                        "[languages.{ext}] source: expected a plain file name such as main.{ext}"
                    ))
                    }
                },
                "name" => match value {
                    toml::Value::String(name) if !name.is_empty() => {
                        language.name = leak(name.clone())
                    }
                    _ => return Err(format!("[languages.{ext}] name: expected a string")),
                },
                other => {
                    return Err(format!(
                        "[languages.{ext}] unknown key `{other}` (keys: run, compile, source, name)"
                    ))
                }
            }
        }
        if language.run.is_empty() {
            return Err(format!("[languages.{ext}] needs `run` (a new extension)"));
        }
        if let Some(compile) = language.compile {
            // A compiled language must read its source and write its build.
            let mentions = |words: &[&str], p: &str| words.iter().any(|w| w.contains(p));
            if !mentions(compile, "{src}") || !mentions(compile, "{out}") {
                return Err(format!(
                    "[languages.{ext}] compile: must name the source `{{src}}` and the build directory `{{out}}`"
                ));
            }
            if language.source == SourceName::Fixed("") {
                language.source = SourceName::Fixed(leak(format!("main.{ext}")));
            }
        }
        match existing {
            Some(i) => table[i] = language,
            None => table.push(language),
        }
    }
    Ok(table)
}

/// The names a compiled candidate gets: its source file and, for Java, its
/// main class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Names {
    pub source: String,
    pub class: String,
}

/// The names for `source` (the candidate's text) in `language`.
pub(crate) fn names_for(language: &Language, source: &[u8]) -> Names {
    match language.source {
        SourceName::Fixed(name) => Names {
            source: name.to_string(),
            class: "Main".into(),
        },
        SourceName::JavaPublicClass => {
            let class = java_public_class(source).unwrap_or_else(|| "Main".into());
            // javac -d puts a class of `package a.b;` in a/b/, and java
            // runs it by its whole name.
            let run = match java_package(source) {
                Some(package) => format!("{package}.{class}"),
                None => class.clone(),
            };
            Names {
                source: format!("{class}.java"),
                class: run,
            }
        }
    }
}

/// `words` with the placeholders replaced.
pub(crate) fn substitute(words: &[&str], names: &Names) -> Vec<String> {
    words
        .iter()
        .map(|w| {
            w.replace("{src}", &names.source)
                .replace("{out}", BUILD_DIR)
                .replace("{class}", &names.class)
        })
        .collect()
}

/// The name of the first public top-level class (or interface, enum,
/// record) of a Java source, with comments, strings and character
/// literals skipped; `None` when there is none or it is not a plain
/// identifier.
pub(crate) fn java_public_class(source: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(source);
    let tokens = java_tokens(&text);
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].as_str() {
            "{" => depth += 1,
            "}" => depth = depth.saturating_sub(1),
            "public" if depth == 0 => {
                let mut j = i + 1;
                while j < tokens.len()
                    && matches!(
                        tokens[j].as_str(),
                        "final" | "abstract" | "strictfp" | "sealed" | "non-sealed" | "static"
                    )
                {
                    j += 1;
                }
                if j + 1 < tokens.len()
                    && matches!(
                        tokens[j].as_str(),
                        "class" | "interface" | "enum" | "record"
                    )
                {
                    let name = &tokens[j + 1];
                    return plain_identifier(name).then(|| name.clone());
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The package a Java source declares (`package a.b;`, its first
/// declaration), when every part of its name is a plain identifier.
pub(crate) fn java_package(source: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(source);
    let tokens = java_tokens(&text);
    if tokens.first().map(String::as_str) != Some("package") {
        return None;
    }
    let mut parts = Vec::new();
    for (i, token) in tokens.iter().enumerate().skip(1) {
        match (i % 2, token.as_str()) {
            (1, word) if plain_identifier(word) => parts.push(word),
            (0, ".") => {}
            (0, ";") if !parts.is_empty() => return Some(parts.join(".")),
            _ => return None,
        }
    }
    None
}

/// A Java identifier sbx passes on: ASCII letters, digits, `_` and `$`,
/// not starting with a digit.
fn plain_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Identifiers (with `-` kept inside `non-sealed`), braces, dots and
/// semicolons of a Java source, without comments and literals.
fn java_tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '"' || c == '\'' {
            // A text block `"""` ends at the next `"""`; a literal at its quote.
            if c == '"' && next == Some('"') && chars.get(i + 2) == Some(&'"') {
                i += 3;
                while i < chars.len()
                    && !(chars[i] == '"'
                        && chars.get(i + 1) == Some(&'"')
                        && chars.get(i + 2) == Some(&'"'))
                {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && chars[i] != c && chars[i] != '\n' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            let mut word: String = chars[start..i].iter().collect();
            if word == "non" && chars.get(i) == Some(&'-') {
                let rest: String = chars[i..chars.len().min(i + 7)].iter().collect();
                if rest == "-sealed" {
                    word.push_str("-sealed");
                    i += 7;
                }
            }
            tokens.push(word);
        } else {
            if matches!(c, '{' | '}' | '.' | ';') {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_extension_once_and_compiled_ones_name_their_output() {
        let mut seen = std::collections::BTreeSet::new();
        for l in LANGUAGES {
            assert!(seen.insert(l.extension), "{} twice", l.extension);
            if let Some(compile) = l.compile {
                assert!(
                    compile.iter().any(|w| w.contains("{src}")),
                    "{}",
                    l.extension
                );
                assert!(
                    compile.iter().any(|w| w.contains("{out}")),
                    "{}",
                    l.extension
                );
                assert!(l.run.iter().any(|w| w.contains("{out}")), "{}", l.extension);
            }
        }
        for ext in ["c", "cpp", "cc", "go", "rs", "java"] {
            assert!(by_extension(ext).unwrap().is_compiled(), "{ext}");
        }
        for ext in ["py", "sh", "js", "rb"] {
            assert!(!by_extension(ext).unwrap().is_compiled(), "{ext}");
        }
        assert!(by_extension("txt").is_none());
    }

    #[test]
    fn overrides_replace_keys_and_add_extensions() {
        let value: toml::Value = toml::from_str(
            r#"
            [py]
            run = "pypy3 -u"
            [c]
            compile = ["clang", "-O2", "-o", "{out}/main", "{src}"]
            [kt]
            name = "Kotlin"
            compile = ["kotlinc", "{src}", "-include-runtime", "-d", "{out}/main.jar"]
            run = ["java", "-jar", "{out}/main.jar"]
            "#,
        )
        .expect("valid TOML");
        let table = with_overrides(&value).expect("valid overrides");
        let find = |ext: &str| table.iter().find(|l| l.extension == ext).expect(ext);
        assert_eq!(find("py").run, ["pypy3", "-u"]);
        assert!(!find("py").is_compiled());
        assert_eq!(find("c").compile.expect("compiled")[0], "clang");
        assert_eq!(find("c").run, ["{out}/main"]);
        assert_eq!(find("c").source, SourceName::Fixed("main.c"));
        let kt = find("kt");
        assert_eq!(
            (kt.name, kt.source),
            ("Kotlin", SourceName::Fixed("main.kt"))
        );
        assert_eq!(table.last().expect("not empty").extension, "kt");
        assert_eq!(table.len(), LANGUAGES.len() + 1);

        for (bad, needle) in [
            (
                "[zz]\ncompile = [\"x\", \"{src}\", \"{out}\"]\n",
                "needs `run`",
            ),
            ("[c]\ncompile = [\"gcc\", \"main.c\"]\n", "must name"),
            ("[c]\nrun = \"sh -c 'x y'\"\n", "quotes"),
            ("[c]\nrun = []\n", "empty"),
            ("[c]\nrun = [\"-x\"]\n", "start with `-`"),
            ("[c]\nflags = 1\n", "unknown key `flags`"),
            ("[c]\nsource = \"../x.c\"\n", "plain file name"),
            ("[\"a.b\"]\nrun = \"x\"\n", "an extension is"),
            ("c = 1\n", "must be a table"),
        ] {
            let value: toml::Value = toml::from_str(bad).expect("valid TOML");
            let err = with_overrides(&value).expect_err(bad);
            assert!(err.contains(needle), "{bad:?}: {err}");
        }
        // `compile = []` makes a language interpreted.
        let value: toml::Value =
            toml::from_str("[c]\ncompile = []\nrun = \"tcc -run\"\n").expect("TOML");
        let table = with_overrides(&value).expect("valid");
        assert!(!table
            .iter()
            .find(|l| l.extension == "c")
            .expect("c")
            .is_compiled());
    }

    #[test]
    fn placeholders_are_replaced_inside_words() {
        let c = by_extension("c").unwrap();
        let names = names_for(c, b"int main(){}");
        assert_eq!(
            substitute(c.compile.unwrap(), &names),
            [
                "gcc",
                "-O2",
                "-std=gnu17",
                "-o",
                "/sbx/build/main",
                "main.c",
                "-lm"
            ]
        );
        assert_eq!(substitute(c.run, &names), ["/sbx/build/main"]);
        let java = by_extension("java").unwrap();
        let names = names_for(
            java,
            b"public class Solution { public static void main(String[] a) {} }",
        );
        assert_eq!(names.source, "Solution.java");
        assert_eq!(
            substitute(java.run, &names),
            ["java", "-XX:+UseSerialGC", "-cp", "/sbx/build", "Solution"]
        );
    }

    #[test]
    fn java_public_class_skips_comments_strings_and_nested_classes() {
        let cases: &[(&str, Option<&str>)] = &[
            ("public class Main {}", Some("Main")),
            (
                "import java.util.*;\nclass Helper {}\npublic final class Solver { }",
                Some("Solver"),
            ),
            (
                "// public class Fake\n/* public class Nope */ public class Real {}",
                Some("Real"),
            ),
            ("class A { public class Inner {} }", None),
            ("class A { String s = \"public class X\"; }\n", None),
            ("class A { char c = '\"'; } public class B {}", Some("B")),
            (
                "class A { String t = \"\"\"\n public class T \"\"\"; }",
                None,
            ),
            ("public non-sealed class N {}", Some("N")),
            ("public enum E { A }", Some("E")),
            (
                "class NotPublic { public static void main(String[] a) {} }",
                None,
            ),
            ("", None),
        ];
        for (source, want) in cases {
            assert_eq!(
                java_public_class(source.as_bytes()).as_deref(),
                *want,
                "{source:?}"
            );
        }
        let java = by_extension("java").unwrap();
        assert_eq!(names_for(java, b"class X {}").source, "Main.java");
    }

    /// `package a.b;` makes the class run by its whole name (javac -d puts
    /// it in a/b/); the source keeps the class's own name.
    #[test]
    fn a_java_package_line_names_the_class_in_full() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "package pkg;
public class Pkg {}",
                Some("pkg"),
            ),
            (
                "// c
/* d */ package a.b.c ;
public class X {}",
                Some("a.b.c"),
            ),
            ("public class X {}", None),
            (
                "import a.b;
package c;",
                None,
            ),
            ("package ;", None),
            ("package a..b;", None),
            ("package a.b", None),
            ("package 1a;", None),
            ("package a.b.;", None),
        ];
        for (source, want) in cases {
            assert_eq!(
                java_package(source.as_bytes()).as_deref(),
                *want,
                "{source:?}"
            );
        }
        let java = by_extension("java").unwrap();
        let names = names_for(
            java,
            b"package sol.p;
public class Pkg { }",
        );
        assert_eq!(names.source, "Pkg.java");
        assert_eq!(names.class, "sol.p.Pkg");
        assert_eq!(
            substitute(java.run, &names),
            ["java", "-XX:+UseSerialGC", "-cp", BUILD_DIR, "sol.p.Pkg"]
        );
        // No public class: javac's `Main.java` still must hold the class.
        assert_eq!(names_for(java, b"package q; class Main {}").class, "q.Main");
    }
}
