//! `budget`: a memory budget as written in a config, on the command line or in the URL.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::error::excerpt;

/// What a budget may be written as; error messages quote it.
pub const BUDGET_FORMS: &str = "a size such as 512MiB, 6GiB, 1536KiB or plain bytes, or a \
     fraction of the adapter's largest buffer in (0, 1] such as 0.8";

/// A memory budget as written: bytes, or a share of the adapter's limit (known only once the
/// device is up).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "BudgetText", into = "BudgetText")]
pub enum Budget {
    Bytes(u64),
    Fraction(f64),
}

impl Budget {
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let quoted = excerpt(text);
        let bad = || format!("{quoted:?} is not a budget; expected {BUDGET_FORMS}");
        let not_positive = || format!("{quoted:?} must be above zero; expected {BUDGET_FORMS}");
        let too_big = || format!("{quoted:?} is 2^64 bytes or more; expected {BUDGET_FORMS}");
        let split = text
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number = number.trim();
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            // A bare number: bytes or a fraction, see `from_number`.
            "" => 0,
            "b" => 1,
            "kib" | "k" => 1 << 10,
            "mib" | "m" => 1 << 20,
            "gib" | "g" => 1 << 30,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            _ => return Err(bad()),
        };
        // Whole numbers exactly: through f64, 2^53 + 1 bytes would come back as 2^53.
        if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
            let whole: u64 = number.parse().map_err(|_| too_big())?;
            return match (whole, scale) {
                (0, _) => Err(not_positive()),
                (1, 0) => Ok(Self::Fraction(1.0)),
                (whole, 0) => Ok(Self::Bytes(whole)),
                (whole, scale) => whole
                    .checked_mul(scale)
                    .map(Self::Bytes)
                    .ok_or_else(too_big),
            };
        }
        let number: f64 = number.parse().map_err(|_| bad())?;
        if !number.is_finite() || number <= 0.0 {
            return Err(not_positive());
        }
        if scale == 0 {
            return Self::from_number(number);
        }
        let bytes = (number * scale as f64).round();
        if bytes >= u64::MAX as f64 {
            return Err(too_big());
        }
        Ok(Self::Bytes(bytes.max(1.0) as u64))
    }

    /// A bare number: an integer above 1 is bytes, anything else a fraction.
    fn from_number(number: f64) -> Result<Self, String> {
        if number > 1.0 && number.fract() == 0.0 && number < u64::MAX as f64 {
            Ok(Self::Bytes(number as u64))
        } else if number > 0.0 && number <= 1.0 {
            Ok(Self::Fraction(number))
        } else {
            Err(format!(
                "{number} is neither whole bytes below 2^64 nor a fraction in (0, 1]; expected \
                 {BUDGET_FORMS}"
            ))
        }
    }

    /// The budget in bytes on an adapter whose largest buffer is `max_buffer_size`. wgpu and
    /// WebGPU expose no total-memory figure, so a fraction is of the largest buffer the device
    /// accepts.
    pub fn bytes(self, max_buffer_size: u64) -> u64 {
        match self {
            Self::Bytes(bytes) => bytes,
            Self::Fraction(share) => (max_buffer_size as f64 * share) as u64,
        }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Bytes(bytes) => {
                for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
                    if bytes >= size && bytes % size == 0 {
                        return write!(f, "{}{unit}", bytes / size);
                    }
                }
                // A bare 1 would read back as the fraction 1 (the whole adapter).
                let unit = if bytes == 1 { "B" } else { "" };
                write!(f, "{bytes}{unit}")
            }
            Self::Fraction(share) => write!(f, "{share}"),
        }
    }
}

/// How a budget appears in JSON: `"512MiB"`, `0.8` or `1048576`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum BudgetText {
    Number(f64),
    Text(String),
}

impl TryFrom<BudgetText> for Budget {
    type Error = String;
    fn try_from(text: BudgetText) -> Result<Self, String> {
        match text {
            BudgetText::Number(number) => Self::from_number(number),
            BudgetText::Text(text) => Self::parse(&text),
        }
    }
}

impl From<Budget> for BudgetText {
    fn from(budget: Budget) -> Self {
        match budget {
            Budget::Fraction(share) => Self::Number(share),
            bytes => Self::Text(bytes.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_forms_the_cli_documents() {
        assert_eq!(Budget::parse("512MiB"), Ok(Budget::Bytes(512 << 20)));
        assert_eq!(Budget::parse("6GiB"), Ok(Budget::Bytes(6 << 30)));
        assert_eq!(Budget::parse("1536KiB"), Ok(Budget::Bytes(1536 << 10)));
        assert_eq!(Budget::parse("1048576"), Ok(Budget::Bytes(1 << 20)));
        assert_eq!(Budget::parse("0.8"), Ok(Budget::Fraction(0.8)));
        assert_eq!(Budget::parse("1"), Ok(Budget::Fraction(1.0)));
        assert_eq!(Budget::parse("1.5MiB"), Ok(Budget::Bytes(3 << 19)));
        assert_eq!(Budget::parse("100mb"), Ok(Budget::Bytes(100_000_000)));
    }

    /// Found by `vramlab fuzz`: "0.0000001KiB" rounds to 1 byte, which was written back as
    /// "1", which reads as the fraction 1.
    #[test]
    fn one_byte_is_written_so_it_reads_back_as_bytes() {
        let one = Budget::parse("0.0000001KiB").unwrap();
        assert_eq!(one, Budget::Bytes(1));
        assert_eq!(Budget::parse(&one.to_string()), Ok(one));
        let json = serde_json::to_string(&one).unwrap();
        assert_eq!(
            serde_json::from_str::<Budget>(&json).unwrap(),
            one,
            "{json}"
        );
    }

    /// Whole numbers are read exactly (through f64, 2^53 + 1 became 2^53), and sizes of 2^64
    /// bytes or more are refused instead of saturating to 2^64 - 1.
    #[test]
    fn whole_bytes_are_exact_and_overflow_is_refused() {
        assert_eq!(
            Budget::parse("9007199254740993"),
            Ok(Budget::Bytes(9_007_199_254_740_993))
        );
        for huge in [
            "18446744073709551616",
            "17179869184GiB",
            "20000000000.5GiB",
            "18446744073709551616.0",
        ] {
            let err = Budget::parse(huge).expect_err(huge);
            assert!(err.contains("2^64"), "{huge}: {err}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_budget_and_says_what_is() {
        for bad in ["", "abc", "-1MiB", "0", "1.5", "12 parsecs", "NaN"] {
            let err = Budget::parse(bad).expect_err(bad);
            assert!(err.contains("512MiB"), "{bad}: {err}");
        }
    }

    #[test]
    fn round_trips_through_json() {
        for budget in [
            Budget::Bytes(512 << 20),
            Budget::Bytes(1000),
            Budget::Fraction(0.5),
        ] {
            let json = serde_json::to_string(&budget).unwrap();
            assert_eq!(
                serde_json::from_str::<Budget>(&json).unwrap(),
                budget,
                "{json}"
            );
        }
    }
}
