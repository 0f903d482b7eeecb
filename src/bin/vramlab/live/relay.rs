//! `find-batch --live` and `claims --live` run each trial in a `vramlab train` process of its
//! own (see `crate::subprocess` for why), so the process serving the page is not the one
//! training. Each such run is started with `--relay-live`: it writes its live events on its
//! standard error, framed as the page's stream frames them, and takes the page's controls on its
//! standard input, one word a line. The serving process passes the events on to its tabs and
//! the controls on to the run.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;

use anyhow::Context;
use vramlab::engine::train::live::{Control, event};
use vramlab::engine::{EngineError, Gpu, RunConfig, Timeline};

use super::hub::Hub;
use super::server;
use crate::progress::Progress;

/// The flag that starts a run as a relayed one.
pub const FLAG: &str = "--relay-live";

/// The relayed run's side: train `config` as `train --live` does, its events written on
/// standard error and the controls read from standard input; when standard input closes (the
/// serving process is gone) the run stops after the step in flight.
pub fn serve_parent(
    config: RunConfig,
    gpu: &Gpu,
    progress: &Progress,
) -> Result<Timeline, EngineError> {
    let hub = Hub::new();
    let controls = hub.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            // The serving process sends only words it parsed itself.
            if let Ok(control) = Control::parse(&line) {
                controls.control(control);
            }
        }
        controls.control(Control::Stop);
    });
    let events = hub.clone();
    // As a tab's stream is sent: one write a frame, so an error line of this process cannot
    // land inside one.
    let writer =
        std::thread::spawn(move || server::send_until_ended(&mut std::io::stderr(), &events));
    let ended = super::run_published(config, gpu, &hub, progress);
    hub.end();
    let _ = writer.join();
    ended
}

/// What a relayed run left when it ended.
pub struct Ended {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// Its standard error less the events.
    pub stderr: String,
}

/// The serving side: run `command` (a `vramlab train ... --relay-live`), its events passed on
/// to `hub`'s tabs and the page's controls on to it, until it exits.
pub fn run(mut command: Command, hub: &Hub) -> anyhow::Result<Ended> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting a relayed vramlab train")?;
    let stdin = child
        .stdin
        .take()
        .map(|s| Box::new(s) as Box<dyn Write + Send>);
    hub.forward_controls(stdin);
    let (mut stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (out, text) = std::thread::scope(|scope| {
        let relayed = scope.spawn(|| stderr.map(|e| pass_on(BufReader::new(e), hub)));
        let mut out = Vec::new();
        let read = match stdout.as_mut() {
            Some(s) => s.read_to_end(&mut out).map(|_| ()),
            None => Ok(()),
        };
        (read.map(|()| out), relayed.join())
    });
    let status = child.wait().context("waiting for a relayed vramlab train");
    // Its standard input closes here: nothing more is passed on to it.
    hub.forward_controls(None);
    Ok(Ended {
        status: status?,
        stdout: out.context("reading a relayed vramlab train's output")?,
        stderr: text.unwrap_or_default().unwrap_or_default(),
    })
}

/// Read a relayed run's standard error: its events go to `hub` (but its pause state and its
/// end: the serving process announces its own), and the rest is returned (its error, if any).
fn pass_on(reader: impl BufRead, hub: &Hub) -> String {
    let mut other = String::new();
    let mut name: Option<String> = None;
    for line in reader.lines() {
        let Ok(line) = line else { break };
        if line.starts_with(':') {
            // A comment: the stream's keep-alive.
        } else if let Some(event) = line.strip_prefix("event: ") {
            name = Some(event.to_string());
        } else if let (Some(data), Some(event)) = (line.strip_prefix("data: "), name.take()) {
            if event != event::STATE && event != event::OVER {
                hub.publish_json(&event, data);
            }
        } else if !line.is_empty() {
            other.push_str(&line);
            other.push('\n');
        }
    }
    other
}

/// A note about the command as a whole, on the page of a live command (`None`: not live).
pub fn note(hub: Option<&Arc<Hub>>, text: &str) {
    if let Some(hub) = hub {
        hub.publish(event::NOTE, &text);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::live::hub::Cursor;

    #[test]
    fn a_relayed_runs_events_pass_on_and_its_other_lines_are_kept_as_its_error() {
        let hub = Hub::new();
        let stderr = "event: started\ndata: {\"a\":1}\n\nevent: state\ndata: \"paused\"\n\n\
                      : keep-alive\n\nError: out of memory\nevent: step\ndata: 2\n\n\
                      event: over\ndata: null\n\n";
        let other = pass_on(stderr.as_bytes(), &hub);
        assert_eq!(other, "Error: out of memory\n");
        let news = hub.news(Cursor::default(), Duration::ZERO);
        assert_eq!(
            news.texts(),
            [
                "event: started\ndata: {\"a\":1}\n\n",
                "event: step\ndata: 2\n\n"
            ]
        );
    }
}
