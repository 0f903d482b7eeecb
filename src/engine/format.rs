//! Byte counts as people read them, in binary units: the one formatter behind the engine's
//! messages, the CLI and the page. Where a figure appears picks a [`ByteFormat`]; each named
//! format is one that some output prints (and docs and tests quote), so its unit and rounding
//! stay as they are.

/// A binary unit of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    B,
    KiB,
    MiB,
    GiB,
}

impl Unit {
    /// The bytes in one of this unit.
    pub const fn bytes(self) -> u64 {
        1 << (10 * self as u32)
    }

    pub const fn name(self) -> &'static str {
        match self {
            Unit::B => "B",
            Unit::KiB => "KiB",
            Unit::MiB => "MiB",
            Unit::GiB => "GiB",
        }
    }

    /// The units from `self` up to `largest`, largest first.
    fn down_from(self, largest: Unit) -> impl Iterator<Item = Unit> {
        [Unit::GiB, Unit::MiB, Unit::KiB, Unit::B]
            .into_iter()
            .filter(move |&unit| unit >= self && unit <= largest)
    }
}

/// A count with its thousands grouped: `1234567` as `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `bytes` in MiB as a number: a chart's coordinate, or a table cell whose header names the
/// unit.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / Unit::MiB.bytes() as f64
}

/// How a byte count is written: in the largest unit of a range that the count reaches (a
/// whole one of it at least; the smallest otherwise), with a number of decimals, and a sign
/// for a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteFormat {
    smallest: Unit,
    largest: Unit,
    decimals: usize,
    signed: bool,
}

impl ByteFormat {
    /// MiB with two decimals, whatever the size ("0.50 MiB", "2048.00 MiB"): the figures of a
    /// run (its report, the page's panels), read against each other in one unit.
    pub const MIB: Self = Self::fixed(Unit::MiB, 2);
    /// MiB below a GiB and GiB from there, two decimals: a plan's figures, which run from a
    /// toy model's to a 7B model's.
    pub const MIB_OR_GIB: Self = Self::scaled(Unit::MiB, Unit::GiB, 2);
    /// KiB below a MiB and MiB from there, two decimals: a claim's figures and spreads, which
    /// can be a few KiB.
    pub const KIB_OR_MIB: Self = Self::scaled(Unit::KiB, Unit::MiB, 2);
    /// Whole bytes below a KiB, then KiB or MiB with one decimal: host memory (the fuzzer's).
    pub const B_TO_MIB: Self = Self::scaled(Unit::B, Unit::MiB, 1);

    /// Always in `unit`.
    pub const fn fixed(unit: Unit, decimals: usize) -> Self {
        Self::scaled(unit, unit, decimals)
    }

    /// In the largest of `smallest..=largest` that the count reaches.
    pub const fn scaled(smallest: Unit, largest: Unit, decimals: usize) -> Self {
        Self {
            smallest,
            largest,
            decimals,
            signed: false,
        }
    }

    /// The same with `decimals` digits after the point (bytes, B, are always whole).
    pub const fn decimals(self, decimals: usize) -> Self {
        Self { decimals, ..self }
    }

    /// The same with a `+` before a positive figure: a change.
    pub const fn signed(self) -> Self {
        Self {
            signed: true,
            ..self
        }
    }

    /// The unit `bytes` is written in.
    pub fn unit(self, bytes: f64) -> Unit {
        self.smallest
            .down_from(self.largest)
            .find(|unit| bytes.abs() >= unit.bytes() as f64)
            .unwrap_or(self.smallest)
    }

    /// `bytes` with its unit: "12.34 MiB".
    pub fn of(self, bytes: u64) -> String {
        self.of_f64(bytes as f64)
    }

    /// A figure that need not be whole or positive (a median, a change), with its unit.
    pub fn of_f64(self, bytes: f64) -> String {
        let unit = self.unit(bytes);
        format!("{} {}", self.in_unit(bytes, unit), unit.name())
    }

    /// `bytes` without its unit, for a column whose header names it (a fixed format's unit).
    pub fn number(self, bytes: u64) -> String {
        let bytes = bytes as f64;
        self.in_unit(bytes, self.unit(bytes))
    }

    fn in_unit(self, bytes: f64, unit: Unit) -> String {
        let value = bytes / unit.bytes() as f64;
        let decimals = if unit == Unit::B { 0 } else { self.decimals };
        if self.signed {
            format!("{value:+.decimals$}")
        } else {
            format!("{value:.decimals$}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn mib_is_a_number_in_mebibytes() {
        assert_eq!(mib(3 * MIB / 2), 1.5);
        assert_eq!(mib(0), 0.0);
    }

    #[test]
    fn a_fixed_format_keeps_its_unit_at_every_size() {
        assert_eq!(ByteFormat::MIB.of(MIB / 2), "0.50 MiB");
        assert_eq!(ByteFormat::MIB.of(2 * GIB), "2048.00 MiB");
        assert_eq!(ByteFormat::MIB.of(0), "0.00 MiB");
        assert_eq!(ByteFormat::MIB.decimals(3).of(1_234_567), "1.177 MiB");
        assert_eq!(ByteFormat::fixed(Unit::MiB, 0).of(128 * MIB), "128 MiB");
        assert_eq!(ByteFormat::MIB.number(5 * MIB / 4), "1.25");
    }

    #[test]
    fn a_scaled_format_takes_the_largest_unit_the_count_reaches() {
        let plan = ByteFormat::MIB_OR_GIB;
        assert_eq!(plan.of(GIB - 1), "1024.00 MiB");
        assert_eq!(plan.of(GIB), "1.00 GiB");
        assert_eq!(plan.of(25 * GIB + GIB / 4), "25.25 GiB");
        // Below its smallest unit, a count stays in that unit.
        assert_eq!(plan.of(KIB), "0.00 MiB");

        let claim = ByteFormat::KIB_OR_MIB;
        assert_eq!(claim.of_f64(1536.0), "1.50 KiB");
        assert_eq!(claim.of_f64(MIB as f64), "1.00 MiB");
        // The unit follows the size, not the sign.
        assert_eq!(claim.of_f64(-3.0 * MIB as f64), "-3.00 MiB");
        assert_eq!(claim.of_f64(0.0), "0.00 KiB");

        let host = ByteFormat::B_TO_MIB;
        assert_eq!(host.of(1023), "1023 B");
        assert_eq!(host.of(1536), "1.5 KiB");
        assert_eq!(host.of(5 * MIB / 2), "2.5 MiB");
        assert_eq!(host.of(4 * GIB), "4096.0 MiB");
    }

    #[test]
    fn a_signed_format_marks_a_growth() {
        let change = ByteFormat::MIB.signed();
        assert_eq!(change.of_f64(MIB as f64), "+1.00 MiB");
        assert_eq!(change.of_f64(-(MIB as f64) / 2.0), "-0.50 MiB");
    }

    #[test]
    fn the_figures_are_those_the_fronts_printed_before_the_formats_were_one() {
        // report::size, claims' show, the fuzzer's size and the page's `{:.2} MiB`, as they
        // were written, against the formats that replace them.
        for bytes in [
            0,
            1,
            1023,
            1024,
            1536,
            MIB - 1,
            MIB,
            3 * MIB + 7,
            GIB - 1,
            GIB,
            7 * GIB,
        ] {
            let b = bytes as f64;
            let old_size = if b >= 1024.0 * 1024.0 * 1024.0 {
                format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
            } else {
                format!("{:.2} MiB", b / (1024.0 * 1024.0))
            };
            assert_eq!(ByteFormat::MIB_OR_GIB.of(bytes), old_size);
            let old_show = if b >= MIB as f64 {
                format!("{:.2} MiB", b / MIB as f64)
            } else {
                format!("{:.2} KiB", b / 1024.0)
            };
            assert_eq!(ByteFormat::KIB_OR_MIB.of(bytes), old_show);
            let old_host = match bytes {
                b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
                b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
                b => format!("{b} B"),
            };
            assert_eq!(ByteFormat::B_TO_MIB.of(bytes), old_host);
            assert_eq!(
                ByteFormat::MIB.of(bytes),
                format!("{:.2} MiB", b / 1048576.0)
            );
        }
    }
}
