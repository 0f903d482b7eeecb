//! What a live run shares with the tabs watching it: every event so far (a tab that connects
//! late is sent them all, so it sees what a tab there from the start saw), the latest step's
//! trace, and what the page last asked the run to do.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;
use vramlab::engine::train::live::{Control, RunState, event};

/// One server-sent event, framed as it goes on the wire.
pub type Frame = Arc<str>;

#[derive(Default)]
pub struct Hub {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Every event so far but the traces, framed.
    events: Vec<Frame>,
    /// The latest step's trace and a count of the traces published (a tab sends the trace
    /// again when the count moved).
    trace: Option<(u64, Frame)>,
    paused: bool,
    stop: bool,
    /// The run has sent its last event: the streams end once they sent it.
    ended: bool,
    /// Streams open now.
    streams: usize,
}

/// What a stream has still to send, and whether it is done after that.
pub struct News {
    pub frames: Vec<Frame>,
    /// The events sent so far and the trace count, to pass to the next wait.
    pub cursor: Cursor,
    pub ended: bool,
}

#[derive(Clone, Copy, Default)]
pub struct Cursor {
    events: usize,
    trace: u64,
}

/// The frame of `name` with `data` (JSON, one line: serde_json escapes newlines in strings).
fn frame(name: &str, data: &impl Serialize) -> Frame {
    let json = serde_json::to_string(data).expect("the live events serialize");
    format!("event: {name}\ndata: {json}\n\n").into()
}

impl Hub {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A stream thread that panicked leaves nothing half-written in the state.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn publish(&self, name: &str, data: &impl Serialize) {
        let frame = frame(name, data);
        self.lock().events.push(frame);
        self.changed.notify_all();
    }

    pub fn publish_trace(&self, data: &impl Serialize) {
        let frame = frame(event::TRACE, data);
        let mut state = self.lock();
        let count = state.trace.as_ref().map_or(1, |(count, _)| count + 1);
        state.trace = Some((count, frame));
        drop(state);
        self.changed.notify_all();
    }

    /// The run's last event was published: streams close once they have sent it.
    pub fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_all();
    }

    /// Take a control from the page; the state it leaves is announced to every tab.
    pub fn control(&self, control: Control) {
        let mut state = self.lock();
        match control {
            Control::Pause => state.paused = true,
            Control::Resume => state.paused = false,
            Control::Stop => {
                state.stop = true;
                state.paused = false;
            }
        }
        let now = if state.paused {
            RunState::Paused
        } else {
            RunState::Running
        };
        state.events.push(frame(event::STATE, &now));
        drop(state);
        self.changed.notify_all();
    }

    /// Before each step: wait while the run is paused; true when the page asked it to stop.
    pub fn stop_requested(&self) -> bool {
        let state = self.lock();
        let state = self
            .changed
            .wait_while(state, |s| s.paused && !s.stop)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state.stop
    }

    /// A stream opened; it calls [`Hub::closed`] when it ends.
    pub fn opened(&self) {
        self.lock().streams += 1;
    }

    pub fn closed(&self) {
        self.lock().streams -= 1;
        self.changed.notify_all();
    }

    /// What a stream at `cursor` has to send, waiting up to `wait` for something new (an empty
    /// answer lets the stream send a keep-alive, which is how a closed tab is noticed).
    pub fn news(&self, cursor: Cursor, wait: Duration) -> News {
        let state = self.lock();
        let behind = |s: &State| {
            s.events.len() > cursor.events
                || s.trace
                    .as_ref()
                    .is_some_and(|(count, _)| *count != cursor.trace)
                || s.ended
        };
        let (state, _) = self
            .changed
            .wait_timeout_while(state, wait, |s| !behind(s))
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut frames: Vec<Frame> = state.events[cursor.events..].to_vec();
        let mut next = Cursor {
            events: state.events.len(),
            trace: cursor.trace,
        };
        if let Some((count, trace)) = &state.trace
            && *count != cursor.trace
        {
            frames.push(trace.clone());
            next.trace = *count;
        }
        News {
            frames,
            cursor: next,
            ended: state.ended,
        }
    }

    /// After the run's last event: give the open streams up to `limit` to send it (a tab
    /// that is watching should see the end before the process exits).
    pub fn drain(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut state = self.lock();
        while state.streams > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_stream_gets_every_event_then_the_latest_trace_only() {
        let hub = Hub::new();
        hub.publish(event::STEP, &1);
        hub.publish_trace(&"first");
        hub.publish(event::STEP, &2);
        hub.publish_trace(&"second");
        let news = hub.news(Cursor::default(), Duration::ZERO);
        let text: Vec<&str> = news.frames.iter().map(|f| &**f).collect();
        assert_eq!(
            text,
            [
                "event: step\ndata: 1\n\n",
                "event: step\ndata: 2\n\n",
                "event: trace\ndata: \"second\"\n\n"
            ]
        );
        assert!(!news.ended);
        let again = hub.news(news.cursor, Duration::from_millis(1));
        assert!(again.frames.is_empty());
        hub.control(Control::Pause);
        hub.end();
        let last = hub.news(again.cursor, Duration::ZERO);
        assert_eq!(&*last.frames[0], "event: state\ndata: \"paused\"\n\n");
        assert!(last.ended);
    }

    #[test]
    fn stop_ends_a_pause() {
        let hub = Hub::new();
        hub.control(Control::Pause);
        let waiting = {
            let hub = hub.clone();
            std::thread::spawn(move || hub.stop_requested())
        };
        std::thread::sleep(Duration::from_millis(20));
        hub.control(Control::Stop);
        assert!(waiting.join().unwrap());
    }
}
