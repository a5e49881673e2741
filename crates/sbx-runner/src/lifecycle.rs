//! The runner's state and its whole lifecycle, in one place: `Load`,
//! `Case`, `Reset` and `Unload`, the loaded candidate, and the zygote a
//! reset spares. `pid1` reads the messages and calls these methods; no
//! other module sees the state.
//!
//! The invariant that protects candidates: nothing is loaded and no case
//! runs without a verified reset before it. Its flag is `Runner::clean`:
//! true at the start (nothing has run yet), cleared by every case before
//! anything of it is written or started, set only by a reset (or unload)
//! that verified the container, and checked by `load` and `case`.

use std::fs;
use std::path::Path;

use super::candidate::{
    build_is_as_loaded, clear_build, clear_dir, write_build, write_task, Loaded, WORK_DIR,
};
use super::case::{run_case, Setup};
use super::identity::Identity;
use super::posture::Posture;
use super::protocol::{Candidate, Case, CaseStatus, Message};
use super::reset::{self, Dirs, Spare};
use super::shebang;
use super::zygote::{self, Slot, Zygote};

/// The largest `max_output` a case may ask for (the result must fit a frame).
pub const MAX_OUTPUT: u64 = 32 << 20;

/// The runner's state between messages.
pub(crate) struct Runner {
    /// What every case runs with: the candidates' identity, the worker
    /// threads, the container's counters.
    setup: Setup,
    /// The reset's helper, run as the candidates' uid.
    wiper: reset::Wiper,
    /// The writable directories and `/dev` as they were at the start.
    dirs: Dirs,
    /// What children inherit from the runner, as it was at the start.
    posture: Posture,
    candidate: Option<Loaded>,
    /// No case ran since the last clean reset (or the start).
    clean: bool,
    /// A case's processes outlived the kill (`CaseStatus::Outlived`): a
    /// worker thread may still be blocked on what they held, so every
    /// reset from now on is dirty and the host discards the container.
    outlived: bool,
    /// The zygote that forks `python3 -c` cases, once one was needed.
    zygote: Slot,
}

impl Runner {
    /// Sets the runner up, once its own safety is in place: every thread a
    /// case needs is started before any candidate runs (a candidate that
    /// fills the pids limit cannot keep the runner from supervising it),
    /// then the container is recorded as a reset must leave it. The wipe
    /// helper is this executable run with `subcommand` (and `--wipe`).
    /// `Err` is the `Internal` message to send before exiting.
    pub(crate) fn start(
        identity: Identity,
        zygote: Slot,
        subcommand: &'static str,
    ) -> Result<Runner, String> {
        let setup = Setup::start(identity).map_err(|e| format!("threads: {e}"))?;
        let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
        Ok(Runner {
            setup,
            wiper: reset::Wiper {
                exe,
                subcommand,
                uid: identity.uid,
                gid: identity.gid,
            },
            dirs: Dirs::record(),
            posture: Posture::record(),
            candidate: None,
            clean: true,
            outlived: false,
            zygote,
        })
    }

    /// The runner's first message.
    pub(crate) fn hello(&self) -> Message {
        Message::Hello {
            sbx_version: crate::VERSION.into(),
            oom_counter: self.setup.reads_oom_kills(),
        }
    }

    /// `Load`: the previous candidate and its build go, and this one is
    /// kept (its build written), after a verified reset only.
    pub(crate) fn load(&mut self, c: Candidate) -> Message {
        let name = &c.file_name;
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
            return Message::Internal(format!("bad candidate file name `{}`", name.escape_debug()));
        }
        // No process of an earlier case may see what is loaded next.
        if !self.clean {
            return Message::Internal("a load needs a clean reset before it".into());
        }
        // The previous candidate and its build go first, whatever comes next.
        self.candidate = None;
        if let Err(e) = clear_build() {
            return Message::Internal(format!("remove the previous build: {e}"));
        }
        let given_command = c.interpreter.is_some();
        let interpreter = match c.interpreter {
            Some(words) if words.is_empty() => {
                return Message::Internal("empty interpreter".into())
            }
            Some(words) => words,
            None => match shebang::parse(&c.program) {
                Ok(words) => words,
                Err(message) => {
                    self.candidate = None;
                    return Message::Refused(message);
                }
            },
        };
        let build = match c.build {
            None => None,
            Some(_) if !given_command => {
                return Message::Internal("a build needs its run command".into())
            }
            Some(files) => match write_build(&files) {
                Ok(built) => Some(built),
                Err(e) => {
                    // Nothing half-written stays for the next candidate.
                    let _ = clear_build();
                    return Message::Internal(format!("write the build: {e}"));
                }
            },
        };
        self.candidate = Some(Loaded {
            file_name: c.file_name,
            program: c.program,
            interpreter,
            build,
        });
        Message::Loaded
    }

    /// `Case`: the loaded candidate's file written afresh, and the case
    /// run (by the zygote, started here if the candidate can use one).
    pub(crate) fn case(&mut self, case: &Case) -> Message {
        if !self.clean {
            return Message::Internal("a case needs a clean reset before it".into());
        }
        if case.max_output > MAX_OUTPUT {
            return Message::Internal(format!("max output above {MAX_OUTPUT} bytes"));
        }
        let Some(loaded) = &self.candidate else {
            return Message::Internal("no candidate loaded".into());
        };
        // The zygote starts while the container is as a verified reset
        // left it, before this case's file is written. (Once it runs,
        // `run_case` alone asks whether the case can be forked.)
        if matches!(self.zygote, Slot::Idle) {
            let forkable =
                zygote::eligible(&loaded.interpreter, loaded.build.is_some(), &loaded.program);
            if let Some((program, _)) = forkable {
                self.zygote = match Zygote::start(program) {
                    Ok(z) => Slot::Running(z),
                    Err(_) => Slot::Unavailable,
                };
            }
        }
        self.clean = false;
        let file = loaded.path();
        if let Err(e) = write_task(&file, &loaded.program) {
            return Message::Internal(format!("write the candidate to {}: {e}", file.display()));
        }
        match run_case(&self.setup, &mut self.zygote, loaded, case) {
            Ok(result) => {
                self.outlived |= result.status == CaseStatus::Outlived;
                Message::Result(result)
            }
            Err(message) => Message::Internal(message),
        }
    }

    /// `Steps`: each step as if it came alone, in order, until one's
    /// answer does not let the next go on (anything but `Loaded` and a
    /// clean `ResetDone`); that answer, or the last step's.
    pub(crate) fn steps(&mut self, steps: Vec<Message>) -> Message {
        let mut answer = Message::Internal("no steps".into());
        for step in steps {
            answer = match step {
                Message::Load(candidate) => self.load(candidate),
                Message::Case(case) => self.case(&case),
                Message::Reset => self.reset(),
                Message::Unload => self.unload(),
                other => Message::Internal(format!("unexpected step {}", other.name())),
            };
            let go_on = matches!(
                answer,
                Message::Loaded | Message::ResetDone { clean: true, .. }
            );
            if !go_on {
                break;
            }
        }
        answer
    }

    /// `Reset`, between two cases of one candidate: it stays loaded.
    pub(crate) fn reset(&mut self) -> Message {
        self.reset_and(false)
    }

    /// `Unload`, between candidates: the candidate, its file and its build
    /// go too, and the reset verifies that they are gone.
    pub(crate) fn unload(&mut self) -> Message {
        self.reset_and(true)
    }

    /// What a reset spares: the zygote, while it runs.
    fn spare(&mut self) -> Option<Spare> {
        let uid = self.setup.identity().uid;
        self.zygote.pid().map(|zygote| Spare { zygote, uid })
    }

    /// The reset (and, with `unload`, the unload): the only place where
    /// `clean` becomes true again, once every check passed.
    fn reset_and(&mut self, unload: bool) -> Message {
        // Processes first (they could change the posture again), then the
        // posture, which a candidate may have changed from outside.
        let spare = self.spare();
        let done = reset::reset(&mut self.dirs, &self.wiper, spare);
        let posture = self.posture.restore();
        let dropped = if unload {
            self.candidate = None;
            clear_build()
                .and_then(|()| clear_dir(Path::new(WORK_DIR)))
                .map_err(|e| format!("unload the candidate: {e}"))
        } else {
            Ok(())
        };
        // Nobody but the runner can write /work and the build: they hold
        // the loaded candidate only (nothing once it is unloaded).
        let work = self.work_holds_only_the_program();
        let build = build_is_as_loaded(self.candidate.as_ref().and_then(|c| c.build.as_ref()));
        let held = if self.outlived {
            Err(
                "a process of an earlier case outlived the kill; the container is not reused"
                    .into(),
            )
        } else {
            Ok(())
        };
        let done = done.and(dropped).and(work).and(build).and(held);
        let done = match (done, posture) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
            (Err(a), Err(b)) => Err(format!("{a}; {b}")),
        };
        match done {
            Ok(()) => {
                self.clean = true;
                Message::ResetDone {
                    clean: true,
                    message: String::new(),
                }
            }
            Err(message) => {
                self.clean = false;
                Message::ResetDone {
                    clean: false,
                    message,
                }
            }
        }
    }

    fn work_holds_only_the_program(&self) -> Result<(), String> {
        let entries = fs::read_dir(WORK_DIR).map_err(|e| format!("{WORK_DIR}: {e}"))?;
        for entry in entries {
            let name = entry.map_err(|e| format!("{WORK_DIR}: {e}"))?.file_name();
            if self.candidate.as_ref().map(|c| c.file_name.as_str()) != name.to_str() {
                return Err(format!("{WORK_DIR} holds `{}`", name.to_string_lossy()));
            }
        }
        Ok(())
    }
}
