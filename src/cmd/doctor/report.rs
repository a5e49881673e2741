//! The doctor's report: one check per line, and the verdict.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum State {
    Ok,
    Failed,
    Skipped,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    pub name: &'static str,
    pub state: State,
    /// What the probe saw.
    pub detail: String,
}

impl Check {
    pub(crate) fn new(name: &'static str, state: State, detail: impl Into<String>) -> Check {
        Check {
            name,
            state,
            detail: detail.into(),
        }
    }

    /// `ok` when `held`, `FAILED` otherwise.
    pub(crate) fn held(name: &'static str, held: bool, detail: impl Into<String>) -> Check {
        Check::new(name, if held { State::Ok } else { State::Failed }, detail)
    }
}

/// The doctor's whole report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    pub ok: bool,
    pub checks: Vec<Check>,
    pub summary: String,
}

impl Report {
    pub(crate) fn new(checks: Vec<Check>, allow_skips: bool) -> Report {
        let count = |s| checks.iter().filter(|c| c.state == s).count();
        let (ok, failed, skipped) = (
            count(State::Ok),
            count(State::Failed),
            count(State::Skipped),
        );
        Report {
            ok: failed == 0 && (skipped == 0 || allow_skips),
            summary: format!("{ok} ok, {failed} failed, {skipped} skipped"),
            checks,
        }
    }

    /// A report of the checks made before the doctor stopped with nothing
    /// checked (an image or a runtime the engine lacks): `summary` says so
    /// and what to do.
    pub(crate) fn nothing_checked(checks: Vec<Check>, why: String) -> Report {
        Report {
            ok: false,
            summary: format!("nothing was checked: {why}"),
            checks,
        }
    }

    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let state = match c.state {
                State::Ok => "ok",
                State::Failed => "FAILED",
                State::Skipped => "skipped",
            };
            out.push_str(&format!("{state:<8}{}: {}\n", c.name, c.detail));
        }
        if self.summary.starts_with("nothing was checked") {
            out.push_str(&format!("doctor: {}\n", self.summary));
            return out;
        }
        let verdict = if self.checks.iter().any(|c| c.state == State::Failed) {
            "the sandbox does NOT fully hold on this host"
        } else if self.ok {
            "the sandbox holds on this host"
        } else {
            "some checks were skipped (--allow-skips accepts that)"
        };
        out.push_str(&format!("doctor: {}; {verdict}\n", self.summary));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_verdicts() {
        let ok = Check::new("a", State::Ok, "x");
        let skipped = Check::new("b", State::Skipped, "image has no python3");
        let failed = Check::new("c", State::Failed, "interfaces: lo eth0");
        assert!(Report::new(vec![ok.clone()], false).ok);
        assert!(!Report::new(vec![ok.clone(), skipped.clone()], false).ok);
        assert!(Report::new(vec![ok.clone(), skipped.clone()], true).ok);
        let bad = Report::new(vec![ok, skipped, failed], true);
        assert!(!bad.ok);
        assert_eq!(bad.summary, "1 ok, 1 failed, 1 skipped");
        let text = bad.text();
        assert!(text.contains("FAILED  c: interfaces: lo eth0\n"), "{text}");
        assert!(text.contains("skipped b: image has no python3\n"), "{text}");
        assert!(text.ends_with(
            "doctor: 1 ok, 1 failed, 1 skipped; the sandbox does NOT fully hold on this host\n"
        ));
        let json: serde_json::Value = serde_json::to_value(&bad).unwrap();
        assert_eq!(
            json["checks"][2],
            serde_json::json!({"name": "c", "state": "failed", "detail": "interfaces: lo eth0"})
        );
        assert_eq!(json["ok"], false);
    }
}
