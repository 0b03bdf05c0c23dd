//! Operands for the model tests of the f64 fast paths (`f64fast`), by the widths of
//! the format's fields.

/// A binary interchange format by the widths of its fields (IEEE 754 §3.6).
#[derive(Clone, Copy)]
pub(super) struct Fields {
    pub exponent: u32,
    pub significand: u32,
}

pub(super) const F64: Fields = Fields { exponent: 11, significand: 52 };

/// How many cases each model test runs: `PTXVK_ROUTINE_CASES`, 20,000 by default.
pub(super) fn cases() -> u64 {
    std::env::var("PTXVK_ROUTINE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

/// xorshift64: reproducible, and fast enough for 10^9 cases.
pub(super) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The bits of a float of any kind: mostly finite with a significand that is often
    /// a hard one, an exponent anywhere (subnormals included), sometimes ±0, ±inf, NaN,
    /// the smallest and largest subnormals and normals.
    pub fn bits(&mut self, f: Fields) -> u64 {
        let v = self.next();
        let m = f.significand;
        let sign = (v >> 63) << (f.exponent + m);
        let max_exponent = (1u64 << f.exponent) - 1;
        let all = (1u64 << m) - 1;
        let special = [
            0,
            max_exponent << m,
            max_exponent << m | 1 << (m - 1),
            1,
            all,
            (max_exponent - 1) << m | all,
            1 << m,
        ];
        if v.is_multiple_of(64) {
            return sign | special[(v >> 8) as usize % special.len()];
        }
        let e = (v >> 8) % (max_exponent + 1);
        let e = if e == max_exponent { max_exponent >> 1 } else { e };
        let w = self.next();
        let significand = match (v >> 20) % 8 {
            0 => 0,
            1 => 1,
            2 => all,
            3 => all - 1,
            // Short significands: exact products and sums, ties.
            4 => (w & ((1 << (m / 2)) - 1)) << (m - m / 2),
            5 => (w & ((1 << (m / 6)) - 1)) << (m - m / 6),
            _ => w & all,
        };
        sign | e << m | significand
    }

    /// `x` (bits of format `f`) moved to a biased exponent in `low..low + spread`, so
    /// that results are mostly normal; zeros, infinities and NaNs stay.
    pub fn moderate_bits(&mut self, f: Fields, x: u64, low: u64, spread: u64) -> u64 {
        let m = f.significand;
        let exponent_field = ((1u64 << f.exponent) - 1) << m;
        let magnitude = x & (exponent_field | ((1 << m) - 1));
        if magnitude == 0 || x & exponent_field == exponent_field {
            return x;
        }
        let e = low + self.next() % spread;
        x & !exponent_field | e << m
    }
}
