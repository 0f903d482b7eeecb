//! The process's global allocator: the system's, counting what each thread holds so the fuzz
//! harness can hold one parse to a bound. Counting is per thread (a parse runs on one thread;
//! other threads' work, and the native suite's parallel tests, do not disturb it) and costs a
//! thread-local add per call, so every command keeps it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

pub struct Counting;

thread_local! {
    /// Bytes this thread allocated minus those it freed (negative when it frees another's).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The most `LIVE` reached since the last [`Watch::start`].
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// The largest single request a watched parse may make; larger ones are refused.
    static LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
    /// What the watched parse is, for the message when a request is refused.
    static WATCHED: Cell<(&'static str, u64)> = const { Cell::new(("", 0)) };
}

fn note(delta: isize) {
    // `try_with`: an allocation during thread teardown must not fail on the counters.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

/// Whether this thread may make a request of `size` bytes now. A refused request aborts the
/// process (Rust's allocation failure), so say first which input asked for it.
fn allowed(size: usize) -> bool {
    let limit = LIMIT.try_with(Cell::get).unwrap_or(usize::MAX);
    if size <= limit {
        return true;
    }
    let (target, input) = WATCHED.try_with(Cell::get).unwrap_or(("", 0));
    // No allocation here: stderr is unbuffered and the message is formatted straight into it.
    let _ = writeln!(
        std::io::stderr(),
        "vramlab fuzz: {target} input #{input} asked for {size} bytes at once, over its bound of \
         {limit} (rerun it with --target {target} --index {input} and the same --seed)"
    );
    false
}

/// A new block of `layout` from `allocate`, refused past the bound and counted once given.
fn counted(layout: Layout, allocate: impl FnOnce() -> *mut u8) -> *mut u8 {
    if !allowed(layout.size()) {
        return std::ptr::null_mut();
    }
    let ptr = allocate();
    if !ptr.is_null() {
        note(layout.size() as isize);
    }
    ptr
}

// SAFETY: every call goes to `System` with the caller's layout and pointer unchanged; the
// counters only add and compare.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        counted(layout, || unsafe { System.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        counted(layout, || unsafe { System.alloc_zeroed(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) };
        note(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && !allowed(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as received.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        moved
    }
}

/// The bytes one stretch of this thread's work held at most, beyond what it started with.
pub struct Watch {
    start: isize,
}

impl Watch {
    /// Start watching; until [`Watch::stop`], a single request above `limit` bytes is refused
    /// (and the process aborts, naming `target`'s input `index`).
    pub fn start(limit: usize, target: &'static str, index: u64) -> Self {
        let start = LIVE.with(Cell::get);
        PEAK.with(|peak| peak.set(start));
        WATCHED.with(|watched| watched.set((target, index)));
        LIMIT.with(|l| l.set(limit));
        Self { start }
    }

    /// The most bytes held at once since the start, beyond those held at the start.
    pub fn stop(self) -> usize {
        LIMIT.with(|l| l.set(usize::MAX));
        (PEAK.with(Cell::get) - self.start).max(0) as usize
    }
}
