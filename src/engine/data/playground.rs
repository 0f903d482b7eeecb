//! The four 2-D classification sets of TensorFlow Playground: points in a square of half-side 5,
//! two classes. Shapes follow the playground's descriptions (circle inside a ring, xor quadrants,
//! two Gaussian blobs, two interleaved spirals); noise is a fraction of the coordinate range.

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use crate::engine::config::DataKind;

const RADIUS: f64 = 5.0;
/// Coordinates are divided by this so the model sees values in about [-1, 1].
const SCALE: f64 = 5.0;

/// `n` labelled points: `(x, y, class)` with class 0 or 1.
pub(crate) fn generate(
    kind: DataKind,
    n: usize,
    noise: f64,
    rng: &mut StdRng,
) -> Vec<(f32, f32, i64)> {
    let raw = match kind {
        DataKind::Circle => circle(n, noise, rng),
        DataKind::Xor => xor(n, noise, rng),
        DataKind::Gauss => gauss(n, noise, rng),
        DataKind::Spiral => spiral(n, noise, rng),
        other => unreachable!("{} is not a 2-D set", other.name()),
    };
    raw.into_iter()
        .map(|(x, y, c)| ((x / SCALE) as f32, (y / SCALE) as f32, c))
        .collect()
}

fn uniform(rng: &mut StdRng, lo: f64, hi: f64) -> f64 {
    rng.random_range(lo..hi)
}

fn circle(n: usize, noise: f64, rng: &mut StdRng) -> Vec<(f64, f64, i64)> {
    // Half inside radius 2.5, half in the ring 3.5..5; the label follows the noisy position.
    (0..n)
        .map(|i| {
            let (r_lo, r_hi) = if i < n / 2 {
                (0.0, RADIUS * 0.5)
            } else {
                (RADIUS * 0.7, RADIUS)
            };
            let r = uniform(rng, r_lo, r_hi);
            let angle = uniform(rng, 0.0, 2.0 * std::f64::consts::PI);
            let x = r * angle.sin() + uniform(rng, -RADIUS, RADIUS) * noise;
            let y = r * angle.cos() + uniform(rng, -RADIUS, RADIUS) * noise;
            let inside = (x * x + y * y).sqrt() < RADIUS * 0.5;
            (x, y, i64::from(inside))
        })
        .collect()
}

fn xor(n: usize, noise: f64, rng: &mut StdRng) -> Vec<(f64, f64, i64)> {
    // Keep points a little away from the axes so the quadrant is never ambiguous without noise.
    const PADDING: f64 = 0.3;
    let away = |v: f64| if v > 0.0 { v + PADDING } else { v - PADDING };
    (0..n)
        .map(|_| {
            let x = away(uniform(rng, -RADIUS, RADIUS));
            let y = away(uniform(rng, -RADIUS, RADIUS));
            let nx = x + uniform(rng, -RADIUS, RADIUS) * noise;
            let ny = y + uniform(rng, -RADIUS, RADIUS) * noise;
            (nx, ny, i64::from(nx * ny >= 0.0))
        })
        .collect()
}

fn gauss(n: usize, noise: f64, rng: &mut StdRng) -> Vec<(f64, f64, i64)> {
    // The blobs widen with noise: standard deviation from 0.5 (no noise) to 2 (full noise).
    let std = 0.5 + 1.5 * noise;
    let normal = Normal::new(0.0, std).expect("std is positive");
    (0..n)
        .map(|i| {
            let (cx, cy, class) = if i < n / 2 {
                (2.0, 2.0, 1)
            } else {
                (-2.0, -2.0, 0)
            };
            (cx + normal.sample(rng), cy + normal.sample(rng), class)
        })
        .collect()
}

fn spiral(n: usize, noise: f64, rng: &mut StdRng) -> Vec<(f64, f64, i64)> {
    let per_arm = n / 2;
    let mut points = Vec::with_capacity(n);
    for (class, phase) in [(1, 0.0), (0, std::f64::consts::PI)] {
        let count = if class == 1 { per_arm } else { n - per_arm };
        for i in 0..count {
            let t = i as f64 / count as f64;
            let r = t * RADIUS;
            let angle = 1.75 * t * 2.0 * std::f64::consts::PI + phase;
            let x = r * angle.sin() + uniform(rng, -1.0, 1.0) * noise * RADIUS * 0.5;
            let y = r * angle.cos() + uniform(rng, -1.0, 1.0) * noise * RADIUS * 0.5;
            points.push((x, y, class));
        }
    }
    points
}
