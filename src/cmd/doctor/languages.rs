//! The languages probe: which of the language table's languages the image
//! has the programs for. Informative: never a failure of the sandbox.

use crate::spec;

use super::prober::Prober;
use super::report::{Check, State};

impl Prober<'_> {
    /// Which of the language table's languages the image has the programs
    /// for (`command -v`): compiler and runner, or interpreter.
    pub(crate) fn languages(&self) -> Check {
        let programs = language_programs();
        let mut script = String::from("for p in");
        for program in &programs {
            script.push(' ');
            script.push_str(program);
        }
        script.push_str("; do command -v \"$p\" >/dev/null 2>&1 && echo \"$p\"; done; true\n");
        self.check("languages", &script, |out| {
            let found: Vec<&str> = out.split_whitespace().collect();
            Check::new("languages", State::Ok, languages_detail(&found))
        })
    }
}

/// The programs the language table needs, each once: the first word of
/// each compile and run command (a compiled program's own path excepted).
fn language_programs() -> Vec<&'static str> {
    let mut programs: Vec<&'static str> = Vec::new();
    for language in spec::languages::table() {
        let firsts = language
            .compile
            .map(|c| c[0])
            .into_iter()
            .chain([language.run[0]]);
        for program in firsts {
            if !program.starts_with('{') && !programs.contains(&program) {
                programs.push(program);
            }
        }
    }
    programs
}

/// `compile and run: C (.c), ...; run: ...; missing: ...` for the programs
/// found in the image.
fn languages_detail(found: &[&str]) -> String {
    let has = |p: &str| p.starts_with('{') || found.contains(&p);
    let (mut compiled, mut interpreted, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    for language in spec::languages::table() {
        let label = format!("{} (.{})", language.name, language.extension);
        let needs: Vec<&str> = language
            .compile
            .map(|c| c[0])
            .into_iter()
            .chain([language.run[0]])
            .collect();
        let lacking: Vec<&str> = needs.iter().copied().filter(|p| !has(p)).collect();
        if !lacking.is_empty() {
            missing.push(format!("{label} needs {}", lacking.join(", ")));
        } else if language.is_compiled() {
            compiled.push(label);
        } else {
            interpreted.push(label);
        }
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    format!(
        "compile and run: {}; run: {}; missing: {}",
        list(&compiled),
        list(&interpreted),
        list(&missing)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_reported_from_the_programs_found() {
        assert_eq!(
            language_programs(),
            ["python3", "sh", "node", "ruby", "gcc", "g++", "go", "rustc", "javac", "java"]
        );
        let detail = languages_detail(&["sh", "gcc", "python3", "javac"]);
        assert_eq!(
            detail,
            "compile and run: C (.c); run: Python (.py), shell (.sh); missing: JavaScript (.js) needs node, Ruby (.rb) needs ruby, C++ (.cpp) needs g++, C++ (.cc) needs g++, Go (.go) needs go, Rust (.rs) needs rustc, Java (.java) needs java"
        );
    }
}
