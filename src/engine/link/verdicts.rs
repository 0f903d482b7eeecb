//! The lessons' verdicts as a link carries them: `#lessons=` and a letter per claim of the
//! catalog, in the order `strategies::catalog::claims` lists them.

use crate::engine::claims::Verdict;
use crate::engine::error::excerpt;
use crate::engine::strategies::catalog;

/// A verdict as one letter (`-`: not run).
pub fn letter(verdict: Option<Verdict>) -> char {
    match verdict {
        Some(Verdict::Holds) => 'h',
        Some(Verdict::HoldsPartly) => 'p',
        Some(Verdict::DoesNotHoldHere) => 'd',
        Some(Verdict::NotRunHere) => 'n',
        Some(Verdict::NotMeasured) => 'm',
        None => '-',
    }
}

/// A letter's verdict: `Ok(None)` for `-`, `Err` for a letter that is none.
fn from_letter(c: char) -> Result<Option<Verdict>, ()> {
    Ok(Some(match c {
        'h' => Verdict::Holds,
        'p' => Verdict::HoldsPartly,
        'd' => Verdict::DoesNotHoldHere,
        'n' => Verdict::NotRunHere,
        'm' => Verdict::NotMeasured,
        '-' => return Ok(None),
        _ => return Err(()),
    }))
}

/// The verdicts a shared link carries, one per claim, or why they were refused.
pub fn shared_verdicts(letters: &str) -> Result<Vec<Option<Verdict>>, String> {
    let count = catalog::claims().count();
    let verdicts: Result<Vec<_>, ()> = letters.chars().map(from_letter).collect();
    match verdicts {
        Ok(verdicts) if verdicts.len() == count => Ok(verdicts),
        _ => Err(format!(
            "URL: lessons must be {count} letters from h, p, d, n, m and - (one per claim), not '{}'",
            excerpt(letters)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verdict_round_trips_through_its_letter() {
        let all = [
            None,
            Some(Verdict::Holds),
            Some(Verdict::HoldsPartly),
            Some(Verdict::DoesNotHoldHere),
            Some(Verdict::NotRunHere),
            Some(Verdict::NotMeasured),
        ];
        let count = catalog::claims().count();
        let verdicts: Vec<_> = all.iter().copied().cycle().take(count).collect();
        let letters: String = verdicts.iter().map(|&v| letter(v)).collect();
        assert_eq!(shared_verdicts(&letters), Ok(verdicts));
    }

    #[test]
    fn refuses_a_wrong_count_or_letter() {
        let count = catalog::claims().count();
        for bad in [
            "h".repeat(count - 1),
            "x".repeat(count),
            "h".repeat(count + 1),
        ] {
            let err = shared_verdicts(&bad).unwrap_err();
            assert!(err.contains(&format!("{count} letters")), "{err}");
        }
    }
}
