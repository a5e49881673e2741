//! Two reports of the same tasks (two models, two prompts) compared:
//! whether NEW regressed, with a paired test so that a real change can be
//! told from noise. `sbx diff` (`cmd::diff`) is this module's one caller.
//! One job per file, as hyperfine splits its statistics from each export
//! format:
//! - `parse`: a report's bytes to entries, and [`load`], the one reader;
//! - `stats`: the exact McNemar test and the paired sign-flip test, pure;
//! - `compare`: pairing, transitions, the pass@k gate, the exit code;
//! - `text` and `json`: the two renderings.
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
//! - One sample per task (no entry on either side has `n`): a task's
//!   outcome is binary, `status == "pass"`; only `--k 1` is accepted.
//! - Several samples (some entry has `n`): a task's score is its pass@k
//!   (`--k`, default 1) from `n` and `c`, `missing` counting 0 and an entry
//!   without samples counting as one; a k that a judged entry cannot give
//!   (k > n) is refused (exit 2). On the shared tasks judged on both sides,
//!   pass@k fell is a regression in the lists, rose a fix; the verdict is
//!   the mean pass@k over those tasks: NEW regressed when it is lower. The
//!   test is the paired sign-flip permutation test on the per-task
//!   differences (`stats::SignFlip`), McNemar's generalisation: for 0/1
//!   scores it gives McNemar's p.
//! - On a shared task, one sample per task: pass→fail (a regression) is
//!   OLD `pass` and NEW `fail` or `missing`; fail→pass (a fix) is the
//!   reverse. A side is "not judged"
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
//!   over those tasks (one sample per task; with several, the pass@k gate
//!   is shown instead).
//! - Exit 0 when NEW has no regression, 1 when it has one (a pass→fail
//!   task, or, with several samples, a lower mean pass@k), 2 when a report
//!   cannot be read or is malformed, or when the gate cannot say "no
//!   regression": a shared task is not judged on a side, NEW is not a
//!   judged pass (a pass cannot be a regression) and OLD is not already at
//!   the bottom (a judged fail with no sample passed), or, unless
//!   `--allow-missing`, NEW has no tasks or lacks one of OLD's.

pub(crate) mod compare;
pub(crate) mod json;
pub(crate) mod parse;
pub(crate) mod stats;
pub(crate) mod text;

pub(crate) use compare::compare;
pub(crate) use parse::load;
