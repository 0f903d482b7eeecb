//! `budget`: run as if the GPU had only this much memory (the
//! `set_per_process_memory_fraction` lesson, and "train on a 6 GB laptop").
//!
//! cubecl 0.11 has no cap to set: its `MemoryConfiguration` offers `Adaptive` or
//! `ExclusivePages` and nothing else, and its own `OutOfMemory` only reports a driver that
//! refused. So the engine enforces the budget at the points where its tensors are allocated:
//! the model's parameters and a resident data set when a run starts, then in every step the
//! batch upload, each activation, the loss, the gradients, the optimizer step and each
//! evaluation batch. A check waits for the device and reads the allocator, so what it compares
//! is what the allocator holds, not an estimate. When the pages the allocator keeps pass the
//! budget but the live bytes do not, the cache is released first and the pages read again, as a
//! real allocator retries after freeing its cache before it gives up.

use std::fmt;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use crate::engine::device::AdapterInfo;
use crate::engine::error::EngineError;

use super::sampler::{self, MemoryReading};

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
        let bad = || format!("{text:?} is not a budget; expected {BUDGET_FORMS}");
        let split = text
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: f64 = number.trim().parse().map_err(|_| bad())?;
        if !number.is_finite() || number <= 0.0 {
            return Err(format!(
                "{text:?} must be above zero; expected {BUDGET_FORMS}"
            ));
        }
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" => return Self::from_number(number),
            "b" => 1,
            "kib" | "k" => 1 << 10,
            "mib" | "m" => 1 << 20,
            "gib" | "g" => 1 << 30,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            _ => return Err(bad()),
        };
        Ok(Self::Bytes((number * scale as f64).round().max(1.0) as u64))
    }

    /// A bare number: an integer above 1 is bytes, anything else a fraction.
    fn from_number(number: f64) -> Result<Self, String> {
        if number > 1.0 && number.fract() == 0.0 {
            Ok(Self::Bytes(number as u64))
        } else if number > 0.0 && number <= 1.0 {
            Ok(Self::Fraction(number))
        } else {
            Err(format!(
                "{number} is neither whole bytes nor a fraction in (0, 1]; expected {BUDGET_FORMS}"
            ))
        }
    }

    /// The budget in bytes on this adapter. wgpu and WebGPU expose no total-memory figure, so a
    /// fraction is of the largest buffer the device accepts.
    pub fn bytes(self, adapter: &AdapterInfo) -> u64 {
        match self {
            Self::Bytes(bytes) => bytes,
            Self::Fraction(share) => (adapter.max_buffer_size as f64 * share) as u64,
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
                write!(f, "{bytes}")
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

/// A run that needed more than its budget: where, and by how much.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutOfMemory {
    /// The step (1-based) that failed; `None` while the run was being set up.
    pub step: Option<usize>,
    /// `setup`, or the step's phase: upload, forward, backward, optimizer, eval.
    pub phase: String,
    /// The tensor or layer allocated just before the check that failed.
    pub site: String,
    /// Bytes allocated since the previous check (the allocation that did not fit, with any made
    /// since the check before it).
    pub asked_bytes: u64,
    /// In use at the previous check.
    pub in_use_bytes: u64,
    /// Pages the allocator kept after releasing its cache.
    pub reserved_bytes: u64,
    pub budget_bytes: u64,
    /// What the analytic model says would fit, most useful first; filled in by the run.
    pub suggestions: Vec<String>,
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
        match self.step {
            Some(step) => write!(f, "out of memory at step {step}, {}", self.phase)?,
            None => write!(f, "out of memory while setting up the run")?,
        }
        write!(
            f,
            " ({}): asked {:.3} MiB with {:.3} MiB in use (the pool kept {:.3} MiB); budget {:.3} MiB",
            self.site,
            mib(self.asked_bytes),
            mib(self.in_use_bytes),
            mib(self.reserved_bytes),
            mib(self.budget_bytes),
        )?;
        if self.in_use_bytes + self.asked_bytes <= self.budget_bytes {
            write!(
                f,
                "; the live bytes fit, the pool's pages do not (its pages are larger than what \
                 they hold)"
            )?;
        }
        if !self.suggestions.is_empty() {
            write!(f, "\nwhat would fit, by the analytic model's estimates:")?;
            for suggestion in &self.suggestions {
                write!(f, "\n  {suggestion}")?;
            }
        }
        Ok(())
    }
}

/// Enforces a budget: one per run, carried through the places that allocate.
#[derive(Clone, Debug)]
pub struct BudgetWatch {
    device: Device,
    limit: u64,
    /// In use at the last check that passed.
    last_in_use: u64,
}

impl BudgetWatch {
    pub fn new(device: &Device, limit: u64, start: MemoryReading) -> Self {
        Self {
            device: device.clone(),
            limit,
            last_in_use: start.in_use_bytes,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Read the allocator after `site` allocated; fail when the live bytes, or the pages the
    /// allocator must keep for them, pass the budget.
    pub fn check(&mut self, phase: &str, site: &str) -> Result<MemoryReading, EngineError> {
        let mut reading = sampler::read(&self.device, phase)?;
        if reading.in_use_bytes <= self.limit && reading.reserved_bytes > self.limit {
            sampler::release_cache(&self.device)?;
            reading = sampler::read(&self.device, phase)?;
        }
        if reading.in_use_bytes > self.limit || reading.reserved_bytes > self.limit {
            return Err(EngineError::OutOfMemory(Box::new(OutOfMemory {
                step: None,
                phase: phase.to_string(),
                site: site.to_string(),
                asked_bytes: reading.in_use_bytes.saturating_sub(self.last_in_use),
                in_use_bytes: self.last_in_use,
                reserved_bytes: reading.reserved_bytes,
                budget_bytes: self.limit,
                suggestions: Vec::new(),
            })));
        }
        self.last_in_use = reading.in_use_bytes;
        Ok(reading)
    }

    /// With a budget, check it after `site` allocated; without one, just read the allocator.
    pub fn check_or_read(
        watch: Option<&mut Self>,
        device: &Device,
        phase: &str,
        site: &str,
    ) -> Result<MemoryReading, EngineError> {
        match watch {
            Some(watch) => watch.check(phase, site),
            None => sampler::read(device, phase),
        }
    }

    /// Note frees made since the last check (a later check's "asked" counts from here).
    pub fn settle_at(&mut self, reading: MemoryReading) {
        self.last_in_use = reading.in_use_bytes;
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
