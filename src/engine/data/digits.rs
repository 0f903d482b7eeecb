//! The 8x8 handwritten digits (UCI, via scikit-learn; see README.md beside this file), embedded.

use std::io::Read;

use flate2::read::GzDecoder;

const DIGITS_GZ: &[u8] = include_bytes!("digits.csv.gz");
pub(crate) const PIXELS: usize = 64;
pub(crate) const COUNT: usize = 1797;

/// Every digit as 64 grey levels scaled to 0..=1, and its label.
pub(crate) fn load() -> Result<Vec<([f32; PIXELS], i64)>, String> {
    let mut text = String::new();
    GzDecoder::new(DIGITS_GZ)
        .read_to_string(&mut text)
        .map_err(|err| format!("digits.csv.gz does not decompress: {err}"))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(row, line)| {
            parse_row(line).map_err(|err| format!("digits.csv line {}: {err}", row + 1))
        })
        .collect()
}

fn parse_row(line: &str) -> Result<([f32; PIXELS], i64), String> {
    let mut pixels = [0f32; PIXELS];
    let mut fields = line.split(',');
    for pixel in pixels.iter_mut() {
        let field = fields.next().ok_or("too few fields")?;
        let value: f32 = field
            .trim()
            .parse()
            .map_err(|_| format!("{field:?} is not a number"))?;
        *pixel = value / 16.0;
    }
    let label_field = fields.next().ok_or("no label")?;
    let label: f32 = label_field
        .trim()
        .parse()
        .map_err(|_| format!("label {label_field:?} is not a number"))?;
    Ok((pixels, label as i64))
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_digits_load_with_ten_classes() {
        let digits = super::load().unwrap();
        assert_eq!(digits.len(), super::COUNT);
        let mut seen = [0usize; 10];
        for (pixels, label) in &digits {
            assert!(pixels.iter().all(|p| (0.0..=1.0).contains(p)));
            seen[*label as usize] += 1;
        }
        assert!(seen.iter().all(|&count| count > 150), "{seen:?}");
    }
}
