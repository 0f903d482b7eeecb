//! Real runs and plans in one process take turns. cubecl's dry run is process-wide: while a
//! plan's `DryRun` is open, every launch on every device and every thread is compiled and
//! dropped, so a real run's kernels issued meanwhile never run and its reads return whatever
//! its buffers held before. Seen in the test suite, where tests run two at a time: a tiny
//! Mixtral trained beside a plan read a first loss of 0.0054, then NaN, and its router sent
//! every token of a pass to one expert. So a run waits for the open plans to end and a plan for
//! the open runs of other threads. Runs share the device among themselves (the test suite's
//! GPU lock keeps its own to one at a time); a plan has the process to itself, for the launch
//! observer that reads the high-water mark is process-wide too: a plan made beside another
//! thread's plan read its device at the other's launches as well (and on the shared planning
//! device, the other's tensors), and `plan --compare-page`'s test saw an optimizer high-water
//! 524 KB over the same plan made alone.
//!
//! A thread does one thing at a time, so its own turns never wait for each other: a thread
//! that holds a run's turn may plan (the test suite holds one for each test that uses the
//! GPU, and some of those plan), as long as each plan ends before that thread launches real
//! work again; every plan the engine makes runs to its end where it starts. In wasm there is
//! one thread, so nothing waits: the page plans in a worker, a wasm instance of its own.
//!
//! The one way to deadlock: two threads each holding a turn of one kind and each waiting for a
//! turn of the other. Nothing in vramlab does it (the CLI runs one thing at a time, and the test
//! suite's GPU tests, the only ones that hold a run's turn while they plan, hold one lock).

use std::sync::{Condvar, Mutex, PoisonError};
use std::thread::ThreadId;

/// What a turn's launches do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launches {
    /// A real run: every launch runs.
    Executed,
    /// A plan: cubecl's dry run drops every launch in the process.
    Dropped,
}

/// An open turn; the next kind may start once every turn of this kind has been dropped.
#[derive(Debug)]
pub struct Turn {
    launches: Launches,
    thread: ThreadId,
}

/// The open turns, each with the thread that took it.
static OPEN: Mutex<Vec<(Launches, ThreadId)>> = Mutex::new(Vec::new());
static ENDED: Condvar = Condvar::new();

/// Wait until no other thread holds a turn this one excludes (a plan's, or any turn when this
/// is a plan), then open one of `launches`.
pub fn take_turn(launches: Launches) -> Turn {
    let thread = std::thread::current().id();
    let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
    while !cfg!(target_arch = "wasm32")
        && open.iter().any(|&(kind, held_by)| {
            held_by != thread && (kind == Launches::Dropped || launches == Launches::Dropped)
        })
    {
        open = ENDED.wait(open).unwrap_or_else(PoisonError::into_inner);
    }
    open.push((launches, thread));
    Turn { launches, thread }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = open
            .iter()
            .position(|&(kind, thread)| kind == self.launches && thread == self.thread)
        {
            open.swap_remove(at);
        }
        drop(open);
        ENDED.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A plan started on another thread while `held` is open: it must wait until `held` is
    /// dropped, then start.
    fn another_threads_plan_waits_for(held: Turn, what: &str) {
        let (sender, receiver) = mpsc::channel();
        let planner = std::thread::spawn(move || {
            let turn = take_turn(Launches::Dropped);
            sender.send(()).unwrap();
            drop(turn);
        });
        assert!(
            receiver.recv_timeout(Duration::from_millis(300)).is_err(),
            "another thread's plan waits while {what} is still open"
        );
        drop(held);
        receiver
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("the plan starts once {what} ends"));
        planner.join().unwrap();
    }

    /// One test for the whole module: the turns are process-wide, and tests run in parallel.
    #[test]
    fn a_plan_waits_for_other_threads_runs_and_plans_and_not_for_its_own() {
        let run = take_turn(Launches::Executed);
        let second_run = take_turn(Launches::Executed);
        // This thread's own runs do not hold its plan back.
        drop(take_turn(Launches::Dropped));
        drop(second_run);
        another_threads_plan_waits_for(run, "a run");
        another_threads_plan_waits_for(take_turn(Launches::Dropped), "a plan");
    }
}
