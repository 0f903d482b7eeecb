//! What a chart of a run needs from it, whichever front draws it.

/// At most `max` points of `points` (ordered by x): each of `max / 2` buckets keeps its lowest
/// and highest point, in x order, so a peak is never thinned away.
pub fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max {
        return points.to_vec();
    }
    let buckets = max / 2;
    let per_bucket = points.len().div_ceil(buckets);
    points
        .chunks(per_bucket)
        .flat_map(|bucket| {
            let by_y = |a: &&(f64, f64), b: &&(f64, f64)| a.1.total_cmp(&b.1);
            let low = bucket.iter().min_by(by_y).copied();
            let high = bucket.iter().max_by(by_y).copied();
            let (low, high) = (low.unwrap_or_default(), high.unwrap_or_default());
            if low.0 <= high.0 {
                [low, high]
            } else {
                [high, low]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::thin;

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
    }
}
