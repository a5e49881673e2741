//! Which `--isolate` mode each engine of an eval judges in: the one asked
//! for, or `case` where sbx cannot be the runner in its containers, and
//! whether its case containers run their program through the runner's
//! `--supervise` wrapper.

use sbx_runner::MAX_OUTPUT;

use super::pool::Setup;
use crate::console;
use crate::error::{Error, Result};
use crate::runner::host::runner_unsupported;
use crate::session::{Delivery, Session};
use crate::spec::IsolateMode;

/// Sets each engine's `--isolate` mode: the one asked (`asked`), or `case` where
/// sbx cannot be the runner (another architecture, not a static
/// executable, a `--max-output` the protocol cannot carry), said in one
/// line per such engine. Stages the runner when some engine uses it.
pub(crate) fn choose(
    asked: IsolateMode,
    max_output: usize,
    session: &Session,
    setups: &mut [Setup],
) -> Result<()> {
    let mut staged = false;
    for setup in setups.iter_mut().filter(|s| s.left_out.is_none()) {
        let member = &mut setup.member;
        member.isolate = IsolateMode::Case;
        // A baked image for `case` mode would hold every candidate, each
        // able to run the others' code: refused rather than shared.
        let baked = matches!(member.delivery, Delivery::Image(_));
        let refuse_case = || {
            Error::Usage(format!(
                "--isolate case with --deliver image (engine `{}`) would put every candidate in one image, where each could run the others; use --isolate candidate or worker, or --deliver bind",
                member.label
            ))
        };
        if asked == IsolateMode::Case {
            if baked {
                return Err(refuse_case());
            }
            // Case containers run their program through the runner's
            // `--supervise` wrapper (its seccomp filter) where sbx can run.
            if runner_unsupported(&member.docker).is_none() {
                if !staged {
                    session.stage_runner()?;
                    staged = true;
                }
                member.exec_wrapper = true;
            }
            continue;
        }
        let unsupported = runner_unsupported(&member.docker);
        let why = if max_output as u64 > MAX_OUTPUT {
            Some(format!(
                "--max-output above {MAX_OUTPUT} bytes is more than the runner carries"
            ))
        } else {
            unsupported.clone()
        };
        if let Some(why) = why {
            if baked {
                return Err(refuse_case());
            }
            if unsupported.is_none() {
                if !staged {
                    session.stage_runner()?;
                    staged = true;
                }
                member.exec_wrapper = true;
            }
            console::note(&format!(
                "sbx: engine `{}`: {why}; judging there with --isolate case instead of {}",
                member.label,
                asked.name()
            ));
            continue;
        }
        if !staged {
            session.stage_runner()?;
            staged = true;
        }
        member.isolate = asked;
        // A candidate the runner refuses is judged in a case container.
        member.exec_wrapper = !baked;
    }
    Ok(())
}
