//! Function tests judged outside the candidate's process, and the Python
//! files they run (`prepare.py`, `harness.py`, `codec.py`; the files of
//! `../function_io/` they share with `humaneval::in_process`):
//! - `prepare`: the prepare step, once per image before judging: each
//!   test's plan of calls and checks, or why it runs in-process;
//! - `harness`: the program a sealed candidate is staged as, the words that
//!   run it, and the frame it writes, judged against the checks;
//! - `check_message`: what a failed function test says (call, returned,
//!   expected);
//! - `pyvalue`: plain Python data, read with bounds, and Python's `==` on it;
//! - `pyint`: Python's ints of any size and their arithmetic, for `pyvalue`.

pub(crate) mod check_message;
pub(crate) mod harness;
pub(crate) mod prepare;
pub(crate) mod pyint;
pub(crate) mod pyvalue;
