//! OLD and NEW paired by task and judged: per-side totals, each shared
//! task's transition, the gate's verdict and exit code. One sample per task:
//! a task is pass or fail, and the test is McNemar's. Several samples (a
//! report with `n` on some entry): each task's score is its pass@k from
//! `n` and `c`, the verdict follows the mean pass@k over the shared tasks
//! judged on both sides, and the test is the paired sign-flip test on the
//! per-task differences. Pure: the file is read by `parse`.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::exit;
use crate::report::{passk, Status};

#[cfg(test)]
use super::parse::entry;
use super::parse::{Entry, Side};
use super::stats::{McNemar, SignFlip, TIE};

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
    /// Several samples per task: the mean pass@k over this side's judged
    /// entries (`missing` counts 0); `None` otherwise or with none judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_pass_at_k: Option<f64>,
    /// Several samples per task, when this side has entries sbx could not
    /// judge: its mean pass@k over all its entries with them counted as
    /// failures (`lower`) and as passes (`upper`). `mean_pass_at_k` is then
    /// over the judged entries only, and not final.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_pass_at_k_bounds: Option<MeanBounds>,
}

/// A side's mean pass@k that unjudged entries leave open.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct MeanBounds {
    pub lower: f64,
    pub upper: f64,
    /// Entries not judged on this side.
    pub not_judged: usize,
}

/// An entry's pass@k with its unjudged samples counted as failures and as
/// passes: from `n` + `errors` and `c` when it has samples, else 0 and 1;
/// `None` when it has fewer than k samples.
fn bounds(side: &Side, k: usize) -> Option<(f64, f64)> {
    match (side.n, side.c) {
        (Some(n), c) => {
            let (c, errors) = (c.unwrap_or(0) as usize, side.errors.unwrap_or(0) as usize);
            let total = n as usize + errors;
            Some((
                passk::pass_at_k(total, c, k)?,
                passk::pass_at_k(total, c + errors, k)?,
            ))
        }
        (None, _) => Some((0.0, 1.0)),
    }
}

/// A side's [`MeanBounds`] at k, when it has an entry not judged: judged
/// entries by their [`score`], the others by [`bounds`].
fn side_bounds(entries: &[Entry], k: usize) -> Option<MeanBounds> {
    let not_judged = entries.iter().filter(|e| !e.side.judged()).count();
    if not_judged == 0 {
        return None;
    }
    let each: Vec<(f64, f64)> = entries
        .iter()
        .filter_map(|e| {
            if e.side.judged() {
                score(&e.side, k).ok().map(|s| (s, s))
            } else {
                bounds(&e.side, k)
            }
        })
        .collect();
    let count = each.len() as f64;
    (!each.is_empty()).then(|| MeanBounds {
        lower: each.iter().map(|b| b.0).sum::<f64>() / count,
        upper: each.iter().map(|b| b.1).sum::<f64>() / count,
        not_judged,
    })
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
    /// Several samples per task: NEW's mean pass@k minus OLD's, each over
    /// its own judged entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_pass_at_k: Option<f64>,
}

impl Change {
    pub(crate) fn between(old: &Totals, new: &Totals) -> Change {
        Change {
            tasks: new.tasks as i64 - old.tasks as i64,
            passed: new.passed as i64 - old.passed as i64,
            pass_rate: old.pass_rate.zip(new.pass_rate).map(|(o, n)| n - o),
            mean_pass_at_k: old
                .mean_pass_at_k
                .zip(new.mean_pass_at_k)
                .map(|(o, n)| n - o),
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
    /// The test on the status transitions (one sample per task).
    pub mcnemar: McNemar,
    /// Several samples per task: the gate on mean pass@k. When set, the
    /// pair lists above are by pass@k: `regressions` fell, `fixes` rose,
    /// `both_pass` and `both_fail` unchanged at 1 and below 1.
    pub pass_at_k: Option<PassAtK>,
}

/// A shared task's pass@k on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ScoreChange {
    pub id: String,
    pub old: f64,
    pub new: f64,
}

/// The multi-sample gate: pass@k over the shared tasks judged on both
/// sides, its means, and the paired test on the per-task differences.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PassAtK {
    pub k: usize,
    /// Shared tasks judged on both sides: what the means and the test are
    /// over.
    pub tasks: usize,
    /// `None` when no shared task is judged on both sides.
    pub old_mean: Option<f64>,
    pub new_mean: Option<f64>,
    /// new_mean − old_mean: below 0 is a regression.
    pub change: Option<f64>,
    /// Every task in the means, in OLD's order.
    pub per_task: Vec<ScoreChange>,
    pub test: SignFlip,
}

impl PassAtK {
    /// Whether the mean fell: the multi-sample regression.
    pub(crate) fn fell(&self) -> bool {
        self.change.is_some_and(|c| c < -TIE)
    }
}

/// Whether the reports have several samples per task: some entry on
/// either side has `n`.
pub(crate) fn multi_sample(old: &[Entry], new: &[Entry]) -> bool {
    old.iter().chain(new).any(|e| e.side.n.is_some())
}

/// A judged entry's pass@k: from `n` and `c` (the estimator of
/// `report::passk`); a `missing` task scores 0; an entry without samples is
/// one sample (its `pass@1`, else 1 for pass and 0 otherwise), so only
/// k = 1. The error says why this k cannot be had.
pub(crate) fn score(side: &Side, k: usize) -> std::result::Result<f64, String> {
    let samples = |n: u64| format!("{n} judged sample{}", if n == 1 { "" } else { "s" });
    match (side.n, side.c) {
        (Some(n), Some(c)) => passk::pass_at_k(n as usize, c as usize, k)
            .ok_or_else(|| format!("has {} (pass@{k} needs at least {k})", samples(n))),
        (Some(_), None) => Err("has `n` but no `c`, so its pass@k is unknown".into()),
        (None, _) if side.status == Status::Missing => Ok(0.0),
        (None, _) if k == 1 => Ok(side.pass_at_1.unwrap_or(if side.status == Status::Pass {
            1.0
        } else {
            0.0
        })),
        (None, _) => Err(format!("has 1 sample (pass@{k} needs at least {k})")),
    }
}

/// The comparison `sbx diff` makes: [`compare_reports`] for one sample
/// per task (only k = 1 then), the pass@k gate for several. `names` are
/// OLD's and NEW's file names, for the error: one line saying which task
/// of which file cannot give pass@k.
pub(crate) fn compare(
    old: &[Entry],
    new: &[Entry],
    k: usize,
    names: (&str, &str),
) -> std::result::Result<Comparison, String> {
    if k == 0 {
        return Err("--k 0: pass@k needs k >= 1".into());
    }
    if !multi_sample(old, new) {
        if k != 1 {
            return Err(format!(
                "--k {k}: these reports have one sample per task (no `n` on any entry), so they give pass@1 only"
            ));
        }
        return Ok(compare_reports(old, new));
    }
    let mut cmp = compare_reports(old, new);
    let side_mean = |entries: &[Entry], name: &str, label: &str| {
        let mut scores = Vec::new();
        for e in entries.iter().filter(|e| e.side.judged()) {
            let s = score(&e.side, k).map_err(|why| {
                format!(
                    "--k {k}: task `{}` in {label} `{name}` {why}",
                    crate::escape::cut(&e.id, super::parse::ID_COLUMN)
                )
            })?;
            scores.push(s);
        }
        Ok::<_, String>(mean(&scores))
    };
    cmp.old.mean_pass_at_k = side_mean(old, names.0, "OLD")?;
    cmp.new.mean_pass_at_k = side_mean(new, names.1, "NEW")?;
    cmp.old.mean_pass_at_k_bounds = side_bounds(old, k);
    cmp.new.mean_pass_at_k_bounds = side_bounds(new, k);
    cmp.change = Change::between(&cmp.old, &cmp.new);

    let new_by_id: HashMap<&str, &Entry> = new.iter().map(|e| (e.id.as_str(), e)).collect();
    cmp.both_pass = 0;
    cmp.both_fail = 0;
    cmp.regressions.clear();
    cmp.fixes.clear();
    let mut per_task = Vec::new();
    for o in old {
        let Some(n) = new_by_id.get(o.id.as_str()) else {
            continue;
        };
        if !(o.side.judged() && n.side.judged()) {
            continue;
        }
        // Both judged: `side_mean` scored them already.
        let (so, sn) = (score(&o.side, k)?, score(&n.side, k)?);
        let pair = Pair {
            id: o.id.clone(),
            old: o.side.clone(),
            new: n.side.clone(),
        };
        if sn - so < -TIE {
            cmp.regressions.push(pair);
        } else if sn - so > TIE {
            cmp.fixes.push(pair);
        } else if so >= 1.0 - TIE {
            cmp.both_pass += 1;
        } else {
            cmp.both_fail += 1;
        }
        per_task.push(ScoreChange {
            id: o.id.clone(),
            old: so,
            new: sn,
        });
    }
    let diffs: Vec<f64> = per_task.iter().map(|t| t.new - t.old).collect();
    let old_mean = mean(&per_task.iter().map(|t| t.old).collect::<Vec<_>>());
    let new_mean = mean(&per_task.iter().map(|t| t.new).collect::<Vec<_>>());
    cmp.pass_at_k = Some(PassAtK {
        k,
        tasks: per_task.len(),
        old_mean,
        new_mean,
        change: old_mean.zip(new_mean).map(|(o, n)| n - o),
        per_task,
        test: SignFlip::of(&diffs),
    });
    cmp.mcnemar = McNemar::of(cmp.regressions.len(), cmp.fixes.len());
    Ok(cmp)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Pairs OLD's and NEW's entries by id (ids are unique: [`parse`] ensures
/// it) and classifies every shared task by status (one sample per task).
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
        pass_at_k: None,
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

    /// Whether NEW regressed: a pass→fail task (one sample per task), or a
    /// lower mean pass@k (several).
    pub(crate) fn regressed(&self) -> bool {
        match &self.pass_at_k {
            Some(gate) => gate.fell(),
            None => !self.regressions.is_empty(),
        }
    }

    /// 1 when NEW regressed ([`Comparison::regressed`]); otherwise 2 when the gate
    /// cannot tell ([`Comparison::not_green`]); 0 otherwise.
    pub(crate) fn exit_code(&self, allow_missing: bool) -> i32 {
        if self.regressed() {
            exit::REGRESSED
        } else if !self.not_green(allow_missing).is_empty() {
            exit::USAGE
        } else {
            exit::SUCCESS
        }
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
pub(crate) fn tasks_word(n: usize) -> String {
    format!("{n} task{}", if n == 1 { "" } else { "s" })
}

/// A comparison with every section, for the renderers' tests.
#[cfg(test)]
pub(crate) fn sample() -> Comparison {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(&str, Status)]) -> Vec<Entry> {
        list.iter().map(|&(id, s)| entry(id, s)).collect()
    }

    fn ids(pairs: &[Pair]) -> Vec<&str> {
        pairs.iter().map(|p| p.id.as_str()).collect()
    }

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= 1e-12 * expected.abs().max(1e-300)
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
                pass_rate: Some(4.0 / 7.0),
                mean_pass_at_k: None,
                mean_pass_at_k_bounds: None,
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

    // -- The pass@k gate (several samples) ----------------------------------

    /// A multi-sample entry: `c` of `n` samples passed.
    fn sampled(id: &str, n: u64, c: u64) -> Entry {
        let status = if c == n { Status::Pass } else { Status::Fail };
        Entry {
            id: id.into(),
            side: Side {
                n: Some(n),
                c: Some(c),
                errors: Some(0),
                pass_at_1: Some(c as f64 / n as f64),
                ..Side::of(status)
            },
        }
    }

    /// The issue's case: `a` 0.1 → 0.6, `b` 1.0 → 0.8, mean 0.42 → 0.48.
    fn issue_case() -> (Vec<Entry>, Vec<Entry>) {
        let old = vec![
            sampled("a", 10, 1),
            sampled("b", 10, 10),
            sampled("c", 10, 0),
            sampled("d", 10, 0),
            sampled("e", 10, 10),
        ];
        let new = vec![
            sampled("a", 10, 6),
            sampled("b", 10, 8),
            sampled("c", 10, 0),
            sampled("d", 10, 0),
            sampled("e", 10, 10),
        ];
        (old, new)
    }

    /// A side with a sample not judged: its mean over the judged entries
    /// (1.000, over A alone) is not final; the bounds count B's sample as
    /// a failure and as a pass.
    #[test]
    fn an_unjudged_side_gets_bounds() {
        let old = vec![sampled("A", 1, 1), sampled("B", 1, 0)];
        let b = Entry {
            id: "B".into(),
            side: Side {
                n: Some(0),
                c: Some(0),
                errors: Some(1),
                ..Side::of(Status::Error)
            },
        };
        let new = vec![sampled("A", 1, 1), b];
        let cmp = compare(&old, &new, 1, ("old", "new")).unwrap();
        assert_eq!(cmp.new.mean_pass_at_k, Some(1.0));
        assert_eq!(
            cmp.new.mean_pass_at_k_bounds,
            Some(MeanBounds {
                lower: 0.5,
                upper: 1.0,
                not_judged: 1
            })
        );
        assert_eq!(cmp.old.mean_pass_at_k_bounds, None);
        // The text is tested in `text`.
        // OLD's B was a judged fail with no sample passed: NEW's unjudged
        // B cannot hide a regression. Had OLD's B passed, it could.
        assert_eq!(cmp.exit_code(false), 0);
        let old = vec![sampled("A", 1, 1), sampled("B", 1, 1)];
        let cmp = compare(&old, &new, 1, ("old", "new")).unwrap();
        assert_eq!(cmp.exit_code(false), 2);
    }

    #[test]
    fn a_higher_mean_pass_at_1_is_no_regression() {
        let (old, new) = issue_case();
        // By status alone, `b` is pass→fail: what the gate said before.
        assert_eq!(ids(&compare_reports(&old, &new).regressions), ["b"]);
        assert_eq!(compare_reports(&old, &new).exit_code(false), 1);
        let cmp = compare(&old, &new, 1, ("a.json", "b.json")).unwrap();
        let gate = cmp.pass_at_k.as_ref().unwrap();
        assert_eq!((gate.k, gate.tasks), (1, 5));
        assert!(close(gate.old_mean.unwrap(), 0.42) && close(gate.new_mean.unwrap(), 0.48));
        assert!(!gate.fell() && !cmp.regressed());
        assert_eq!(cmp.exit_code(false), 0);
        assert_eq!(ids(&cmp.regressions), ["b"]);
        assert_eq!(ids(&cmp.fixes), ["a"]);
        assert_eq!((cmp.both_pass, cmp.both_fail), (1, 2));
        assert_eq!((gate.test.rose, gate.test.fell, gate.test.p), (1, 1, 1.0));
        assert!(close(cmp.old.mean_pass_at_k.unwrap(), 0.42));
        assert!(close(cmp.change.mean_pass_at_k.unwrap(), 0.06));
        // The other way round, the mean fell: exit 1.
        let back = compare(&new, &old, 1, ("b.json", "a.json")).unwrap();
        assert!(back.regressed());
        assert_eq!(back.exit_code(true), 1);
    }

    #[test]
    fn pass_at_k_follows_k() {
        let (old, new) = issue_case();
        // pass@10 of 10 samples: 1 when any passed. a and b stay at 1.
        let cmp = compare(&old, &new, 10, ("a.json", "b.json")).unwrap();
        let gate = cmp.pass_at_k.as_ref().unwrap();
        assert!(gate
            .per_task
            .iter()
            .all(|t| close(t.old, t.new) || t.old == t.new));
        assert_eq!(gate.test.n, 0);
        assert_eq!(cmp.exit_code(false), 0);
        // pass@2 of a: 1 - C(9,2)/C(10,2) = 0.2 → 1 - C(4,2)/C(10,2) = 13/15.
        let cmp = compare(&old, &new, 2, ("a.json", "b.json")).unwrap();
        let a = &cmp.pass_at_k.as_ref().unwrap().per_task[0];
        assert!(close(a.old, 0.2) && close(a.new, 13.0 / 15.0), "{a:?}");
    }

    #[test]
    fn a_k_the_reports_cannot_give_is_refused() {
        let (old, mut new) = issue_case();
        let err = compare(&old, &new, 11, ("a.json", "b.json")).unwrap_err();
        assert_eq!(
            err,
            "--k 11: task `a` in OLD `a.json` has 10 judged samples (pass@11 needs at least 11)"
        );
        new[3] = sampled("d", 4, 1);
        let err = compare(&old, &new, 5, ("a.json", "b.json")).unwrap_err();
        assert!(
            err.contains("task `d` in NEW `b.json` has 4 judged samples"),
            "{err}"
        );
        assert!(compare(&old, &new, 0, ("a.json", "b.json"))
            .unwrap_err()
            .contains("k >= 1"));
        // One sample per task: pass@1 only, and McNemar exactly as before.
        let single = entries(&[("a", Status::Pass), ("b", Status::Fail)]);
        let err = compare(&single, &single, 2, ("a.json", "b.json")).unwrap_err();
        assert!(err.contains("one sample per task"), "{err}");
        let cmp = compare(&single, &single, 1, ("a.json", "b.json")).unwrap();
        assert_eq!(cmp, compare_reports(&single, &single));
        assert!(cmp.pass_at_k.is_none());
    }

    #[test]
    fn missing_scores_0_and_unjudged_stays_out_of_the_gate() {
        let (old, mut new) = issue_case();
        // `e` missing in NEW: 1.0 → 0, a regression of the mean.
        new[4] = entry("e", Status::Missing);
        let cmp = compare(&old, &new, 1, ("a.json", "b.json")).unwrap();
        assert!(cmp.regressed(), "{cmp:?}");
        assert_eq!(ids(&cmp.regressions), ["b", "e"]);
        // `e` not judged in NEW: out of the mean (which rises) but the gate
        // cannot be green: it could hide a regression.
        new[4] = Entry {
            id: "e".into(),
            side: Side {
                incomplete: true,
                ..sampled("e", 3, 3).side
            },
        };
        let cmp = compare(&old, &new, 1, ("a.json", "b.json")).unwrap();
        let gate = cmp.pass_at_k.as_ref().unwrap();
        assert_eq!(gate.tasks, 4);
        assert!(!cmp.regressed());
        assert_eq!(ids(&cmp.not_judged), ["e"]);
        assert_eq!(cmp.exit_code(true), 2);
        assert_eq!(
            cmp.not_green(true),
            ["1 task not judged could hide a regression"]
        );
    }
}
