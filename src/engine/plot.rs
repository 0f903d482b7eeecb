//! What a chart of a run needs from it, whichever front draws it.

/// At most `max` points of `points` (ordered by x): each of `max / 2` buckets keeps its lowest
/// and highest point, in x order, so a peak is never thinned away.
pub fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    thin_by(points.len(), |i| points[i], max)
}

/// [`thin`] of the `len` points `point(0)`, `point(1)`, ..., made one at a time: a front drawing
/// a long run picks the points from what it keeps of each step, instead of making every point
/// first and thinning a copy (the page's memory grew by each redraw's full-length series).
pub fn thin_by(len: usize, point: impl Fn(usize) -> (f64, f64), max: usize) -> Vec<(f64, f64)> {
    if len <= max {
        return (0..len).map(point).collect();
    }
    let per_bucket = len.div_ceil(max / 2);
    (0..len)
        .step_by(per_bucket)
        .flat_map(|start| {
            let bucket = || (start..(start + per_bucket).min(len)).map(&point);
            let by_y = |a: &(f64, f64), b: &(f64, f64)| a.1.total_cmp(&b.1);
            let low = bucket().min_by(by_y).unwrap_or_default();
            let high = bucket().max_by(by_y).unwrap_or_default();
            if low.0 <= high.0 {
                [low, high]
            } else {
                [high, low]
            }
        })
        .collect()
}

/// A y axis from zero with round ticks in one unit: each step between ticks is 1, 2 or 5 times
/// a power of ten, the top a whole number of steps, and a chart of bytes reads in whichever of
/// KiB, MiB or GiB keeps its numbers between 1 and 1,024.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    /// The unit the ticks and read-outs are in.
    pub unit: &'static str,
    /// A value in the chart's own unit times this is in `unit`.
    pub scale: f64,
    /// The top of the axis, in `unit`.
    pub top: f64,
    /// Between two ticks, in `unit`.
    pub step: f64,
}

/// Ticks an axis shows at most, past zero.
const MAX_INTERVALS: f64 = 5.0;

impl Axis {
    /// An axis for values up to `max`, given in `unit`. Only "MiB" changes unit.
    pub fn new(max: f64, unit: &'static str) -> Self {
        let max = if max.is_finite() { max.max(0.0) } else { 0.0 };
        let (unit, scale) = match unit {
            "MiB" if max >= 1024.0 => ("GiB", 1.0 / 1024.0),
            "MiB" if max > 0.0 && max < 1.0 => ("KiB", 1024.0),
            other => (other, 1.0),
        };
        let shown = max * scale;
        if shown <= 0.0 {
            return Self {
                unit,
                scale,
                top: 1.0,
                step: 0.2,
            };
        }
        let power = 10f64.powf((shown / MAX_INTERVALS).log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * power)
            .find(|&step| shown / step <= MAX_INTERVALS + 1e-9)
            .unwrap_or(10.0 * power);
        // A hair of tolerance, so 2.0000000001 of steps of 1 does not add a third.
        let top = (shown / step - 1e-9).ceil().max(1.0) * step;
        Self {
            unit,
            scale,
            top,
            step,
        }
    }

    /// The ticks from zero to the top, in `unit`.
    pub fn ticks(&self) -> Vec<f64> {
        let count = (self.top / self.step).round() as usize;
        (0..=count).map(|i| i as f64 * self.step).collect()
    }

    /// The top in the chart's own unit, for scaling its points.
    pub fn top_given(&self) -> f64 {
        self.top / self.scale
    }

    /// A tick's label: as many decimals as the step needs, no more.
    pub fn label(&self, tick: f64) -> String {
        let decimals = if self.step >= 1.0 {
            0
        } else {
            (-self.step.log10()).ceil() as usize
        };
        format!("{tick:.decimals$}")
    }

    /// A value given in the chart's own unit, as a number in the axis's unit: two decimals,
    /// or three below 1.
    pub fn number(&self, given: f64) -> String {
        let v = given * self.scale;
        if v.abs() >= 1.0 || v == 0.0 {
            format!("{v:.2}")
        } else {
            format!("{v:.3}")
        }
    }

    /// [`Axis::number`] with the unit: a read-out.
    pub fn reading(&self, given: f64) -> String {
        format!("{} {}", self.number(given), self.unit)
    }
}

/// Steps per second over a sliding window. `done` holds (steps completed, time in ms) as they
/// were stamped, in order; several steps may share a time (their losses came back together),
/// and when each of those finished is not known, so they share the rate of the last of them:
/// the steps since the earliest stamp at most `window` points before it with an earlier time,
/// over the time since. A point with no earlier stamp in reach gets no rate.
pub fn steps_per_second(done: &[(usize, f64)], window: usize) -> Vec<(f64, f64)> {
    let rate_at = |i: usize| {
        let (steps, at) = done[i];
        let from = (i.saturating_sub(window)..i).find(|&j| done[j].1 < at)?;
        let (steps_from, at_from) = done[from];
        Some((steps - steps_from) as f64 / ((at - at_from) / 1000.0))
    };
    (1..done.len())
        .filter_map(|i| {
            let last = (i..done.len())
                .take_while(|&j| done[j].1 == done[i].1)
                .last()?;
            Some((done[i].0 as f64, rate_at(last)?))
        })
        .collect()
}

/// The index of the x in `xs` (ascending) nearest to `x`.
pub fn nearest(xs: &[f64], x: f64) -> Option<usize> {
    if xs.is_empty() {
        return None;
    }
    let after = xs.partition_point(|&v| v < x);
    let candidates = [after.checked_sub(1), (after < xs.len()).then_some(after)];
    candidates
        .into_iter()
        .flatten()
        .min_by(|&a, &b| (xs[a] - x).abs().total_cmp(&(xs[b] - x).abs()))
}

#[cfg(test)]
mod tests {
    use super::{Axis, nearest, steps_per_second, thin};

    #[test]
    fn thinning_keeps_the_peaks_and_the_bound() {
        let points: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64, if i == 54_321 { 1e6 } else { (i % 7) as f64 }))
            .collect();
        let thinned = thin(&points, 2000);
        assert!(thinned.len() <= 2000, "{}", thinned.len());
        assert!(thinned.iter().any(|p| p.1 == 1e6), "the peak survives");
        assert!(
            thinned.windows(2).all(|w| w[0].0 <= w[1].0),
            "x stays ordered"
        );
        assert_eq!(thin(&points[..10], 2000), points[..10].to_vec());
        // The page thins at the source and its chart thins again: the second must keep all.
        assert_eq!(thin(&thinned, 2000), thinned);
    }

    #[test]
    fn axes_tick_at_round_numbers_in_one_unit() {
        // The figures of the issue: 0.824 and 2.3 MiB tops.
        let small = Axis::new(0.824, "MiB");
        assert_eq!((small.unit, small.step, small.top), ("KiB", 200.0, 1000.0));
        assert_eq!(small.ticks(), [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]);
        let mid = Axis::new(2.3, "MiB");
        assert_eq!((mid.unit, mid.step, mid.top), ("MiB", 0.5, 2.5));
        assert_eq!(mid.label(1.5), "1.5");
        assert_eq!(mid.reading(2.3), "2.30 MiB");
        let big = Axis::new(25_221.0, "MiB");
        assert_eq!((big.unit, big.step, big.top), ("GiB", 5.0, 25.0));
        assert!((big.top_given() - 25.0 * 1024.0).abs() < 1e-9);
        let exact = Axis::new(2.0, "per second");
        assert_eq!((exact.step, exact.top), (0.5, 2.0));
        assert_eq!(exact.label(0.5), "0.5");
        let loss = Axis::new(0.6694, "cross-entropy");
        assert_eq!(
            (loss.step, loss.top, loss.label(0.2)),
            (0.2, 0.8, "0.2".to_string())
        );
        let empty = Axis::new(f64::NAN, "MiB");
        assert_eq!((empty.unit, empty.top), ("MiB", 1.0));
    }

    #[test]
    fn rates_need_an_earlier_stamp_and_count_steps_between() {
        // Started at 0 ms; steps 1-10 came back together at 2,000 ms, 11-20 at 3,000 ms.
        let mut done = vec![(0, 0.0)];
        done.extend((1..=10).map(|s| (s, 2000.0)));
        done.extend((11..=20).map(|s| (s, 3000.0)));
        let rates = steps_per_second(&done, 10);
        assert_eq!(rates.len(), 20);
        // The first ten came back together: each has their common rate, 10 steps in 2 s.
        assert_eq!(rates[0], (1.0, 5.0));
        assert_eq!(rates[9], (10.0, 5.0));
        // Step 11 looks back to step 1's stamp (the window), 10 steps in one second.
        assert_eq!(rates[10], (11.0, 10.0));
        // Without the start, the first group has nothing earlier to measure from.
        assert!(steps_per_second(&done[1..11], 10).is_empty());
    }

    #[test]
    fn the_nearest_x_wins_and_ends_clamp() {
        let xs = [1.0, 2.0, 4.0];
        assert_eq!(nearest(&xs, 2.9), Some(1));
        assert_eq!(nearest(&xs, 3.1), Some(2));
        assert_eq!(nearest(&xs, -5.0), Some(0));
        assert_eq!(nearest(&xs, 9.0), Some(2));
        assert_eq!(nearest(&[], 1.0), None);
    }
}
