//! What a live run shares with the tabs watching it: every event so far (a tab that connects
//! late is sent them all, so it sees what a tab there from the start saw), the latest step's
//! trace, and what the page last asked the run to do (passed on to the run's own process when
//! it is a subprocess of a search or of the claims).

use std::io::Write;
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
    /// Where the page's controls go on to, one word a line: the standard input of the
    /// subprocess running the current trial (`None` between trials, or for `train --live`).
    downstream: Mutex<Option<Box<dyn Write + Send>>>,
}

#[derive(Default)]
struct State {
    /// Every event so far but the traces, framed.
    events: Vec<Frame>,
    /// The latest step's trace (none since a run started and before its first step).
    trace: Option<Frame>,
    /// The traces published so far: a tab sends the trace when the count moved.
    traces: u64,
    paused: bool,
    stop: bool,
    /// The run has sent its last event: the streams end once they sent it.
    ended: bool,
    /// Streams open now.
    streams: usize,
    /// A stream has opened at some point.
    watched: bool,
}

impl State {
    /// An event for every tab; a run's start drops the last run's trace (a tab that connects
    /// before the new run's first step must not show the old one's memory as its own).
    fn push(&mut self, name: &str, frame: Frame) {
        if name == event::STARTED {
            self.trace = None;
        }
        self.events.push(frame);
    }
}

/// What a stream has still to send, and whether it is done after that.
pub struct News {
    pub frames: Vec<Frame>,
    /// The events sent so far and the trace count, to pass to the next wait.
    pub cursor: Cursor,
    pub ended: bool,
}

#[cfg(test)]
impl News {
    /// The frames as text, for a test to compare.
    pub fn texts(&self) -> Vec<&str> {
        self.frames.iter().map(|f| &**f).collect()
    }
}

#[derive(Clone, Copy, Default)]
pub struct Cursor {
    events: usize,
    trace: u64,
}

/// The frame of `name` with `data` (JSON, one line: serde_json escapes newlines in strings).
fn frame(name: &str, data: &impl Serialize) -> Frame {
    let json = serde_json::to_string(data).expect("the live events serialize");
    raw_frame(name, &json)
}

/// Send `control` on to a trial's process, one word a line. A trial that ended meanwhile has
/// nothing to act on, so a closed pipe is not an error.
fn tell(to: &mut dyn Write, control: Control) {
    let _ = writeln!(to, "{}", control.word()).and_then(|()| to.flush());
}

/// The frame of `name` with `json`, already serialized on one line.
fn raw_frame(name: &str, json: &str) -> Frame {
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
        self.publish_frame(name, frame(name, data));
    }

    /// An event another process serialized (one line of JSON), passed on as it came.
    pub fn publish_json(&self, name: &str, json: &str) {
        self.publish_frame(name, raw_frame(name, json));
    }

    pub fn publish_trace(&self, data: &impl Serialize) {
        self.publish(event::TRACE, data);
    }

    /// A trace replaces the last one (a late tab is sent the latest only); any other event is
    /// kept for every tab.
    fn publish_frame(&self, name: &str, frame: Frame) {
        let mut state = self.lock();
        if name == event::TRACE {
            state.traces += 1;
            state.trace = Some(frame);
        } else {
            state.push(name, frame);
        }
        drop(state);
        self.changed.notify_all();
    }

    /// The command's last event: [`event::OVER`] is published, and streams close once they
    /// have sent it.
    pub fn end(&self) {
        let mut state = self.lock();
        state.events.push(frame(event::OVER, &()));
        state.ended = true;
        drop(state);
        self.changed.notify_all();
    }

    /// Pass the page's controls on to `to` (one word a line) until the next call; `None`
    /// passes them nowhere. A stop or pause already asked for is passed on at once, so a
    /// trial started after it stops or waits before its first step.
    pub fn forward_controls(&self, to: Option<Box<dyn Write + Send>>) {
        let mut downstream = self
            .downstream
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *downstream = to;
        if let Some(to) = downstream.as_mut() {
            let state = self.lock();
            let pending = if state.stop {
                Some(Control::Stop)
            } else {
                state.paused.then_some(Control::Pause)
            };
            drop(state);
            if let Some(control) = pending {
                tell(to, control);
            }
        }
    }

    /// Whether the page asked the command to stop (without waiting out a pause).
    pub fn stopped(&self) -> bool {
        self.lock().stop
    }

    /// Take a control from the page; the state it leaves is announced to every tab.
    pub fn control(&self, control: Control) {
        // Held throughout, so the controls reach the run in the order the state took them.
        let mut downstream = self
            .downstream
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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
        if let Some(to) = downstream.as_mut() {
            tell(to, control);
        }
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
        let mut state = self.lock();
        state.streams += 1;
        state.watched = true;
        drop(state);
        self.changed.notify_all();
    }

    /// Whether a tab has opened the run's events at some point.
    pub fn watched(&self) -> bool {
        self.lock().watched
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
                || (s.trace.is_some() && s.traces != cursor.trace)
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
        if let Some(trace) = &state.trace
            && state.traces != cursor.trace
        {
            frames.push(trace.clone());
            next.trace = state.traces;
        }
        News {
            frames,
            cursor: next,
            ended: state.ended,
        }
    }

    /// After the run's last event: wait up to `first` for a first tab when none has opened
    /// the events yet (a short command can end before a person's browser has loaded the
    /// page), then give the open streams up to `limit` to send it all (a tab that is watching
    /// should see the end before the process exits).
    pub fn drain(&self, first: Duration, limit: Duration) {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, first, |s| !s.watched)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let deadline = Instant::now() + limit;
        let mut state = state;
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
        assert_eq!(
            news.texts(),
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
        assert_eq!(
            last.texts(),
            [
                "event: state\ndata: \"paused\"\n\n",
                "event: over\ndata: null\n\n"
            ]
        );
        assert!(last.ended);
    }

    /// A writer whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().write(bytes)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn controls_go_on_to_the_trial_running_and_a_new_trial_hears_a_pause_or_stop_in_force() {
        let hub = Hub::new();
        let first = Shared::default();
        hub.forward_controls(Some(Box::new(first.clone())));
        hub.control(Control::Pause);
        hub.control(Control::Resume);
        hub.forward_controls(None);
        hub.control(Control::Pause);
        let second = Shared::default();
        hub.forward_controls(Some(Box::new(second.clone())));
        hub.control(Control::Stop);
        let words = |w: &Shared| String::from_utf8(w.0.lock().unwrap().clone()).unwrap();
        assert_eq!(words(&first), "pause\nresume\n");
        assert_eq!(words(&second), "pause\nstop\n");
        assert!(hub.stopped());
        let third = Shared::default();
        hub.forward_controls(Some(Box::new(third.clone())));
        assert_eq!(words(&third), "stop\n");
    }

    #[test]
    fn events_of_another_process_pass_as_they_came_and_its_traces_as_the_latest() {
        let hub = Hub::new();
        hub.publish_json(event::NOTE, "\"trial 1\"");
        hub.publish_json(event::TRACE, "{\"a\":1}");
        hub.publish_json(event::TRACE, "{\"a\":2}");
        let news = hub.news(Cursor::default(), Duration::ZERO);
        assert_eq!(
            news.texts(),
            [
                "event: note\ndata: \"trial 1\"\n\n",
                "event: trace\ndata: {\"a\":2}\n\n"
            ]
        );
    }

    #[test]
    fn the_end_waits_for_a_first_tab_then_for_the_open_ones_to_close() {
        let hub = Hub::new();
        hub.end();
        let started = Instant::now();
        hub.drain(Duration::from_millis(50), Duration::from_secs(5));
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "nobody watched: it waits"
        );
        let tab = {
            let hub = hub.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                hub.opened();
                std::thread::sleep(Duration::from_millis(20));
                hub.closed();
            })
        };
        let started = Instant::now();
        hub.drain(Duration::from_secs(5), Duration::from_secs(5));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the tab came and went"
        );
        assert!(hub.watched());
        tab.join().unwrap();
    }

    #[test]
    fn a_new_run_drops_the_last_runs_trace() {
        let hub = Hub::new();
        hub.publish_json(event::STARTED, "1");
        hub.publish_json(event::TRACE, "\"first run's\"");
        let seen = hub.news(Cursor::default(), Duration::ZERO);
        hub.publish_json(event::STARTED, "2");
        let late = hub.news(Cursor::default(), Duration::ZERO);
        assert!(late.frames.iter().all(|f| !f.contains("first run's")));
        hub.publish_json(event::TRACE, "\"second run's\"");
        let news = hub.news(seen.cursor, Duration::ZERO);
        assert_eq!(
            news.texts(),
            [
                "event: started\ndata: 2\n\n",
                "event: trace\ndata: \"second run's\"\n\n"
            ]
        );
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
