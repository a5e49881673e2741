//! Function tests judged outside the candidate's process (`harness`
//! says how), and the Python files it runs (`prepare.py`, `harness.py`,
//! `codec.py`; `../function_io/` it shares with `humaneval::in_process`):
//! - `harness`: the prepare step, the harness and the frame it writes,
//!   judged against the checks;
//! - `check_message`: what a failed function test says (call, returned,
//!   expected);
//! - `pyvalue`: plain Python data, read with bounds, and Python's `==` on it;
//! - `pyint`: Python's ints of any size and their arithmetic, for `pyvalue`.

pub(crate) mod check_message;
pub(crate) mod harness;
pub(crate) mod pyint;
pub(crate) mod pyvalue;
