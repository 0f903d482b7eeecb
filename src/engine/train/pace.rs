//! Step time as the device completes it: the wall time between two awaited loss readbacks,
//! over the steps between them. A readback waits for everything queued before it, so a window
//! between two of them times finished work. In the browser a step returns once its work is
//! queued, so this is the step time there; natively, where every step ends with a sync, it
//! agrees with the steps' own `ms`. The first window opens at the first readback (after the
//! steps that compiled the kernels) and no window holds an evaluation.

use web_time::Instant;

#[derive(Default)]
pub(crate) struct Pace {
    /// The step whose readback opened the current window, and when.
    since: Option<(usize, Instant)>,
    /// Wall ms per step of each closed window.
    windows: Vec<f64>,
}

impl Pace {
    /// An awaited readback after `step` has just finished everything queued up to it.
    pub fn completed(&mut self, step: usize) {
        if let Some((from, at)) = self.since
            && step > from
        {
            let ms = at.elapsed().as_secs_f64() * 1e3;
            self.windows.push(ms / (step - from) as f64);
        }
    }

    /// Open the next window after `step`, now that its readback (and evaluation) are done.
    pub fn restart(&mut self, step: usize) {
        self.since = Some((step, Instant::now()));
    }

    /// The median over the closed windows of their ms per step.
    pub fn median_ms(&self) -> Option<f64> {
        let mut windows = self.windows.clone();
        windows.sort_by(f64::total_cmp);
        let n = windows.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(windows[n / 2]),
            _ => Some((windows[n / 2 - 1] + windows[n / 2]) / 2.0),
        }
    }
}
